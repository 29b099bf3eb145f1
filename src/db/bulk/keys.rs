//! The key index of a bulk load: keys numbered in first-use order.
//!
//! Keys live end to end in one string; a hash table holds, per key, its length, its first
//! eight bytes and its number. Interning a key allocates nothing, and a key of at most
//! eight bytes is compared without reading the string. On large loads the table does not
//! fit in cache, so [`Keys::warm`] lets a caller fetch the entries of the next few keys
//! together.

use std::fmt;
use std::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};

use crate::error::{Error, Result};

/// Keys numbered in first-use order, their bytes end to end in one string.
#[derive(Default)]
pub(super) struct Keys {
    table: HashTable<Slot>,
    hasher: DefaultHashBuilder,
    text: String,
    /// Key `i` is `text[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
}

/// A table entry: the key's length and first eight bytes, which settle most comparisons
/// without reading the key from `text`, and its number.
#[derive(Clone, Copy, Debug)]
struct Slot {
    head: u64,
    len: u32,
    id: u32,
}

/// The first eight bytes of `key`, zero-padded.
fn head(key: &str) -> u64 {
    let k = key.as_bytes();
    let mut b = [0u8; 8];
    let n = k.len().min(8);
    b[..n].copy_from_slice(&k[..n]);
    u64::from_le_bytes(b)
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys").field("len", &self.len()).finish()
    }
}

impl Keys {
    /// Keys numbered so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Key `i` ("" past the end).
    pub fn get(&self, i: usize) -> &str {
        key_at(&self.text, &self.ends, i)
    }

    /// Looks `keys` up without using the answers, so that their table entries are in
    /// cache for the calls that follow: look-ups that do not depend on each other wait
    /// for memory together rather than one after the other.
    pub fn warm(&self, keys: &[&str]) {
        let mut found = 0u32;
        for key in keys {
            let h = head(key);
            let hash = self.hasher.hash_one(key);
            if let Some(s) = self.table.find(hash, |s| s.head == h) {
                found = found.wrapping_add(s.id);
            }
        }
        // Keeps the look-ups from being optimized away.
        std::hint::black_box(found);
    }

    /// The number of `key`; a new key is numbered by `check`, which may refuse it.
    ///
    /// # Errors
    /// The error of `check`.
    pub fn intern(&mut self, key: &str, check: impl FnOnce(&str) -> Result<u32>) -> Result<u32> {
        let Keys {
            table,
            hasher,
            text,
            ends,
        } = self;
        let Ok(len) = u32::try_from(key.len()) else {
            // Far beyond the key length limit, so not in the table; `check` says why.
            return Err(check(key)
                .err()
                .unwrap_or_else(|| Error::invalid("node key too long")));
        };
        let h = head(key);
        let hash = hasher.hash_one(key);
        let entry = table.entry(
            hash,
            |s| {
                s.len == len
                    && s.head == h
                    && (len <= 8 || key_at(text, ends, s.id as usize) == key)
            },
            |s| hasher.hash_one(key_at(text, ends, s.id as usize)),
        );
        match entry {
            Entry::Occupied(e) => Ok(e.get().id),
            Entry::Vacant(e) => {
                let id = check(key)?;
                e.insert(Slot { head: h, len, id });
                text.push_str(key);
                ends.push(text.len());
                Ok(id)
            }
        }
    }
}

fn key_at<'a>(text: &'a str, ends: &[usize], i: usize) -> &'a str {
    let start = if i == 0 {
        0
    } else {
        ends.get(i - 1).copied().unwrap_or(0)
    };
    let end = ends.get(i).copied().unwrap_or(start);
    text.get(start..end).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(keys: &mut Keys, key: &str) -> u32 {
        let next = u32::try_from(keys.len()).unwrap();
        keys.intern(key, |_| Ok(next)).unwrap()
    }

    #[test]
    fn numbers_keys_in_first_use_order() {
        let mut keys = Keys::default();
        // Equal heads and lengths that differ after eight bytes; NUL padding; non-ASCII.
        let words = [
            "a",
            "longer-key-1",
            "longer-key-2",
            "a\0",
            "",
            "ü",
            "a",
            "longer-key-1",
        ];
        let ids: Vec<u32> = words.iter().map(|w| number(&mut keys, w)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 0, 1]);
        assert_eq!(keys.len(), 6);
        for (i, w) in words.iter().take(6).enumerate() {
            assert_eq!(keys.get(i), *w);
        }
        assert_eq!(keys.get(6), "");
        keys.warm(&["a", "zzz"]);
        for i in 0..5000 {
            assert_eq!(number(&mut keys, &format!("k{i}")), 6 + i);
        }
        for i in 0..5000 {
            assert_eq!(number(&mut keys, &format!("k{i}")), 6 + i);
        }
    }

    #[test]
    fn a_refused_key_is_not_numbered() {
        let mut keys = Keys::default();
        assert!(keys.intern("x", |_| Err(Error::invalid("no"))).is_err());
        assert_eq!(keys.len(), 0);
        assert_eq!(number(&mut keys, "x"), 0);
    }
}

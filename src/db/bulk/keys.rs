//! The key index of a bulk load: keys numbered in first-use order.
//!
//! Keys live end to end in one string; a hash table holds, per key, its length, its first
//! eight bytes and its number. Interning a key allocates nothing, and a key of at most
//! eight bytes is compared without reading the string. On large loads the table does not
//! fit in cache, so [`Keys::warm`] lets a caller fetch the slots of the next few keys
//! together. The table is open addressing with linear probing rather than a SwissTable:
//! a look-up then reads one slot (one cache line, mostly) instead of a control byte and
//! then a slot, so the reads of a warm-up do not wait for each other.

use std::fmt;
use std::hash::BuildHasher;

use foldhash::fast::RandomState;

use crate::error::{Error, Result};

/// The table starts with this many slots (a power of two).
const SLOTS_MIN: usize = 1 << 10;

/// Keys numbered in first-use order, their bytes end to end in one string.
#[derive(Default)]
pub(super) struct Keys {
    /// Open addressing with linear probing; a power of two long (or empty), at most 70%
    /// full, so a look-up mostly reads one cache line.
    slots: Vec<Slot>,
    hasher: RandomState,
    text: String,
    /// Key `i` is `text[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
}

/// A table entry: the key's length and first eight bytes, which settle most comparisons
/// without reading the key from `text`, and its number plus one (0: an empty slot).
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    head: u64,
    len: u32,
    id_plus_one: u32,
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
    /// Bytes the table and the keys take on the heap.
    pub fn heap_bytes(&self) -> u64 {
        (self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.text.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()) as u64
    }

    /// Keys numbered so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Key `i` ("" past the end).
    pub fn get(&self, i: usize) -> &str {
        key_at(&self.text, &self.ends, i)
    }

    /// The slot where the probe for a key with this hash starts.
    fn home(&self, hash: u64) -> usize {
        // The table is a power of two long; foldhash mixes the low bits well.
        #[allow(
            clippy::cast_possible_truncation,
            reason = "only the bits below the table size are kept"
        )]
        let h = hash as usize;
        h & self.slots.len().wrapping_sub(1)
    }

    /// Reads the first slot of each of `keys` without using it, so that the look-ups that
    /// follow find them in cache: loads that do not depend on each other wait for memory
    /// together rather than one after the other.
    pub fn warm(&self, keys: &[&str]) {
        if self.slots.is_empty() {
            return;
        }
        let mut seen = 0u64;
        for key in keys {
            let at = self.home(self.hasher.hash_one(key));
            seen ^= self.slots.get(at).map_or(0, |s| s.head);
        }
        // Keeps the loads from being optimized away.
        std::hint::black_box(seen);
    }

    /// The number of `key`; a new key is numbered by `check`, which may refuse it.
    ///
    /// # Errors
    /// The error of `check`.
    pub fn intern(&mut self, key: &str, check: impl FnOnce(&str) -> Result<u32>) -> Result<u32> {
        let Ok(len) = u32::try_from(key.len()) else {
            // Far beyond the key length limit, so not in the table; `check` says why.
            return Err(check(key)
                .err()
                .unwrap_or_else(|| Error::invalid("node key too long")));
        };
        if (self.len() + 1) * 10 > self.slots.len() * 7 {
            self.grow();
        }
        let h = head(key);
        let mut at = self.home(self.hasher.hash_one(key));
        loop {
            let s = self.slots[at];
            if s.id_plus_one == 0 {
                break;
            }
            let id = s.id_plus_one - 1;
            if s.len == len
                && s.head == h
                && (len <= 8 || key_at(&self.text, &self.ends, id as usize) == key)
            {
                return Ok(id);
            }
            at = (at + 1) & (self.slots.len() - 1);
        }
        let id = check(key)?;
        let id_plus_one = id
            .checked_add(1)
            .ok_or_else(|| Error::invalid("too many keys"))?;
        self.slots[at] = Slot {
            head: h,
            len,
            id_plus_one,
        };
        self.text.push_str(key);
        self.ends.push(self.text.len());
        Ok(id)
    }

    /// Doubles the table (or allocates the first one).
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(SLOTS_MIN);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); size]);
        for s in old.into_iter().filter(|s| s.id_plus_one != 0) {
            let key = key_at(&self.text, &self.ends, (s.id_plus_one - 1) as usize);
            let mut at = self.home(self.hasher.hash_one(key));
            while self.slots[at].id_plus_one != 0 {
                at = (at + 1) & (size - 1);
            }
            self.slots[at] = s;
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

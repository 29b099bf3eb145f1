//! The single import point for synchronization primitives.
//!
//! Under `cfg(loom)` the concurrency core is model-checked with loom's types (thin wrappers
//! give them parking_lot's poison-free API); everywhere else it uses parking_lot.
//! [`Published`] is the snapshot publication cell: writers replace the current state,
//! readers take a reference-counted copy, and the loom model below checks that a reader
//! always sees a complete state and never goes back in time. The group-commit protocol that
//! publishes through it has its own loom model (`db/group.rs`).

#[cfg(not(loom))]
pub(crate) use parking_lot::{Mutex, MutexGuard, RwLock};

#[cfg(loom)]
mod loom_wrappers {
    /// loom's mutex with parking_lot's API.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);
    impl<T> Mutex<T> {
        pub(crate) fn new(t: T) -> Self {
            Mutex(loom::sync::Mutex::new(t))
        }
        pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn try_lock(&self) -> Option<loom::sync::MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(g) => Some(g),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }
    }
    /// loom's rwlock with parking_lot's API.
    #[derive(Debug)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);
    impl<T> RwLock<T> {
        pub(crate) fn new(t: T) -> Self {
            RwLock(loom::sync::RwLock::new(t))
        }
        pub(crate) fn read(&self) -> loom::sync::RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn write(&self) -> loom::sync::RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|e| e.into_inner())
        }
    }
}
#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;
#[cfg(loom)]
pub(crate) use loom_wrappers::{Mutex, RwLock};

/// A condition variable for [`Mutex`]: `wait` gives the guard back, under loom too.
pub(crate) struct Condvar {
    #[cfg(not(loom))]
    cv: parking_lot::Condvar,
    #[cfg(loom)]
    cv: loom::sync::Condvar,
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Condvar")
    }
}

impl Condvar {
    pub(crate) fn new() -> Condvar {
        Condvar {
            #[cfg(not(loom))]
            cv: parking_lot::Condvar::new(),
            #[cfg(loom)]
            cv: loom::sync::Condvar::new(),
        }
    }

    /// Releases `guard`, sleeps until notified (or spuriously woken), takes the lock again.
    #[cfg(not(loom))]
    pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.cv.wait(&mut guard);
        guard
    }

    /// Releases `guard`, sleeps until notified (or spuriously woken), takes the lock again.
    #[cfg(loom)]
    pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.cv.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn notify_all(&self) {
        self.cv.notify_all();
    }
}

use std::sync::Arc;

/// The current value of something readers snapshot: replaced whole by writers, read as an
/// `Arc` clone. Readers hold the lock only for the reference-count increment.
#[derive(Debug)]
pub(crate) struct Published<T> {
    cell: RwLock<Arc<T>>,
}

impl<T> Published<T> {
    pub(crate) fn new(value: Arc<T>) -> Self {
        Published {
            cell: RwLock::new(value),
        }
    }

    /// The current value.
    pub(crate) fn load(&self) -> Arc<T> {
        self.cell.read().clone()
    }

    /// Replaces the current value and returns the previous one, which the caller drops
    /// after the lock is released: readers never wait for a value to be freed.
    #[must_use = "the previous value is returned so that it is dropped outside the lock"]
    pub(crate) fn store(&self, value: Arc<T>) -> Arc<T> {
        std::mem::replace(&mut *self.cell.write(), value)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;

    /// Readers racing a writer that publishes versions 1, 2, 3 (each a pair whose halves
    /// must match) see only complete versions, in non-decreasing order.
    #[test]
    fn publication_is_atomic_and_monotone() {
        loom::model(|| {
            let p = Arc::new(Published::new(Arc::new((0u32, 0u32))));
            let writer = {
                let p = p.clone();
                loom::thread::spawn(move || {
                    for v in 1..=3 {
                        drop(p.store(Arc::new((v, v))));
                    }
                })
            };
            let reader = {
                let p = p.clone();
                loom::thread::spawn(move || {
                    let mut last = 0;
                    for _ in 0..3 {
                        let s = p.load();
                        assert_eq!(s.0, s.1, "torn publication");
                        assert!(s.0 >= last, "went back in time");
                        last = s.0;
                    }
                })
            };
            writer.join().unwrap();
            reader.join().unwrap();
            assert_eq!(p.load().0, 3);
        });
    }
}

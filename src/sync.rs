//! The single import point for synchronization primitives.
//!
//! Under `cfg(loom)` the concurrency core is model-checked with loom's types; everywhere else
//! it uses parking_lot. Code that publishes shared state imports from here, never directly.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard, RwLock};

#[cfg(not(loom))]
pub(crate) use parking_lot::{Mutex, MutexGuard, RwLock};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

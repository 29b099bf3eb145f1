//! Corruption (placeholder).

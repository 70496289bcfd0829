//! SPEC §8: the unified client loop and what runs around it.

pub mod inprocess;
pub mod metrics;
pub mod stream;

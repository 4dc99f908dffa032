//! The I/O engine.
//!
//! One worker per CPU, pinned, with NUMA-local buffers; a small `Backend`
//! trait split like a hardware queue (queue, submit, reap) and its backends;
//! workload generators; per-worker statistics merged at the end.
#![deny(missing_docs)]

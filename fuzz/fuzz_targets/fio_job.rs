//! Fuzzes the fio job-file reader with includes resolved from memory.
//! Invariants: no panic, at most `SECTIONS_MAX` jobs, and within a memory
//! and time budget however the includes fan out (`numio_fuzz::inputs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: numio_fuzz::budget::Counting = numio_fuzz::budget::Counting;

fuzz_target!(|data: &[u8]| {
    let _ = numio_fuzz::inputs::fio_job(data);
});

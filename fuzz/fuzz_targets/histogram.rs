//! Fuzzes latency histogram decoding (`results::histogram`). Invariants:
//! no panic, within a memory and time budget whatever the header claims,
//! and a decoded histogram re-encodes to one with the same counts.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: numio_fuzz::budget::Counting = numio_fuzz::budget::Counting;

fuzz_target!(|data: &[u8]| {
    let _ = numio_fuzz::inputs::histogram(data);
});

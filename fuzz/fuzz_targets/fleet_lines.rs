//! Fuzzes the fleet protocol's line reader on both ends (the controller's
//! reading of an agent's stdout, the agent's of the controller's lines).
//! Invariants: no panic, lines within their limit, a bounded tail, and
//! memory within a budget set by the limit, not the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: numio_fuzz::budget::Counting = numio_fuzz::budget::Counting;

fuzz_target!(|data: &[u8]| {
    let _ = numio_fuzz::inputs::fleet_lines(data);
});

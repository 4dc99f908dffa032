//! Fuzzes the snapshot reader (`MemTree::from_tar_gz_reader`, then every
//! path read back through `Source`). Invariants: no panic, and within a
//! memory and time budget whatever the archive (`numio_fuzz::inputs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: numio_fuzz::budget::Counting = numio_fuzz::budget::Counting;

fuzz_target!(|data: &[u8]| {
    let _ = numio_fuzz::inputs::snapshot(data);
});

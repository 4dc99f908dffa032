//! Fuzzes the target's connection state machine (framing, ICReq, Connect,
//! command parsing, R2T flow) with arbitrary byte streams split at arbitrary
//! points: the first byte is the chunk size less one, the rest is fed from
//! ICReq on. The target keeps a resident controller (cntlid 1), so an input
//! may connect an I/O queue to it and reach the I/O handlers too.
//! Invariants: no panic; once closing, the connection stays closed;
//! release leaves only the resident controller.
#![no_main]

use libfuzzer_sys::fuzz_target;
use numio_fuzz::harness::{connection_target, Driven};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let target = connection_target();
    let mut d = Driven::new(target);
    for chunk in rest.chunks(split as usize + 1) {
        d.feed(chunk);
    }
    d.tick(std::time::Instant::now());
    d.release();
    assert_eq!(
        target.controller_count(),
        1,
        "only the resident controller remains"
    );
});

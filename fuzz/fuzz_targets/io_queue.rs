//! Fuzzes a live I/O queue: the harness connects an admin queue and I/O
//! queue 1 to its controller (ICReq and Connect as the knobs byte says:
//! digests, MAXR2T, queue size, SQ flow control), then feeds the input to
//! the I/O queue, running each storage operation it starts, so the bytes
//! land in the Read, Write, Flush, Write Zeroes and Dataset Management
//! handlers (RAM namespaces of 512- and 4096-byte blocks, a file) and in
//! the R2T and H2CData paths. Input: a chunk-size byte, the knobs byte,
//! the stream. Invariants: no panic; every PDU the target sends decodes;
//! once closing, the queue stays closed; an I/O queue whose controller went
//! first closes; after both queues are released no controller remains.
#![no_main]

use libfuzzer_sys::fuzz_target;
use numio_fuzz::harness::{IoKnobs, IoSession};

fuzz_target!(|data: &[u8]| {
    let [split, knobs, stream @ ..] = data else {
        return;
    };
    let mut s = IoSession::open(IoKnobs::from_byte(*knobs));
    s.run(stream, *split as usize + 1);
    s.close();
});

//! Fuzzes the target's NVMe/RDMA binding without RDMA hardware: the
//! harness connects an admin queue and I/O queue 1 (Connect data by keyed
//! SGL, as a Linux host sends it), then plays the driver to one of them:
//! command capsules as the input's bytes are (keyed SGLs of any address,
//! length and key, in-capsule data, any SQE), RDMA READ and WRITE
//! completions in any order, ticks. Input: a knobs byte
//! (`numio_fuzz::rdma::RdmaKnobs`), then `numio_fuzz::rdma::RdmaOp`s.
//! Invariants: no panic; every RDMA READ or WRITE stays inside a keyed SGL
//! its command named and inside one staging buffer; once closing, the
//! queue stays closed; release leaves no controller.
#![no_main]

use libfuzzer_sys::fuzz_target;
use numio_fuzz::rdma::{parse_ops, RdmaKnobs, RdmaSession};

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, rest)) = data.split_first() else {
        return;
    };
    let mut s = RdmaSession::open(RdmaKnobs::from_byte(knobs));
    s.run(&parse_ops(rest));
    s.close();
});

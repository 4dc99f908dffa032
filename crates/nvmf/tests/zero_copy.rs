//! Reads of a RAM namespace go to the socket from the namespace's memory
//! (`target/splice.rs`): through the reactor, with many reads in flight,
//! sizes on both sides of the splice threshold, C2HData split at the
//! target's MAXC2H size, replies backed up in the socket (partial sends go
//! on from the middle of a spliced segment), and the framings that must not
//! splice (data digest) or that pad before the data (HPDA).

mod common;

use common::*;
use nvme_spec::command::io;
use nvmf::host::command::rw_sqe;

/// Writes a pattern over the first 4 MiB of namespace 1, then reads it
/// back in a pipelined mix of sizes and checks every byte.
fn write_then_read_back(o: &nvmf::InitiatorOptions) {
    let (_s, addr) = start(&config(None));
    let (_admin, mut q) = controller(addr, o);
    const BYTES: usize = 4 << 20;
    let data = pattern(21, BYTES);
    for (i, chunk) in data.chunks(128 << 10).enumerate() {
        q.write(1, (i * 256) as u64, chunk).unwrap();
    }
    // (slba, blocks): 512 B (copied), 1 KiB (the threshold), 4 KiB,
    // 128 KiB and 1 MiB (several C2HData PDUs), at odd offsets.
    let sizes = [1u32, 2, 8, 256, 2048, 3, 8, 256];
    let mut posted = Vec::new();
    let mut slba = 1u64;
    // 60 reads (about 10 MiB of replies) posted before any is reaped: the
    // replies back up in the socket and the target's sends go out in parts.
    for i in 0..60 {
        let nlb = sizes[i % sizes.len()];
        if (slba + u64::from(nlb)) * 512 > BYTES as u64 {
            slba = (i % 7) as u64;
        }
        let cid = q
            .post(rw_sqe(io::READ, 1, slba, nlb), Vec::new(), nlb * 512)
            .unwrap();
        posted.push((cid, slba, nlb));
        slba += u64::from(nlb) + 5;
    }
    for _ in 0..posted.len() {
        let c = q.reap().unwrap();
        assert!(c.cqe.status().is_success(), "{:?}", c.cqe.status());
        let &(_, slba, nlb) = posted.iter().find(|p| p.0 == c.cqe.cid).unwrap();
        let at = slba as usize * 512;
        assert!(
            c.data == data[at..at + nlb as usize * 512],
            "read of {nlb} blocks at {slba}: data differs"
        );
    }
}

#[test]
fn ram_reads_come_back_whole_through_the_reactor() {
    write_then_read_back(&opts());
}

#[test]
fn ram_reads_with_a_data_digest_are_copied_and_verified() {
    let mut o = opts();
    o.data_digest = true;
    o.header_digest = true;
    write_then_read_back(&o);
}

#[test]
fn ram_reads_with_padding_before_the_data() {
    let mut o = opts();
    o.hpda = 3; // data aligned to 16 bytes: padding between header and data
    write_then_read_back(&o);
}

//! A host that sends reads and never reads the replies (issue #20: 2,048
//! reads of 1 MiB pinned 1.24 GB) pins a bounded amount of the target's
//! memory: the target stops reading its commands once its replies back up
//! beyond the reply budget, and TCP pushes back on the host. Meanwhile
//! another host is served. Linux only (VmRSS from /proc/self/status).

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;
use nvme_spec::command::{io, SglDescriptor, SGL_TRANSPORT};
use nvme_spec::tcp::Framing;
use nvmf::host::command::rw_sqe;

#[test]
fn a_host_that_never_reads_its_replies_pins_a_bounded_amount() {
    let mut c = config(None);
    c.subsystems[0].namespaces = vec![nvmf::config::NamespaceConfig::new("mem:64M")];
    let (s, addr) = start(&c);
    let mut o = opts();
    o.timeout = LONG;
    let (a, q) = controller(addr, &o);
    let cntlid = a.cntlid;
    let (mut stream, _) = q.into_parts().unwrap();
    let before = rss_bytes();
    // 2,048 reads of 1 MiB (cids reused: each completes at the target at
    // once), written until the socket pushes back.
    let mut sqe = rw_sqe(io::READ, 1, 0, 2048);
    sqe.flags |= 0x40; // PSDT: SGL
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: 1 << 20,
        rsvd: [0; 3],
        type_byte: SGL_TRANSPORT,
    };
    stream
        .tcp()
        .set_write_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut sent = 0;
    for i in 0..2048u16 {
        sqe.cid = i % 32;
        let b = capsule(&sqe, &Framing::INITIAL);
        if stream.write_all(&b).is_err() {
            break; // the target stopped reading: pushed back
        }
        sent += 1;
    }
    assert!(sent > 0);
    // The event: the target executed some of them (its counters fold on a
    // tick, after a receive's whole batch of commands was taken in).
    wait_for(&s.target, "reads executed", |t| {
        t.controller(cntlid)
            .is_some_and(|c| c.stats.reads.load(std::sync::atomic::Ordering::Acquire) >= 2)
    });
    let pinned = rss_bytes().saturating_sub(before);
    // The budget (1 MiB) twice, the request buffers of one queue depth and
    // the socket buffers' worth of capsules: far below the 2 GiB the reads
    // would pin unbounded.
    assert!(
        pinned < 96 << 20,
        "{} MiB pinned by a host that does not read ({sent} reads sent)",
        pinned >> 20
    );
    eprintln!("{} MiB pinned, {sent} reads sent", pinned >> 20);
    // Another host is served meanwhile.
    let (_a2, mut q2) = controller(addr, &o);
    let data = q2.read(1, 0, 8).expect("another host reads");
    assert_eq!(data.len(), 4096);
    drop(stream);
    s.stop().unwrap();
}

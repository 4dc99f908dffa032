//! The target's global cap on command data buffers
//! (`Limits::max_buffer_bytes`): hosts that send large writes and never
//! send their data hold at most the cap between them; another host's write
//! past it waits (it neither fails nor allocates) and runs once the
//! holders go. Waits are for the target's own counters, never a clock.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;

const MIB: usize = 1 << 20;
const WAIT: Duration = Duration::from_secs(30);

#[test]
fn large_writes_past_the_cap_wait_for_buffers_and_then_run() {
    let mut cfg = config(None);
    cfg.limits.max_buffer_bytes = 2 * MIB as u64;
    let (srv, addr) = start(&cfg);
    let t = srv.target.clone();

    // Host A: two 1 MiB writes whose R2Ts it never answers (it never
    // reaps): the first buffer is allocated, the second waits.
    let (a_admin, mut a_io) = controller(addr, &opts());
    a_io.post(
        nvmf::host::initiator::rw_sqe(nvme_spec::command::io::WRITE, 1, 0, 2048),
        vec![7; MIB],
        0,
    )
    .unwrap();
    a_io.post(
        nvmf::host::initiator::rw_sqe(nvme_spec::command::io::WRITE, 1, 4096, 2048),
        vec![8; MIB],
        0,
    )
    .unwrap();
    assert!(
        t.wait_until(WAIT, |t| t.buffers.waits() >= 1),
        "A's second write waits"
    );
    assert!(t.buffers.used() <= t.buffers.limit());

    // Host B: a 1 MiB write waits too, without an error.
    let (done_tx, done) = mpsc::channel();
    let b = std::thread::spawn(move || {
        let (_b_admin, mut b_io) = controller(addr, &opts());
        let data = pattern(3, MIB);
        let r = b_io.write(1, 8192, &data);
        done_tx.send(r.is_ok()).unwrap();
        assert_eq!(b_io.read(1, 8192, 2048).unwrap(), data);
    });
    assert!(
        t.wait_until(WAIT, |t| t.buffers.waits() >= 2),
        "B's write waits"
    );
    assert!(done.try_recv().is_err(), "B's write ran past the cap");
    assert!(t.buffers.used() <= t.buffers.limit());
    let m = t.metrics().to_prometheus();
    assert!(m.contains("numio_buffer_limit_bytes 2097152"), "{m}");
    assert!(m.contains("numio_buffer_waits_total 2"), "{m}");

    // A goes: its buffers come back and B's write runs.
    drop(a_io);
    drop(a_admin);
    assert!(
        done.recv_timeout(WAIT).expect("B's write completed"),
        "B's write succeeded"
    );
    b.join().unwrap();
    assert!(t.buffers.used() <= t.buffers.limit());
}

#[test]
fn buffers_are_given_back_when_connections_close() {
    let (srv, addr) = start(&config(None));
    let t = srv.target.clone();
    {
        let (_a, mut q) = controller(addr, &opts());
        let data = pattern(9, 512 * 1024);
        q.write(1, 0, &data).unwrap();
        assert_eq!(q.read(1, 0, 1024).unwrap(), data);
        assert!(t.buffers.used() > 0);
    }
    assert!(
        t.wait_until(WAIT, |t| t
            .connections
            .load(std::sync::atomic::Ordering::Relaxed)
            == 0),
        "connections closed"
    );
    assert!(
        t.wait_until(WAIT, |t| t.buffers.used() == 0),
        "{} bytes still held",
        t.buffers.used()
    );
}

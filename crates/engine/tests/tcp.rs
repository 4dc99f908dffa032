//! The tcp backend over loopback against an in-process `nvmf::Server` with
//! `mem:` namespaces: reads, writes and a verify run count every I/O and
//! byte with no errors; each bad input (URL, address, subsystem, NSID, block
//! size, size, writes without --force-write) fails with a message naming it.

mod common;

use std::net::SocketAddr;

use common::{bounded, placement};
use engine::backend::TcpOptions;
use engine::{BackendKind, EngineError, RunOptions, RunResult};
use nvmf::config::{NamespaceConfig, SubsystemConfig};
use nvmf::{Server, TargetConfig};
use planner::{Placement, RwMode, Workload};

const NQN: &str = "nqn.2026-11.io.numio:engine-tcp";
const NS_BYTES: u64 = 16 << 20;

/// A target with one subsystem: NSID 1 `mem:16M` (512-byte blocks), NSID 2
/// `mem:16M` with 4096-byte blocks.
fn server() -> (Server, SocketAddr) {
    let mut c = TargetConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        discovery_port: 0,
        cpus: vec![0],
        ..Default::default()
    };
    let mut ns4k = NamespaceConfig::new("mem:16M");
    ns4k.block_size = Some(4096);
    c.subsystems.push(SubsystemConfig {
        nqn: NQN.into(),
        serial: "TCPENGINE".into(),
        model: "numio engine tcp test".into(),
        allowed_hosts: vec![],
        allow_any_host: true,
        hosts: Vec::new(),
        namespaces: vec![NamespaceConfig::new("mem:16M"), ns4k],
    });
    let s = Server::start(&c).expect("target starts");
    let a = s.listen_addrs[0];
    (s, a)
}

/// `w` ending after exactly `n` I/Os per job, however small its region.
fn ios(mut w: Workload, n: u64) -> Workload {
    w.number_ios = Some(n);
    w.time_based = true;
    w.runtime_ns = Some(60_000_000_000);
    w.norandommap = true;
    w
}

fn url(addr: SocketAddr, nsid: u32) -> String {
    format!("nvme-tcp://{addr}/{NQN}/{nsid}")
}

fn opts(verify: bool, force_write: bool) -> RunOptions {
    RunOptions {
        backend: BackendKind::Tcp,
        verify,
        force_write,
        ..RunOptions::default()
    }
}

fn run(p: &Placement, o: &RunOptions) -> Result<RunResult, EngineError> {
    engine::run(p, o, &mut |_| {})
}

fn ok(p: &Placement, o: &RunOptions) -> RunResult {
    run(p, o).unwrap_or_else(|e| panic!("{e}"))
}

fn err(p: &Placement, o: &RunOptions) -> String {
    match run(p, o) {
        Ok(_) => panic!("expected an error for {}", p.targets[0].path),
        Err(e) => e.to_string(),
    }
}

#[test]
fn randread_randwrite_and_verify_move_every_byte() {
    let (_s, addr) = server();
    for nsid in [1, 2] {
        let target = url(addr, nsid);
        // Random reads, 2 jobs (two controllers, one I/O queue each).
        let w = ios(bounded(RwMode::RandRead, 4096, 32), 5000);
        let r = ok(&placement(&target, w, 2), &opts(false, false));
        assert_eq!(r.total.ops, 10_000, "nsid {nsid}: 2 jobs × 5000");
        assert_eq!(r.total.bytes, 10_000 * 4096);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.environment.targets[0].kind, "nvme_tcp");
        assert_eq!(
            r.environment.targets[0].logical_block_size_bytes,
            if nsid == 1 { 512 } else { 4096 }
        );
        assert_eq!(r.environment.targets[0].size_bytes, NS_BYTES);

        // Random writes: 4 KiB in the capsule and 64 KiB through R2T.
        for bs in [4096u64, 64 << 10] {
            let w = ios(bounded(RwMode::RandWrite, bs, 16), 1000);
            let r = ok(&placement(&target, w, 1), &opts(false, true));
            assert_eq!(r.total.ops, 1000, "nsid {nsid} bs {bs}");
            assert_eq!(r.total.bytes, 1000 * bs);
            assert!(r.errors.is_empty(), "{:?}", r.errors);
        }

        // Verify: write the pattern over the namespace, then read it back.
        let w = bounded(RwMode::Write, 128 << 10, 8);
        let r = ok(&placement(&target, w, 1), &opts(true, true));
        assert_eq!(r.total.bytes, NS_BYTES);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let w = ios(bounded(RwMode::RandRead, 8192, 32), 4000);
        let r = ok(&placement(&target, w, 1), &opts(true, false));
        assert_eq!(r.total.ops, 4000);
        assert!(r.errors.is_empty(), "verify found {:?}", r.errors);
        let w = bounded(RwMode::Read, 128 << 10, 4);
        let r = ok(&placement(&target, w, 1), &opts(true, false));
        assert_eq!(r.total.bytes, NS_BYTES);
        assert!(r.errors.is_empty(), "verify found {:?}", r.errors);
    }
}

#[test]
fn verify_catches_data_another_run_changed() {
    let (_s, addr) = server();
    let target = url(addr, 1);
    let r = ok(
        &placement(&target, bounded(RwMode::Write, 64 << 10, 4), 1),
        &opts(true, true),
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // Overwrite the first MiB with random data (no pattern).
    let mut w = bounded(RwMode::Write, 64 << 10, 4);
    w.size_bytes = Some(1 << 20);
    let r = ok(&placement(&target, w, 1), &opts(false, true));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let r = ok(
        &placement(&target, bounded(RwMode::Read, 64 << 10, 4), 1),
        &opts(true, false),
    );
    let bad: u64 = r.errors.iter().map(|e| e.count).sum();
    assert_eq!(bad, 16, "the 16 overwritten 64 KiB blocks: {:?}", r.errors);
}

#[test]
fn digests_and_host_nqn_are_negotiated() {
    let (_s, addr) = server();
    let mut o = opts(true, true);
    o.tcp = TcpOptions {
        hostnqn: Some(
            "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001".into(),
        ),
        header_digest: true,
        data_digest: true,
        ..TcpOptions::default()
    };
    let target = url(addr, 1);
    let mut w = bounded(RwMode::Write, 32 << 10, 8);
    w.size_bytes = Some(4 << 20);
    let r = ok(&placement(&target, w.clone(), 1), &o);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    w.rw = RwMode::RandRead;
    let w = ios(w, 2000);
    let r = ok(&placement(&target, w, 1), &o);
    assert_eq!(r.total.ops, 2000);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let n = &r.environment.notes;
    assert!(
        n.iter()
            .any(|x| x.contains("header digest on, data digest on")),
        "{n:?}"
    );
}

#[test]
fn bad_inputs_name_the_input_and_the_fix() {
    let (_s, addr) = server();
    let read = |t: &str, bs: u64| placement(t, bounded(RwMode::RandRead, bs, 4), 1);
    let o = opts(false, false);

    let e = err(&read(&format!("nvme-tcp://{addr}"), 4096), &o);
    assert!(
        e.contains("no subsystem NQN") && e.contains("SUBNQN[/NSID]"),
        "{e}"
    );

    // A port nobody listens on: bind one, note it, close it.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = free.local_addr().unwrap();
    drop(free);
    let e = err(&read(&url(dead, 1), 4096), &o);
    assert!(
        e.contains("nothing listens on") && e.contains(&dead.to_string()),
        "{e}"
    );

    let e = err(
        &read(
            &format!("nvme-tcp://{addr}/nqn.2026-11.io.numio:nope/1"),
            4096,
        ),
        &o,
    );
    assert!(e.contains("refused subsystem") && e.contains("nope"), "{e}");

    let e = err(&read(&url(addr, 9), 4096), &o);
    assert!(e.contains("namespace 9 is not in subsystem"), "{e}");

    let e = err(&read(&url(addr, 2), 512), &o);
    assert!(
        e.contains("LBA size 4096") && e.contains("use a multiple of 4096"),
        "{e}"
    );

    let mut w = bounded(RwMode::RandRead, 4096, 4);
    w.size_bytes = Some(NS_BYTES * 2);
    let e = err(&placement(&url(addr, 1), w, 1), &o);
    assert!(e.contains("beyond the end of the target"), "{e}");

    let e = err(
        &placement(&url(addr, 1), bounded(RwMode::RandWrite, 4096, 4), 1),
        &o,
    );
    assert!(e.contains("--force-write") && e.contains("NVMe/TCP"), "{e}");

    let mut uring = opts(false, false);
    uring.backend = BackendKind::Uring;
    let e = err(&read(&url(addr, 1), 4096), &uring);
    assert!(e.contains("use --backend tcp"), "{e}");

    let f = common::TempFile::new("tcp-file", 1 << 20, 0);
    let e = err(&read(&f.path_str(), 4096), &o);
    assert!(e.contains("nvme-tcp://HOST"), "{e}");
}

#[test]
fn reap_with_min_zero_never_waits_and_min_one_does() {
    use engine::backend::{Backend, Completion, IoRequest, TcpBackend};
    use engine::stats::Dir;
    use std::time::{Duration, Instant};

    let (_s, addr) = server();
    let o = TcpOptions::default();
    let info = engine::targets::inspect_tcp(&url(addr, 1), &o).unwrap_or_else(|e| panic!("{e}"));
    let t = info.nvme_tcp().cloned().expect("an NVMe/TCP target");
    let mut b = TcpBackend::connect(&t, 512, 4, 4096, &o).unwrap_or_else(|e| panic!("{e}"));
    let mut out = [Completion::default(); 4];
    // Had it waited, poll(2) would have run into the backend's 10 s reply
    // timeout and reap would have failed; the bound only guards against a
    // wait that somehow returns Ok.
    let t0 = Instant::now();
    assert_eq!(b.reap(&mut out, 0).unwrap(), 0, "nothing in flight");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());

    let mut buf = vec![0xAAu8; 4 * 4096];
    let base = buf.as_mut_ptr();
    for slot in 0..4u32 {
        // SAFETY: each slot reads into its own 4 KiB of `buf`, which is
        // neither touched nor freed until all four completions are reaped
        // below.
        unsafe {
            b.queue(IoRequest {
                slot,
                dir: Dir::Read,
                offset_bytes: u64::from(slot) * 4096,
                len_bytes: 4096,
                buf: base.wrapping_add(slot as usize * 4096),
            })
        };
    }
    b.submit().unwrap();
    let mut got = b.reap(&mut out, 0).unwrap();
    let mut seen: Vec<u32> = out[..got].iter().map(|c| c.slot).collect();
    while got < 4 {
        let n = b.reap(&mut out, 1).unwrap();
        assert!(n >= 1, "min=1 returned {n}");
        seen.extend(out[..n].iter().map(|c| c.slot));
        assert!(out[..n].iter().all(|c| c.result == 4096), "{:?}", &out[..n]);
        got += n;
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2, 3]);
    // A fresh mem: namespace reads back zeroes, into each slot's buffer.
    assert!(buf.iter().all(|&x| x == 0), "C2HData landed in the slots");
}

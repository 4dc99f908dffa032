//! The conformance suite: every backend runs the same workloads over the same
//! temp file; the data backends write a verifiable pattern and read it back
//! (each checking what the other wrote); the no-data backends must leave the
//! file untouched. Tests skip, not fail, where the kernel lacks io_uring.
//!
//! `passthru` cannot use a file: it sends NVMe commands to a namespace's
//! generic character device. Its part of the suite runs the same checks on
//! the device named by `NUMIO_TEST_NVME_GENERIC=/dev/ngXnY` (a scratch
//! namespace: it is overwritten), reading back through the block device with
//! `uring` and the other way round; without one it skips, saying so. The VM
//! lab check `tests/vm/tests/all/32-passthru.sh` runs it on real NVMe.
//!
//! `vfio` drives a PCI controller bound to vfio-pci with numio's own driver:
//! its part runs on `NUMIO_TEST_NVME_PCI=pci:DDDD:BB:SS.F[/NSID]` (a scratch
//! namespace, overwritten) and skips without one; the VM lab check
//! `tests/vm/tests/iommu/20-vfio-bench.sh` runs it behind an emulated IOMMU.
//!
//! `tcp` cannot use a file either: it speaks NVMe/TCP. Its part starts an
//! in-process `nvmf::Server` whose namespace is the suite's temp file, so tcp
//! and the file backends check each other's writes byte for byte.
//!
//! `rdma` does the same over NVMe/RDMA, with the in-process target listening
//! on `NUMIO_TEST_RDMA_ADDR` (an address on an RDMA device: a NIC or
//! soft-RoCE's rxe; RDMA does not run on loopback); without one it skips,
//! saying so. The VM lab check
//! `tests/vm/tests/one-node/75-nvmf-rdma-kernel-host.sh` runs it on rxe.

mod common;

use common::{bounded, placement, run, TempFile};
use engine::{BackendKind, RunOptions};
use planner::{Distribution, RwMode};

const FILE_BYTES: usize = 4 << 20;

fn opts(backend: BackendKind, verify: bool) -> RunOptions {
    RunOptions {
        backend,
        verify,
        ..RunOptions::default()
    }
}

fn uring_available() -> bool {
    io_uring::IoUring::new(4).is_ok()
}

/// Every backend that runs on a file (all but passthru, see the crate doc).
fn backends() -> Vec<BackendKind> {
    let mut v = vec![BackendKind::Sync, BackendKind::Null];
    if uring_available() {
        v.extend([BackendKind::Uring, BackendKind::Nop]);
    } else {
        eprintln!("skipping uring and nop: io_uring_setup is not available on this kernel");
    }
    v
}

#[test]
fn the_suite_names_every_backend() {
    // A new backend must be added to the file suite or to the device suite.
    for b in BackendKind::ALL {
        assert!(
            b == BackendKind::Passthru
                || b == BackendKind::Tcp
                || b == BackendKind::Vfio
                || b == BackendKind::Rdma
                || [
                    BackendKind::Sync,
                    BackendKind::Null,
                    BackendKind::Uring,
                    BackendKind::Nop
                ]
                .contains(&b),
            "{b:?} is not covered by the conformance suite"
        );
    }
}

/// The NVMe generic device passthru runs on, when one is given.
fn passthru_device() -> Option<String> {
    match std::env::var("NUMIO_TEST_NVME_GENERIC") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!(
                "skipping passthru: it needs an NVMe generic device (/dev/ngXnY), which this host lacks; \
                 set NUMIO_TEST_NVME_GENERIC=/dev/ngXnY (a scratch namespace: it is overwritten) to run it; \
                 the VM lab check tests/vm/tests/all/32-passthru.sh covers it"
            );
            None
        }
    }
}

#[test]
fn passthru_completes_exactly_number_ios() {
    let Some(ng) = passthru_device() else { return };
    let mut w = bounded(RwMode::RandRead, 4096, 16);
    w.number_ios = Some(3000);
    w.time_based = true;
    w.runtime_ns = Some(60_000_000_000);
    w.size_bytes = Some(FILE_BYTES as u64);
    let r = run(&placement(&ng, w, 2), &opts(BackendKind::Passthru, false));
    assert_eq!(r.total.ops, 6000, "2 jobs × number_ios 3000");
    assert_eq!(r.total.bytes, 6000 * 4096);
    assert_eq!(r.total.latency.clat.samples, 6000);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.environment.targets[0].kind, "nvme_generic");
    assert!(
        r.environment
            .uring_features
            .iter()
            .any(|f| f == "SQE128+CQE32"),
        "{:?}",
        r.environment.uring_features
    );
}

#[test]
fn passthru_and_uring_read_back_what_the_other_wrote() {
    let Some(ng) = passthru_device() else { return };
    let info = engine::targets::inspect(&ng).unwrap_or_else(|e| panic!("{e}"));
    let engine::targets::TargetKind::NvmeGeneric(g) = info.kind else {
        panic!("NUMIO_TEST_NVME_GENERIC names an NVMe generic device");
    };
    let block = g.block_device;
    if !uring_available() {
        eprintln!("skipping: io_uring_setup is not available on this kernel");
        return;
    }
    let cases = [
        (BackendKind::Passthru, &ng, BackendKind::Uring, &block),
        (BackendKind::Uring, &block, BackendKind::Passthru, &ng),
    ];
    for (wb, wpath, rb, rpath) in cases {
        let mut w = bounded(RwMode::Write, 64 << 10, 8);
        w.size_bytes = Some(FILE_BYTES as u64);
        let r = run(&placement(wpath, w, 1), &opts(wb, true));
        assert_eq!(r.total.bytes, FILE_BYTES as u64, "{wb:?} wrote the region");
        assert!(r.errors.is_empty(), "{wb:?} write: {:?}", r.errors);
        let mut rd = bounded(RwMode::RandRead, 4096, 32);
        rd.size_bytes = Some(FILE_BYTES as u64);
        let res = run(&placement(rpath, rd, 1), &opts(rb, true));
        assert_eq!(res.total.ops, (FILE_BYTES / 4096) as u64, "{rb:?}");
        assert!(
            res.errors.is_empty(),
            "written by {wb:?}, read by {rb:?}: {:?}",
            res.errors
        );
    }
}

#[test]
fn passthru_refuses_files_and_names_the_fix() {
    let f = TempFile::new("passthru", FILE_BYTES, 0);
    let w = bounded(RwMode::Read, 4096, 4);
    let e = engine::run(
        &placement(&f.path_str(), w, 1),
        &opts(BackendKind::Passthru, false),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("a regular file") && e.contains("/dev/ngXnY") && e.contains("--backend uring"),
        "{e}"
    );
}

/// An in-process target serving `f` (page cache, so tmpfs works) as
/// namespace 1 of `nqn`, listening with NVMe/TCP on `tcp` and NVMe/RDMA on
/// `rdma`.
fn served_file(
    f: &TempFile,
    nqn: &str,
    tcp: Vec<std::net::SocketAddr>,
    rdma: Vec<std::net::SocketAddr>,
) -> Result<nvmf::Server, nvmf::TargetError> {
    let mut ns = nvmf::config::NamespaceConfig::new(&f.path_str());
    ns.buffered = true;
    let mut c = nvmf::TargetConfig {
        listen: tcp,
        rdma_listen: rdma,
        discovery_port: 0,
        cpus: vec![0],
        ..Default::default()
    };
    c.subsystems.push(nvmf::config::SubsystemConfig {
        nqn: nqn.into(),
        serial: "CONFORM".into(),
        model: "numio conformance".into(),
        allowed_hosts: vec![],
        allow_any_host: true,
        hosts: Vec::new(),
        namespaces: vec![ns],
    });
    nvmf::Server::start(&c)
}

/// An in-process NVMe/TCP target whose namespace 1 is `f`, and the URL of
/// that namespace.
fn tcp_target(f: &TempFile) -> (nvmf::Server, String) {
    const NQN: &str = "nqn.2026-11.io.numio:conformance";
    let s = served_file(f, NQN, vec!["127.0.0.1:0".parse().unwrap()], Vec::new())
        .expect("in-process NVMe/TCP target starts");
    let url = format!("nvme-tcp://{}/{NQN}/1", s.listen_addrs[0]);
    (s, url)
}

fn tcp_opts(verify: bool) -> RunOptions {
    RunOptions {
        force_write: true,
        ..opts(BackendKind::Tcp, verify)
    }
}

#[test]
fn tcp_completes_exactly_number_ios() {
    let f = TempFile::new("tcp-count", FILE_BYTES, 0);
    let (_s, url) = tcp_target(&f);
    let mut w = bounded(RwMode::RandRead, 4096, 16);
    w.number_ios = Some(3000);
    w.time_based = true;
    w.runtime_ns = Some(60_000_000_000);
    let r = run(&placement(&url, w, 2), &tcp_opts(false));
    assert_eq!(r.total.ops, 6000, "2 jobs × number_ios 3000");
    assert_eq!(r.total.bytes, 6000 * 4096);
    assert_eq!(r.total.latency.clat.samples, 6000);
    assert_eq!(r.total.latency.slat.samples, 6000);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.environment.targets[0].kind, "nvme_tcp");
    assert_eq!(r.environment.targets[0].size_bytes, FILE_BYTES as u64);
}

#[test]
fn tcp_and_file_backends_read_back_what_the_other_wrote() {
    let others: Vec<BackendKind> = data_backends();
    for other in others {
        for tcp_writes in [true, false] {
            let f = TempFile::new("tcp-verify", FILE_BYTES, 0);
            let (_s, url) = tcp_target(&f);
            let file = f.path_str();
            let (wb, wpath, rb, rpath) = if tcp_writes {
                (BackendKind::Tcp, &url, other, &file)
            } else {
                (other, &file, BackendKind::Tcp, &url)
            };
            let w = bounded(RwMode::Write, 64 << 10, 8);
            let mut o = opts(wb, true);
            o.force_write = true;
            let r = run(&placement(wpath, w, 1), &o);
            assert_eq!(r.total.bytes, FILE_BYTES as u64, "{wb:?} wrote the region");
            assert!(r.errors.is_empty(), "{wb:?} write: {:?}", r.errors);
            let rd = bounded(RwMode::RandRead, 4096, 32);
            let res = run(&placement(rpath, rd, 1), &opts(rb, true));
            assert_eq!(res.total.ops, (FILE_BYTES / 4096) as u64, "{rb:?}");
            assert!(
                res.errors.is_empty(),
                "written by {wb:?}, read by {rb:?}: {:?}",
                res.errors
            );
        }
    }
}

#[test]
fn tcp_verify_catches_corruption_and_randrw_keeps_the_pattern() {
    let f = TempFile::new("tcp-corrupt", FILE_BYTES, 0);
    let (_s, url) = tcp_target(&f);
    fill_with_pattern(&f, BackendKind::Sync);
    let mut bytes = f.bytes();
    bytes[12_345] ^= 0xff;
    std::fs::write(&f.path, &bytes).unwrap();
    let res = run(
        &placement(&url, bounded(RwMode::Read, 4096, 4), 1),
        &tcp_opts(true),
    );
    let bad: u64 = res
        .errors
        .iter()
        .filter(|e| e.errno == 84)
        .map(|e| e.count)
        .sum();
    assert_eq!(bad, 1, "tcp must flag exactly the one corrupted block");
    assert_eq!(res.total.ops, (FILE_BYTES / 4096) as u64 - 1);

    fill_with_pattern(&f, BackendKind::Sync);
    let mut w = bounded(RwMode::RandRw, 4096, 16);
    w.rwmixread = 60;
    w.bs_max_bytes = 16384;
    w.number_ios = Some(4000);
    w.norandommap = true;
    w.random_distribution = Distribution::Zipf(1.1);
    w.time_based = true;
    w.runtime_ns = Some(60_000_000_000);
    let r = run(&placement(&url, w, 1), &tcp_opts(true));
    assert!(r.errors.is_empty(), "tcp randrw: {:?}", r.errors);
    assert_eq!(r.read.ops + r.write.ops, 4000);
    let v = run(
        &placement(&f.path_str(), bounded(RwMode::Read, 65536, 4), 1),
        &opts(BackendKind::Sync, true),
    );
    assert!(v.errors.is_empty(), "after tcp randrw: {:?}", v.errors);
}

fn data_backends() -> Vec<BackendKind> {
    backends()
        .into_iter()
        .filter(|b| b.touches_data())
        .collect()
}

/// Writes the verify pattern over the whole file with `backend`.
fn fill_with_pattern(f: &TempFile, backend: BackendKind) {
    let w = bounded(RwMode::Write, 64 << 10, 8);
    let r = run(&placement(&f.path_str(), w, 1), &opts(backend, true));
    assert_eq!(
        r.total.bytes, FILE_BYTES as u64,
        "{backend:?} fill wrote the whole file"
    );
    assert!(
        r.errors.is_empty(),
        "{backend:?} fill errors: {:?}",
        r.errors
    );
}

#[test]
fn every_backend_completes_exactly_number_ios() {
    let f = TempFile::new("count", FILE_BYTES, 0);
    for b in backends() {
        let mut w = bounded(RwMode::RandRead, 4096, 16);
        w.number_ios = Some(3000);
        w.time_based = true;
        w.runtime_ns = Some(60_000_000_000);
        let r = run(&placement(&f.path_str(), w, 2), &opts(b, false));
        assert_eq!(r.total.ops, 6000, "{b:?}: 2 jobs × number_ios 3000");
        assert_eq!(r.total.bytes, 6000 * 4096, "{b:?}");
        assert_eq!(
            r.total.latency.clat.samples, 6000,
            "{b:?}: one clat sample per I/O"
        );
        assert_eq!(
            r.total.latency.slat.samples, 6000,
            "{b:?}: one slat sample per I/O"
        );
        assert_eq!(r.targets[0].workers.len(), 2);
        assert!(r.errors.is_empty(), "{b:?}: {:?}", r.errors);
        assert!(r.total.latency.lat.min_ns >= r.total.latency.clat.min_ns);
    }
}

#[test]
fn data_backends_read_back_what_the_others_wrote() {
    let writers = data_backends();
    for w in &writers {
        for r in &writers {
            let f = TempFile::new("verify", FILE_BYTES, 0);
            fill_with_pattern(&f, *w);
            let rd = bounded(RwMode::RandRead, 4096, 32);
            let res = run(&placement(&f.path_str(), rd, 1), &opts(*r, true));
            assert_eq!(
                res.total.ops,
                (FILE_BYTES / 4096) as u64,
                "{r:?} read every block once (random map)"
            );
            assert!(
                res.errors.is_empty(),
                "written by {w:?}, read by {r:?}: {:?}",
                res.errors
            );
        }
    }
}

#[test]
fn verify_catches_corruption() {
    for b in data_backends() {
        let f = TempFile::new("corrupt", FILE_BYTES, 0);
        fill_with_pattern(&f, BackendKind::Sync);
        let mut bytes = f.bytes();
        bytes[12_345] ^= 0xff;
        std::fs::write(&f.path, &bytes).unwrap();
        let rd = bounded(RwMode::Read, 4096, 4);
        let res = run(&placement(&f.path_str(), rd, 1), &opts(b, true));
        let bad: u64 = res
            .errors
            .iter()
            .filter(|e| e.errno == 84)
            .map(|e| e.count)
            .sum();
        assert_eq!(bad, 1, "{b:?} must flag exactly the one corrupted block");
        assert_eq!(res.total.ops, (FILE_BYTES / 4096) as u64 - 1);
    }
}

#[test]
fn mixed_random_writes_keep_the_pattern_consistent() {
    for b in data_backends() {
        let f = TempFile::new("randrw", FILE_BYTES, 0);
        fill_with_pattern(&f, b);
        let mut w = bounded(RwMode::RandRw, 4096, 16);
        w.rwmixread = 60;
        w.bs_max_bytes = 16384;
        w.number_ios = Some(4000);
        w.norandommap = true;
        w.random_distribution = Distribution::Zipf(1.1);
        w.time_based = true;
        w.runtime_ns = Some(60_000_000_000);
        let r = run(&placement(&f.path_str(), w, 1), &opts(b, true));
        assert!(r.errors.is_empty(), "{b:?}: {:?}", r.errors);
        assert_eq!(r.read.ops + r.write.ops, 4000);
        assert!(
            r.read.ops > 2000 && r.write.ops > 1000,
            "{b:?}: rwmixread=60 gave {} / {}",
            r.read.ops,
            r.write.ops
        );
        // Everything written must still read back (sync as the reference).
        let rd = bounded(RwMode::Read, 65536, 4);
        let v = run(
            &placement(&f.path_str(), rd, 1),
            &opts(BackendKind::Sync, true),
        );
        assert!(v.errors.is_empty(), "after {b:?} randrw: {:?}", v.errors);
    }
}

#[test]
fn no_data_backends_leave_the_file_untouched() {
    let f = TempFile::new("untouched", FILE_BYTES, 0x5a);
    for b in backends().into_iter().filter(|b| !b.touches_data()) {
        let w = bounded(RwMode::Write, 4096, 8);
        let r = run(&placement(&f.path_str(), w, 1), &opts(b, false));
        assert_eq!(r.write.ops, (FILE_BYTES / 4096) as u64, "{b:?}");
        assert!(
            f.bytes().iter().all(|&x| x == 0x5a),
            "{b:?} wrote to the file"
        );
    }
}

#[test]
fn size_bounded_sequential_read_covers_the_region_once() {
    let f = TempFile::new("size", FILE_BYTES, 1);
    for b in backends() {
        let mut w = bounded(RwMode::Read, 8192, 4);
        w.offset_bytes = 1 << 20;
        w.size_bytes = Some(1 << 20);
        let r = run(&placement(&f.path_str(), w, 1), &opts(b, false));
        assert_eq!(r.total.ops, 128, "{b:?}: 1 MiB / 8 KiB");
        assert_eq!(r.total.bytes, 1 << 20);
    }
}

#[test]
fn rate_iops_caps_the_rate() {
    let f = TempFile::new("rate", FILE_BYTES, 1);
    let mut w = bounded(RwMode::RandRead, 4096, 8);
    w.rate_iops = Some(200);
    w.time_based = true;
    w.runtime_ns = Some(300_000_000);
    let r = run(
        &placement(&f.path_str(), w, 1),
        &opts(BackendKind::Null, false),
    );
    // The limiter allows rate × elapsed + 1; elapsed includes the drain.
    let elapsed_s = r.runtime_ns as f64 / 1e9;
    assert!(
        r.total.ops as f64 <= 200.0 * elapsed_s + 2.0,
        "{} ops in {elapsed_s} s",
        r.total.ops
    );
    assert!(r.total.ops >= 1);
}

#[test]
fn bad_workloads_fail_before_any_io() {
    let f = TempFile::new("bad", 1 << 20, 0);
    let mut w = bounded(RwMode::Read, 4096, 4);
    w.size_bytes = Some(2 << 20);
    let e = engine::run(
        &placement(&f.path_str(), w, 1),
        &RunOptions::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("beyond the end"), "{e}");
    let w = bounded(RwMode::Read, 4096, 4);
    let e = engine::run(
        &placement("/nonexistent/numio", w, 1),
        &RunOptions::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/numio"), "{e}");
}

#[test]
fn every_uring_setup_runs_and_says_what_it_got() {
    if !uring_available() {
        eprintln!("skipping: io_uring_setup is not available on this kernel");
        return;
    }
    let f = TempFile::new("setup", FILE_BYTES, 0);
    fill_with_pattern(&f, BackendKind::Sync);
    for setup in [
        engine::UringSetup::Auto,
        engine::UringSetup::DeferTaskrun,
        engine::UringSetup::CoopTaskrun,
        engine::UringSetup::Plain,
    ] {
        let mut o = opts(BackendKind::Uring, true);
        o.uring.setup = setup;
        let r = run(
            &placement(&f.path_str(), bounded(RwMode::RandRead, 4096, 8), 1),
            &o,
        );
        assert_eq!(r.total.ops, (FILE_BYTES / 4096) as u64, "{setup:?}");
        assert!(r.errors.is_empty(), "{setup:?}: {:?}", r.errors);
        let feats = &r.environment.uring_features;
        if setup == engine::UringSetup::Plain {
            assert!(!feats.iter().any(|f| f.contains("TASKRUN")), "{feats:?}");
        }
        assert!(
            feats.iter().any(|f| f == "fixed buffers"),
            "{setup:?}: {feats:?}"
        );
    }
}

/// An in-process target whose namespace 1 is `f`, listening with NVMe/RDMA
/// on `NUMIO_TEST_RDMA_ADDR`, and the URL of that namespace; `None` (with
/// why) without the variable.
fn rdma_target(f: &TempFile) -> Option<(nvmf::Server, String)> {
    let ip = match std::env::var("NUMIO_TEST_RDMA_ADDR") {
        Ok(a) if !a.is_empty() => a,
        _ => {
            eprintln!(
                "skipping rdma: it needs an address on an RDMA device (a NIC, or rxe: modprobe rdma_rxe; \
                 rdma link add rxe0 type rxe netdev IFACE); set NUMIO_TEST_RDMA_ADDR=IP to run it; \
                 the VM lab check tests/vm/tests/one-node/75-nvmf-rdma-kernel-host.sh covers it"
            );
            return None;
        }
    };
    const NQN: &str = "nqn.2026-11.io.numio:conformance-rdma";
    let rdma = format!("{ip}:0")
        .parse()
        .expect("NUMIO_TEST_RDMA_ADDR is an IP address");
    let s = served_file(f, NQN, Vec::new(), vec![rdma])
        .unwrap_or_else(|e| panic!("in-process NVMe/RDMA target: {e}"));
    let url = format!("nvme-rdma://{}/{NQN}/1", s.rdma_addrs[0]);
    Some((s, url))
}

/// `w` through the page cache: the file side of the rdma checks, whose temp
/// file may be on tmpfs (the VM lab's guest), which has no O_DIRECT; the
/// in-process target reads and writes it buffered too.
fn buffered(mut w: planner::Workload) -> planner::Workload {
    w.direct = false;
    w
}

#[test]
fn rdma_completes_exactly_number_ios() {
    let f = TempFile::new("rdma-count", FILE_BYTES, 0);
    let Some((_s, url)) = rdma_target(&f) else {
        return;
    };
    let mut w = bounded(RwMode::RandRead, 4096, 16);
    w.number_ios = Some(3000);
    w.time_based = true;
    w.runtime_ns = Some(60_000_000_000);
    let r = run(&placement(&url, w, 2), &opts(BackendKind::Rdma, false));
    assert_eq!(
        r.total.ops, 6000,
        "2 jobs (two RDMA queues) × number_ios 3000"
    );
    assert_eq!(r.total.bytes, 6000 * 4096);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.environment.targets[0].kind, "nvme_rdma");
    assert_eq!(r.environment.targets[0].size_bytes, FILE_BYTES as u64);
}

#[test]
fn rdma_and_file_backends_read_back_what_the_other_wrote() {
    for rdma_writes in [true, false] {
        // 64 KiB writes by the target's RDMA READ, 4 KiB in the capsule.
        for bs in [64 << 10, 4096] {
            let f = TempFile::new("rdma-verify", FILE_BYTES, 0);
            let Some((_s, url)) = rdma_target(&f) else {
                return;
            };
            let file = f.path_str();
            let (wb, wpath, rb, rpath) = if rdma_writes {
                (BackendKind::Rdma, &url, BackendKind::Sync, &file)
            } else {
                (BackendKind::Sync, &file, BackendKind::Rdma, &url)
            };
            let mut o = opts(wb, true);
            o.force_write = true;
            let r = run(
                &placement(wpath, buffered(bounded(RwMode::Write, bs, 8)), 1),
                &o,
            );
            assert_eq!(
                r.total.bytes, FILE_BYTES as u64,
                "{wb:?} bs {bs} wrote the region"
            );
            assert!(r.errors.is_empty(), "{wb:?} write: {:?}", r.errors);
            let res = run(
                &placement(rpath, buffered(bounded(RwMode::RandRead, 4096, 32)), 1),
                &opts(rb, true),
            );
            assert_eq!(res.total.ops, (FILE_BYTES / 4096) as u64, "{rb:?}");
            assert!(
                res.errors.is_empty(),
                "written by {wb:?} (bs {bs}), read by {rb:?}: {:?}",
                res.errors
            );
        }
    }
}

#[test]
fn rdma_verify_catches_corruption() {
    let f = TempFile::new("rdma-corrupt", FILE_BYTES, 0);
    let Some((_s, url)) = rdma_target(&f) else {
        return;
    };
    let w = buffered(bounded(RwMode::Write, 64 << 10, 8));
    let r = run(
        &placement(&f.path_str(), w, 1),
        &opts(BackendKind::Sync, true),
    );
    assert!(r.errors.is_empty(), "sync fill: {:?}", r.errors);
    let mut bytes = f.bytes();
    bytes[12_345] ^= 0xff;
    std::fs::write(&f.path, &bytes).unwrap();
    let res = run(
        &placement(&url, bounded(RwMode::Read, 4096, 4), 1),
        &RunOptions {
            force_write: true,
            ..opts(BackendKind::Rdma, true)
        },
    );
    let bad: u64 = res
        .errors
        .iter()
        .filter(|e| e.errno == 84)
        .map(|e| e.count)
        .sum();
    assert_eq!(
        bad, 1,
        "one corrupted block found over RDMA: {:?}",
        res.errors
    );
}

/// The PCI namespace the vfio backend runs on, when one is given.
fn vfio_target() -> Option<String> {
    match std::env::var("NUMIO_TEST_NVME_PCI") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!(
                "skipping vfio: it needs a PCI NVMe controller bound to vfio-pci behind an IOMMU; \
                 set NUMIO_TEST_NVME_PCI=pci:DDDD:BB:SS.F/NSID (a scratch namespace: it is overwritten) to run it; \
                 the VM lab check tests/vm/tests/iommu/20-vfio-bench.sh covers it"
            );
            None
        }
    }
}

#[test]
fn vfio_completes_exactly_number_ios_and_reads_back_what_it_wrote() {
    let Some(pci) = vfio_target() else { return };
    let mut w = bounded(RwMode::RandRead, 4096, 16);
    w.number_ios = Some(3000);
    w.time_based = true;
    w.runtime_ns = Some(60_000_000_000);
    w.size_bytes = Some(FILE_BYTES as u64);
    let r = run(&placement(&pci, w, 2), &opts(BackendKind::Vfio, false));
    assert_eq!(
        r.total.ops, 6000,
        "2 jobs (two queue pairs) × number_ios 3000"
    );
    assert_eq!(r.total.bytes, 6000 * 4096);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.environment.targets[0].kind, "nvme_pci");
    // Large blocks go through PRP lists, small ones through PRP1/PRP2;
    // with SGLs (QEMU's NVMe takes them) each through one data block.
    use engine::backend::vfio::{DataPointer, VfioOptions};
    for (bs, dptr) in [
        (64 << 10, DataPointer::Prp),
        (4096, DataPointer::Prp),
        (8192, DataPointer::Prp),
        (64 << 10, DataPointer::Sgl),
        (4096, DataPointer::Sgl),
        (256 << 10, DataPointer::Auto),
    ] {
        let mut wr = bounded(RwMode::Write, bs, 8);
        wr.size_bytes = Some(FILE_BYTES as u64);
        let o = RunOptions {
            force_write: true,
            vfio: VfioOptions { data_pointer: dptr },
            ..opts(BackendKind::Vfio, true)
        };
        let r = run(&placement(&pci, wr, 1), &o);
        assert_eq!(
            r.total.bytes, FILE_BYTES as u64,
            "bs {bs} {dptr:?}: wrote the region"
        );
        assert!(
            r.errors.is_empty(),
            "bs {bs} {dptr:?} write: {:?}",
            r.errors
        );
        let named = if dptr == DataPointer::Prp {
            "PRP"
        } else {
            "SGL"
        };
        // The backend's set-up facts (environment.uring_features holds
        // every backend's) name the data pointers it used.
        let f = &r.environment.uring_features;
        assert!(
            f.iter()
                .any(|f| f.starts_with("data pointers:") && f.contains(named)),
            "bs {bs} {dptr:?}: the set-up names {named}: {f:?}"
        );
        let mut rd = bounded(RwMode::RandRead, 4096, 32);
        rd.size_bytes = Some(FILE_BYTES as u64);
        let res = run(&placement(&pci, rd, 1), &opts(BackendKind::Vfio, true));
        assert_eq!(res.total.ops, (FILE_BYTES / 4096) as u64);
        assert!(
            res.errors.is_empty(),
            "bs {bs} {dptr:?} read-verify: {:?}",
            res.errors
        );
    }
}

#[test]
fn vfio_reports_a_failed_command_with_its_status_and_the_error_log() {
    use engine::backend::{Backend, Completion, IoRequest, VfioBackend};
    let Some(pci) = vfio_target() else { return };
    let info = engine::targets::inspect(&pci).unwrap_or_else(|e| panic!("{e}"));
    let engine::targets::TargetKind::Pci(ns) = &info.kind else {
        panic!("{pci} is not a PCI namespace")
    };
    let (buf, _) = engine::sys::NodeBuffer::new(4096, None).unwrap();
    let mut b = VfioBackend::new(
        ns.ctrl.clone(),
        ns.nsid,
        info.logical_block_size_bytes,
        1,
        (buf.as_ptr(), buf.len_bytes()),
        4096,
        None,
        engine::backend::vfio::DataPointer::Prp,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: slot 0's buffer is `buf`, which outlives `b`; it is not
    // touched before the completion is reaped.
    unsafe {
        b.queue(IoRequest {
            slot: 0,
            dir: engine::stats::Dir::Read,
            offset_bytes: info.size_bytes,
            len_bytes: 4096,
            buf: buf.as_ptr(),
        })
    };
    b.submit().unwrap();
    let mut out = [Completion::default()];
    assert_eq!(b.reap(&mut out, 1).unwrap(), 1);
    // LBA Out of Range: generic status 0x80, as passthru reports it.
    assert_eq!(
        out[0].result,
        -(results::NVME_STATUS_BASE + 0x80),
        "{out:?}"
    );
    let notes = b.end_notes.clone();
    drop(b);
    let notes = notes.lock().unwrap().clone();
    assert!(
        notes.iter().any(|n| n.contains("error log")),
        "the failed I/O left the controller's error log (or its absence) in the notes: {notes:?}"
    );
}

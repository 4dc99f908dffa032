//! The multipath tcp backend's hot path allocates nothing: a counting
//! allocator counts the worker thread's allocations while
//! `WorkerLoop::run` drives N steady-state I/Os round-robin over two
//! listeners of an in-process `nvmf::Server` (its threads, and the paths'
//! admin-queue threads, are not counted). The backend is dropped inside
//! the counted run, so publishing its per-path counts is counted too.
//! (A test binary of its own: the global allocator is per binary.)

use engine::backend::tcp::MultipathBackend;
use engine::backend::TcpOptions;
use engine::sys::NodeBuffer;
use nvmf::config::{NamespaceConfig, SubsystemConfig};
use nvmf::host::IoPolicy;
use nvmf::{Server, TargetConfig};
use planner::{RwMode, Workload};

mod counting_alloc;

use counting_alloc::{steady_state, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

const NQN: &str = "nqn.2026-11.io.numio:engine-mp-alloc";
const DEPTH: usize = 16;
const STEADY_IOS: u64 = 20_000;
const REGION_BYTES: u64 = 8 << 20;

#[test]
fn no_allocation_in_steady_state_on_two_paths() {
    let mut c = TargetConfig {
        listen: vec![
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.1:0".parse().unwrap(),
        ],
        discovery_port: 0,
        cpus: vec![0],
        ..Default::default()
    };
    c.subsystems.push(SubsystemConfig {
        nqn: NQN.into(),
        serial: "MPALLOC".into(),
        model: "numio engine multipath alloc".into(),
        allowed_hosts: vec![],
        allow_any_host: true,
        hosts: Vec::new(),
        namespaces: vec![NamespaceConfig::new("mem:8M")],
    });
    let server = Server::start(&c).expect("target starts");
    let url = format!(
        "nvme-tcp://{}/{NQN}/1,nvme-tcp://{}/{NQN}/1",
        server.listen_addrs[0], server.listen_addrs[1]
    );
    let o = TcpOptions {
        iopolicy: IoPolicy::RoundRobin,
        ..TcpOptions::default()
    };
    let info = engine::targets::inspect_tcp(&url, &o).unwrap_or_else(|e| panic!("{e}"));
    let t = info.nvme_tcp().cloned().expect("an NVMe/TCP target");
    assert_eq!(t.portals.len(), 2);
    for (rw, bs) in [(RwMode::RandRead, 4096usize), (RwMode::RandWrite, 64 << 10)] {
        let (buf, _) = NodeBuffer::new(DEPTH * bs, None).unwrap();
        let b = MultipathBackend::connect(&t, info.logical_block_size_bytes, DEPTH, bs, &o, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let report = b.report();
        let w = Workload {
            rw,
            bs_min_bytes: bs as u64,
            bs_max_bytes: bs as u64,
            iodepth: DEPTH as u32,
            norandommap: true,
            ..Workload::default()
        };
        let (out, allocs) = steady_state(b, &w, REGION_BYTES, &buf, bs, STEADY_IOS, None);
        assert_eq!(out.stats.ops[0] + out.stats.ops[1], STEADY_IOS, "{rw:?}");
        assert_eq!(out.stats.error_count(), 0, "{rw:?}");
        assert_eq!(
            allocs, 0,
            "multipath allocated {allocs} times over {STEADY_IOS} I/Os ({rw:?} bs {bs})"
        );
        let r = report.lock().unwrap().take().expect("counts published");
        let ios: Vec<u64> = r.paths.iter().map(|p| p.ios).collect();
        assert_eq!(ios.iter().sum::<u64>(), STEADY_IOS, "{r:?}");
        assert!(
            ios[0].abs_diff(ios[1]) <= DEPTH as u64,
            "round-robin: {ios:?}"
        );
    }
}

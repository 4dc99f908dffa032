//! The tcp backend's hot path allocates nothing: a counting allocator counts
//! the worker thread's allocations while `WorkerLoop::run` drives N
//! steady-state I/Os over loopback to an in-process `nvmf::Server` (whose
//! own threads are not counted). Reads, in-capsule 4 KiB writes and 64 KiB
//! writes sent through R2T/H2CData. (A test binary of its own: the global
//! allocator is per binary; the counting allocator is shared with
//! `zero_alloc.rs` through `counting_alloc/`.)

use engine::backend::{TcpBackend, TcpOptions};
use engine::sys::NodeBuffer;
use nvmf::config::{NamespaceConfig, SubsystemConfig};
use nvmf::{Server, TargetConfig};
use planner::{RwMode, Workload};

mod counting_alloc;

use counting_alloc::{steady_state, tracked, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

const NQN: &str = "nqn.2026-11.io.numio:engine-tcp-alloc";
const DEPTH: usize = 32;
const STEADY_IOS: u64 = 20_000;
const REGION_BYTES: u64 = 8 << 20;

#[test]
fn no_allocation_in_steady_state_on_tcp() {
    let mut c = TargetConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        discovery_port: 0,
        cpus: vec![0],
        ..Default::default()
    };
    c.subsystems.push(SubsystemConfig {
        nqn: NQN.into(),
        serial: "TCPALLOC".into(),
        model: "numio engine tcp alloc".into(),
        allowed_hosts: vec![],
        allow_any_host: true,
        hosts: Vec::new(),
        namespaces: vec![NamespaceConfig::new("mem:8M")],
    });
    let server = Server::start(&c).expect("target starts");
    let url = format!("nvme-tcp://{}/{NQN}/1", server.listen_addrs[0]);
    let o = TcpOptions::default();
    let info = engine::targets::inspect_tcp(&url, &o).unwrap_or_else(|e| panic!("{e}"));
    let t = info.nvme_tcp().cloned().expect("an NVMe/TCP target");
    for (rw, bs, verify) in [
        (RwMode::RandRead, 4096usize, false),
        (RwMode::RandWrite, 4096, false),
        (RwMode::RandRw, 4096, true),
        (RwMode::RandWrite, 64 << 10, false),
    ] {
        let (buf, _) = NodeBuffer::new(DEPTH * bs, None).unwrap();
        let b = TcpBackend::connect(&t, info.logical_block_size_bytes, DEPTH, bs, &o)
            .unwrap_or_else(|e| panic!("{e}"));
        let w = Workload {
            rw,
            bs_min_bytes: bs as u64,
            bs_max_bytes: bs as u64,
            iodepth: DEPTH as u32,
            norandommap: true,
            ..Workload::default()
        };
        let key = verify.then_some(engine::worker::VerifyKey {
            write: results::VerifyStamp {
                generation: 1,
                seed: 7,
            },
            expect: None,
            also: None,
            job: 0,
            replay_window: None,
        });
        let (out, allocs) = steady_state(b, &w, REGION_BYTES, &buf, bs, STEADY_IOS, key);
        let ops = out.stats.ops[0] + out.stats.ops[1];
        let errors = out.stats.error_count();
        assert_eq!(ops + errors, STEADY_IOS, "{rw:?} bs {bs}");
        // The mixed verify run reads blocks no write has reached yet: those
        // count as verify errors; every other run must have none.
        if !verify {
            assert_eq!(errors, 0, "{rw:?} bs {bs}");
        }
        assert_eq!(
            allocs, 0,
            "tcp allocated {allocs} times over {STEADY_IOS} I/Os ({rw:?} bs {bs})"
        );
    }
}

#[test]
fn the_counter_does_count() {
    // Guards the guard: an allocation on a tracked thread must be seen.
    let (v, allocs) = tracked(|| Vec::<u8>::with_capacity(10));
    drop(v);
    assert_eq!(allocs, 1);
}

//! Proves the hot path allocates nothing: a counting global allocator counts
//! every allocation made by the worker thread while `WorkerLoop::run` drives
//! N steady-state I/Os on each backend; the count must be zero.

mod common;
mod counting_alloc;

use std::os::fd::AsRawFd;

use common::{bounded, TempFile};
use counting_alloc::{steady_state, tracked, Counting};
use engine::backend::{
    Backend, NullBackend, NvmeNamespace, PassthruBackend, SyncBackend, UringBackend, UringOptions,
};
use engine::sys::NodeBuffer;
use planner::RwMode;

#[global_allocator]
static GLOBAL: Counting = Counting;

const DEPTH: usize = 32;
const STEADY_IOS: u64 = 50_000;

/// Runs STEADY_IOS random reads (and a mix with writes) through `backend`
/// and returns the allocations made during the loop, the I/Os completed
/// (failed ones included) and the failed ones.
fn allocations_during_loop<B: Backend>(
    backend: B,
    buf: &NodeBuffer,
    mixed: bool,
) -> (u64, u64, u64) {
    let mut w = bounded(
        if mixed {
            RwMode::RandRw
        } else {
            RwMode::RandRead
        },
        4096,
        DEPTH as u32,
    );
    w.norandommap = true;
    let verify = mixed.then_some(engine::worker::VerifyKey {
        write: results::VerifyStamp {
            generation: 1,
            seed: 7,
        },
        expect: None,
        also: None,
        job: 0,
        replay_window: None,
    });
    let (out, allocs) = steady_state(backend, &w, 8 << 20, buf, 4096, STEADY_IOS, verify);
    let errors = out.stats.error_count();
    (allocs, out.stats.ops[0] + out.stats.ops[1] + errors, errors)
}

/// With the measured time cut into intervals, the loop allocates only at
/// the cuts (the histograms' serialization), never per I/O.
#[test]
fn intervals_allocate_only_at_their_cuts() {
    let (buf, _) = NodeBuffer::new(DEPTH * 4096, None).unwrap();
    let mut w = bounded(RwMode::RandRead, 4096, DEPTH as u32);
    w.norandommap = true;
    let ios = 4 * STEADY_IOS;
    let (out, allocs) = counting_alloc::cut_every(
        NullBackend::new(DEPTH),
        &w,
        8 << 20,
        &buf,
        4096,
        ios,
        None,
        Some(2_000_000),
    );
    let cuts = out.intervals.len() as u64;
    assert!(
        cuts >= 2,
        "a 2 ms grid over {ios} I/Os made {cuts} intervals"
    );
    let in_intervals: u64 = out.intervals.iter().map(|i| i.ops[0]).sum();
    assert_eq!(in_intervals, ios);
    assert_eq!(out.stats.ops[0], ios);
    // Each cut serializes three histograms (the serializer's and the
    // deflater's buffers, the hex text: under 200 allocations) and the list
    // of intervals grows by doubling: a few hundred per cut, none per I/O.
    assert!(
        allocs <= 256 * cuts + 256,
        "{allocs} allocations over {cuts} intervals of {ios} I/Os"
    );
}

#[test]
fn no_allocation_in_steady_state_on_any_backend() {
    let f = TempFile::new("alloc", 8 << 20, 3);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&f.path)
        .unwrap();
    let fd = file.as_raw_fd();
    let (buf, _) = NodeBuffer::new(DEPTH * 4096, None).unwrap();
    for mixed in [false, true] {
        let (a, ops, _) = allocations_during_loop(NullBackend::new(DEPTH), &buf, mixed);
        assert_eq!(ops, STEADY_IOS);
        assert_eq!(
            a, 0,
            "null backend allocated {a} times over {ops} I/Os (mixed={mixed})"
        );
        let (a, ops, _) = allocations_during_loop(SyncBackend::new(fd, DEPTH), &buf, mixed);
        assert_eq!(ops, STEADY_IOS);
        assert_eq!(
            a, 0,
            "sync backend allocated {a} times over {ops} I/Os (mixed={mixed})"
        );
        let region = (buf.as_ptr(), buf.len_bytes());
        for nop in [false, true] {
            let Ok(b) = UringBackend::new(fd, DEPTH as u32, region, &UringOptions::default(), nop)
            else {
                eprintln!("skipping io_uring: set-up failed on this kernel");
                continue;
            };
            let (a, ops, _) = allocations_during_loop(b, &buf, mixed);
            assert_eq!(ops, STEADY_IOS);
            assert_eq!(
                a, 0,
                "uring (nop={nop}) allocated {a} times over {ops} I/Os (mixed={mixed})"
            );
        }
        // passthru on a file: the kernel fails every command (no uring_cmd
        // handler), which still runs its whole queue/submit/reap path.
        let ns = NvmeNamespace {
            nsid: 1,
            lba_bytes: 512,
        };
        match PassthruBackend::new(fd, ns, DEPTH as u32, region, &UringOptions::default()) {
            Ok(b) => {
                let (a, ops, _) = allocations_during_loop(b, &buf, mixed);
                assert_eq!(ops, STEADY_IOS);
                assert_eq!(
                    a, 0,
                    "passthru allocated {a} times over {ops} I/Os (mixed={mixed})"
                );
            }
            Err(e) => eprintln!("skipping passthru: SQE128+CQE32 set-up failed ({e})"),
        }
    }
}

/// passthru on a real NVMe generic device (`NUMIO_TEST_NVME_GENERIC`, a
/// scratch namespace: the mixed pass writes), where commands succeed; the VM
/// lab has one. Skips, saying so, without it.
#[test]
fn no_allocation_in_steady_state_on_an_nvme_generic_device() {
    let Some(ng) = std::env::var("NUMIO_TEST_NVME_GENERIC")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        eprintln!("skipping: set NUMIO_TEST_NVME_GENERIC=/dev/ngXnY (a scratch namespace) to run passthru on a device");
        return;
    };
    let info = engine::targets::inspect(&ng).unwrap_or_else(|e| panic!("{e}"));
    let ns = info
        .nvme_namespace()
        .expect("NUMIO_TEST_NVME_GENERIC names an NVMe generic device");
    assert!(
        info.size_bytes >= 8 << 20,
        "the namespace holds the 8 MiB region"
    );
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&ng)
        .unwrap();
    let (buf, _) = NodeBuffer::new(DEPTH * 4096, None).unwrap();
    let region = (buf.as_ptr(), buf.len_bytes());
    for mixed in [false, true] {
        let b = PassthruBackend::start(
            file.as_raw_fd(),
            ns,
            DEPTH as u32,
            region,
            &UringOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (a, ops, errors) = allocations_during_loop(b, &buf, mixed);
        assert_eq!(ops, STEADY_IOS);
        if !mixed {
            assert_eq!(errors, 0, "passthru reads on {ng} failed");
        }
        assert_eq!(
            a, 0,
            "passthru on {ng} allocated {a} times over {ops} I/Os (mixed={mixed})"
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

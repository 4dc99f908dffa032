//! The vfio backend's hot path allocates nothing: a counting allocator
//! counts the worker thread's allocations while `WorkerLoop::run` drives N
//! steady-state I/Os through numio's own driver (reads, 4 KiB writes and
//! 64 KiB writes through PRP lists). It needs a PCI NVMe controller bound
//! to vfio-pci: `NUMIO_TEST_NVME_PCI=pci:DDDD:BB:SS.F/NSID` (a scratch
//! namespace: it is overwritten); without one it skips, saying so. The VM
//! lab check `tests/vm/tests/iommu/20-vfio-bench.sh` runs it. (A test
//! binary of its own: the global allocator is per binary.)

use engine::backend::VfioBackend;
use engine::sys::NodeBuffer;
use planner::{RwMode, Workload};

mod counting_alloc;

use counting_alloc::{steady_state, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

const DEPTH: usize = 32;
const STEADY_IOS: u64 = 20_000;
const REGION_BYTES: u64 = 8 << 20;

#[test]
fn no_allocation_in_steady_state_on_vfio() {
    let target = match std::env::var("NUMIO_TEST_NVME_PCI") {
        Ok(t) if !t.is_empty() => t,
        _ => {
            eprintln!(
                "skipping: set NUMIO_TEST_NVME_PCI=pci:DDDD:BB:SS.F/NSID (a controller bound to vfio-pci, a scratch namespace) to run it; the VM lab check tests/vm/tests/iommu/20-vfio-bench.sh does"
            );
            return;
        }
    };
    let info = engine::targets::inspect(&target).unwrap_or_else(|e| panic!("{e}"));
    let engine::targets::TargetKind::Pci(ns) = &info.kind else {
        panic!("{target} is not a PCI namespace")
    };
    use engine::backend::vfio::DataPointer;
    for (rw, bs, dptr) in [
        (RwMode::RandRead, 4096usize, DataPointer::Prp),
        (RwMode::RandWrite, 4096, DataPointer::Prp),
        (RwMode::RandWrite, 64 << 10, DataPointer::Prp),
        (RwMode::RandRead, 64 << 10, DataPointer::Sgl),
    ] {
        let (buf, _) = NodeBuffer::new(DEPTH * bs, None).unwrap();
        let b = VfioBackend::new(
            ns.ctrl.clone(),
            ns.nsid,
            info.logical_block_size_bytes,
            DEPTH,
            (buf.as_ptr(), buf.len_bytes()),
            bs,
            None,
            dptr,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let w = Workload {
            rw,
            bs_min_bytes: bs as u64,
            bs_max_bytes: bs as u64,
            iodepth: DEPTH as u32,
            norandommap: true,
            ..Workload::default()
        };
        let (out, allocs) = steady_state(b, &w, REGION_BYTES, &buf, bs, STEADY_IOS, None);
        let ops = out.stats.ops[0] + out.stats.ops[1];
        assert_eq!(
            ops, STEADY_IOS,
            "{rw:?} bs {bs} {dptr:?}: every I/O succeeded"
        );
        assert_eq!(
            allocs, 0,
            "vfio allocated {allocs} times over {STEADY_IOS} I/Os ({rw:?} bs {bs} {dptr:?})"
        );
    }
}

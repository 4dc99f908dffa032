//! The `vfio` backend: numio's own user-space NVMe driver. A PCI NVMe
//! controller bound to `vfio-pci` is opened through VFIO (`sysapi::vfio`:
//! container, IOMMU group, BAR0), reset and enabled by [`ctrl`]; each
//! worker then owns one I/O queue pair created by admin commands (Create
//! I/O CQ with interrupts off, Create I/O SQ), in memory on the worker's
//! node mapped into the IOMMU once at start-up, together with the worker's
//! buffer region.
//!
//! Hot path (no lock, no shared atomic, no allocation, no system call):
//! `queue` patches a per-direction 64-byte SQE template (command id = the
//! slot, the data pointer, SLBA, NLB) straight into the submission queue;
//! `submit` writes the SQ tail doorbell once per batch (after a store
//! fence); `reap` polls the completion queue's phase bit, hands completions
//! back and writes the CQ head doorbell once per batch.
//!
//! The data pointer ([`DataPointer`]) is PRP1/PRP2, with PRP lists built at
//! start-up (one 4 KiB page per slot, since a slot's buffer never moves),
//! or one SGL Data Block descriptor per command where the controller takes
//! SGLs: a slot is contiguous in bus address space, so one descriptor names
//! all of it and the controller fetches no list.
//!
//! Failures the device can have mid-run are seen by `reap`: a completion
//! with an error status is the I/O's result (`-(NVME_STATUS_BASE + SCT<<8|SC)`,
//! as passthru reports it); a controller whose registers read all ones
//! (removed), or with CSTS.CFS set, or that completes nothing for
//! [`STALL`], fails the run with an error naming it.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvme_spec::command::io::{READ, WRITE};
use nvme_spec::pci::{self, csts, reg};
use results::NVME_STATUS_BASE;
use sysapi::vfio::{load_fence, DmaMem};

use super::{Backend, Completion, IoRequest};

pub mod ctrl;
pub mod target;

use ctrl::PAGE;
pub use ctrl::{Controller, CtrlError, CtrlFailure};

/// How long a queue with I/O in flight may complete nothing before the run
/// fails (the controller is hung).
pub const STALL: Duration = Duration::from_secs(30);
/// Polls of an empty completion queue between checks of the controller's
/// status and the stall clock.
const POLLS_PER_CHECK: u32 = 1 << 16;

/// Why a worker's queue pair (or a probe's) could not be set up or read.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    /// The controller refused (an admin command, queue ids).
    #[error(transparent)]
    Ctrl(#[from] CtrlError),
    /// An iodepth the controller's queues cannot hold.
    #[error(
        "{addr}: iodepth {depth} needs queues of {entries} entries; the controller allows {mqes} (CAP.MQES)"
    )]
    QueueEntries {
        /// The controller.
        addr: String,
        /// The iodepth asked.
        depth: usize,
        /// Entries it needs.
        entries: u32,
        /// CAP.MQES + 1.
        mqes: u32,
    },
    /// Buffers that are not page aligned.
    #[error("{addr}: buffers must be 4 KiB aligned (slot of {slot_bytes} bytes)")]
    Alignment {
        /// The controller.
        addr: String,
        /// A slot's size.
        slot_bytes: usize,
    },
    /// A queue's DMA memory.
    #[error("{addr}: {len_bytes} bytes of I/O queue memory: {source}")]
    QueueMemory {
        /// The controller.
        addr: String,
        /// Bytes asked.
        len_bytes: usize,
        /// The OS error.
        source: io::Error,
    },
    /// No-IOMMU mode with buffers off hugepages.
    #[error(
        "{addr}: in no-IOMMU mode the buffers must be on 2 MiB hugepages (the device addresses them physically, and ordinary pages can move): reserve them, e.g. `numio vfio bind --allow-noiommu --hugepages 32 {addr}`"
    )]
    NoHugepages {
        /// The controller.
        addr: String,
    },
    /// The buffers' physical addresses could not be read.
    #[error("{addr}: physical address of the buffers: {source}")]
    PhysicalAddress {
        /// The controller.
        addr: String,
        /// The OS error.
        source: io::Error,
    },
    /// The buffers could not be mapped into the IOMMU.
    #[error(
        "{addr}: mapping the worker's {len_bytes} buffer bytes into the IOMMU: {source} (locked memory limit? `ulimit -l`)"
    )]
    MapDma {
        /// The controller.
        addr: String,
        /// Bytes of the region.
        len_bytes: usize,
        /// The OS error.
        source: io::Error,
    },
    /// `--vfio-dptr sgl` on a controller without SGLs.
    #[error(
        "{addr}: the controller takes no SGLs in I/O commands (Identify SGLS {sgls:#x}): use --vfio-dptr prp (or auto)"
    )]
    NoSgl {
        /// The controller.
        addr: String,
        /// Identify Controller SGLS.
        sgls: u32,
    },
    /// `--vfio-dptr sgl` where a slot can straddle two hugepages.
    #[error(
        "{addr}: in no-IOMMU mode a {slot_bytes}-byte slot can straddle two hugepages, which one SGL data block cannot name: use --vfio-dptr prp (or auto), or a block size dividing 2 MiB"
    )]
    SglStraddles {
        /// The controller.
        addr: String,
        /// A slot's size.
        slot_bytes: usize,
    },
    /// A probe's buffer.
    #[error("{addr}: probe buffer: {source}")]
    ProbeBuffer {
        /// The controller.
        addr: String,
        /// The OS error.
        source: io::Error,
    },
    /// A probe's queue failed (its text names the controller).
    #[error("{source}")]
    Probe {
        /// The controller.
        addr: String,
        /// The namespace read.
        nsid: u32,
        /// The queue's error.
        source: io::Error,
    },
    /// A probe's read completed with an error status.
    #[error(
        "{addr}: reading namespace {nsid} at {offset_bytes}: {}",
        crate::stats::nvme_status_name(*.status)
    )]
    ProbeStatus {
        /// The controller.
        addr: String,
        /// The namespace read.
        nsid: u32,
        /// Where (bytes).
        offset_bytes: u64,
        /// The status (SCT and SC).
        status: u16,
    },
}

/// How I/O commands name their data (`--vfio-dptr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataPointer {
    /// One SGL Data Block descriptor where the controller takes SGLs in
    /// I/O commands and a slot spans more than two pages (where PRPs would
    /// need a list the controller must fetch), else PRPs. As Linux's nvme
    /// driver, which uses SGLs above a size where the controller has them.
    #[default]
    Auto,
    /// PRP1/PRP2 and PRP lists: what every PCIe controller takes.
    Prp,
    /// One SGL Data Block descriptor per command; refused on a controller
    /// without SGLs.
    Sgl,
}

/// vfio backend options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VfioOptions {
    /// How I/O commands name their data.
    pub data_pointer: DataPointer,
}

/// How the device addresses the worker's buffer region.
enum Bus {
    /// Mapped into the IOMMU at this bus address, contiguously.
    Iova(u64),
    /// No IOMMU: each 4 KiB page at its physical address.
    Phys(Vec<u64>),
}

impl Bus {
    /// The bus address of byte `off` of the region.
    #[inline]
    fn at(&self, off: usize) -> u64 {
        match self {
            Bus::Iova(base) => base + off as u64,
            Bus::Phys(pages) => pages[off / PAGE as usize] + (off % PAGE as usize) as u64,
        }
    }

    /// Whether `off..off + len` is contiguous in bus address space.
    fn contiguous(&self, off: usize, len: usize) -> bool {
        if let Bus::Iova(_) = self {
            return true;
        }
        let first = self.at(off);
        (PAGE as usize..len)
            .step_by(PAGE as usize)
            .all(|d| self.at(off + d) == first + d as u64)
    }
}

/// The physical address of every 4 KiB page of `region`, checked to lie on
/// hugepages (whole 2 MiB runs physically contiguous): in no-IOMMU mode
/// the device addresses the buffers physically, and only hugetlb pages are
/// sure not to move under it.
fn physical_pages(addr: &str, region: (*mut u8, usize)) -> Result<Vec<u64>, VfioError> {
    const HUGE: usize = sysapi::vfio::NOIOMMU_PIECE;
    let no_hugepages = || VfioError::NoHugepages {
        addr: addr.to_string(),
    };
    if region.0 as usize % HUGE != 0 {
        return Err(no_hugepages());
    }
    let mut pages = Vec::with_capacity(region.1 / PAGE as usize);
    for off in (0..region.1).step_by(PAGE as usize) {
        let pa =
            sysapi::memory::physical_address(region.0.wrapping_add(off)).map_err(|source| {
                VfioError::PhysicalAddress {
                    addr: addr.to_string(),
                    source,
                }
            })?;
        let run_start = off - off % HUGE;
        if off != run_start && pa != pages[run_start / PAGE as usize] + (off - run_start) as u64 {
            return Err(no_hugepages());
        }
        pages.push(pa);
    }
    Ok(pages)
}

/// One worker's I/O queue pair on a controller.
pub struct VfioBackend {
    ctrl: Arc<Controller>,
    qid: u16,
    entries: u32,
    sq: DmaMem,
    cq: DmaMem,
    /// One PRP list page per slot (slots of more than two pages only, PRPs).
    prp_lists: Option<DmaMem>,
    /// Data pointers are SGL Data Block descriptors, not PRPs.
    sgl: bool,
    /// The worker's buffer region: host address and length.
    region: (usize, usize),
    /// How the device addresses it.
    bus: Bus,
    slot_bytes: usize,
    lba_shift: u32,
    /// Read and write SQEs as little-endian u64 words, nsid set.
    templates: [[u64; 8]; 2],
    tail: u32,
    head: u32,
    phase: u16,
    staged: u32,
    in_flight: usize,
    slot_len: Vec<u32>,
    sq_doorbell: usize,
    cq_doorbell: usize,
    /// Set-up facts, in words.
    pub features: Vec<String>,
    /// Completions with an error status so far.
    failed: u64,
    /// Nanoseconds spent polling an empty completion queue.
    idle_ns: u64,
    /// Where the backend leaves, when dropped after failed I/Os, the
    /// controller's error log entries (read then, off the hot path).
    pub end_notes: Arc<std::sync::Mutex<Vec<String>>>,
}

impl std::fmt::Debug for VfioBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioBackend")
            .field("ctrl", &self.ctrl.addr)
            .field("qid", &self.qid)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

impl VfioBackend {
    /// A queue pair of `depth` I/Os on `ctrl` for namespace `nsid` (LBA
    /// size `lba_bytes`), its memory on `node`, for the worker's buffer
    /// `region` of `depth` slots of `slot_bytes` (page multiples), its
    /// commands naming their data as `dptr` says.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctrl: Arc<Controller>,
        nsid: u32,
        lba_bytes: u32,
        depth: usize,
        region: (*mut u8, usize),
        slot_bytes: usize,
        node: Option<u32>,
        dptr: DataPointer,
    ) -> Result<VfioBackend, VfioError> {
        let addr = ctrl.addr.clone();
        let entries = (depth as u32 + 1).max(2);
        if entries > ctrl.cap.mqes || depth > u16::MAX as usize {
            return Err(VfioError::QueueEntries {
                addr,
                depth,
                entries,
                mqes: ctrl.cap.mqes,
            });
        }
        if region.0 as usize % PAGE as usize != 0 || slot_bytes % PAGE as usize != 0 {
            return Err(VfioError::Alignment { addr, slot_bytes });
        }
        let dma = |len: usize| {
            DmaMem::new(ctrl.container(), len, node, ctrl.alloc_iova(len)).map_err(|source| {
                VfioError::QueueMemory {
                    addr: addr.clone(),
                    len_bytes: len,
                    source,
                }
            })
        };
        let cq = dma(entries as usize * 16)?;
        let sq = dma(entries as usize * 64)?;
        let slot_pages = slot_bytes as u64 / PAGE;
        let noiommu = ctrl.container().noiommu();
        let bus = if noiommu {
            Bus::Phys(physical_pages(&addr, region)?)
        } else {
            let region_iova = ctrl.alloc_iova(region.1);
            // SAFETY: the region is the worker's buffer memory, which
            // outlives this backend (the worker drops its backend before its
            // buffers), and which it lends to the device for the run; `Drop`
            // unmaps it.
            unsafe { ctrl.container().map_dma(region.0, region.1, region_iova) }.map_err(
                |source| VfioError::MapDma {
                    addr: addr.clone(),
                    len_bytes: region.1,
                    source,
                },
            )?;
            Bus::Iova(region_iova)
        };
        let takes_sgl = nvme_spec::identify::sgls_for_io(ctrl.id.sgls);
        // One data block names a slot only where it is contiguous on the
        // bus (always behind an IOMMU; without one, where no slot straddles
        // two hugepages).
        let slots_contiguous = (0..depth).all(|s| bus.contiguous(s * slot_bytes, slot_bytes));
        let sgl = match dptr {
            DataPointer::Prp => false,
            DataPointer::Auto => takes_sgl && slots_contiguous && slot_pages > 2,
            DataPointer::Sgl if !takes_sgl => {
                return Err(VfioError::NoSgl {
                    addr,
                    sgls: ctrl.id.sgls,
                })
            }
            DataPointer::Sgl if !slots_contiguous => {
                return Err(VfioError::SglStraddles { addr, slot_bytes })
            }
            DataPointer::Sgl => true,
        };
        let mut me = VfioBackend {
            qid: 0,
            entries,
            sq,
            cq,
            prp_lists: None,
            sgl,
            region: (region.0 as usize, region.1),
            bus,
            slot_bytes,
            lba_shift: lba_bytes.trailing_zeros(),
            templates: [template(READ, nsid, sgl), template(WRITE, nsid, sgl)],
            tail: 0,
            head: 0,
            phase: 1,
            staged: 0,
            in_flight: 0,
            slot_len: vec![0; depth],
            sq_doorbell: 0,
            cq_doorbell: 0,
            features: Vec::new(),
            failed: 0,
            idle_ns: 0,
            end_notes: Arc::default(),
            ctrl: ctrl.clone(),
        };
        if slot_pages > 2 && !sgl {
            let lists = dma(depth * PAGE as usize)?;
            // The pages after each slot's first, by their bus addresses.
            for slot in 0..depth {
                for i in 1..slot_pages as usize {
                    let e = me.bus.at(slot * slot_bytes + i * PAGE as usize);
                    lists.write64(slot * PAGE as usize + 8 * (i - 1), e);
                }
            }
            me.prp_lists = Some(lists);
        }
        me.qid = ctrl.create_queue_pair(entries, me.cq.iova(), me.sq.iova())?;
        let stride = ctrl.cap.doorbell_stride;
        me.sq_doorbell = pci::doorbell(me.qid, false, stride);
        me.cq_doorbell = pci::doorbell(me.qid, true, stride);
        me.features = vec![
            format!("I/O queue {} of {} entries, polled", me.qid, entries),
            match (sgl, me.prp_lists.is_some()) {
                (true, _) => "data pointers: one SGL data block per command".into(),
                (false, true) => "data pointers: PRPs, a PRP list per slot".into(),
                (false, false) => "data pointers: PRP1/PRP2".into(),
            },
            match (noiommu, node.is_some()) {
                (true, _) => "VFIO no-IOMMU mode: queues and buffers on hugepages, addressed physically (the device can DMA anywhere in memory)".into(),
                (false, true) => "queues and buffers IOMMU-mapped on the worker's node".into(),
                (false, false) => "queues and buffers IOMMU-mapped".into(),
            },
        ];
        Ok(me)
    }

    /// Checks the controller between empty polls: `Err` when it is gone,
    /// failed, or stalled with I/O in flight since `since`.
    #[cold]
    fn check_alive(&self, since: Instant) -> io::Result<()> {
        let s = self.ctrl.bar().read32(reg::CSTS);
        let addr = &self.ctrl.addr;
        if s == csts::GONE {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("{addr}: the controller is gone (its registers read all ones): removed or link down"),
            ));
        }
        if s & csts::CFS != 0 {
            return Err(io::Error::other(format!(
                "{addr}: controller fatal status (CSTS.CFS {s:#x}) during the run"
            )));
        }
        if self.in_flight > 0 && since.elapsed() > STALL {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{addr}: {} I/Os in flight and no completion for {} s",
                    self.in_flight,
                    STALL.as_secs()
                ),
            ));
        }
        Ok(())
    }

    /// Whether the completion queue's head entry is a new completion.
    #[inline]
    fn cq_ready(&self) -> bool {
        self.cq.read16(self.head as usize * 16 + 14) & 1 == self.phase
    }

    /// Moves the completions available now into `f`; returns how many.
    #[inline]
    fn drain<F: FnMut(Completion)>(&mut self, max: usize, f: &mut F) -> usize {
        let mut n = 0;
        while n < max {
            let off = self.head as usize * 16;
            let sp = self.cq.read16(off + 14);
            if sp & 1 != self.phase {
                break;
            }
            load_fence();
            let slot = u32::from(self.cq.read16(off + 12));
            let status = (sp >> 1) & 0x7ff;
            let result = if status == 0 {
                self.slot_len[slot as usize] as i32
            } else {
                self.failed += 1;
                super::nvme_error_result(status)
            };
            f(Completion { slot, result });
            self.head += 1;
            if self.head == self.entries {
                self.head = 0;
                self.phase ^= 1;
            }
            n += 1;
        }
        if n > 0 {
            self.in_flight -= n;
            self.ctrl.bar().write32(self.cq_doorbell, self.head);
        }
        n
    }
}

/// The SQE of `opcode` for namespace `nsid` with every per-I/O field zero,
/// its PSDT saying SGL when `sgl`.
fn template(opcode: u8, nsid: u32, sgl: bool) -> [u64; 8] {
    let mut t = [0u64; 8];
    t[0] = u64::from(opcode) | u64::from(nsid) << 32;
    if sgl {
        t[0] |= pci::PSDT_SGL;
    }
    t
}

impl Backend for VfioBackend {
    #[inline]
    unsafe fn queue(&mut self, io: IoRequest) {
        let slot = io.slot as usize;
        let off = io.buf as usize - self.region.0;
        debug_assert!(off == slot * self.slot_bytes && (io.len_bytes as usize) <= self.slot_bytes);
        let addr = self.bus.at(off);
        let (dptr1, dptr2) = if self.sgl {
            pci::sgl_data_block(addr, io.len_bytes)
        } else {
            let list = self
                .prp_lists
                .as_ref()
                .map_or(0, |l| l.iova() + (slot as u64) * PAGE);
            let bus = &self.bus;
            pci::prps(
                addr,
                io.len_bytes,
                PAGE,
                || bus.at(off + PAGE as usize),
                list,
            )
        };
        let mut e = self.templates[io.dir as usize];
        e[0] |= (io.slot as u64) << 16;
        e[3] = dptr1;
        e[4] = dptr2;
        e[5] = io.offset_bytes >> self.lba_shift;
        e[6] = u64::from((io.len_bytes >> self.lba_shift) - 1);
        self.sq.write_entry(self.tail as usize * 64, &e);
        self.tail += 1;
        if self.tail == self.entries {
            self.tail = 0;
        }
        self.slot_len[slot] = io.len_bytes;
        self.staged += 1;
    }

    #[inline]
    fn submit(&mut self) -> io::Result<()> {
        if self.staged > 0 {
            self.ctrl.bar().ring(self.sq_doorbell, self.tail);
            self.in_flight += self.staged as usize;
            self.staged = 0;
        }
        Ok(())
    }

    #[inline]
    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize> {
        let mut i = 0;
        self.poll(out.len(), min, &mut |c| {
            out[i] = c;
            i += 1;
        })
    }

    #[inline]
    fn reap_each<F: FnMut(Completion)>(
        &mut self,
        out: &mut [Completion],
        min: usize,
        mut f: F,
    ) -> io::Result<usize> {
        self.poll(out.len(), min, &mut f)
    }

    fn idle_poll_ns(&self) -> u64 {
        self.idle_ns
    }
}

impl VfioBackend {
    /// Polls the completion queue until at least `min` (at most `max`)
    /// completions went to `f`.
    #[inline]
    fn poll<F: FnMut(Completion)>(
        &mut self,
        max: usize,
        min: usize,
        f: &mut F,
    ) -> io::Result<usize> {
        let mut n = self.drain(max, f);
        if n >= min {
            return Ok(n);
        }
        // Empty polls until a completion shows are idle time (what the
        // report subtracts for the CPU the I/O itself cost); handling the
        // completions is not.
        let since = Instant::now();
        let mut waiting = since;
        let mut polls = 0u32;
        while n < min {
            if self.cq_ready() {
                self.idle_ns += waiting.elapsed().as_nanos() as u64;
                n += self.drain(max - n, f);
                if n < min {
                    waiting = Instant::now();
                }
                continue;
            }
            polls += 1;
            if polls == POLLS_PER_CHECK {
                polls = 0;
                self.check_alive(since)?;
            }
            std::hint::spin_loop();
        }
        Ok(n)
    }
}

impl Drop for VfioBackend {
    fn drop(&mut self) {
        if self.failed > 0 {
            let notes = match self.ctrl.error_log() {
                Ok(entries) if entries.is_empty() => vec![format!(
                    "{}: {} I/Os failed; the controller's error log is empty",
                    self.ctrl.addr, self.failed
                )],
                Ok(entries) => entries.into_iter().take(8).collect(),
                Err(e) => vec![format!("reading the error log: {e}")],
            };
            if let Ok(mut n) = self.end_notes.lock() {
                n.extend(notes);
            }
        }
        if self.qid != 0 {
            self.ctrl.delete_queue_pair(self.qid);
        }
        if let Bus::Iova(iova) = self.bus {
            let _ = self.ctrl.container().unmap_dma(iova, self.region.1);
        }
    }
}

/// Reads `len` bytes at byte `offset` of namespace `nsid` (LBA size
/// `lba_bytes`; both multiples of it) through a queue pair of its own, for
/// checks before a run (the write-safety probe of a namespace the kernel
/// does not own). Chunks of at most 128 KiB, 8 in flight.
pub fn read_bytes(
    ctrl: &Arc<Controller>,
    nsid: u32,
    lba_bytes: u32,
    offset: u64,
    len: usize,
) -> Result<Vec<u8>, VfioError> {
    const CHUNK: usize = 128 << 10;
    const DEPTH: usize = 8;
    let chunk = CHUNK.min(ctrl.max_transfer_bytes() as usize);
    // Hugepages where there are (no-IOMMU mode needs them).
    let (buf, _) =
        crate::sys::NodeBuffer::new_hugepages(chunk * DEPTH, None).map_err(|source| {
            VfioError::ProbeBuffer {
                addr: ctrl.addr.clone(),
                source,
            }
        })?;
    let probe = |source| VfioError::Probe {
        addr: ctrl.addr.clone(),
        nsid,
        source,
    };
    let mut q = VfioBackend::new(
        ctrl.clone(),
        nsid,
        lba_bytes,
        DEPTH,
        (buf.as_ptr(), buf.len_bytes()),
        chunk,
        None,
        DataPointer::Prp,
    )?;
    let mut out = vec![0u8; len];
    let mut done = [Completion::default(); DEPTH];
    for (round, part) in out.chunks_mut(chunk * DEPTH).enumerate() {
        let pieces = part.len().div_ceil(chunk);
        for i in 0..pieces {
            let n = chunk.min(part.len() - i * chunk);
            let at = offset + (round * chunk * DEPTH + i * chunk) as u64;
            // SAFETY: slot i's buffer is inside `buf` (i < DEPTH), which
            // outlives `q`; nothing reads it before the completion is
            // reaped below.
            unsafe {
                q.queue(IoRequest {
                    slot: i as u32,
                    dir: crate::stats::Dir::Read,
                    offset_bytes: at,
                    len_bytes: n as u32,
                    buf: buf.as_ptr().wrapping_add(i * chunk),
                })
            };
        }
        q.submit().map_err(probe)?;
        let mut got = 0;
        while got < pieces {
            got += q
                .reap(&mut done[got..pieces], pieces - got)
                .map_err(probe)?;
        }
        if let Some(c) = done[..pieces].iter().find(|c| c.result < 0) {
            return Err(VfioError::ProbeStatus {
                addr: ctrl.addr.clone(),
                nsid,
                offset_bytes: offset,
                status: (-c.result - NVME_STATUS_BASE) as u16,
            });
        }
        // SAFETY: every read of this round completed; the device wrote
        // these bytes and is done with them.
        let src = unsafe { std::slice::from_raw_parts(buf.as_ptr(), part.len()) };
        part.copy_from_slice(src);
    }
    drop(q);
    Ok(out)
}

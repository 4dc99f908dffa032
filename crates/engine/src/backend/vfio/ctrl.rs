//! One NVMe controller driven from user space: opened through VFIO, reset
//! and enabled with an admin queue, identified, and asked for I/O queues.
//! Shared by the run's workers through an `Arc`: the admin queue (set-up
//! and tear-down only) sits behind a mutex, the I/O queues do not touch it.
//! Dropping the last handle deletes nothing (each worker's queue pair
//! deletes itself) and shuts the controller down (CC.SHN, normal).

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use nvme_spec::command::{admin as adm, Sqe};
use nvme_spec::features::{fid, NumQueues};
use nvme_spec::identify::{cns, IdentifyController, IdentifyNamespace, IDENTIFY_SIZE};
use nvme_spec::pci::{self, cc, csts, reg, Cap};
use nvme_spec::status::Status;
use sysapi::vfio::{load_fence, Device, DmaMem};

/// Entries of the admin submission and completion queues.
const ADMIN_ENTRIES: u32 = 32;
/// Memory page size numio configures (CC.MPS = 0).
pub const PAGE: u64 = 4096;
/// How long one admin command may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Where numio's bus addresses start (IOVA 0 and the low 4 GiB, with the
/// x86 MSI window, stay unused).
const IOVA_BASE: u64 = 1 << 32;

/// A failure of the controller at `addr`: `ADDR: what failed`.
#[derive(Debug, thiserror::Error)]
#[error("{addr}: {failure}")]
pub struct CtrlError {
    /// The controller's PCI address.
    pub addr: String,
    /// What failed, with its inputs.
    #[source]
    pub failure: CtrlFailure,
}

/// What failed on a controller: one variant per step.
#[derive(Debug, thiserror::Error)]
pub enum CtrlFailure {
    /// Opening it through VFIO.
    #[error("{source}")]
    Open {
        /// The VFIO step and OS error.
        source: sysapi::vfio::OpenError,
    },
    /// Its registers read all ones at start.
    #[error("the controller's registers read all ones: the device is gone or its link is down")]
    Gone,
    /// CAP says no NVM command set.
    #[error("the controller does not support the NVM command set")]
    NoNvmCommandSet,
    /// CAP.MPSMIN above 4 KiB.
    #[error(
        "the controller's smallest memory page is {page_min_bytes} bytes; numio's driver uses 4 KiB pages"
    )]
    PageSize {
        /// CAP.MPSMIN in bytes.
        page_min_bytes: u64,
    },
    /// The admin queues' DMA memory.
    #[error("{len_bytes} bytes of admin queue memory: {source}")]
    AdminMemory {
        /// Bytes asked.
        len_bytes: usize,
        /// The OS error.
        source: io::Error,
    },
    /// Its registers read all ones while waiting on CSTS.
    #[error("the controller disappeared while {step} (registers read all ones)")]
    Disappeared {
        /// What it was doing.
        step: &'static str,
    },
    /// CSTS.CFS while waiting on CSTS.
    #[error(
        "controller fatal status (CSTS.CFS) while {step}; reset it by giving it back to the kernel (numio vfio unbind {addr})"
    )]
    Fatal {
        /// What it was doing.
        step: &'static str,
        /// Its PCI address (for the fix).
        addr: String,
    },
    /// CSTS did not change within CAP.TO.
    #[error(
        "the controller did not finish {step} within its timeout ({timeout_ms} ms, CAP.TO); CSTS {csts:#x}"
    )]
    Timeout {
        /// What it was doing.
        step: &'static str,
        /// CAP.TO in milliseconds.
        timeout_ms: u64,
        /// CSTS when it gave up.
        csts: u32,
    },
    /// An admin command completed with an error status.
    #[error("admin command {opcode:#04x} failed: {}", crate::stats::nvme_status_name(*.status))]
    AdminStatus {
        /// The opcode.
        opcode: u8,
        /// Its status (SCT and SC).
        status: u16,
    },
    /// The controller failed during an admin command.
    #[error("the controller failed (CSTS {csts:#x}) during admin command {opcode:#04x}")]
    AdminFailed {
        /// The opcode.
        opcode: u8,
        /// CSTS.
        csts: u32,
    },
    /// An admin command got no completion.
    #[error("admin command {opcode:#04x} got no completion in {timeout_s} s")]
    AdminTimeout {
        /// The opcode.
        opcode: u8,
        /// The timeout in seconds.
        timeout_s: u64,
    },
    /// The NSID is not an active namespace.
    #[error(
        "no active namespace {nsid}; the controller has {} (give pci:{addr}/NSID)",
        if .active.is_empty() { "none".to_string() } else { .active.iter().map(u32::to_string).collect::<Vec<_>>().join(", ") }
    )]
    NoNamespace {
        /// The NSID asked.
        nsid: u32,
        /// The active namespaces.
        active: Vec<u32>,
        /// Its PCI address (for the fix).
        addr: String,
    },
    /// A format with metadata.
    #[error(
        "namespace {nsid} is formatted with {metadata_bytes} bytes of metadata per block; numio's driver handles formats without metadata"
    )]
    Metadata {
        /// The namespace.
        nsid: u32,
        /// Metadata bytes per block.
        metadata_bytes: u16,
    },
    /// An LBA size numio does not drive.
    #[error("namespace {nsid} reports an LBA size of 2^{lbads} bytes")]
    LbaSize {
        /// The namespace.
        nsid: u32,
        /// Its LBA size (log2).
        lbads: u8,
    },
    /// Every I/O queue pair granted is in use.
    #[error(
        "the controller granted {granted} I/O queue pairs and all are in use; run fewer jobs on it"
    )]
    QueuesInUse {
        /// Queue pairs granted.
        granted: u16,
    },
}

/// A controller's result.
pub type CtrlResult<T> = Result<T, CtrlError>;

/// An opened, enabled controller.
pub struct Controller {
    /// PCI address, e.g. `0000:02:00.0`.
    pub addr: String,
    dev: Device,
    /// Decoded capabilities.
    pub cap: Cap,
    /// Identify Controller.
    pub id: IdentifyController,
    /// I/O queue pairs the controller granted.
    pub max_queues: u16,
    admin: Mutex<Admin>,
    /// Queue ids in use (index qid - 1).
    qids: Mutex<Vec<bool>>,
    /// The next free bus address.
    iova: Mutex<u64>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("addr", &self.addr)
            .field("model", &self.id.model)
            .finish_non_exhaustive()
    }
}

/// The admin queue pair and a page for command data.
struct Admin {
    sq: DmaMem,
    cq: DmaMem,
    data: DmaMem,
    tail: u32,
    head: u32,
    phase: u16,
    cid: u16,
}

/// Controllers open in this process, so every worker and every inspection
/// of one address during a run shares one (a second reset would destroy
/// the first one's queues).
static OPEN: Mutex<Vec<(String, Weak<Controller>)>> = Mutex::new(Vec::new());

/// The controller at `addr` (its VFIO group `group`, a no-IOMMU group
/// when `noiommu`): the one already open in this process, else opened,
/// reset and enabled now.
pub fn open(
    addr: &str,
    group: &Path,
    node: Option<u32>,
    noiommu: bool,
) -> CtrlResult<Arc<Controller>> {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.retain(|(_, w)| w.strong_count() > 0);
    if let Some(c) = open
        .iter()
        .find(|(a, _)| a == addr)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(c);
    }
    let c = Arc::new(Controller::start(addr, group, node, noiommu)?);
    open.push((addr.to_string(), Arc::downgrade(&c)));
    Ok(c)
}

impl Controller {
    fn start(addr: &str, group: &Path, node: Option<u32>, noiommu: bool) -> CtrlResult<Controller> {
        let fail = |failure| CtrlError {
            addr: addr.to_string(),
            failure,
        };
        let dev = Device::open(group, addr, noiommu)
            .map_err(|source| fail(CtrlFailure::Open { source }))?;
        let bar = &dev.bar0;
        let cap = Cap::decode(bar.read64(reg::CAP));
        if bar.read32(reg::CSTS) == csts::GONE {
            return Err(fail(CtrlFailure::Gone));
        }
        if !cap.nvm_command_set {
            return Err(fail(CtrlFailure::NoNvmCommandSet));
        }
        if cap.page_min > PAGE {
            return Err(fail(CtrlFailure::PageSize {
                page_min_bytes: cap.page_min,
            }));
        }
        let mut iova = IOVA_BASE;
        let mut dma = |len: usize| -> CtrlResult<DmaMem> {
            let m = DmaMem::new(&dev.container, len, node, iova).map_err(|source| {
                fail(CtrlFailure::AdminMemory {
                    len_bytes: len,
                    source,
                })
            })?;
            iova += m.len() as u64;
            Ok(m)
        };
        let admin = Admin {
            sq: dma(ADMIN_ENTRIES as usize * Sqe::SIZE)?,
            cq: dma(ADMIN_ENTRIES as usize * 16)?,
            data: dma(IDENTIFY_SIZE)?,
            tail: 0,
            head: 0,
            phase: 1,
            cid: 0,
        };
        let mut c = Controller {
            addr: addr.to_string(),
            cap,
            id: IdentifyController::default(),
            max_queues: 0,
            admin: Mutex::new(admin),
            qids: Mutex::new(Vec::new()),
            iova: Mutex::new(iova),
            dev,
        };
        c.reset()?;
        c.enable()?;
        let id = c.identify(cns::CONTROLLER, 0)?;
        c.id = IdentifyController::decode(&id);
        let want = NumQueues { nsq: 64, ncq: 64 };
        let got = c
            .admin_cmd(Sqe {
                opcode: adm::SET_FEATURES,
                cdw10: u32::from(fid::NUM_QUEUES),
                cdw11: want.encode(),
                ..Sqe::default()
            })
            .map(NumQueues::decode)?;
        c.max_queues = got.nsq.min(got.ncq).min(want.nsq) as u16;
        c.qids = Mutex::new(vec![false; c.max_queues as usize]);
        Ok(c)
    }

    /// The register BAR.
    pub fn bar(&self) -> &sysapi::vfio::Bar {
        &self.dev.bar0
    }

    /// The VFIO container (for the workers' DMA memory).
    pub fn container(&self) -> &Arc<sysapi::vfio::Container> {
        &self.dev.container
    }

    /// A fresh bus address range of `len` bytes (4 KiB aligned).
    pub fn alloc_iova(&self, len: usize) -> u64 {
        let mut next = self.iova.lock().unwrap_or_else(|e| e.into_inner());
        let at = *next;
        // Keep 2 MiB alignment between ranges: tidy IOMMU page tables.
        *next += (len as u64).div_ceil(2 << 20) * (2 << 20);
        at
    }

    /// `failure` of this controller.
    fn fail(&self, failure: CtrlFailure) -> CtrlError {
        CtrlError {
            addr: self.addr.clone(),
            failure,
        }
    }

    fn wait_csts(&self, step: &'static str, done: impl Fn(u32) -> bool) -> CtrlResult<()> {
        let deadline = Instant::now() + Duration::from_millis(self.cap.timeout_ms);
        loop {
            let s = self.bar().read32(reg::CSTS);
            if s == csts::GONE {
                return Err(self.fail(CtrlFailure::Disappeared { step }));
            }
            if done(s) {
                return Ok(());
            }
            if s & csts::CFS != 0 && step != "resetting" {
                return Err(self.fail(CtrlFailure::Fatal {
                    step,
                    addr: self.addr.clone(),
                }));
            }
            if Instant::now() > deadline {
                return Err(self.fail(CtrlFailure::Timeout {
                    step,
                    timeout_ms: self.cap.timeout_ms,
                    csts: s,
                }));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn reset(&self) -> CtrlResult<()> {
        let bar = self.bar();
        let v = bar.read32(reg::CC);
        if v & cc::EN != 0 {
            bar.write32(reg::CC, v & !cc::EN);
        }
        self.wait_csts("resetting", |s| s & csts::RDY == 0)
    }

    fn enable(&self) -> CtrlResult<()> {
        let bar = self.bar();
        let a = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        bar.write32(reg::AQA, pci::aqa(ADMIN_ENTRIES, ADMIN_ENTRIES));
        bar.write64(reg::ASQ, a.sq.iova());
        bar.write64(reg::ACQ, a.cq.iova());
        drop(a);
        // Polled: mask every interrupt vector (none is set up anyway).
        bar.write32(reg::INTMS, u32::MAX);
        bar.write32(reg::CC, cc::enable(0));
        self.wait_csts("becoming ready (CSTS.RDY)", |s| s & csts::RDY != 0)
    }

    /// Sends one admin command (with the admin data page as its buffer
    /// unless it names its own PRP1) and waits for its completion: its
    /// dword 0. Allocates nothing on success (queue pairs are deleted
    /// from a worker's drop).
    fn admin_cmd(&self, sqe: Sqe) -> CtrlResult<u32> {
        let mut a = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        self.admin_cmd_locked(&mut a, sqe)
    }

    /// Sends an admin command that reads into the data page (zeroed
    /// first) and returns the page; the admin queue stays locked from the
    /// zeroing to the copy, so no other thread's command lands in between.
    fn admin_read(&self, sqe: Sqe) -> CtrlResult<Vec<u8>> {
        let mut a = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        a.data.zero(0, IDENTIFY_SIZE);
        self.admin_cmd_locked(&mut a, sqe)?;
        let mut data = vec![0u8; IDENTIFY_SIZE];
        a.data.read_bytes(0, &mut data);
        Ok(data)
    }

    /// [`Controller::admin_cmd`] on the locked admin queue `a`.
    fn admin_cmd_locked(&self, a: &mut Admin, mut sqe: Sqe) -> CtrlResult<u32> {
        let bar = self.bar();
        let stride = self.cap.doorbell_stride;
        a.cid = a.cid.wrapping_add(1);
        sqe.cid = a.cid;
        let mut bytes = sqe.encode();
        // PRP1: the command's own (a queue's memory) or the data page.
        let prp1 = match sqe.dptr.addr {
            0 => a.data.iova(),
            addr => addr,
        };
        bytes[24..32].copy_from_slice(&prp1.to_le_bytes());
        bytes[32..40].fill(0);
        let mut e = [0u64; 8];
        for (i, w) in e.iter_mut().enumerate() {
            *w = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        }
        a.sq.write_entry(a.tail as usize * Sqe::SIZE, &e);
        a.tail = (a.tail + 1) % ADMIN_ENTRIES;
        bar.ring(pci::doorbell(0, false, stride), a.tail);
        let deadline = Instant::now() + ADMIN_TIMEOUT;
        loop {
            let off = a.head as usize * 16;
            let sp = a.cq.read16(off + 14);
            if sp & 1 == a.phase {
                load_fence();
                let dw0 = a.cq.read32(off);
                let cid = a.cq.read16(off + 12);
                a.head = (a.head + 1) % ADMIN_ENTRIES;
                if a.head == 0 {
                    a.phase ^= 1;
                }
                bar.write32(pci::doorbell(0, true, stride), a.head);
                if cid != sqe.cid {
                    continue;
                }
                let st = Status::from_field(sp >> 1);
                if st.field() & 0x7ff != 0 {
                    return Err(self.fail(CtrlFailure::AdminStatus {
                        opcode: sqe.opcode,
                        status: st.field() & 0x7ff,
                    }));
                }
                return Ok(dw0);
            }
            let s = bar.read32(reg::CSTS);
            if s == csts::GONE || s & csts::CFS != 0 {
                return Err(self.fail(CtrlFailure::AdminFailed {
                    opcode: sqe.opcode,
                    csts: s,
                }));
            }
            if Instant::now() > deadline {
                return Err(self.fail(CtrlFailure::AdminTimeout {
                    opcode: sqe.opcode,
                    timeout_s: ADMIN_TIMEOUT.as_secs(),
                }));
            }
            std::hint::spin_loop();
        }
    }

    fn identify(&self, cns: u8, nsid: u32) -> CtrlResult<Vec<u8>> {
        self.admin_read(Sqe {
            opcode: adm::IDENTIFY,
            nsid,
            cdw10: u32::from(cns),
            ..Sqe::default()
        })
    }

    /// The newest entries of the Error Information log (Get Log Page 0x01,
    /// one page: 64 entries), in words, for a run that saw failed I/Os.
    pub fn error_log(&self) -> CtrlResult<Vec<String>> {
        let mut sqe = Sqe::default();
        nvme_spec::log::GetLogPage {
            lid: nvme_spec::log::lid::ERROR_INFO,
            lsp: 0,
            rae: false,
            len_bytes: IDENTIFY_SIZE as u64,
            offset_bytes: 0,
        }
        .to_sqe(&mut sqe);
        sqe.nsid = u32::MAX;
        let page = self.admin_read(sqe)?;
        Ok(page
            .chunks(nvme_spec::log::ERROR_ENTRY_SIZE)
            .map(nvme_spec::log::ErrorEntry::decode)
            .filter(|e| e.error_count != 0)
            .map(|e| {
                format!(
                    "{}: error log entry {}: queue {} command {} namespace {} LBA {}: {}",
                    self.addr,
                    e.error_count,
                    e.sqid,
                    e.cid,
                    e.nsid,
                    e.lba,
                    crate::stats::nvme_status_name((e.status >> 1) & 0x7ff)
                )
            })
            .collect())
    }

    /// The active namespace ids.
    pub fn namespaces(&self) -> CtrlResult<Vec<u32>> {
        self.identify(cns::ACTIVE_NS_LIST, 0)
            .map(|b| nvme_spec::identify::decode_ns_list(&b))
    }

    /// Identify Namespace `nsid`: (blocks, LBA size), or an error naming
    /// the namespaces the controller has.
    pub fn namespace(&self, nsid: u32) -> CtrlResult<(u64, u32)> {
        let active = self.namespaces()?;
        if !active.contains(&nsid) {
            return Err(self.fail(CtrlFailure::NoNamespace {
                nsid,
                active,
                addr: self.addr.clone(),
            }));
        }
        let b = self.identify(cns::NAMESPACE, nsid)?;
        let ns = IdentifyNamespace::decode(&b);
        let fmt = (b[26] & 0x0F) as usize;
        let ms = u16::from_le_bytes([b[128 + 4 * fmt], b[129 + 4 * fmt]]);
        if ms != 0 {
            return Err(self.fail(CtrlFailure::Metadata {
                nsid,
                metadata_bytes: ms,
            }));
        }
        if !(9..=16).contains(&ns.lbads) {
            return Err(self.fail(CtrlFailure::LbaSize {
                nsid,
                lbads: ns.lbads,
            }));
        }
        Ok((ns.nsze, 1 << ns.lbads))
    }

    /// Largest transfer of one command in bytes (MDTS; no limit: 2 MiB,
    /// what one PRP list page covers).
    pub fn max_transfer_bytes(&self) -> u64 {
        let prp_limit = PAGE * PAGE / 8;
        match self.id.mdts {
            0 => prp_limit,
            m => (self.cap.page_min << m).min(prp_limit),
        }
    }

    /// Creates I/O queue pair of `entries` for a worker: its queue id.
    /// `cq` and `sq` are the queues' memory (bus addresses).
    pub fn create_queue_pair(&self, entries: u32, cq: u64, sq: u64) -> CtrlResult<u16> {
        let qid = {
            let mut q = self.qids.lock().unwrap_or_else(|e| e.into_inner());
            let Some(i) = q.iter().position(|used| !used) else {
                return Err(self.fail(CtrlFailure::QueuesInUse {
                    granted: self.max_queues,
                }));
            };
            q[i] = true;
            i as u16 + 1
        };
        let created = self
            .admin_cmd(Sqe {
                opcode: pci::admin::CREATE_CQ,
                cdw10: pci::create_queue_cdw10(qid, entries),
                cdw11: pci::CREATE_CQ_POLLED,
                ..prp1(cq)
            })
            .and_then(|_| {
                self.admin_cmd(Sqe {
                    opcode: pci::admin::CREATE_SQ,
                    cdw10: pci::create_queue_cdw10(qid, entries),
                    cdw11: pci::create_sq_cdw11(qid),
                    ..prp1(sq)
                })
                .inspect_err(|_| self.delete(pci::admin::DELETE_CQ, qid))
            });
        match created {
            Ok(_) => Ok(qid),
            Err(e) => {
                self.free_qid(qid);
                Err(e)
            }
        }
    }

    fn delete(&self, opcode: u8, qid: u16) {
        // Best effort: a controller that is gone has no queues left.
        let _ = self.admin_cmd(Sqe {
            opcode,
            cdw10: u32::from(qid),
            ..Sqe::default()
        });
    }

    fn free_qid(&self, qid: u16) {
        let mut q = self.qids.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(u) = q.get_mut(qid as usize - 1) {
            *u = false;
        }
    }

    /// Deletes queue pair `qid` (SQ first, as the spec requires).
    pub fn delete_queue_pair(&self, qid: u16) {
        self.delete(pci::admin::DELETE_SQ, qid);
        self.delete(pci::admin::DELETE_CQ, qid);
        self.free_qid(qid);
    }
}

/// An SQE template whose PRP1 is set later (admin commands carry their
/// data page there; queue creation the queue's memory).
fn prp1(addr: u64) -> Sqe {
    Sqe {
        mptr: 0,
        cdw2: 0,
        cdw3: 0,
        dptr: nvme_spec::command::SglDescriptor {
            addr,
            ..Default::default()
        },
        ..Sqe::default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let bar = self.bar();
        if bar.read32(reg::CSTS) == csts::GONE {
            return;
        }
        let v = bar.read32(reg::CC);
        bar.write32(reg::CC, (v & !cc::SHN_MASK) | cc::SHN_NORMAL);
        let _ = self.wait_csts("shutting down (CC.SHN)", |s| {
            s & csts::SHST_MASK == csts::SHST_COMPLETE
        });
    }
}

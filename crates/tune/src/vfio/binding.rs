//! [`Binding`]: a controller on vfio-pci for as long as numio needs it,
//! given back to its driver on [`Binding::give_back`], on drop and from
//! the signal thread ([`BindingRestorer`]).
//!
//! ```text
//! take     check (NVMe, group, IOMMU, in use); lock; record the original
//!          driver, driver_override and hugepages; reserve hugepages;
//!          driver_override=vfio-pci; unbind; drivers_probe; wait for
//!          vfio-pci and /dev/vfio/GROUP. A failure gives back what changed.
//! give_back  driver_override=original; unbind vfio-pci; drivers_probe;
//!          wait for the original driver (and nvme's controller); restore
//!          hugepages; remove the record.
//! keep     leave it bound; the record stays, owned by nobody
//!          (`numio vfio unbind` gives it back).
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use topology::pci::VFIO_PCI;

use super::checks::{claim, group_viable, in_use, noiommu_possible, nvme_function, NOIOMMU_RISK};
use super::record::{HugepagesRecord, Owner, VfioJournal, VfioRecord};
use super::sysfs::{self, vfio_err, wait_for, BIND_WAIT};
use crate::error::TuneError;
use crate::journal::now_unix_s;

/// The default hugepage size numio reserves, in KiB.
pub const HUGEPAGE_KIB: u64 = 2048;

/// How [`Binding::take`] may take a controller.
#[derive(Debug, Clone, Default)]
pub struct TakeOptions {
    /// Take it even when its namespaces are in use (`--force-unbind`).
    pub force: bool,
    /// Without an IOMMU, use VFIO's no-IOMMU mode (`--allow-noiommu`).
    pub allow_noiommu: bool,
    /// Reserve at least this many 2 MiB hugepages on every node, restored
    /// on give back (`--hugepages N`).
    pub hugepages_per_node: Option<u64>,
    /// The state directory; `None`: [`crate::Journal::default_location`].
    pub state_dir: Option<PathBuf>,
    /// Stop waiting for the kernel once set (the session's Ctrl-C flag).
    pub stop: Option<&'static AtomicBool>,
    /// What is running, for the record (`numio bench --backend vfio`).
    pub command: String,
}

/// A controller on vfio-pci.
pub struct Binding {
    addr: String,
    group_dev: PathBuf,
    noiommu: bool,
    numa_node: Option<u32>,
    owned: bool,
    inner: Arc<Mutex<Inner>>,
}

/// Gives a [`Binding`]'s controller back from any thread (the signal
/// thread's exit hook); does nothing once it was given back or kept.
#[derive(Clone)]
pub struct BindingRestorer {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    root: PathBuf,
    journal: VfioJournal,
    /// What this binding recorded; `None`: nothing to give back.
    record: Option<VfioRecord>,
    closed: bool,
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

fn journal_of(opts: &TakeOptions) -> Result<VfioJournal, TuneError> {
    match &opts.state_dir {
        Some(dir) => Ok(VfioJournal::at(dir)),
        None => VfioJournal::default_location(),
    }
}

impl Binding {
    /// Hands PCI function `addr` (kernel form, `0000:02:00.0`) to vfio-pci
    /// under `root` (`/` for this machine). See the module's table. One
    /// already on vfio-pci is used as it is (nothing recorded, nothing
    /// given back) unless hugepages are reserved for it.
    pub fn take(root: &Path, addr: &str, opts: &TakeOptions) -> Result<Binding, TuneError> {
        let f = nvme_function(root, addr)?;
        // On vfio-pci already: in a no-IOMMU group when VFIO made one for
        // it (`/dev/vfio/noiommu-N`); else no-IOMMU when it has no group.
        let noiommu = if f.on_vfio() {
            f.iommu_group
                .is_some_and(|g| sysfs::group_dev(root, g, true).exists())
        } else {
            f.iommu_group.is_none()
        };
        if noiommu && f.on_vfio() {
            if !opts.allow_noiommu {
                return Err(vfio_err(
                    addr,
                    format!("it is bound to vfio-pci in VFIO's no-IOMMU mode: pass --allow-noiommu to use it that way ({NOIOMMU_RISK})"),
                ));
            }
        } else if noiommu && !topology::pci::iommu_enabled(root)? {
            noiommu_possible(root, addr, opts.allow_noiommu)?;
        } else if noiommu {
            return Err(vfio_err(
                addr,
                "an IOMMU is on but this device is in no IOMMU group (see `dmesg | grep -i iommu`); it cannot be given to VFIO",
            ));
        }
        group_viable(&f)?;
        let journal = journal_of(opts)?;
        // The namespaces' exclusive claims, held until the unbind is done.
        let mut claims = Vec::new();
        if f.on_vfio() {
            refuse_held(root, &journal, addr, f.iommu_group)?;
        } else if !opts.force {
            let found = in_use(root, &f)?;
            if !found.is_empty() {
                return Err(TuneError::InUse {
                    device: addr.to_string(),
                    found: found.join("; "),
                });
            }
            claims = claim(root, &f)?;
        }
        ensure_vfio_pci(root, addr)?;
        let file_lock = journal.lock_waiting(BIND_WAIT)?;
        let rebound = !f.on_vfio();
        let hugepages = plan_hugepages(root, &journal, opts.hugepages_per_node)?;
        let record = (rebound || !hugepages.is_empty()).then(|| VfioRecord {
            address: addr.to_string(),
            driver: f.driver.clone(),
            driver_override: f.driver_override.clone(),
            rebound,
            hugepages,
            owner: Some(Owner {
                pid: std::process::id(),
                start_ticks: topology::counters::process_start_ticks(root, std::process::id()),
            }),
            command: opts.command.clone(),
            since_unix_s: now_unix_s(),
        });
        if let Some(r) = &record {
            journal.put(&file_lock, r.clone())?;
        }
        let inner = Arc::new(Mutex::new(Inner {
            root: root.to_path_buf(),
            journal,
            record,
            closed: false,
        }));
        drop(file_lock);
        let mut binding = Binding {
            addr: addr.to_string(),
            group_dev: PathBuf::new(),
            noiommu,
            numa_node: f.numa_node,
            owned: rebound,
            inner,
        };
        // On an error the binding drops: what changed is given back.
        binding.apply(opts)?;
        drop(claims);
        Ok(binding)
    }

    /// Reserves the hugepages, moves the device and waits for its group
    /// device.
    fn apply(&mut self, opts: &TakeOptions) -> Result<(), TuneError> {
        let (root, record) = {
            let inner = lock(&self.inner);
            (inner.root.clone(), inner.record.clone())
        };
        let addr = self.addr.clone();
        if let Some(r) = &record {
            reserve_hugepages(&root, &addr, &r.hugepages)?;
        }
        if self.owned {
            sysfs::set_override(&root, &addr, Some(VFIO_PCI))?;
            sysfs::unbind(&root, &addr)?;
            sysfs::probe(&root, &addr)?;
            wait_for(&addr, "vfio-pci binding it", opts.stop, || {
                Ok(sysfs::function(&root, &addr)?.on_vfio())
            })?;
        }
        let group = sysfs::function(&root, &addr)?.iommu_group.ok_or_else(|| {
            vfio_err(
                &addr,
                "vfio-pci has it but it has no IOMMU group; see `dmesg`",
            )
        })?;
        self.group_dev = sysfs::group_dev(&root, group, self.noiommu);
        let dev = self.group_dev.clone();
        wait_for(
            &addr,
            &format!("{} appearing", dev.display()),
            opts.stop,
            || Ok(dev.exists()),
        )
    }

    /// The PCI address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The VFIO group device to open (`/dev/vfio/N`, `/dev/vfio/noiommu-N`).
    pub fn group_dev(&self) -> PathBuf {
        self.group_dev.clone()
    }

    /// Whether the group is a no-IOMMU one.
    pub fn noiommu(&self) -> bool {
        self.noiommu
    }

    /// The device's NUMA node, when the kernel says.
    pub fn numa_node(&self) -> Option<u32> {
        self.numa_node
    }

    /// Whether numio moved it to vfio-pci (and gives it back).
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// A handle that gives the device back from another thread.
    pub fn restorer(&self) -> BindingRestorer {
        BindingRestorer {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Gives the device back to its original driver (and the hugepages
    /// back), and removes the record.
    pub fn give_back(self) -> Result<(), TuneError> {
        self.restorer().restore()
    }

    /// Leaves the device on vfio-pci: the record stays with no owner, so
    /// `numio vfio unbind` (or `restore --all`) gives it back.
    pub fn keep(self) -> Result<(), TuneError> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Err(TuneError::Closed);
        }
        inner.closed = true;
        if let Some(mut r) = inner.record.take() {
            r.owner = None;
            let l = inner.journal.lock_waiting(BIND_WAIT)?;
            inner.journal.put(&l, r)?;
        }
        Ok(())
    }
}

impl Drop for Binding {
    /// Gives back unless closed; a failure is printed (the record stays,
    /// so `numio vfio restore` can retry).
    fn drop(&mut self) {
        if let Err(e) = self.restorer().restore() {
            eprintln!("numio: {e}");
        }
    }
}

impl BindingRestorer {
    /// Gives the device back and closes the binding; `Ok` when closed
    /// already.
    pub fn restore(&self) -> Result<(), TuneError> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Ok(());
        }
        inner.closed = true;
        match inner.record.take() {
            Some(r) => super::restore::give_back_record(&inner.root, &inner.journal, &r),
            None => Ok(()),
        }
    }
}

/// Refuses a device on vfio-pci that another process holds: a live numio
/// owner of its record, or a holder of its group device.
fn refuse_held(
    root: &Path,
    journal: &VfioJournal,
    addr: &str,
    group: Option<u32>,
) -> Result<(), TuneError> {
    if let Some(owner) = journal.record_of(addr)?.and_then(|r| r.owner) {
        if super::restore::alive(root, owner) && owner.pid != std::process::id() {
            return Err(vfio_err(
                addr,
                format!(
                    "numio (pid {}) holds it now; wait for that run to end",
                    owner.pid
                ),
            ));
        }
    }
    let Some(g) = group else { return Ok(()) };
    let devs = [format!("/dev/vfio/{g}"), format!("/dev/vfio/noiommu-{g}")];
    let holders = topology::pci::open_by(root, |p| devs.iter().any(|d| d == p))?;
    if let Some(h) = holders.first() {
        return Err(vfio_err(
            addr,
            format!(
                "{} is open in {} (pid {}): VFIO gives a group to one process at a time; end it first",
                h.path, h.command, h.pid
            ),
        ));
    }
    Ok(())
}

/// Loads vfio-pci (`modprobe vfio-pci`, on the live machine) when its
/// driver is not registered.
fn ensure_vfio_pci(root: &Path, addr: &str) -> Result<(), TuneError> {
    let registered = |root: &Path| root.join("sys/bus/pci/drivers/vfio-pci").is_dir();
    if registered(root) {
        return Ok(());
    }
    let fix = "load vfio-pci (modprobe vfio-pci; as root)";
    if root != Path::new("/") {
        return Err(vfio_err(addr, format!("vfio-pci is not loaded: {fix}")));
    }
    let status = std::process::Command::new("modprobe")
        .arg("vfio-pci")
        .stdin(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() && registered(root) => Ok(()),
        Ok(s) => Err(vfio_err(
            addr,
            format!("vfio-pci is not loaded and `modprobe vfio-pci` failed ({s}): {fix}"),
        )),
        Err(e) => Err(vfio_err(
            addr,
            format!("vfio-pci is not loaded and modprobe cannot run ({e}): {fix}"),
        )),
    }
}

/// The pools to raise to `per_node` pages of [`HUGEPAGE_KIB`] on each
/// node, with their originals (another record's, when it changed the pool
/// first: the first original wins).
fn plan_hugepages(
    root: &Path,
    journal: &VfioJournal,
    per_node: Option<u64>,
) -> Result<Vec<HugepagesRecord>, TuneError> {
    let Some(wanted) = per_node else {
        return Ok(Vec::new());
    };
    let others = journal.records()?;
    let pools: Vec<_> = topology::pci::hugepages(root)?
        .into_iter()
        .filter(|h| h.size_kib == HUGEPAGE_KIB && h.total < wanted)
        .collect();
    Ok(pools
        .into_iter()
        .map(|h| HugepagesRecord {
            node: h.node,
            size_kib: h.size_kib,
            original: others
                .iter()
                .flat_map(|r| &r.hugepages)
                .find(|o| o.node == h.node && o.size_kib == h.size_kib)
                .map_or(h.total, |o| o.original),
            reserved: wanted,
        })
        .collect())
}

fn reserve_hugepages(root: &Path, addr: &str, pools: &[HugepagesRecord]) -> Result<(), TuneError> {
    for p in pools {
        let got = sysfs::set_hugepages(root, p.node, p.size_kib, p.reserved, addr)?;
        if got < p.reserved {
            return Err(vfio_err(
                addr,
                format!(
                    "node {} reserved only {got} of {} hugepages of {} KiB (too little free memory there, or fragmented): ask for fewer (--hugepages), or reserve them at boot (hugepages= on the kernel command line)",
                    p.node, p.reserved, p.size_kib
                ),
            ));
        }
    }
    Ok(())
}

//! In-memory controllers behind the [`Admin`] and [`Access`] traits, for
//! testing the logic above them (journal, all-or-none, rollback, restore,
//! signals) where no NVMe drive is: each keeps feature values, answers
//! Select = 3 with its capabilities, and can be told to refuse a value
//! with an NVMe status, to vanish, or to run a hook on each Set Features.
//! The real controllers are [`crate::DevAccess`]'s, proven in the VM lab.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use nvme_spec::features::fid;
use nvme_spec::Status;

use crate::admin::{Access, Admin, AdminError, Select};
use crate::controller::Controller;

type Hook = Box<dyn FnMut(u32) + Send>;

#[derive(Default)]
struct Device {
    current: BTreeMap<u8, u32>,
    changeable: bool,
    refuse: Option<Status>,
    gone: bool,
    denied: bool,
    /// Vector → Coalescing Disable.
    vectors: BTreeMap<u16, bool>,
    sets: Vec<u32>,
    on_set: Option<Hook>,
}

/// One in-memory controller; clones share it.
#[derive(Clone, Default)]
pub struct MemoryController {
    dev: Arc<Mutex<Device>>,
}

impl std::fmt::Debug for MemoryController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryController")
            .field("coalescing", &self.coalescing())
            .finish()
    }
}

impl MemoryController {
    /// A changeable controller whose coalescing value is `raw`, with I/O
    /// vectors 1..=`vectors` (Coalescing Disable clear).
    pub fn new(raw: u32, vectors: u16) -> MemoryController {
        let c = MemoryController::default();
        {
            let mut d = c.lock();
            d.current.insert(fid::IRQ_COALESCE, raw);
            d.changeable = true;
            d.vectors = (1..=vectors).map(|v| (v, false)).collect();
        }
        c
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Device> {
        self.dev.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses every Set Features with `status` (QEMU's stock NVMe says
    /// [`Status::FEATURE_NOT_CHANGEABLE`]); also clears the changeable
    /// capability for that status.
    pub fn refuse(self, status: Status) -> Self {
        {
            let mut d = self.lock();
            d.refuse = Some(status);
            if status == Status::FEATURE_NOT_CHANGEABLE {
                d.changeable = false;
            }
        }
        self
    }

    /// Sets vector `v`'s Coalescing Disable bit.
    pub fn disable_vector(self, v: u16) -> Self {
        self.lock().vectors.insert(v, true);
        self
    }

    /// From now on every command fails with `ENODEV`, as a removed
    /// controller's do.
    pub fn vanish(&self) {
        self.lock().gone = true;
    }

    /// Undoes [`MemoryController::vanish`]: the controller is back, with
    /// the value it had.
    pub fn reappear(&self) {
        self.lock().gone = false;
    }

    /// From now on every open fails with `EACCES`, as for a user without
    /// CAP_SYS_ADMIN.
    pub fn deny(&self) {
        self.lock().denied = true;
    }

    /// Runs `hook` with the value of each Set Features before it takes
    /// effect (to raise a signal flag in the middle of a change).
    pub fn on_set(&self, hook: impl FnMut(u32) + Send + 'static) {
        self.lock().on_set = Some(Box::new(hook));
    }

    /// The coalescing value now.
    pub fn coalescing(&self) -> u32 {
        self.lock()
            .current
            .get(&fid::IRQ_COALESCE)
            .copied()
            .unwrap_or(0)
    }

    /// Every value Set Features 0x08 was given, in order (refused ones too).
    pub fn sets(&self) -> Vec<u32> {
        self.lock().sets.clone()
    }
}

fn gone() -> AdminError {
    AdminError::Os(std::io::Error::from_raw_os_error(
        rustix::io::Errno::NODEV.raw_os_error(),
    ))
}

impl Admin for MemoryController {
    fn get_features(&mut self, feature: u8, sel: Select, cdw11: u32) -> Result<u32, AdminError> {
        let d = self.lock();
        if d.gone {
            return Err(gone());
        }
        match (feature, sel) {
            (_, Select::Capabilities) => Ok(if d.changeable { 0b100 } else { 0 }),
            (fid::IRQ_CONFIG, _) => {
                let v = (cdw11 & 0xFFFF) as u16;
                match d.vectors.get(&v) {
                    Some(&cd) => Ok(u32::from(v) | u32::from(cd) << 16),
                    None => Err(AdminError::Status(Status::INVALID_FIELD)),
                }
            }
            (f, _) => Ok(d.current.get(&f).copied().unwrap_or(0)),
        }
    }

    fn set_features(&mut self, feature: u8, value: u32, _save: bool) -> Result<(), AdminError> {
        let mut d = self.lock();
        if d.gone {
            return Err(gone());
        }
        if let Some(hook) = d.on_set.as_mut() {
            hook(value);
        }
        if feature == fid::IRQ_COALESCE {
            d.sets.push(value);
        }
        if let Some(status) = d.refuse {
            return Err(AdminError::Status(status));
        }
        d.current.insert(feature, value);
        Ok(())
    }
}

/// Controllers by name.
#[derive(Debug, Clone, Default)]
pub struct MemoryAccess {
    /// The controllers, by [`Controller::name`].
    pub controllers: BTreeMap<String, MemoryController>,
}

impl MemoryAccess {
    /// Adds `ctrl` as `name`.
    pub fn with(mut self, name: &str, ctrl: MemoryController) -> Self {
        self.controllers.insert(name.to_string(), ctrl);
        self
    }
}

impl Access for MemoryAccess {
    fn open(&self, ctrl: &Controller) -> Result<Box<dyn Admin>, AdminError> {
        match self.controllers.get(&ctrl.name) {
            Some(c) if c.lock().denied => Err(AdminError::Os(std::io::Error::from_raw_os_error(
                rustix::io::Errno::ACCESS.raw_os_error(),
            ))),
            Some(c) if !c.lock().gone => Ok(Box::new(c.clone())),
            _ => Err(AdminError::Os(std::io::Error::from_raw_os_error(
                rustix::io::Errno::NOENT.raw_os_error(),
            ))),
        }
    }
}

/// A PCIe [`Controller`] named `name` (address `0000:0N:00.0`, serial
/// `SN-name`) with I/O vectors 1..=`vectors`, for tests.
pub fn controller(name: &str, vectors: u16) -> Controller {
    let n: u32 = name.trim_start_matches("nvme").parse().unwrap_or(0);
    Controller {
        name: name.to_string(),
        transport: topology::Transport::Pcie,
        address: format!("0000:{:02x}:00.0", n + 1),
        serial: format!("SN-{name}"),
        model: "in-memory".to_string(),
        node: Some(0),
        vectors: (1..=vectors).collect(),
    }
}

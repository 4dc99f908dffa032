//! The hardware boundary: Get/Set Features on one open controller
//! ([`Admin`]), and opening a controller ([`Access`]). [`DevAccess`] opens
//! `/dev/<name>` and sends the admin commands through
//! `sysapi::nvme_admin`; tests use in-memory controllers (`memory`).

use std::fs::File;
use std::io;
use std::path::PathBuf;

use nvme_spec::Status;
use sysapi::nvme_admin::{self, AdminResult};

pub use sysapi::nvme_admin::Select;

use crate::controller::Controller;

/// Why an admin command did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The controller answered with an NVMe status.
    #[error("{}", status_text(*.0))]
    Status(Status),
    /// The OS refused or failed the call (or the open).
    #[error("{0}")]
    Os(#[source] io::Error),
}

impl AdminError {
    /// Whether the OS said "no permission" (`EACCES`, `EPERM`).
    pub fn is_permission(&self) -> bool {
        matches!(self, AdminError::Os(e) if e.kind() == io::ErrorKind::PermissionDenied
            || e.raw_os_error() == Some(rustix::io::Errno::PERM.raw_os_error()))
    }

    /// Whether the OS said the device is gone (`ENOENT` on open, `ENODEV`,
    /// `ENXIO`).
    pub fn is_gone(&self) -> bool {
        let gone = [
            rustix::io::Errno::NOENT,
            rustix::io::Errno::NODEV,
            rustix::io::Errno::NXIO,
        ];
        matches!(self, AdminError::Os(e)
            if gone.iter().any(|g| e.raw_os_error() == Some(g.raw_os_error())))
    }

    /// The NVMe status, when the controller answered with one.
    pub fn status(&self) -> Option<Status> {
        match self {
            AdminError::Status(s) => Some(*s),
            AdminError::Os(_) => None,
        }
    }
}

/// The name of a status Get/Set Features answers with, as the NVMe base
/// specification names it, and its raw field.
pub fn status_text(s: Status) -> String {
    use nvme_spec::StatusCodeType::{CommandSpecific, Generic};
    let name = match (s.sct(), s.sc()) {
        (Generic, 0x01) => "invalid command opcode",
        (Generic, 0x02) => "invalid field in command",
        (Generic, 0x06) => "internal error",
        (Generic, 0x0B) => "invalid namespace or format",
        (CommandSpecific, 0x0D) => "feature identifier not saveable",
        (CommandSpecific, 0x0E) => "feature not changeable",
        (CommandSpecific, 0x0F) => "feature not namespace specific",
        _ => "NVMe error",
    };
    format!("{name} (NVMe status {:#05x})", s.field() & 0x7FF)
}

/// Get/Set Features on one open controller.
pub trait Admin: Send {
    /// Get Features `fid` with Select `sel` and dword 11 `cdw11`:
    /// completion dword 0.
    fn get_features(&mut self, fid: u8, sel: Select, cdw11: u32) -> Result<u32, AdminError>;
    /// Set Features `fid` to `value` (dword 11), saved across resets when
    /// `save`.
    fn set_features(&mut self, fid: u8, value: u32, save: bool) -> Result<(), AdminError>;
}

/// Opens controllers for admin commands.
pub trait Access {
    /// Opens `ctrl`.
    fn open(&self, ctrl: &Controller) -> Result<Box<dyn Admin>, AdminError>;
}

/// The real controllers: `DIR/<name>` (`/dev/nvme0`) through the admin
/// passthrough ioctl.
#[derive(Debug, Clone)]
pub struct DevAccess {
    /// Where the controllers' character devices are (`/dev`).
    pub dev_dir: PathBuf,
}

impl Default for DevAccess {
    fn default() -> Self {
        DevAccess {
            dev_dir: PathBuf::from("/dev"),
        }
    }
}

impl Access for DevAccess {
    fn open(&self, ctrl: &Controller) -> Result<Box<dyn Admin>, AdminError> {
        // Read access is enough: the driver checks CAP_SYS_ADMIN per
        // command, not the open mode.
        let file = File::open(self.dev_dir.join(&ctrl.name)).map_err(AdminError::Os)?;
        Ok(Box::new(DevAdmin { file }))
    }
}

/// One controller's character device, open.
struct DevAdmin {
    file: File,
}

fn outcome(r: io::Result<AdminResult>) -> Result<u32, AdminError> {
    match r.map_err(AdminError::Os)? {
        AdminResult::Success { dw0 } => Ok(dw0),
        AdminResult::Status { status } => Err(AdminError::Status(Status::from_field(status))),
    }
}

impl Admin for DevAdmin {
    fn get_features(&mut self, fid: u8, sel: Select, cdw11: u32) -> Result<u32, AdminError> {
        outcome(nvme_admin::get_features(&self.file, fid, sel, cdw11))
    }

    fn set_features(&mut self, fid: u8, value: u32, save: bool) -> Result<(), AdminError> {
        outcome(nvme_admin::set_features(&self.file, fid, value, save)).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_named_as_the_specification_names_them() {
        assert_eq!(
            status_text(Status::FEATURE_NOT_CHANGEABLE),
            "feature not changeable (NVMe status 0x10e)"
        );
        assert_eq!(
            status_text(Status::INVALID_FIELD),
            "invalid field in command (NVMe status 0x002)"
        );
        assert!(status_text(Status::FEATURE_NOT_SAVEABLE)
            .starts_with("feature identifier not saveable"));
        assert!(status_text(Status::FEATURE_NOT_NS_SPECIFIC)
            .starts_with("feature not namespace specific"));
    }

    #[test]
    fn permission_and_gone_are_told_apart() {
        let os =
            |e: rustix::io::Errno| AdminError::Os(io::Error::from_raw_os_error(e.raw_os_error()));
        assert!(os(rustix::io::Errno::ACCESS).is_permission());
        assert!(os(rustix::io::Errno::PERM).is_permission());
        assert!(!os(rustix::io::Errno::IO).is_permission());
        assert!(os(rustix::io::Errno::NODEV).is_gone());
        assert!(os(rustix::io::Errno::NOENT).is_gone());
        assert!(!AdminError::Status(Status::INVALID_FIELD).is_gone());
    }
}

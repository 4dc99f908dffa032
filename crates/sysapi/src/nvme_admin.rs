//! NVMe admin commands without a data buffer, sent through a controller's
//! character device (`/dev/nvme0`) by the admin passthrough ioctl
//! (`NVME_IOCTL_ADMIN_CMD`): Get Features and Set Features.
//!
//! The ioctl answers in two ways. A negative return is an OS error (no
//! permission: `EACCES`/`EPERM` without `CAP_SYS_ADMIN`; `ENODEV` or `EIO`
//! when the controller is gone; `ENOTTY` for a file that is no NVMe
//! controller). A non-negative return is the command's completion: 0 for
//! success, with completion dword 0 written back into the command's
//! `result`, or the 15-bit NVMe status field (SC, SCT, CRD, More, DNR; the
//! phase bit shifted out) the controller answered with. Only commands
//! without data are sent (`addr` and `data_len` are 0), so the kernel never
//! reads or writes user memory past the 72-byte command itself.

use std::ffi::c_void;
use std::io;
use std::os::fd::AsFd;

use rustix::ioctl::{self, Ioctl, IoctlOutput, Opcode};

/// Admin opcode Set Features.
pub const OPC_SET_FEATURES: u8 = 0x09;
/// Admin opcode Get Features.
pub const OPC_GET_FEATURES: u8 = 0x0A;

/// Get Features' Select field (CDW10 bits 10:8): which value to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// The value in effect now.
    Current = 0,
    /// The default value.
    Default = 1,
    /// The saved value.
    Saved = 2,
    /// The supported capabilities: bit 0 saveable, bit 1 namespace
    /// specific, bit 2 changeable.
    Capabilities = 3,
}

/// `struct nvme_passthru_cmd` (`linux/nvme_ioctl.h`), also known as
/// `struct nvme_admin_cmd`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassthruCmd {
    /// Opcode.
    pub opcode: u8,
    /// Flags (PSDT, FUSE); 0.
    pub flags: u8,
    /// Reserved.
    pub rsvd1: u16,
    /// Namespace id (0: none; `0xFFFF_FFFF`: all).
    pub nsid: u32,
    /// Command dword 2.
    pub cdw2: u32,
    /// Command dword 3.
    pub cdw3: u32,
    /// Metadata buffer address; always 0 here.
    pub metadata: u64,
    /// Data buffer address; always 0 here.
    pub addr: u64,
    /// Metadata length; always 0 here.
    pub metadata_len: u32,
    /// Data length; always 0 here.
    pub data_len: u32,
    /// Command dword 10.
    pub cdw10: u32,
    /// Command dword 11.
    pub cdw11: u32,
    /// Command dword 12.
    pub cdw12: u32,
    /// Command dword 13.
    pub cdw13: u32,
    /// Command dword 14.
    pub cdw14: u32,
    /// Command dword 15.
    pub cdw15: u32,
    /// Timeout in ms; 0 takes the driver's admin timeout.
    pub timeout_ms: u32,
    /// Completion dword 0, written back by the kernel.
    pub result: u32,
}

const _: () = assert!(std::mem::size_of::<PassthruCmd>() == 72);

/// `NVME_IOCTL_ADMIN_CMD`: `_IOWR('N', 0x41, struct nvme_admin_cmd)`.
const NVME_IOCTL_ADMIN_CMD: Opcode = ioctl::opcode::read_write::<PassthruCmd>(b'N', 0x41);

/// How an admin command completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminResult {
    /// Success; completion dword 0.
    Success {
        /// Completion dword 0.
        dw0: u32,
    },
    /// The controller answered with this status field (non-zero: SC in bits
    /// 7:0, SCT in 10:8, DNR in 14).
    Status {
        /// The 15-bit status field.
        status: u16,
    },
}

/// Sends `cmd` (which must carry no data buffer) to the NVMe controller
/// whose character device is open at `fd`. `InvalidInput` when `cmd` names
/// a buffer.
pub fn admin_command(fd: impl AsFd, cmd: &PassthruCmd) -> io::Result<AdminResult> {
    if cmd.addr != 0 || cmd.data_len != 0 || cmd.metadata != 0 || cmd.metadata_len != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "admin_command sends commands without a data or metadata buffer",
        ));
    }
    let mut call = AdminCall { cmd: *cmd };
    // SAFETY: `call.cmd` is a 72-byte `struct nvme_passthru_cmd` the kernel
    // reads and writes (its `result`) during the call only; `call` outlives
    // the call. Its buffer fields are 0 (checked above), so the kernel maps
    // no other user memory.
    let out = unsafe { ioctl::ioctl(fd, &mut call) }.map_err(io::Error::from)?;
    Ok(match out {
        0 => AdminResult::Success {
            dw0: call.cmd.result,
        },
        status => AdminResult::Status {
            status: (status & 0x7FFF) as u16,
        },
    })
}

/// Get Features: CDW10 = FID | SEL << 8, CDW11 as the feature wants (the
/// vector for feature 0x09).
pub fn get_features(fd: impl AsFd, fid: u8, sel: Select, cdw11: u32) -> io::Result<AdminResult> {
    admin_command(
        fd,
        &PassthruCmd {
            opcode: OPC_GET_FEATURES,
            cdw10: u32::from(fid) | (sel as u32) << 8,
            cdw11,
            ..PassthruCmd::default()
        },
    )
}

/// Set Features: CDW10 = FID | SV << 31 (`save`: the value survives a
/// reset and power cycle, where the feature is saveable), CDW11 = `value`.
pub fn set_features(fd: impl AsFd, fid: u8, value: u32, save: bool) -> io::Result<AdminResult> {
    admin_command(
        fd,
        &PassthruCmd {
            opcode: OPC_SET_FEATURES,
            cdw10: u32::from(fid) | u32::from(save) << 31,
            cdw11: value,
            ..PassthruCmd::default()
        },
    )
}

/// The ioctl with the command it reads and updates.
struct AdminCall {
    cmd: PassthruCmd,
}

// SAFETY: the opcode's size is that of `PassthruCmd`, the pointer is the
// command owned by `self` for the whole call, and the kernel writes its
// `result` field, so the call mutates user memory (IS_MUTATING). The output
// is the return value; the written field is read from `self` afterwards.
unsafe impl Ioctl for &mut AdminCall {
    type Output = IoctlOutput;

    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        NVME_IOCTL_ADMIN_CMD
    }

    fn as_ptr(&mut self) -> *mut c_void {
        (&mut self.cmd as *mut PassthruCmd).cast()
    }

    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_and_layout_match_the_kernel_header() {
        assert_eq!(NVME_IOCTL_ADMIN_CMD as u64, 0xC048_4E41);
        assert_eq!(std::mem::offset_of!(PassthruCmd, addr), 24);
        assert_eq!(std::mem::offset_of!(PassthruCmd, cdw10), 40);
        assert_eq!(std::mem::offset_of!(PassthruCmd, timeout_ms), 64);
        assert_eq!(std::mem::offset_of!(PassthruCmd, result), 68);
    }

    #[test]
    fn a_regular_file_is_no_controller() {
        let f = std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .expect("open the manifest");
        let e = get_features(&f, 0x08, Select::Current, 0).expect_err("not NVMe");
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::NOTTY.raw_os_error()),
            "{e}"
        );
    }

    #[test]
    fn commands_with_a_buffer_are_refused_before_the_kernel() {
        let f = std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .expect("open the manifest");
        let cmd = PassthruCmd {
            opcode: 0x06,
            addr: 0x1000,
            data_len: 4096,
            ..PassthruCmd::default()
        };
        let e = admin_command(&f, &cmd).expect_err("a buffer");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}

//! Errors of `tune`: each names the input or the controller and the fix.

use std::path::PathBuf;

use crate::admin::AdminError;

/// Everything that can go wrong reading, changing or restoring a setting.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// `--threshold` is not 0..=255.
    #[error("--threshold {input}: {why}; give 0..=255, the raw 0-based aggregation threshold (N means an interrupt per N + 1 completions)")]
    Threshold {
        /// As the user wrote it.
        input: String,
        /// What is wrong with it.
        why: String,
    },
    /// `--time` is not a multiple of 100 µs up to 25.5 ms.
    #[error(
        "--time {input}: {why}; give a multiple of 100 µs up to 25.5 ms, e.g. 100us, 0.2ms or 300"
    )]
    Time {
        /// As the user wrote it.
        input: String,
        /// What is wrong with it.
        why: String,
    },
    /// A list flag (`--threshold 0,,3`) has an empty value.
    #[error("{flag} {text}: an empty value; give a list such as {example}")]
    ListEmpty {
        /// The flag (`--threshold`).
        flag: &'static str,
        /// The whole list as the user wrote it.
        text: String,
        /// A list to suggest (`0,3,9`).
        example: &'static str,
    },
    /// A list flag names a value twice.
    #[error("{flag} {text}: {word} is repeated; give each value once")]
    ListRepeated {
        /// The flag.
        flag: &'static str,
        /// The whole list as the user wrote it.
        text: String,
        /// The repeated value, as written.
        word: String,
    },
    /// A sweep's `--time 0`: no delay coalesces nothing.
    #[error("--time {input}: 0 means no delay: the controller raises every interrupt at once; give 100us or more")]
    NoDelay {
        /// As the user wrote it.
        input: String,
    },
    /// No controller or namespace was named.
    #[error("no controller named: give one or more, e.g. nvme0, /dev/nvme0 or /dev/nvme0n1 (`numio topo` lists them)")]
    NoTargets,
    /// A name that is no controller or namespace of this machine.
    #[error("unknown controller or namespace `{input}`: {known}; name one as nvme0, /dev/nvme0 or /dev/nvme0n1 (`numio topo` lists them)")]
    UnknownTarget {
        /// As the user wrote it.
        input: String,
        /// The controllers there are (`this machine has nvme0, nvme1`).
        known: String,
    },
    /// A controller was named where I/O needs a namespace (the sweep).
    #[error(
        "{input} is a controller: the sweep runs I/O, so name its namespaces (e.g. /dev/{name}n1)"
    )]
    NotNamespace {
        /// As the user wrote it.
        input: String,
        /// The controller (`nvme0`).
        name: String,
    },
    /// A fabrics controller (NVMe/TCP, RDMA, FC, loop) was named, or a
    /// namespace reached only through fabrics controllers.
    #[error("{input}: {name} is an NVMe/{transport} controller and a fabrics controller has no interrupts, so there is nothing to coalesce; name a PCIe controller")]
    Fabrics {
        /// As the user wrote it.
        input: String,
        /// The controller.
        name: String,
        /// Its transport (`tcp`).
        transport: String,
    },
    /// The OS refused an admin command or the open (`EACCES`, `EPERM`).
    #[error(
        "{what} on /dev/{name}: {source}: run as root (NVMe admin commands need CAP_SYS_ADMIN)"
    )]
    Permission {
        /// The controller.
        name: String,
        /// The command (`Get Features 0x08`).
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The controller is gone (removed, or renamed under numio).
    #[error("{name} ({address}, serial {serial}) vanished: {what}: {source}; check `numio topo` and `dmesg`")]
    Gone {
        /// The controller's name when numio looked it up.
        name: String,
        /// Its PCI address.
        address: String,
        /// Its serial.
        serial: String,
        /// The command.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The controller answered with an NVMe status.
    #[error("{name} refused {what}: {status}")]
    Refused {
        /// The controller.
        name: String,
        /// The command (`Set Features 0x08 (interrupt coalescing) = 0x0109`).
        what: String,
        /// The status, named.
        status: String,
        /// The raw status.
        nvme_status: nvme_spec::Status,
    },
    /// Any other OS error of an admin command.
    #[error("{what} on /dev/{name}: {source}")]
    Os {
        /// The controller.
        name: String,
        /// The command.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The state file or its directory cannot be used.
    #[error("state file {}: {why}", path.display())]
    Journal {
        /// The file or directory.
        path: PathBuf,
        /// What failed, and the fix.
        why: String,
    },
    /// Another numio holds the lock beside the state file.
    #[error("another numio ({holder}) is changing {what} now ({} is locked): wait for it to end; it puts back what it changed", path.display())]
    Busy {
        /// What it is changing (`coalescing settings`).
        what: &'static str,
        /// The lock file.
        path: PathBuf,
        /// Who holds it (`pid 1234`), as far as known.
        holder: String,
    },
    /// A SIGINT / SIGTERM arrived while values were being changed; what was
    /// changed has been put back.
    #[error("interrupted while changing {name}")]
    Interrupted {
        /// The controller being changed.
        name: String,
    },
    /// One controller of several failed; `source` says which and why, the
    /// rest says what became of the others.
    #[error("{source}; {others}")]
    Apply {
        /// The failure.
        source: Box<TuneError>,
        /// What happened to the other controllers (`nvme0 was put back as
        /// it was`).
        others: String,
    },
    /// Values numio could not put back; their records stay.
    #[error("could not put back {failed}; the originals stay recorded in {}: run `numio coalesce restore` again once the cause is fixed", path.display())]
    NotRestored {
        /// Each controller and why (`nvme1: ...`), `; `-separated.
        failed: String,
        /// The state file.
        path: PathBuf,
    },
    /// The guard already restored or kept its values.
    #[error("the coalescing guard is closed: its values were already put back or kept")]
    Closed,
    /// A controller cannot be handed to vfio-pci or given back; `why`
    /// says what was found and the fix.
    #[error("{device}: {why}")]
    Vfio {
        /// The PCI address, or the user's input when it is none.
        device: String,
        /// What is wrong, and the fix.
        why: String,
    },
    /// Not a PCI address in any form numio reads.
    #[error("`{input}` is not a PCI address: give DOMAIN:BUS:SLOT.FUNCTION as `lspci -D` prints it (0000:02:00.0), the short 02:00.0 or pci:0000:02:00.0; `numio vfio status` lists the NVMe controllers")]
    PciAddress {
        /// As the user wrote it.
        input: String,
    },
    /// A controller whose namespaces are in use (mounted, held, swap, open,
    /// a signature) was not taken.
    #[error("{device} is in use: {found}; numio does not take a drive in use away from the kernel: stop using it, or pass --force-unbind to take it anyway (whatever uses it loses its device)")]
    InUse {
        /// The PCI address.
        device: String,
        /// What was found, `; `-separated.
        found: String,
    },
    /// Discovery failed.
    #[error(transparent)]
    Topology(#[from] topology::TopologyError),
}

impl TuneError {
    /// The error an admin command `what` on `ctrl` failed with.
    pub fn admin(ctrl: &crate::controller::Controller, what: &str, e: AdminError) -> TuneError {
        let name = ctrl.name.clone();
        let what = what.to_string();
        if e.is_permission() {
            if let AdminError::Os(source) = e {
                return TuneError::Permission { name, what, source };
            }
        }
        if e.is_gone() {
            if let AdminError::Os(source) = e {
                return TuneError::Gone {
                    name,
                    address: ctrl.address.clone(),
                    serial: ctrl.serial.clone(),
                    what,
                    source,
                };
            }
        }
        match e {
            AdminError::Status(s) => TuneError::Refused {
                name,
                what,
                status: crate::admin::status_text(s),
                nvme_status: s,
            },
            AdminError::Os(source) => TuneError::Os { name, what, source },
        }
    }

    /// The NVMe status, when a controller refused.
    pub fn nvme_status(&self) -> Option<nvme_spec::Status> {
        match self {
            TuneError::Refused { nvme_status, .. } => Some(*nvme_status),
            TuneError::Apply { source, .. } => source.nvme_status(),
            _ => None,
        }
    }
}

//! Targets as the planner takes them, resolved on the live machine: what
//! topology finds under a `/dev` link, a file or a stacked device (the NVMe
//! namespaces and other disks beneath it), so a file on an NVMe filesystem
//! is placed on that namespace's node. Shared by `bench`, `plan` and the
//! `policy=` arms of `compare`.

use std::path::Path;

use planner::{DeviceBacking, TargetDevice, TargetSpec};

/// The targets as the planner takes them: on the live machine (`root` is
/// `/`), each with what topology finds under it ([`target_device`]);
/// elsewhere (a snapshot or fixture) by name alone. Shared by `numio bench`, `plan` and `compare`.
pub fn target_specs(root: &Path, targets: &[String]) -> Vec<TargetSpec> {
    targets
        .iter()
        .map(|t| TargetSpec {
            device: target_device(root, t),
            ..TargetSpec::new(t.clone())
        })
        .collect()
}

/// What is under `target` on the live machine, for the planner: the kernel
/// name behind a `/dev` link such as `/dev/disk/by-id/nvme-…` (`nvme0n1`);
/// for a file, or a device-mapper / md / loop device, the NVMe namespaces
/// (and other disks) beneath it, from topology's device stack. `None` where
/// the name says it all (`/dev/nvme0n1`, `/dev/ng0n1`, partitions), for a
/// snapshot or fixture root, an `nvme-tcp://` target, or a path that cannot
/// be stat'ed.
pub fn target_device(root: &Path, target: &str) -> Option<TargetDevice> {
    use topology::device::{stat_path, PathDevice};
    if root != Path::new("/") || target.starts_with("nvme-tcp://") {
        return None;
    }
    let path = Path::new(target);
    match stat_path(path).ok()? {
        PathDevice::Block(dev) => {
            let stack = topology::device::block_stack(root, dev).ok()?;
            if stack.is_plain_nvme() {
                return link_name(path).map(TargetDevice::Name);
            }
            Some(TargetDevice::Stack(backing(&stack, stack.describe())))
        }
        PathDevice::File { on } if on.is_anonymous() => Some(TargetDevice::Stack(DeviceBacking {
            via: format!("a file on a filesystem without a block device (device {on}: tmpfs, btrfs, overlay, NFS, ...)"),
            namespaces: Vec::new(),
            others: Vec::new(),
        })),
        PathDevice::File { on } => {
            let stack = topology::device::block_stack(root, on).ok()?;
            let via = format!("a file on {}", stack.describe());
            Some(TargetDevice::Stack(backing(&stack, via)))
        }
        PathDevice::Char(_) | PathDevice::Other => link_name(path).map(TargetDevice::Name),
    }
}

fn backing(stack: &topology::device::DeviceStack, via: String) -> DeviceBacking {
    DeviceBacking {
        via,
        namespaces: stack
            .namespaces
            .iter()
            .map(|n| n.block_device.clone())
            .collect(),
        others: stack.others.clone(),
    }
}

/// The kernel name behind a `/dev` link (`/dev/disk/by-id/nvme-…` →
/// `nvme0n1`); `None` for a path that is not such a link.
fn link_name(path: &Path) -> Option<String> {
    if !path.starts_with("/dev/") || !path.symlink_metadata().ok()?.file_type().is_symlink() {
        return None;
    }
    let real = std::fs::canonicalize(path).ok()?;
    real.strip_prefix("/dev")
        .ok()
        .filter(|rest| rest.components().count() == 1)
        .map(|rest| rest.to_string_lossy().into_owned())
}

//! Host-level queries beside [`crate::Topology::discover`], each over a
//! sysfs/procfs root: the environment record kept with every result
//! ([`host_record`]), the memory available ([`mem_available_bytes`]),
//! the mount table ([`mounts`]), a CPU's node
//! ([`cpu_node`]), a node's CPUs ([`node_cpus`]) and a network interface's
//! node ([`interface_node`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cpulist::{CpuList, ListOf};
use crate::device::{reader, DevNum};
use crate::error::{ParseError, TopologyError};
use crate::model::{CpuId, NodeId};
use crate::parse::parse_num;

/// The machine's side of the environment recorded with a result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRecord {
    /// `proc/sys/kernel/hostname`.
    pub hostname: String,
    /// `proc/sys/kernel/osrelease`.
    pub kernel: String,
    /// The first `model name` of `proc/cpuinfo`.
    pub cpu_model: String,
    /// `sys/devices/system/cpu/online`.
    pub online_cpus: CpuList,
    /// `sys/module/nvme/parameters/poll_queues`, when the driver is loaded.
    pub nvme_poll_queues: Option<u32>,
}

/// The machine's name under `root` (`proc/sys/kernel/hostname`; empty
/// when unreadable).
pub fn hostname(root: &Path) -> String {
    reader(root)
        .map(|mut r| read_hostname(&mut r))
        .unwrap_or_default()
}

fn read_hostname(r: &mut crate::reader::Reader) -> String {
    r.read_trimmed("proc/sys/kernel/hostname")
        .unwrap_or_default()
}

/// `MemAvailable` of `proc/meminfo` under `root`, in bytes: what the
/// kernel thinks can be allocated without swapping; `None` when unreadable.
pub fn mem_available_bytes(root: &Path) -> Option<u64> {
    reader(root)
        .ok()?
        .parse("proc/meminfo", crate::parse::parse_meminfo_available_bytes)
}

/// The environment record of the machine under `root`; a file that is
/// missing or unreadable leaves its field empty.
pub fn host_record(root: &Path) -> Result<HostRecord, TopologyError> {
    let mut r = reader(root)?;
    Ok(HostRecord {
        hostname: read_hostname(&mut r),
        kernel: r
            .read_trimmed("proc/sys/kernel/osrelease")
            .unwrap_or_default(),
        cpu_model: r
            .read("proc/cpuinfo")
            .map(|t| cpu_model(&t))
            .unwrap_or_default(),
        // `cpu/online`, or on kernels without it the cpuN directories.
        online_cpus: crate::discover::online_cpus(&mut r)
            .map(|(online, _)| CpuList::from_ids(online))
            .unwrap_or_default(),
        nvme_poll_queues: r.parse("sys/module/nvme/parameters/poll_queues", parse_num::<u32>),
    })
}

/// The first `model name` of a `/proc/cpuinfo` text (empty on
/// architectures that do not write one).
pub fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// The device of the filesystem (`st_dev` of its files).
    pub dev: DevNum,
    /// The directory of the filesystem mounted (`/` unless a bind mount).
    pub root: String,
    /// Where it is mounted.
    pub mount_point: String,
    /// Filesystem type (`ext4`).
    pub fs_type: String,
    /// The mount source (`/dev/nvme0n1p1`).
    pub source: String,
}

/// The mounts of the process reading `root` (`proc/self/mountinfo`).
pub fn mounts(root: &Path) -> Result<Vec<Mount>, TopologyError> {
    const PATH: &str = "proc/self/mountinfo";
    let mut r = reader(root)?;
    let Some(text) = r.read(PATH) else {
        let reason = r.unreadable.first().map(|u| u.reason.clone());
        return Err(match reason {
            Some(reason) => TopologyError::BadRequired {
                path: r.abs(PATH),
                reason,
            },
            None => TopologyError::MissingRequired {
                path: r.abs(PATH),
                root: r.abs(""),
                what: "the mount table",
            },
        });
    };
    parse_mountinfo(&text).map_err(|source| TopologyError::Unparsable {
        path: r.abs(PATH),
        source,
    })
}

/// Parses a mountinfo text (`ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS
/// [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS`), decoding the kernel's
/// octal escapes (`\040` for a space).
pub fn parse_mountinfo(text: &str) -> Result<Vec<Mount>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |why: ParseError| ParseError::at_line(i + 1, line, why);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let sep = fields
            .iter()
            .position(|f| *f == "-")
            .ok_or_else(|| bad(ParseError::NoSeparator))?;
        if sep < 6 || fields.len() < sep + 3 {
            return Err(bad(ParseError::TooFewFields));
        }
        out.push(Mount {
            dev: DevNum::parse(fields[2]).map_err(bad)?,
            root: unescape(fields[3]),
            mount_point: unescape(fields[4]),
            fs_type: unescape(fields[sep + 1]),
            source: unescape(fields[sep + 2]),
        });
    }
    Ok(out)
}

/// Decodes `\NNN` octal escapes (mountinfo writes space, tab, newline and
/// backslash that way).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |v, b| v.wrapping_mul(8) + (b - b'0')));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first mount of device `dev`, if it is mounted.
pub fn mount_of(mounts: &[Mount], dev: DevNum) -> Option<&Mount> {
    mounts.iter().find(|m| m.dev == dev)
}

/// The NUMA node of CPU `cpu` (its `cpuN/nodeM` link), `None` when the
/// kernel does not say (a kernel without NUMA, or no such CPU).
pub fn cpu_node(root: &Path, cpu: CpuId) -> Result<Option<NodeId>, TopologyError> {
    let mut r = reader(root)?;
    let entries = r
        .list(&format!("sys/devices/system/cpu/cpu{}", cpu.0))
        .unwrap_or_default();
    Ok(entries.iter().find_map(|e| {
        e.strip_prefix("node")
            .and_then(|n| n.parse().ok())
            .map(NodeId)
    }))
}

/// The CPUs of node `node` (`nodeN/cpulist`, or the `nodeN/cpumap` mask of
/// kernels that write no list; online CPUs). Errors: no such node, or its
/// list cannot be read.
pub fn node_cpus(root: &Path, node: NodeId) -> Result<CpuList, TopologyError> {
    let mut r = reader(root)?;
    let dir = format!("sys/devices/system/node/node{}", node.0);
    let rel = format!("{dir}/cpulist");
    let mask = format!("{dir}/cpumap");
    if r.read(&rel).is_none() {
        if let Some(text) = r.read(&mask) {
            return CpuList::parse_mask(&text, ListOf::Cpus).map_err(|e| {
                TopologyError::Unparsable {
                    path: r.abs(&mask),
                    source: e.into(),
                }
            });
        }
    }
    match r.read(&rel) {
        Some(text) => CpuList::parse(&text).map_err(|e| TopologyError::Unparsable {
            path: r.abs(&rel),
            source: e.into(),
        }),
        None => Err(TopologyError::MissingRequired {
            path: r.abs(&rel),
            root: r.abs(""),
            what: "the CPUs of a NUMA node",
        }),
    }
}

/// The NUMA node of network interface `name`: its device's `numa_node`
/// (`sys/class/net/NAME/device/numa_node`). `None` where the kernel does
/// not say: a virtual interface (loopback, veth, bridge: no device), a
/// device of node -1, or no such interface.
pub fn interface_node(root: &Path, name: &str) -> Result<Option<NodeId>, TopologyError> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Ok(None);
    }
    let mut r = reader(root)?;
    Ok(
        r.read_trimmed(&format!("sys/class/net/{name}/device/numa_node"))
            .and_then(|t| t.parse::<i64>().ok())
            .and_then(|n| u32::try_from(n).ok())
            .map(NodeId),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interfaces_node_is_its_devices_and_virtual_ones_have_none() {
        let root = std::env::temp_dir().join(format!("numio-ifnode-{}", std::process::id()));
        let dev = |name: &str, node: &str| {
            let d = root.join(format!("sys/class/net/{name}/device"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("numa_node"), format!("{node}\n")).unwrap();
        };
        dev("ens1f0", "1");
        dev("eno1", "-1");
        std::fs::create_dir_all(root.join("sys/class/net/lo")).unwrap();
        assert_eq!(interface_node(&root, "ens1f0").unwrap(), Some(NodeId(1)));
        assert_eq!(interface_node(&root, "eno1").unwrap(), None, "node -1");
        assert_eq!(interface_node(&root, "lo").unwrap(), None, "no device");
        assert_eq!(interface_node(&root, "nope").unwrap(), None);
        assert_eq!(interface_node(&root, "../x").unwrap(), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn mountinfo_lines_parse_with_escapes_and_optional_fields() {
        let text = "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n\
                    23 22 7:0 / /mnt/my\\040disk rw master:2 shared:3 - xfs /dev/loop0 rw\n\
                    24 22 0:45 /sub /srv rw - btrfs /dev/sda2 rw\n";
        let m = parse_mountinfo(text).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].dev, DevNum::new(259, 1));
        assert_eq!(
            (m[0].mount_point.as_str(), m[0].fs_type.as_str()),
            ("/", "ext4")
        );
        assert_eq!(m[1].mount_point, "/mnt/my disk");
        assert_eq!(m[1].source, "/dev/loop0");
        assert_eq!(m[2].root, "/sub");
        assert_eq!(
            mount_of(&m, DevNum::new(7, 0)).map(|m| m.fs_type.as_str()),
            Some("xfs")
        );
        assert_eq!(mount_of(&m, DevNum::new(7, 1)), None);
        assert!(parse_mountinfo("1 2 3:4 / /x rw ext4")
            .unwrap_err()
            .to_string()
            .contains("line 1: no ` - ` separator"));
        let e = parse_mountinfo("\n1 2 x / /x rw - ext4 /dev/x rw").unwrap_err();
        let ParseError::Line { line, text, reason } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(
            (*line, text.as_str()),
            (2, "1 2 x / /x rw - ext4 /dev/x rw")
        );
        assert_eq!(**reason, ParseError::NotADevNum { text: "x".into() });
        assert_eq!(
            e.to_string(),
            "line 2: expected MAJOR:MINOR, found `x`: `1 2 x / /x rw - ext4 /dev/x rw`"
        );
    }

    #[test]
    fn cpuinfo_model_name() {
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 9654\n"),
            "AMD EPYC 9654"
        );
        assert_eq!(cpu_model("processor\t: 0\n"), "");
    }

    #[test]
    fn this_machine_has_a_record_and_mounts() {
        let root = Path::new("/");
        let h = host_record(root).expect("live root");
        assert!(!h.kernel.is_empty() && !h.online_cpus.is_empty());
        let m = mounts(root).expect("live mountinfo");
        assert!(m.iter().any(|m| m.mount_point == "/"));
        let first = h.online_cpus.cpus()[0];
        if let Some(node) = cpu_node(root, first).expect("live root") {
            assert!(node_cpus(root, node).expect("its node").contains(first.0));
        }
    }
}

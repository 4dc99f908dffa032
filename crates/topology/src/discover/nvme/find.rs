//! Where the controllers of each kernel generation live, and PCI paths.
//!
//! | kernel | controller | namespace block devices |
//! | --- | --- | --- |
//! | 4.15 and later | `/sys/class/nvme/nvmeN` | heads under `nvme-subsysN`, or children of the controller |
//! | 4.1 to 4.14 | `/sys/class/nvme/nvmeN` | children of the controller (no `/sys/class/nvme-subsystem`) |
//! | 4.0 and older | `/sys/class/misc/nvmeN` (`<pci>/misc/nvmeN`) | `<pci>/block/nvmeNnM` |

use crate::parse::nvme_numbers;
use crate::reader::Reader;
use crate::relpath::{join, parent};

/// One controller found: its kernel name, the path it was found under
/// (`sys/class/nvme/nvme0`) and its sysfs directory.
#[derive(Debug, Clone)]
pub struct Located {
    /// `nvme0`.
    pub name: String,
    /// The class link it was found through, or its directory when it was
    /// found through a namespace.
    pub class_path: String,
    /// The resolved sysfs directory.
    pub dir: String,
}

/// Which class the controllers were found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// `/sys/class/nvme` (Linux 4.1 and later), or no NVMe at all.
    NvmeClass,
    /// `/sys/class/misc` or only through namespaces (Linux 4.0 and older).
    Misc,
}

/// Sorts kernel names by their numbers (`nvme2` before `nvme10`).
pub fn sort_by_numbers(names: &mut [String], prefix: &str, shape: &str) {
    names.sort_by_key(|n| nvme_numbers(n, prefix, shape).unwrap_or_default());
}

/// Every controller: those of `/sys/class/nvme`; on a kernel without that
/// class, those of `/sys/class/misc`, and those whose namespace block
/// devices (`sys/block/nvmeNnM` in `<pci>/block/`) lead to a
/// `<pci>/misc/nvmeN` the class listing lacks.
pub fn controllers(r: &mut Reader) -> (Vec<Located>, Generation) {
    let class = from_class(r, "sys/class/nvme");
    if !class.is_empty() || r.exists("sys/class/nvme") {
        return (class, Generation::NvmeClass);
    }
    let mut found = from_class(r, "sys/class/misc");
    for (class, ns) in block_namespaces(r) {
        let Some(dir) = r.resolve(&format!("{class}/{ns}")) else {
            continue;
        };
        if parent(&dir).rsplit('/').next() != Some("block") {
            continue;
        }
        let pci = parent(parent(&dir)).to_string();
        let name = format!(
            "nvme{}",
            nvme_numbers(&ns, "nvme", "n").unwrap_or_default()[0]
        );
        let ctrl_dir = join(&join(&pci, "misc"), &name);
        if found.iter().any(|f| f.name == name) || !r.exists(&ctrl_dir) {
            continue;
        }
        found.push(Located {
            name,
            class_path: ctrl_dir.clone(),
            dir: ctrl_dir,
        });
    }
    found.sort_by_key(|f| nvme_numbers(&f.name, "nvme", "").unwrap_or_default());
    let generation = if found.is_empty() {
        Generation::NvmeClass
    } else {
        Generation::Misc
    };
    (found, generation)
}

fn from_class(r: &mut Reader, class: &str) -> Vec<Located> {
    let mut names: Vec<String> = r
        .list(class)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| nvme_numbers(n, "nvme", "").is_some())
        .collect();
    sort_by_numbers(&mut names, "nvme", "");
    names
        .into_iter()
        .filter_map(|name| {
            let class_path = join(class, &name);
            let dir = r.resolve(&class_path)?;
            Some(Located {
                name,
                class_path,
                dir,
            })
        })
        .collect()
}

/// `nvmeNnM` entries of `sys/block` (or `sys/class/block`, which copies of
/// sysfs sometimes hold instead), with the directory they are in.
fn block_namespaces(r: &mut Reader) -> Vec<(&'static str, String)> {
    for class in ["sys/block", "sys/class/block"] {
        let mut names: Vec<String> = r
            .list(class)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| nvme_numbers(n, "nvme", "n").is_some())
            .collect();
        if !names.is_empty() {
            sort_by_numbers(&mut names, "nvme", "n");
            return names.into_iter().map(|n| (class, n)).collect();
        }
    }
    Vec::new()
}

/// Whether controller directory `dir` is a misc device (`<pci>/misc/nvmeN`,
/// Linux 4.0 and older), whose namespaces sit in `<pci>/block/`.
pub fn is_misc_dir(dir: &str) -> bool {
    parent(dir).rsplit('/').next() == Some("misc")
}

/// Whether `part` is a PCI function address `DOMAIN:BB:DD.F`: a domain of
/// 4 hex digits or more (Intel VMD puts its devices in domain `10000` and
/// up; some platforms use 32-bit domains), bus, device and function.
pub fn is_pci_function(part: &str) -> bool {
    let mut fields = part.split(':');
    let (Some(domain), Some(bus), Some(devfn), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return false;
    };
    let hex = |s: &str, min: usize, max: usize| {
        (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let Some((dev, func)) = devfn.split_once('.') else {
        return false;
    };
    hex(domain, 4, 8) && hex(bus, 2, 2) && hex(dev, 2, 2) && hex(func, 1, 1)
}

/// Whether `part` is a PCI host bridge directory (`pci0000:00`,
/// `pci10000:e0`).
fn is_host_bridge(part: &str) -> bool {
    part.strip_prefix("pci").is_some_and(|rest| {
        rest.split_once(':').is_some_and(|(domain, bus)| {
            (4..=8).contains(&domain.len())
                && bus.len() == 2
                && domain
                    .bytes()
                    .chain(bus.bytes())
                    .all(|b| b.is_ascii_hexdigit())
        })
    })
}

/// The PCI path of a device directory: the host bridge (`pci0000:00`) and
/// every bridge and function below it (`0000:00:01.0`, `0000:01:00.0`),
/// through nested domains such as Intel VMD's (`pci10000:e0`,
/// `10000:e1:00.0`).
pub fn pci_path_of(dir: &str) -> Vec<String> {
    let mut path = Vec::new();
    for part in dir.split('/') {
        if is_host_bridge(part) || (is_pci_function(part) && !path.is_empty()) {
            path.push(part.to_string());
        } else if !path.is_empty() {
            break;
        }
    }
    path
}

/// The PCI function directory of a device directory (the last PCI
/// function in it), when it sits on PCI.
pub fn pci_function_dir(dir: &str) -> Option<String> {
    let mut end = None;
    let mut offset = 0;
    for part in dir.split('/') {
        offset += part.len();
        if is_pci_function(part) {
            end = Some(offset);
        }
        offset += 1;
    }
    end.map(|e| dir[..e].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses_of_any_domain_width() {
        assert!(is_pci_function("0000:3b:00.0"));
        assert!(is_pci_function("10000:e1:00.0"), "Intel VMD domain");
        assert!(is_pci_function("12345678:00:1f.7"), "32-bit domain");
        assert!(!is_pci_function("nvme0"));
        assert!(!is_pci_function("0000:3b:00"));
        assert!(!is_pci_function("123456789:00:00.0"));
        assert!(is_host_bridge("pci10000:e0") && is_host_bridge("pci0000:00"));
        assert!(!is_host_bridge("pci_bus") && !is_host_bridge("pcie"));
    }

    /// Regression: the path stopped at the VMD host bridge because PCI
    /// addresses were assumed to be 12 characters long.
    #[test]
    fn pci_path_runs_through_a_vmd_domain() {
        let dir = "sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0/10000:e1:00.0/nvme/nvme0";
        assert_eq!(
            pci_path_of(dir),
            vec![
                "pci0000:00",
                "0000:00:0e.0",
                "pci10000:e0",
                "10000:e0:06.0",
                "10000:e1:00.0"
            ]
        );
        assert_eq!(
            pci_function_dir(dir).as_deref(),
            Some("sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0/10000:e1:00.0")
        );
        assert_eq!(
            pci_path_of("sys/devices/pci0030:00/0030:00:00.0/0030:01:00.0/nvme/nvme0"),
            vec!["pci0030:00", "0030:00:00.0", "0030:01:00.0"]
        );
        assert_eq!(
            pci_function_dir("sys/devices/virtual/nvme-fabrics/ctl/nvme2"),
            None
        );
    }
}

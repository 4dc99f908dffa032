//! A fake sysfs/procfs tree of PCI functions, for the tests of this
//! module and of its callers (`tune::vfio`): functions with a class, a
//! driver link, an IOMMU group and NVMe controllers with namespaces, laid
//! out as the kernel does (`sys/devices/pci0000:00/ADDR`, linked from
//! `sys/bus/pci/devices/ADDR`).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A tree under a directory of its own, removed on drop.
#[derive(Debug)]
pub struct FakeSys {
    root: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn link(target: &str, at: &Path) {
    std::fs::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
    let _ = std::fs::remove_file(at);
    symlink(target, at).expect("symlink");
}

impl FakeSys {
    /// An empty tree named after `tag` (unique per test and process), with
    /// `proc/self/mountinfo`, `proc/swaps` and the PCI bus's
    /// `drivers_probe` and `nvme` driver.
    pub fn new(tag: &str) -> FakeSys {
        let root = std::env::temp_dir().join(format!("numio-fakesys-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sys = FakeSys { root };
        sys.file("proc/self/mountinfo", "");
        sys.file(
            "proc/swaps",
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
        );
        sys.file("sys/bus/pci/drivers_probe", "");
        sys.driver("nvme");
        sys
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes `rel` (creating its directories).
    pub fn file(&self, rel: &str, text: &str) -> &FakeSys {
        write(&self.root.join(rel), text);
        self
    }

    /// Makes `rel` a symlink to `target`.
    pub fn link(&self, rel: &str, target: &str) -> &FakeSys {
        link(target, &self.root.join(rel));
        self
    }

    /// Creates the directory `rel`.
    pub fn dir(&self, rel: &str) -> &FakeSys {
        std::fs::create_dir_all(self.root.join(rel)).expect("mkdir");
        self
    }

    /// Registers driver `name` (`sys/bus/pci/drivers/NAME` with its
    /// `bind` and `unbind` files).
    pub fn driver(&self, name: &str) -> &FakeSys {
        let dir = format!("sys/bus/pci/drivers/{name}");
        self.file(&format!("{dir}/bind"), "")
            .file(&format!("{dir}/unbind"), "")
    }

    /// The device directory of `addr` (`sys/devices/pci0000:00/ADDR`).
    pub fn device_dir(addr: &str) -> String {
        format!("sys/devices/pci0000:00/{addr}")
    }

    /// A function `addr` of `class`, on `driver`, in IOMMU `group`, on
    /// `node` (-1 for none).
    pub fn function(
        &self,
        addr: &str,
        class: u32,
        driver: Option<&str>,
        group: Option<u32>,
        node: i32,
    ) -> &FakeSys {
        let dir = FakeSys::device_dir(addr);
        self.file(&format!("{dir}/class"), &format!("{class:#08x}\n"))
            .file(&format!("{dir}/vendor"), "0x1b36\n")
            .file(&format!("{dir}/device"), "0x0010\n")
            .file(&format!("{dir}/numa_node"), &format!("{node}\n"))
            .file(&format!("{dir}/driver_override"), "(null)\n")
            .link(
                &format!("sys/bus/pci/devices/{addr}"),
                &format!("../../../devices/pci0000:00/{addr}"),
            );
        if let Some(d) = driver {
            self.bind(addr, d);
        }
        if let Some(g) = group {
            self.link(
                &format!("{dir}/iommu_group"),
                &format!("../../../kernel/iommu_groups/{g}"),
            )
            .link(
                &format!("sys/kernel/iommu_groups/{g}/devices/{addr}"),
                &format!("../../../../devices/pci0000:00/{addr}"),
            );
        }
        self
    }

    /// Points `addr`'s `driver` link at driver `name` (registering it).
    pub fn bind(&self, addr: &str, name: &str) -> &FakeSys {
        self.driver(name).link(
            &format!("{}/driver", FakeSys::device_dir(addr)),
            &format!("../../../bus/pci/drivers/{name}"),
        )
    }

    /// Removes `addr`'s `driver` link.
    pub fn unbind(&self, addr: &str) -> &FakeSys {
        let _ = std::fs::remove_file(
            self.root
                .join(format!("{}/driver", FakeSys::device_dir(addr))),
        );
        self
    }

    /// Controller `nvmeN` under `addr` with namespace block devices
    /// `blocks` (`nvme0n1`, or a path device `nvme0c0n1`), each with a
    /// `dev` number `259:K` and the `sys/class/block` link of a disk.
    pub fn controller(&self, addr: &str, ctrl: &str, blocks: &[(&str, u32)]) -> &FakeSys {
        let cdir = format!("{}/nvme/{ctrl}", FakeSys::device_dir(addr));
        self.dir(&cdir);
        for (name, minor) in blocks {
            let bdir = format!("{cdir}/{name}");
            self.file(&format!("{bdir}/dev"), &format!("259:{minor}\n"))
                .dir(&format!("{bdir}/holders"));
            if crate::device::head_name(name).is_none() {
                self.link(
                    &format!("sys/class/block/{name}"),
                    &format!("../../devices/pci0000:00/{addr}/nvme/{ctrl}/{name}"),
                );
            }
        }
        self
    }

    /// Removes `addr`'s `nvme/` directory (the nvme driver let it go).
    pub fn remove_controllers(&self, addr: &str) -> &FakeSys {
        let _ = std::fs::remove_dir_all(
            self.root
                .join(format!("{}/nvme", FakeSys::device_dir(addr))),
        );
        self
    }

    /// Process `pid` (`comm`, `stat` starting at `start_ticks`) holding
    /// fds linked to `paths`.
    pub fn process(&self, pid: u32, comm: &str, start_ticks: u64, paths: &[&str]) -> &FakeSys {
        let dir = format!("proc/{pid}");
        // Fields 3.. of proc(5): state, then 18 zeros up to starttime (22).
        let stat = format!("{pid} ({comm}) S {}{start_ticks} 0 0\n", "0 ".repeat(18));
        self.file(&format!("{dir}/comm"), &format!("{comm}\n"))
            .file(&format!("{dir}/stat"), &stat)
            .dir(&format!("{dir}/fd"));
        for (i, p) in paths.iter().enumerate() {
            self.link(&format!("{dir}/fd/{}", i + 3), p);
        }
        self
    }

    /// Hugepage pool `size_kib` of `node` with `total` pages, `free` free.
    pub fn hugepages(&self, node: u32, size_kib: u64, total: u64, free: u64) -> &FakeSys {
        let dir = format!("sys/devices/system/node/node{node}/hugepages/hugepages-{size_kib}kB");
        self.file(&format!("{dir}/nr_hugepages"), &format!("{total}\n"))
            .file(&format!("{dir}/free_hugepages"), &format!("{free}\n"))
    }
}

impl Drop for FakeSys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

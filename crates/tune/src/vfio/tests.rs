//! Binding and giving back on fake sysfs trees, with a thread playing the
//! kernel: it reacts to `unbind` and `drivers_probe` writes as Linux does
//! (honouring `driver_override`, creating `/dev/vfio/N` for vfio-pci and
//! `nvme/nvme0` for nvme).

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use topology::pci::fake::FakeSys;
use topology::pci::{parse_address, CLASS_NVME};

use super::*;
use crate::error::TuneError;

const ADDR: &str = "0000:02:00.0";
const GROUP: u32 = 5;

struct FakeKernel {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The attributes the fake kernel reads (`drivers_probe`, each driver's
/// `unbind`), made FIFOs it holds open: every write is a message it reads
/// once. (Reading a regular file and then clearing it lost a write made in
/// between, on a loaded machine.)
struct Attrs {
    open: Vec<(PathBuf, std::fs::File)>,
}

impl Attrs {
    fn make(root: &Path) -> Attrs {
        let mut paths = vec![root.join("sys/bus/pci/drivers_probe")];
        let drivers = root.join("sys/bus/pci/drivers");
        for d in std::fs::read_dir(&drivers).into_iter().flatten().flatten() {
            paths.push(d.path().join("unbind"));
        }
        let open = paths
            .into_iter()
            .map(|p| {
                let _ = std::fs::remove_file(&p);
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &p,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .unwrap();
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                    .open(&p)
                    .unwrap();
                (p, f)
            })
            .collect();
        Attrs { open }
    }

    /// The addresses written to `path` since the last look.
    fn take(&mut self, path: &Path) -> Vec<String> {
        use std::io::Read;
        let Some((_, f)) = self.open.iter_mut().find(|(p, _)| p == path) else {
            return Vec::new();
        };
        let mut text = String::new();
        let mut buf = [0u8; 256];
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        // One address per write, with or without a newline.
        let flat: String = text.split_whitespace().collect();
        flat.as_bytes()
            .chunks(ADDR.len())
            .filter_map(|c| parse_address(std::str::from_utf8(c).ok()?))
            .collect()
    }
}

fn kernel_step(root: &Path, attrs: &mut Attrs) {
    let dev = |addr: &str| root.join(FakeSys::device_dir(addr));
    let drivers = root.join("sys/bus/pci/drivers");
    for d in std::fs::read_dir(&drivers).into_iter().flatten().flatten() {
        for addr in attrs.take(&d.path().join("unbind")) {
            let _ = std::fs::remove_file(dev(&addr).join("driver"));
            let _ = std::fs::remove_dir_all(dev(&addr).join("nvme"));
            let _ = std::fs::remove_file(root.join(format!("dev/vfio/{GROUP}")));
        }
    }
    for addr in attrs.take(&root.join("sys/bus/pci/drivers_probe")) {
        probe(root, &addr);
    }
}

/// What `drivers_probe` does for `addr`: a driver for an unbound device,
/// `driver_override`'s if set.
fn probe(root: &Path, addr: &str) {
    let dev = root.join(FakeSys::device_dir(addr));
    let drivers = root.join("sys/bus/pci/drivers");
    if dev.join("driver").symlink_metadata().is_ok() {
        return;
    }
    let over = std::fs::read_to_string(dev.join("driver_override")).unwrap_or_default();
    let over = over.trim();
    let driver = if over.is_empty() || over == "(null)" {
        "nvme"
    } else {
        over
    };
    if !drivers.join(driver).is_dir() {
        return;
    }
    let _ = std::os::unix::fs::symlink(
        format!("../../../bus/pci/drivers/{driver}"),
        dev.join("driver"),
    );
    if driver == "vfio-pci" {
        let _ = std::fs::create_dir_all(root.join("dev/vfio"));
        let _ = std::fs::write(root.join(format!("dev/vfio/{GROUP}")), "");
    } else {
        let _ = std::fs::create_dir_all(dev.join("nvme/nvme0/nvme0n1"));
    }
}

impl FakeKernel {
    fn start(root: &Path) -> FakeKernel {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, root) = (Arc::clone(&stop), root.to_path_buf());
        let mut attrs = Attrs::make(&root);
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                kernel_step(&root, &mut attrs);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        FakeKernel {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FakeKernel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A machine with an IOMMU, vfio-pci, and one NVMe controller on nvme
/// with a blank namespace `nvme0n1`.
fn machine(tag: &str) -> (FakeSys, FakeKernel, TakeOptions) {
    let sys = FakeSys::new(&format!("vfio-{tag}"));
    sys.function(ADDR, CLASS_NVME, Some("nvme"), Some(GROUP), 0)
        .function(
            "0000:00:1c.0",
            0x06_04_00,
            Some("pcieport"),
            Some(GROUP),
            -1,
        )
        .controller(ADDR, "nvme0", &[("nvme0n1", 1)])
        .file("dev/nvme0n1", &"\0".repeat(8192))
        .driver("vfio-pci")
        .dir("sys/class/iommu/dmar0");
    let kernel = FakeKernel::start(sys.root());
    let opts = TakeOptions {
        state_dir: Some(sys.root().join("run/numio")),
        command: "test".into(),
        ..TakeOptions::default()
    };
    (sys, kernel, opts)
}

fn driver(sys: &FakeSys) -> Option<String> {
    topology::pci::pci_function(sys.root(), ADDR)
        .unwrap()
        .unwrap()
        .driver
}

fn journal(opts: &TakeOptions) -> VfioJournal {
    VfioJournal::at(opts.state_dir.clone().unwrap())
}

#[test]
fn take_records_then_binds_and_give_back_restores_driver_and_override() {
    let (sys, _k, opts) = machine("basic");
    let b = Binding::take(sys.root(), ADDR, &opts).unwrap();
    assert!(b.owned() && !b.noiommu());
    assert_eq!(b.addr(), ADDR);
    assert_eq!(b.numa_node(), Some(0));
    assert_eq!(b.group_dev(), sys.root().join("dev/vfio/5"));
    let f = topology::pci::pci_function(sys.root(), ADDR)
        .unwrap()
        .unwrap();
    assert_eq!(f.driver.as_deref(), Some("vfio-pci"));
    assert_eq!(f.driver_override.as_deref(), Some("vfio-pci"));
    let recs = journal(&opts).records().unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].driver.as_deref(), Some("nvme"));
    assert_eq!(recs[0].driver_override, None);
    assert_eq!(recs[0].owner.map(|o| o.pid), Some(std::process::id()));
    b.give_back().unwrap();
    let f = topology::pci::pci_function(sys.root(), ADDR)
        .unwrap()
        .unwrap();
    assert_eq!(f.driver.as_deref(), Some("nvme"));
    assert_eq!(f.driver_override, None, "override cleared");
    assert_eq!(f.controllers, ["nvme0"], "the nvme controller is back");
    assert!(!journal(&opts).path().exists(), "record removed");
}

#[test]
fn drop_and_the_restorer_give_it_back_once() {
    let (sys, _k, opts) = machine("drop");
    drop(Binding::take(sys.root(), ADDR, &opts).unwrap());
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
    let b = Binding::take(sys.root(), ADDR, &opts).unwrap();
    let r = b.restorer();
    std::thread::spawn(move || r.restore())
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
    assert!(!journal(&opts).path().exists());
    b.give_back().unwrap();
}

#[test]
fn a_namespace_with_ext4_is_refused_without_force_and_nothing_changes() {
    let (sys, _k, mut opts) = machine("ext4");
    let mut head = vec![0u8; 8192];
    head[1080..1082].copy_from_slice(&[0x53, 0xef]);
    std::fs::write(sys.root().join("dev/nvme0n1"), head).unwrap();
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .expect("refused");
    let text = e.to_string();
    assert!(matches!(e, TuneError::InUse { .. }), "{text}");
    assert!(
        text.contains("/dev/nvme0n1 holds a") && text.contains("ext") && text.contains("--force"),
        "{text}"
    );
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
    assert!(!journal(&opts).path().exists(), "nothing recorded");
    opts.force = true;
    let b = Binding::take(sys.root(), ADDR, &opts).unwrap();
    assert_eq!(driver(&sys).as_deref(), Some("vfio-pci"));
    b.give_back().unwrap();
}

#[test]
fn mounts_holders_swap_and_open_devices_are_all_named() {
    let (sys, _k, opts) = machine("inuse");
    let ns = format!("{}/nvme/nvme0/nvme0n1", FakeSys::device_dir(ADDR));
    sys.file(&format!("{ns}/nvme0n1p1/partition"), "1\n")
        .file(&format!("{ns}/nvme0n1p1/dev"), "259:2\n")
        .dir(&format!("{ns}/nvme0n1p1/holders"))
        .link(
            "sys/class/block/nvme0n1p1",
            &format!(
                "../../{}/nvme/nvme0/nvme0n1/nvme0n1p1",
                FakeSys::device_dir(ADDR).trim_start_matches("sys/")
            ),
        )
        .file("dev/nvme0n1p1", "")
        .dir(&format!("{ns}/holders/dm-0"))
        .file(
            "proc/self/mountinfo",
            "22 1 259:2 / /data rw - xfs /dev/nvme0n1p1 rw\n",
        )
        .file(
            "proc/swaps",
            "Filename Type Size Used Priority\n/dev/nvme0n1 partition 1 0 -2\n",
        )
        .process(4242, "fio", 1, &["/dev/ng0n1"]);
    let text = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .expect("refused")
        .to_string();
    for part in [
        "/dev/nvme0n1p1 is mounted on /data",
        "/dev/nvme0n1 is held by dm-0",
        "/dev/nvme0n1 is a swap area in use",
        "/dev/ng0n1 is open in fio (pid 4242)",
        "--force",
    ] {
        assert!(text.contains(part), "{part} missing from: {text}");
    }
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
}

// Regression (issue 38): vfio bind missed a loop device backed by a
// namespace, nvmet and LIO exports of it (configfs names it by path), and
// programs holding the controller's character device open.
#[test]
fn loop_backings_target_exports_and_controller_holders_are_named() {
    let (sys, _k, opts) = machine("paths");
    let nvmet = "sys/kernel/config/nvmet/subsystems/nqn.x/namespaces/1";
    let lio = "sys/kernel/config/target/core/iblock_0";
    sys.file("sys/block/loop3/loop/backing_file", "/dev/nvme0n1\n")
        .file("sys/block/loop4/loop/backing_file", "/srv/other.img\n")
        .dir("sys/block/loop5/loop")
        .file(&format!("{nvmet}/device_path"), "/dev/nvme0n1\n")
        .link("dev/disk/by-id/nvme-fake", "../../nvme0n1")
        .file(
            &format!("{lio}/disk1/udev_path"),
            "/dev/disk/by-id/nvme-fake\n",
        )
        .file(&format!("{lio}/disk2/udev_path"), "\n")
        .process(5151, "nvme", 1, &["/dev/nvme0"]);
    let text = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .expect("refused")
        .to_string();
    for part in [
        "/dev/nvme0n1 backs the loop device /dev/loop3 (losetup -d /dev/loop3",
        "/dev/nvme0n1 is exported by nvmet subsystem nqn.x namespace 1",
        "/dev/nvme0n1 is exported by LIO backstore iblock_0/disk1",
        "/dev/nvme0 is open in nvme (pid 5151)",
        "--force",
    ] {
        assert!(text.contains(part), "{part} missing from: {text}");
    }
    for not in ["loop4", "loop5", "disk2"] {
        assert!(!text.contains(not), "{not} in: {text}");
    }
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
    assert!(!journal(&opts).path().exists(), "nothing recorded");
}

/// A loop device over a 16 MiB temp file holding ext4; `None` (the test
/// skips) without root, losetup or mkfs.ext4.
struct LoopDev {
    dev: String,
    file: std::path::PathBuf,
    mnt: std::path::PathBuf,
}

impl LoopDev {
    fn new() -> Option<LoopDev> {
        use std::process::Command;
        let root = sysapi::file::effective_uid() == 0;
        if !root || std::env::var_os("NUMIO_TEST_UNPRIVILEGED").is_some() {
            eprintln!("skipping: needs root (losetup, mount)");
            return None;
        }
        let tag = std::process::id();
        let file = std::env::temp_dir().join(format!("numio-vfio-claim-{tag}.img"));
        std::fs::write(&file, vec![0u8; 16 << 20]).ok()?;
        let mkfs = Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&file)
            .status();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file)
            .output();
        let dev = match (mkfs, out) {
            (Ok(m), Ok(o)) if m.success() && o.status.success() => {
                String::from_utf8_lossy(&o.stdout).trim().to_string()
            }
            _ => {
                eprintln!("skipping: mkfs.ext4 or losetup failed");
                let _ = std::fs::remove_file(&file);
                return None;
            }
        };
        let mnt = std::env::temp_dir().join(format!("numio-vfio-claim-mnt-{tag}"));
        std::fs::create_dir_all(&mnt).ok()?;
        Some(LoopDev { dev, file, mnt })
    }

    fn mount(&self) -> bool {
        std::process::Command::new("mount")
            .arg(&self.dev)
            .arg(&self.mnt)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    fn umount(&self) {
        let _ = std::process::Command::new("umount").arg(&self.mnt).status();
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        self.umount();
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.dev])
            .status();
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.mnt);
    }
}

// Regression (issue 38): a mount in another mount namespace (or one made
// between the check and the unbind) went unseen. The exclusive open just
// before the unbind is refused with EBUSY while the device is mounted, and
// while it is held nothing can mount it.
#[test]
fn a_mounted_namespace_is_refused_by_its_exclusive_claim_which_holds_it() {
    let Some(l) = LoopDev::new() else {
        return;
    };
    let (sys, _k, _opts) = machine("claim");
    std::fs::remove_file(sys.root().join("dev/nvme0n1")).unwrap();
    std::os::unix::fs::symlink(&l.dev, sys.root().join("dev/nvme0n1")).unwrap();
    let f = topology::pci::pci_function(sys.root(), ADDR)
        .unwrap()
        .unwrap();
    assert!(l.mount(), "mount {}", l.dev);
    let e = super::checks::claim(sys.root(), &f)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/dev/nvme0n1 is in use: the kernel refused an exclusive open (EBUSY"),
        "{e}"
    );
    l.umount();
    let held = super::checks::claim(sys.root(), &f).unwrap();
    assert_eq!(held.len(), 1);
    assert!(!l.mount(), "a claimed device cannot be mounted");
    drop(held);
    assert!(l.mount(), "the claim ends with its files");
}

#[test]
fn bad_devices_groups_and_missing_modules_are_named_with_the_fix() {
    let (sys, _k, opts) = machine("bad");
    let e = Binding::take(sys.root(), "0000:09:00.0", &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("0000:09:00.0: no such PCI function") && e.contains("lspci -D"),
        "{e}"
    );
    let e = Binding::take(sys.root(), "0000:00:1c.0", &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("is no NVMe controller (PCI class 0x060400"),
        "{e}"
    );
    sys.function("0000:03:00.0", 0x02_00_00, Some("e1000e"), Some(GROUP), -1);
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("IOMMU group 5 also holds 0000:03:00.0 (on e1000e)"),
        "{e}"
    );
    assert!(!e.contains("1c.0"), "a bridge does not count: {e}");
    sys.unbind("0000:03:00.0");
    std::fs::remove_dir_all(sys.root().join("sys/bus/pci/drivers/vfio-pci")).unwrap();
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("load vfio-pci (modprobe vfio-pci"), "{e}");
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
}

#[test]
fn without_an_iommu_it_is_refused_unless_allowed_and_possible() {
    let sys = FakeSys::new("vfio-noiommu");
    sys.function(ADDR, CLASS_NVME, Some("nvme"), None, -1)
        .driver("vfio-pci");
    let mut opts = TakeOptions {
        state_dir: Some(sys.root().join("run/numio")),
        ..TakeOptions::default()
    };
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no IOMMU is on") && e.contains("--allow-noiommu") && e.contains("DMA anywhere"),
        "{e}"
    );
    opts.allow_noiommu = true;
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("CONFIG_VFIO_NOIOMMU"), "{e}");
    sys.file(
        "sys/module/vfio/parameters/enable_unsafe_noiommu_mode",
        "N\n",
    );
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("enable_unsafe_noiommu_mode=1"), "{e}");
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
}

#[test]
fn kept_bindings_wait_for_unbind_and_dead_owners_are_restored() {
    let (sys, _k, opts) = machine("restore");
    let j = journal(&opts);
    Binding::take(sys.root(), ADDR, &opts)
        .unwrap()
        .keep()
        .unwrap();
    assert_eq!(j.records().unwrap()[0].owner, None);
    let r = restore_recorded(sys.root(), &j, false).unwrap();
    assert_eq!((r.restored.len(), r.skipped.len()), (0, 1));
    assert_eq!(driver(&sys).as_deref(), Some("vfio-pci"));
    assert_eq!(unbind_address(sys.root(), &j, ADDR).unwrap(), "nvme");
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
    assert!(j.records().unwrap().is_empty());

    // A live owner keeps it; once its pid runs another process, it is dead.
    sys.process(std::process::id(), "numio", 77, &[]);
    std::mem::forget(Binding::take(sys.root(), ADDR, &opts).unwrap());
    let r = restore_recorded(sys.root(), &j, true).unwrap();
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    let e = unbind_address(sys.root(), &j, ADDR)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("holds it"), "{e}");
    sys.process(std::process::id(), "other", 78, &[]);
    let r = restore_recorded(sys.root(), &j, false).unwrap();
    assert_eq!(r.restored.len(), 1, "{r:?}");
    assert_eq!(driver(&sys).as_deref(), Some("nvme"));
    assert!(!j.path().exists());
}

#[test]
fn hugepages_are_reserved_per_node_and_put_back() {
    let (sys, _k, mut opts) = machine("hugepages");
    sys.hugepages(0, 2048, 0, 0)
        .hugepages(1, 2048, 128, 128)
        .hugepages(0, 1048576, 0, 0);
    opts.hugepages_per_node = Some(64);
    let total = |node| {
        topology::pci::hugepages(sys.root())
            .unwrap()
            .into_iter()
            .find(|h| h.node == node && h.size_kib == 2048)
            .unwrap()
            .total
    };
    let b = Binding::take(sys.root(), ADDR, &opts).unwrap();
    assert_eq!((total(0), total(1)), (64, 128), "node 1 had enough");
    let rec = &journal(&opts).records().unwrap()[0];
    assert_eq!(rec.hugepages.len(), 1);
    assert_eq!((rec.hugepages[0].node, rec.hugepages[0].original), (0, 0));
    b.give_back().unwrap();
    assert_eq!((total(0), total(1)), (0, 128));
}

#[test]
fn a_device_on_vfio_pci_already_is_used_as_it_is() {
    let (sys, _k, opts) = machine("already");
    sys.bind(ADDR, "vfio-pci")
        .remove_controllers(ADDR)
        .file("dev/vfio/5", "");
    let b = Binding::take(sys.root(), ADDR, &opts).unwrap();
    assert!(!b.owned());
    assert!(!journal(&opts).path().exists(), "nothing recorded");
    b.give_back().unwrap();
    assert_eq!(driver(&sys).as_deref(), Some("vfio-pci"), "not given back");
    sys.process(999_999, "spdk", 3, &["/dev/vfio/5"]);
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("/dev/vfio/5 is open in spdk (pid 999999)"),
        "{e}"
    );
}

#[test]
fn a_device_in_a_no_iommu_group_is_used_only_when_allowed() {
    let (sys, _k, mut opts) = machine("noiommu-group");
    sys.bind(ADDR, "vfio-pci")
        .remove_controllers(ADDR)
        .file(&format!("dev/vfio/noiommu-{GROUP}"), "");
    let e = Binding::take(sys.root(), ADDR, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no-IOMMU mode") && e.contains("--allow-noiommu") && e.contains("DMA anywhere"),
        "{e}"
    );
    opts.allow_noiommu = true;
    let b = Binding::take(sys.root(), ADDR, &opts).unwrap();
    assert!(b.noiommu() && !b.owned());
    assert_eq!(
        b.group_dev(),
        sys.root().join(format!("dev/vfio/noiommu-{GROUP}"))
    );
    b.give_back().unwrap();
    assert_eq!(driver(&sys).as_deref(), Some("vfio-pci"), "not given back");
}

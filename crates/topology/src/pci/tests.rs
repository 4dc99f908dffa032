//! The PCI queries on fake trees laid out as the kernel does.

use std::path::Path;

use super::fake::FakeSys;
use super::*;

const NVME: u32 = CLASS_NVME;
const BRIDGE: u32 = 0x06_04_00;
const NIC: u32 = 0x02_00_00;

#[test]
fn addresses_are_accepted_in_three_forms() {
    assert_eq!(
        parse_address("0000:02:00.0").as_deref(),
        Some("0000:02:00.0")
    );
    assert_eq!(
        parse_address("pci:0000:41:00.1").as_deref(),
        Some("0000:41:00.1")
    );
    assert_eq!(parse_address("02:00.0").as_deref(), Some("0000:02:00.0"));
    assert_eq!(
        parse_address("0000:AF:00.0").as_deref(),
        Some("0000:af:00.0")
    );
    for bad in [
        "",
        "nvme0",
        "02:00",
        "0000:02:00.8",
        "000:02:00.0",
        "0000:02:0.0",
        "x:02:00.0",
    ] {
        assert_eq!(parse_address(bad), None, "{bad}");
    }
}

#[test]
fn an_nvme_function_on_its_driver_with_a_group_and_namespaces() {
    let sys = FakeSys::new("pci-facts");
    sys.function("0000:02:00.0", NVME, Some("nvme"), Some(7), 1)
        .function("0000:00:1c.0", BRIDGE, Some("pcieport"), Some(7), -1)
        .function("0000:03:00.0", NIC, Some("e1000e"), Some(7), -1)
        .function("0000:04:00.0", NVME, None, None, -1)
        .controller("0000:02:00.0", "nvme0", &[("nvme0n1", 1), ("nvme0c0n2", 2)]);
    let f = pci_function(sys.root(), "0000:02:00.0").unwrap().unwrap();
    assert!(f.is_nvme() && !f.on_vfio());
    assert_eq!((f.vendor, f.device), (Some(0x1b36), Some(0x0010)));
    assert_eq!(f.driver.as_deref(), Some("nvme"));
    assert_eq!(f.driver_override, None, "(null) is unset");
    assert_eq!((f.numa_node, f.iommu_group), (Some(1), Some(7)));
    assert_eq!(f.controllers, ["nvme0"]);
    assert_eq!(
        f.block_devices,
        ["nvme0n1", "nvme0n2"],
        "a path device counts as its head"
    );
    let peers: Vec<(&str, bool)> = f
        .group_peers
        .iter()
        .map(|m| (m.address.as_str(), m.blocks_vfio()))
        .collect();
    assert_eq!(peers, [("0000:00:1c.0", false), ("0000:03:00.0", true)]);
    let bare = pci_function(sys.root(), "0000:04:00.0").unwrap().unwrap();
    assert_eq!(
        (bare.driver, bare.iommu_group, bare.numa_node),
        (None, None, None)
    );
    assert!(bare.controllers.is_empty());
    assert_eq!(pci_function(sys.root(), "0000:09:00.0").unwrap(), None);
    assert_eq!(pci_function(sys.root(), "../x").unwrap(), None);
    assert_eq!(
        nvme_functions(sys.root()).unwrap(),
        ["0000:02:00.0", "0000:04:00.0"]
    );
}

#[test]
fn override_and_vfio_cdev_are_read() {
    let sys = FakeSys::new("pci-override");
    sys.function("0000:02:00.0", NVME, Some("vfio-pci"), Some(3), 0)
        .file(
            &format!("{}/driver_override", FakeSys::device_dir("0000:02:00.0")),
            "vfio-pci\n",
        )
        .dir(&format!(
            "{}/vfio-dev/vfio0",
            FakeSys::device_dir("0000:02:00.0")
        ));
    let f = pci_function(sys.root(), "0000:02:00.0").unwrap().unwrap();
    assert!(f.on_vfio());
    assert_eq!(f.driver_override.as_deref(), Some("vfio-pci"));
    assert_eq!(f.vfio_cdev.as_deref(), Some("vfio0"));
}

#[test]
fn iommu_modules_hugepages_swaps_and_holders() {
    let sys = FakeSys::new("pci-host");
    assert!(!iommu_enabled(sys.root()).unwrap());
    let m = vfio_modules(sys.root()).unwrap();
    assert_eq!(m.missing(), ["vfio", "vfio_iommu_type1", "vfio_pci"]);
    assert!(!m.noiommu_supported);
    sys.dir("sys/kernel/iommu_groups/0")
        .dir("sys/module/vfio")
        .dir("sys/module/vfio_iommu_type1")
        .file(
            "sys/module/vfio/parameters/enable_unsafe_noiommu_mode",
            "N\n",
        )
        .driver("vfio-pci");
    assert!(iommu_enabled(sys.root()).unwrap());
    let m = vfio_modules(sys.root()).unwrap();
    assert!(m.missing().is_empty() && m.noiommu_supported && !m.noiommu_enabled);
    sys.hugepages(0, 2048, 512, 500)
        .hugepages(0, 1048576, 0, 0)
        .hugepages(1, 2048, 0, 0);
    let hp = hugepages(sys.root()).unwrap();
    let row: Vec<(u32, u64, u64, u64)> = hp
        .iter()
        .map(|h| (h.node, h.size_kib, h.total, h.free))
        .collect();
    assert_eq!(
        row,
        [(0, 2048, 512, 500), (0, 1048576, 0, 0), (1, 2048, 0, 0)]
    );
    sys.file(
        "proc/swaps",
        "Filename Type Size Used Priority\n/dev/nvme0n1p2 partition 1024 0 -2\n",
    );
    assert_eq!(swaps(sys.root()).unwrap(), ["/dev/nvme0n1p2"]);
    sys.process(
        100,
        "numio",
        5,
        &["/dev/vfio/3", "/dev/null", "/dev/vfio/3"],
    )
    .process(200, "fio", 6, &["/dev/nvme0n1"]);
    let h = open_by(sys.root(), |p| p == "/dev/vfio/3").unwrap();
    assert_eq!(h.len(), 1, "one per process and file: {h:?}");
    assert_eq!((h[0].pid, h[0].command.as_str()), (100, "numio"));
    assert_eq!(
        crate::counters::process_start_ticks(sys.root(), 100),
        Some(5)
    );
    assert!(open_by(sys.root(), |p| p == "/dev/vfio/4")
        .unwrap()
        .is_empty());
}

#[test]
fn doctor_names_iommu_modules_hugepages_and_unheld_vfio_devices() {
    use crate::doctor::{diagnose_with, LiveFacts, Severity};
    let sys = FakeSys::new("pci-doctor");
    sys.function("0000:02:00.0", NVME, Some("vfio-pci"), Some(3), 0)
        .function("0000:04:00.0", NVME, Some("vfio-pci"), Some(4), 0)
        .function("0000:05:00.0", NVME, Some("nvme"), Some(5), 0)
        .hugepages(0, 2048, 0, 0)
        .process(300, "numio", 1, &["/dev/vfio/4"]);
    let topo = crate::Topology::discover(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-blockstack")
            .as_path(),
    )
    .unwrap();
    let live = LiveFacts {
        vfio: Some(vfio_facts(sys.root()).unwrap()),
        ..LiveFacts::default()
    };
    let found: Vec<(Severity, String, String)> = diagnose_with(&topo, &live)
        .into_iter()
        .filter(|f| {
            [
                "iommu-off",
                "vfio-modules-missing",
                "no-hugepages",
                "vfio-device-unheld",
            ]
            .contains(&f.code.as_str())
        })
        .map(|f| (f.severity, f.code, f.subject))
        .collect();
    assert_eq!(
        found,
        [
            (
                Severity::Warning,
                "vfio-device-unheld".into(),
                "0000:02:00.0".into()
            ),
            (Severity::Info, "vfio-modules-missing".into(), "vfio".into()),
            (Severity::Info, "no-hugepages".into(), "hugepages".into()),
        ]
    );
    // IOMMU groups mean an IOMMU is on; a bare machine has none.
    let bare = FakeSys::new("pci-doctor-bare");
    let facts = vfio_facts(bare.root()).unwrap();
    assert!(!facts.iommu);
    let live_bare = LiveFacts {
        vfio: Some(facts),
        ..LiveFacts::default()
    };
    assert!(diagnose_with(&topo, &live_bare)
        .iter()
        .any(|f| f.code == "iommu-off" && f.severity == Severity::Info));
    // Held, loaded, on, reserved: nothing to say.
    sys.process(301, "numio", 1, &["/dev/vfio/3"])
        .dir("sys/class/iommu/dmar0")
        .dir("sys/module/vfio")
        .dir("sys/module/vfio_iommu_type1")
        .dir("sys/module/vfio_pci")
        .hugepages(0, 2048, 16, 16);
    let live = LiveFacts {
        vfio: Some(vfio_facts(sys.root()).unwrap()),
        ..LiveFacts::default()
    };
    let before = crate::doctor::diagnose(&topo);
    assert_eq!(diagnose_with(&topo, &live), before);
}

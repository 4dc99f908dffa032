//! Test helpers shared by the engine's unit tests: the block devices of the
//! sysfs fixtures under `tests/fixtures/sysfs`.

use std::path::Path;
use topology::device::{BlockDevice, DevNum};

/// The facts of block device `name` of the `2node-blockstack` fixture.
pub(crate) fn fixture_device(name: &str) -> BlockDevice {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sysfs/2node-blockstack");
    let text = std::fs::read_to_string(root.join(format!("sys/class/block/{name}/dev")))
        .expect("dev file");
    let dev = DevNum::parse(&text).expect("MAJ:MIN");
    topology::device::block_device(&root, dev).expect("facts")
}

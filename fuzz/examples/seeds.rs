//! Writes the seed corpus (`numio_fuzz::seeds`) to
//! `fuzz/corpus/<target>/seed-<name>`, or under the directory given as the
//! only argument.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus"),
        PathBuf::from,
    );
    numio_fuzz::seeds::write_all(&dir)?;
    for s in numio_fuzz::seeds::all() {
        println!("{} ({} bytes)", s.path(&dir).display(), s.bytes.len());
    }
    Ok(())
}

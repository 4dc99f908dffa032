//! Writes the synthetic sysfs fixtures of `tests/fixtures/sysfs/` from the
//! machine specs in `tests/common/machines.rs`.
//!
//! `cargo run -p topology --example gen_fixtures` rewrites every generated
//! fixture (directories named `vm-*` are real captures and left alone);
//! the test `committed_fixtures_match_the_generator` checks they agree.

#[path = "../tests/common/mod.rs"]
mod common;

fn main() -> std::io::Result<()> {
    let base = common::fixtures_dir();
    for machine in common::machines::all() {
        let dir = base.join(&machine.name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        machine.tree().write(&dir)?;
        println!("wrote {}", dir.display());
    }
    Ok(())
}

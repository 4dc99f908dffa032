//! `numio topo`: print the topology of this machine or of a snapshot, and
//! save snapshots.

use std::path::PathBuf;

use anyhow::Context;

/// Flags of `numio topo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the whole model as JSON (schema: docs/readme/topology.md).
    #[arg(long)]
    pub json: bool,
    /// Read this sysfs/procfs root instead of `/`: a directory or a
    /// `.tar.gz` snapshot made by `--save`.
    #[arg(long, value_name = "DIR|FILE.tar.gz", default_value = "/")]
    pub root: PathBuf,
    /// Also save exactly the files read as a snapshot (`.tar.gz`) that
    /// `--root` replays.
    #[arg(long, value_name = "FILE.tar.gz")]
    pub save: Option<PathBuf>,
}

/// Runs `numio topo`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let (topo, recording) = topology::snapshot::open(&args.root)?.discover_recorded()?;
    if let Some(path) = &args.save {
        recording.save(path)?;
        eprintln!(
            "numio: saved {} paths to {}; replay with `numio topo --root {}`",
            recording.paths().len(),
            path.display(),
            path.display()
        );
    }
    let text = if args.json {
        serde_json::to_string_pretty(&topo).context("serializing the topology")? + "\n"
    } else {
        topology::render::tree(&topo)
    };
    print_stdout(&text)?;
    Ok(0)
}

/// Writes `text` to stdout; a closed pipe (`numio topo | head`) is not an
/// error.
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_then_root_replays_the_same_model() {
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-multipath-tcp");
        let file =
            std::env::temp_dir().join(format!("numio-topo-cli-{}.tar.gz", std::process::id()));
        let code = run(Args {
            json: true,
            root: fixture.clone(),
            save: Some(file.clone()),
        })
        .expect("topo --save runs");
        assert_eq!(code, 0);
        let original = topology::Topology::discover(&fixture).expect("fixture");
        let replayed = topology::Topology::load(&file).expect("snapshot written by --save loads");
        std::fs::remove_file(&file).expect("remove snapshot");
        assert_eq!(original, replayed);
    }
}

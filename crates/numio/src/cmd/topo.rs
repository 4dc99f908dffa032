//! `numio topo`: print the topology of this machine or of a snapshot, save
//! snapshots, and draw the machine (`--svg`, `--png`).

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
    /// Draw the machine as an SVG picture: NUMA nodes with CPUs and
    /// memory, PCI roots, NVMe controllers and namespaces, multipath paths
    /// and doctor's findings marked on the parts they concern.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// The same picture as PNG.
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
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
    let drew = draw(&args, &topo)?;
    if drew && !args.json {
        return Ok(0);
    }
    let text = if args.json {
        serde_json::to_string_pretty(&topo).context("serializing the topology")? + "\n"
    } else {
        topology::render::tree(&topo)
    };
    print_stdout(&text)?;
    Ok(0)
}

/// Writes the pictures `--svg` and `--png` ask for; whether there were any.
fn draw(args: &Args, topo: &topology::Topology) -> anyhow::Result<bool> {
    let label = if args.root == std::path::Path::new("/") {
        let host = topology::host::host_record(&args.root).unwrap_or_default();
        match host.hostname.as_str() {
            "" => "this machine".to_string(),
            h => h.to_string(),
        }
    } else {
        format!("snapshot {}", args.root.display())
    };
    let findings = topology::doctor::Report::new(topo).findings;
    for (path, png) in [(&args.svg, false), (&args.png, true)] {
        let Some(path) = path else { continue };
        report::topo::write(topo, &findings, &label, path, png)
            .with_context(|| format!("drawing the machine to {}", path.display()))?;
        eprintln!("numio: drew the machine to {}", path.display());
    }
    Ok(args.svg.is_some() || args.png.is_some())
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
            svg: None,
            png: None,
        })
        .expect("topo --save runs");
        assert_eq!(code, 0);
        let original = topology::Topology::discover(&fixture).expect("fixture");
        let replayed = topology::Topology::load(&file).expect("snapshot written by --save loads");
        std::fs::remove_file(&file).expect("remove snapshot");
        assert_eq!(original, replayed);
    }

    #[test]
    fn svg_draws_the_snapshot_with_its_findings() {
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-multipath-tcp");
        let file = std::env::temp_dir().join(format!("numio-topo-cli-{}.svg", std::process::id()));
        let code = run(Args {
            json: false,
            root: fixture,
            save: None,
            svg: Some(file.clone()),
            png: None,
        })
        .expect("topo --svg runs");
        assert_eq!(code, 0);
        let svg = std::fs::read_to_string(&file).expect("picture written");
        std::fs::remove_file(&file).expect("remove picture");
        assert!(svg.starts_with("<svg "), "an SVG document");
        assert!(
            svg.contains("snapshot ") && svg.contains("2node-multipath-tcp"),
            "titled by the snapshot"
        );
        assert!(
            svg.contains(">controller-node-unknown</text>"),
            "nvme2's finding marked"
        );
    }
}

//! `numio man --dir DIR`: man pages generated from the clap definitions
//! (clap_mangen): `numio.1` and one page per subcommand, nested ones too
//! (`numio-serve.1`, `numio-coalesce-sweep.1`), as git names its pages.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Flags of `numio man`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example: numio man --dir /tmp/man && man -l /tmp/man/numio-serve.1")]
pub struct Args {
    /// Directory to write the pages to (created if missing); existing pages are replaced.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

/// Writes the pages of `cli` under `args.dir` and lists them on stdout.
pub fn run(args: Args, cli: clap::Command) -> anyhow::Result<i32> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating --dir {}", args.dir.display()))?;
    for page in write_pages(cli, &args.dir)? {
        println!("{}", page.display());
    }
    Ok(0)
}

/// Writes a page for `cli` and each of its subcommands (not `help`) into
/// `dir`; returns the paths written.
pub fn write_pages(mut cli: clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    cli.build();
    let mut written = Vec::new();
    write_tree(&cli, cli.get_name().to_string(), dir, &mut written)?;
    Ok(written)
}

fn write_tree(
    cmd: &clap::Command,
    name: String,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    // The page's own name is the dashed path, as in its NAME and SYNOPSIS.
    let named = cmd
        .clone()
        .name(name.clone())
        .bin_name(name.replace('-', " "));
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(named).render(&mut page)?;
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        write_tree(sub, format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_page_per_subcommand_nested_ones_too() {
        let cli = clap::Command::new("numio")
            .version("1.2.3 (commit abc)")
            .propagate_version(true)
            .subcommand(clap::Command::new("topo").about("Show the machine."))
            .subcommand(
                clap::Command::new("coalesce")
                    .subcommand(clap::Command::new("sweep").arg(clap::arg!(--points <N>))),
            );
        let dir = std::env::temp_dir().join(format!("numio-man-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pages = write_pages(cli, &dir).unwrap();
        let names: Vec<_> = pages
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "numio.1",
                "numio-topo.1",
                "numio-coalesce.1",
                "numio-coalesce-sweep.1"
            ]
        );
        let sweep = std::fs::read_to_string(dir.join("numio-coalesce-sweep.1")).unwrap();
        assert!(sweep.starts_with(".ie"), "roff: {sweep}");
        assert!(sweep.contains("numio\\-coalesce\\-sweep"), "{sweep}");
        assert!(sweep.contains("\\-\\-points"), "{sweep}");
        assert!(sweep.contains("1.2.3 (commit abc)"), "{sweep}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

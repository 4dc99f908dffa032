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
pub fn write_pages(cli: clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut cli = without_help_subcommands(cli);
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
    let page = render_page(named, &name)?;
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    for sub in cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help" && !s.is_hide_set())
    {
        write_tree(sub, format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// `cmd` and its subcommands without clap's `help` subcommand, which has
/// no page of its own (a `numio-help(1)` link would dangle).
fn without_help_subcommands(cmd: clap::Command) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names
        .iter()
        .fold(cmd.disable_help_subcommand(true), |c, n| {
            c.mut_subcommand(n, without_help_subcommands)
        })
}

/// One page: clap_mangen's sections, then EXAMPLES and EXIT STATUS. The
/// `help` subcommand is left out of SUBCOMMANDS (it has no page of its
/// own, so `numio-help(1)` would dangle).
fn render_page(cmd: clap::Command, name: &str) -> anyhow::Result<Vec<u8>> {
    let has_args = cmd.get_arguments().any(|a| !a.is_hide_set());
    let has_subs = cmd.get_subcommands().any(|c| !c.is_hide_set());
    let has_extra = cmd.get_after_help().is_some() || cmd.get_after_long_help().is_some();
    let man = clap_mangen::Man::new(cmd);
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if has_args {
        man.render_options_section(&mut page)?;
    }
    if has_subs {
        man.render_subcommands_section(&mut page)?;
    }
    let examples = examples(name);
    if !examples.is_empty() {
        page.extend_from_slice(b".SH EXAMPLES\n");
        for (what, command) in examples {
            page.extend_from_slice(
                format!(".TP\n{}\n{}\n", roff_text(command), roff_text(what)).as_bytes(),
            );
        }
    }
    page.extend_from_slice(b".SH \"EXIT STATUS\"\n");
    for (code, what) in exit_status(name) {
        page.extend_from_slice(format!(".TP\n{code}\n{}\n", roff_text(what)).as_bytes());
    }
    if has_extra {
        man.render_extra_section(&mut page)?;
    }
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// Text as one roff line: backslashes escaped, no leading control
/// character.
fn roff_text(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// Commands a user types first, per page: (what it does, the command).
fn examples(page: &str) -> Vec<(&'static str, &'static str)> {
    match page {
        "numio" => vec![
            ("Benchmark every NVMe namespace read-only (or the embedded default target without NVMe).", "numio bench"),
            ("Show where every NVMe drive sits.", "numio topo"),
            ("Find NUMA, multipath, IRQ and queue problems.", "numio doctor"),
        ],
        "numio-bench" => vec![
            ("4 KiB random reads at queue depth 64 for 30 s, on CPUs of the drive's node.", "numio bench /dev/nvme0n1 --rw randread --bs 4k --iodepth 64 --runtime 30s"),
            ("Five runs with repeat statistics, saved for numio report.", "numio bench /dev/nvme0n1 --repeat 5 --save run.json"),
            ("A fio job file, with the queue depth changed on the command line.", "numio bench job.fio --iodepth 16"),
            ("An NVMe/TCP namespace through numio's own initiator.", "numio bench nvme-tcp://10.0.0.5/nqn.2026-11.io.numio:mem0/1"),
        ],
        "numio-compare" => vec![
            ("NUMA-local against spread placement, five interleaved runs each.", "numio compare --a numa=local --b numa=spread /dev/nvme0n1 --repeat 5"),
        ],
        "numio-sweep" => vec![
            ("IOPS and latency over queue depths; the knee and CPU headroom.", "numio sweep iodepth=1,4,16,64 /dev/nvme0n1"),
        ],
        "numio-report" => vec![("Reprint a saved run or set.", "numio report run.json")],
        "numio-topo" => vec![
            ("The machine as a table.", "numio topo"),
            ("The same as JSON.", "numio topo --json"),
        ],
        "numio-doctor" => vec![("Findings with evidence and a fix each.", "numio doctor")],
        "numio-multipath" => vec![("Which path each node's I/O takes, proven by short reads.", "numio multipath --probe")],
        "numio-plan" => vec![("Four jobs on the drive's node, as a fio job file.", "numio plan /dev/nvme0n1 --numjobs 4 --format fio")],
        "numio-serve" => vec![("A 1 GiB RAM namespace for the hosts nvme-cli knows as this one.", "numio serve --ns mem:1G --listen 0.0.0.0 --allow-host \"$(cat /etc/nvme/hostnqn)\"")],
        "numio-connect" => vec![("Connect the kernel's host; hold until Ctrl-C.", "numio connect nvme-tcp://10.0.0.5/nqn.2026-11.io.numio:mem0/1")],
        "numio-coalesce-show" => vec![("Every controller's interrupt coalescing.", "numio coalesce show")],
        "numio-coalesce-sweep" => vec![("Sweep thresholds on one drive and recommend one.", "numio coalesce sweep nvme0")],
        "numio-vfio-status" => vec![("Drivers, IOMMU groups and hugepages.", "numio vfio status")],
        _ => Vec::new(),
    }
}

/// What numio's exit codes mean on `page`.
fn exit_status(page: &str) -> Vec<(&'static str, &'static str)> {
    let mut codes = vec![("0", "Success.")];
    match page {
        "numio-bench" => {
            codes.push((
                "1",
                "Some I/O failed (a verify mismatch is one); the report counts them.",
            ));
            codes.push((
                "2",
                "Bad input, or the verify state is stale; the message names the input and the fix.",
            ));
        }
        "numio-sweep" => {
            codes.push(("1", "A run failed; the others are reported."));
            codes.push(("2", "Bad input; the message names the input and the fix."));
        }
        _ => codes.push(("2", "An error; the message names the input and the fix.")),
    }
    codes.push(("130, 143", "Interrupted by SIGINT or SIGTERM (128 + the signal); what completed is reported and every setting numio changed is restored."));
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39: the pages were the clap dump, without EXAMPLES or EXIT
    /// STATUS, and numio.1 linked a numio-help(1) that does not exist.
    #[test]
    fn numios_pages_have_examples_exit_status_and_no_dangling_links() {
        use clap::CommandFactory;
        let dir = std::env::temp_dir().join(format!("numio-man-real-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pages = write_pages(crate::Cli::command(), &dir).unwrap();
        let names: Vec<String> = pages
            .iter()
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names
                .iter()
                .any(|n| n.ends_with("-help") || n == "numio-agent"),
            "{names:?}"
        );
        for p in &pages {
            let text = std::fs::read_to_string(p).unwrap();
            assert!(text.contains(".SH \"EXIT STATUS\""), "{}", p.display());
            // Every page another page points to exists.
            for link in text.split("\\fB").filter_map(|t| t.split("(1)").next()) {
                let link = link.trim_end_matches("\\fR");
                if link.starts_with("numio-") && !link.contains(' ') && link.len() < 40 {
                    assert!(
                        names.iter().any(|n| n == link),
                        "{} links {link}",
                        p.display()
                    );
                }
            }
        }
        let bench = std::fs::read_to_string(dir.join("numio-bench.1")).unwrap();
        assert!(bench.contains(".SH EXAMPLES"), "{bench}");
        assert!(
            bench.contains("numio bench /dev/nvme0n1 \\-\\-rw randread"),
            "{bench}"
        );
        let top = std::fs::read_to_string(dir.join("numio.1")).unwrap();
        assert!(
            !top.contains("numio\\-help") && !top.contains("numio-help"),
            "{top}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

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

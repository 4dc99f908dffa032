//! `numio fabric`, replaced by `numio sweep --hosts`: what is left is the
//! reprint of a study an older numio saved (schema `numio-fabric`), and,
//! for a command line written for it, the sweep that does the same.

use anyhow::{bail, Context};
use fleet::study::Study;

/// Whatever follows `numio fabric` (hidden: the command is gone).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Its old flags.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

/// Says which sweep does what `numio fabric` did.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    bail!(
        "numio fabric is now a sweep over hosts, with one output that numio report reprints: \
         numio sweep initiators=1,2 reactors=1,2,4 --hosts INI1,INI2 --target-host TGT --target-cpus 0-7 \
         [--target-ns mem:1G] [--target-transport rdma] [--stack kernel] [bench workload flags, without `--`] \
         (--initiator-counts became the initiators= axis, --target-core-counts the reactors= axis, \
         --initiators --hosts, --target --target-host, --use-target URL a target word); see numio sweep --help"
    )
}

/// `numio report FILE` of a study saved by an older `numio fabric --save`:
/// prints it as fabric did; `None` when FILE is another kind of file.
pub fn reprint(args: &super::report::Args) -> Option<anyhow::Result<i32>> {
    let study = Study::from_json(&std::fs::read_to_string(&args.file).ok()?)?;
    Some((|| {
        let study = study
            .with_context(|| format!("reading the numio fabric study {}", args.file.display()))?;
        if args.csv.is_some() || args.chart.is_some() || args.fio_json {
            bail!(
                "{} is a numio fabric study: it prints as text or --json (--csv, --chart and --fio-json are for bench, compare and sweep results)",
                args.file.display()
            );
        }
        if args.json {
            println!("{}", serde_json::to_string_pretty(&study)?);
        } else {
            print!("{}", report::fabric::render(&study));
        }
        Ok(0)
    })())
}

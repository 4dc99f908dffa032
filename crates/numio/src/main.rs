//! `numio`: the command-line front end. Glue only: each subcommand lives in
//! `cmd/<name>.rs`, parses its flags, calls the library crates and prints.

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;

/// NUMA-aware NVMe performance tool.
#[derive(Debug, Parser)]
#[command(name = "numio", version = env!("NUMIO_VERSION"), about, long_about = None, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    // Measure.
    /// Benchmark NVMe namespaces, block devices or files (the main job).
    Bench(cmd::bench::Args),
    /// Run two arms (policies, plans, job files or saved results) and compare them.
    Compare(cmd::compare::Args),
    /// Scaling study: a bench per point of an axis (jobs, iodepth, bs,
    /// devices, rw, rwmixread; reactors of a target it serves; initiators
    /// across hosts), the knee and each side's CPU.
    Sweep(cmd::sweep::Args),
    /// Write drives to steady state the SNIA way (a sequential fill, then
    /// rounds until the steady-state test holds) and record it.
    Precondition(cmd::precondition::Args),
    /// Reprint or export a saved result file.
    Report(cmd::report::Args),
    // Look at the machine.
    /// Show NUMA nodes, CPUs and every NVMe controller, namespace and path.
    Topo(cmd::topo::Args),
    /// Find NUMA, multipath, IRQ and queue problems and say how to fix them.
    Doctor(cmd::doctor::Args),
    /// Which path of each multipath namespace each node's I/O takes, and
    /// whether it is the nearest (`--probe` proves it with a short read).
    Multipath(cmd::multipath::Args),
    /// Place jobs on NUMA-local CPUs; emit numio, fio, numactl or JSON plans.
    Plan(cmd::plan::Args),
    // Tune.
    /// NVMe interrupt coalescing: show it, set it or turn it off on every
    /// named controller or none, and restore the originals numio recorded;
    /// sweep thresholds with a workload and recommend one.
    Coalesce(cmd::coalesce::Args),
    /// Hand NVMe controllers to vfio-pci for numio's user-space driver and
    /// give them back; show drivers, IOMMU groups and hugepages.
    Vfio(cmd::vfio::Args),
    // Serve and connect.
    /// Serve namespaces over NVMe/TCP and NVMe/RDMA.
    Serve(cmd::serve::Args),
    /// Connect the Linux host to an NVMe/TCP or NVMe/RDMA namespace, print
    /// its block device, hold the connection until stdin closes or Ctrl-C,
    /// disconnect.
    Connect(cmd::connect::Args),
    // Across hosts.
    /// Replaced by `numio sweep --hosts`: says which sweep does the same.
    #[command(hide = true)]
    Fabric(cmd::fabric::Args),
    /// The far end of `numio bench --hosts`, started over ssh: speaks the
    /// fleet protocol on stdin and stdout (not for interactive use).
    #[command(hide = true)]
    Agent(cmd::agent::Args),
    // Set-up.
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::Args),
    /// Write man pages (numio.1 and one per subcommand) into a directory.
    Man(cmd::man::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Topo(args) => cmd::topo::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Multipath(args) => cmd::multipath::run(args),
        Command::Plan(args) => cmd::plan::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Sweep(args) => cmd::sweep::run(args),
        Command::Precondition(args) => cmd::precondition::run(args),
        // A fabric study file (an older numio's) reprints as fabric printed
        // it, a bench --json file (one host's or a fleet's) or a
        // precondition file as bench or precondition printed it.
        Command::Report(args) => cmd::fabric::reprint(&args)
            .or_else(|| cmd::bench::reprint(&args))
            .or_else(|| cmd::bench::bench_fleet::reprint(&args))
            .unwrap_or_else(|| cmd::report::run(args)),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Agent(args) => cmd::agent::run(args),
        Command::Fabric(args) => cmd::fabric::run(args),
        Command::Connect(args) => cmd::connect::run(args),
        Command::Coalesce(args) => cmd::coalesce::run(args),
        Command::Vfio(args) => cmd::vfio::run(args),
        Command::Completions(args) => cmd::completions::run(args, Cli::command()),
        Command::Man(args) => cmd::man::run(args, Cli::command()),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("numio: error: {}", error_text(&err));
            std::process::exit(2);
        }
    }
}

/// `err` and its causes, joined with `: ` like `{err:#}`, leaving out a
/// cause whose text an earlier message already holds (many messages name
/// their OS error and keep it as their source too).
fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_text;

    /// An error whose message holds its source's text, as thiserror's
    /// `#[error("...: {source}")]` makes them.
    #[derive(Debug)]
    struct Open {
        source: std::io::Error,
    }
    impl std::fmt::Display for Open {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot open x: {} (check the path)", self.source)
        }
    }
    impl std::error::Error for Open {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn causes_already_in_the_message_are_printed_once() {
        let os = || std::io::Error::from_raw_os_error(2);
        let err = anyhow::Error::new(Open { source: os() }).context("run 1");
        assert_eq!(
            error_text(&err),
            "run 1: cannot open x: No such file or directory (os error 2) (check the path)"
        );
        let err = anyhow::Error::new(os()).context("reading y");
        assert_eq!(
            error_text(&err),
            "reading y: No such file or directory (os error 2)"
        );
    }
}

//! The flags of `numio sweep` (its axes are words: `session::axes`; across
//! hosts: `sweep_fleet`).

use std::path::PathBuf;

use super::bench::bench_fleet::FleetArgs;
use super::engine_args::EngineArgs;
use super::flags::{NumaArg, WorkloadArgs};
use report::sweep::output::Outputs;

/// Points above which a grid needs `--allow-large-grid`.
pub const MAX_POINTS: usize = 1000;

/// Flags of `numio sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Axes (`jobs=1,2,4`, `iodepth=1,4,16,64`, `bs=4k,64k`,
    /// `devices=1,2,4`, `rw=randread,randwrite`, `rwmixread=50,70`,
    /// `reactors=1,2,4`: a numio serve of that many reactors on a RAM
    /// namespace on loopback that the sweep starts and stops per run,
    /// `initiator-cores=1,2,4`: jobs of an NVMe-oF initiator, one per core,
    /// with nvme-tcp:// or nvme-rdma:// targets or a reactors axis,
    /// `transport=tcp,rdma`: the same NVMe-oF targets reached over each
    /// transport, the tcp or rdma backend; `initiators=1,2,4`: the first N
    /// of --hosts at once; two make a grid), then the targets (none: as
    /// `numio bench`).
    #[arg(required = true, value_name = "AXIS=VALUES|TARGET")]
    pub words: Vec<String>,
    /// Runs per point, interleaved over the points.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: usize,
    /// Scaling efficiency below which a step is the knee.
    #[arg(long, default_value_t = report::sweep::DEFAULT_KNEE_EFFICIENCY, value_name = "FRACTION")]
    pub knee: f64,
    /// Name the smallest axis value (fewest cores) whose total IOPS reaches N (e.g. 1.5M).
    #[arg(long, value_name = "N")]
    pub target_iops: Option<String>,
    /// Name the smallest axis value whose bandwidth reaches SIZE per second (e.g. 3G).
    #[arg(long, value_name = "SIZE")]
    pub target_bw: Option<String>,
    /// Print the sweep as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the points as CSV, one row per point (`-`: standard output).
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Save every run to this result file (reprint: numio report FILE;
    /// numio compare --a result=A --b result=B compares two point by point).
    #[arg(long, value_name = "FILE.json")]
    pub save: Option<PathBuf>,
    /// Draw IOPS (error bars, ideal line, knee), latency percentiles,
    /// efficiency and CPU headroom against the axis (.svg or .png).
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub chart: Option<PathBuf>,
    /// Run a grid of more than 1,000 points.
    #[arg(long = "allow-large-grid", alias = "force")]
    pub force: bool,
    /// Pin every point's jobs to these CPUs (not with the jobs axis).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Placement policy of every point: local (default), spread, remote or none.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub numa: Option<NumaArg>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub fleet: SweepHostsArgs,
}

impl Args {
    /// Where the sweep goes besides the terminal.
    pub fn outputs(&self) -> Outputs {
        Outputs {
            json: self.json,
            csv: self.csv.clone(),
            save: self.save.clone(),
            chart: self.chart.clone(),
        }
    }
}

/// Fleet flags of `numio sweep`.
#[derive(Debug, Default, clap::Args)]
#[command(next_help_heading = "Across hosts (over ssh)")]
pub struct SweepHostsArgs {
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// numio serve runs on this host for each run (`[user@]host[:port]`),
    /// and the hosts reach its namespace; a `reactors` axis starts it on
    /// the first K CPUs of --target-cpus.
    #[arg(long, value_name = "HOST")]
    pub target_host: Option<String>,
    /// Where it listens and the hosts connect [default: the target host's
    /// address, port 4420].
    #[arg(long, value_name = "ADDR:PORT", requires = "target_host")]
    pub target_listen: Option<String>,
    /// Its namespaces, as `numio serve --ns` (repeat) [default: mem:1G].
    #[arg(long, value_name = "NS", requires = "target_host")]
    pub target_ns: Vec<String>,
    /// Its CPUs (`numio serve --cpus`), e.g. 0-7.
    #[arg(long, value_name = "LIST", requires = "target_host")]
    pub target_cpus: Option<String>,
    /// Busy-poll it (`numio serve --poll`).
    #[arg(long, requires = "target_host")]
    pub target_poll: bool,
    /// Its transport, and so the hosts': tcp or rdma.
    #[arg(long, value_name = "tcp|rdma", value_parser = ["tcp", "rdma"], requires = "target_host")]
    pub target_transport: Option<String>,
    /// Whose NVMe-oF host the hosts run: numio's (numio bench's tcp or
    /// rdma backend), or the Linux kernel's (each host connects with
    /// `numio connect`, benches the block device the kernel makes, and
    /// disconnects, also if numio dies).
    #[arg(long, value_enum, default_value_t = StackArg::Numio)]
    pub stack: StackArg,
}

/// Whose NVMe-oF host the initiators run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StackArg {
    /// numio bench's tcp or rdma backend.
    #[default]
    Numio,
    /// The Linux kernel's nvme-tcp or nvme-rdma, through its block device.
    Kernel,
}

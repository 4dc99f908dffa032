//! The flag tables shared by subcommands: the workload (`plan`, `bench`,
//! `compare`: fio's names and units, one help section), the engine
//! (`bench`, `compare`), and the closed sets of values as clap value enums
//! (their help lists the values). Values in fio's syntax (`4k`, `1.5k`,
//! `4k-64k`, `10s`, `zipf:1.2`) are read by the planner's fio parsers,
//! the ones job files use; every error names the flag and the value.

use clap::ValueEnum;
use planner::flags::{Placing, WorkloadFlags};
use planner::{Placement, RwMode, Workload};

/// fio's `rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RwArg {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Sequential mixed reads and writes (--rwmixread).
    #[value(alias = "readwrite")]
    Rw,
    /// Random mixed reads and writes (--rwmixread).
    Randrw,
}

impl From<RwArg> for RwMode {
    fn from(a: RwArg) -> RwMode {
        match a {
            RwArg::Read => RwMode::Read,
            RwArg::Write => RwMode::Write,
            RwArg::Randread => RwMode::RandRead,
            RwArg::Randwrite => RwMode::RandWrite,
            RwArg::Rw => RwMode::ReadWrite,
            RwArg::Randrw => RwMode::RandRw,
        }
    }
}

/// Engine backends (`engine::BackendKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// io_uring reads and writes.
    Uring,
    /// pread/pwrite, one at a time: the reference.
    Sync,
    /// No I/O: measures numio itself.
    Null,
    /// io_uring NOPs: measures the kernel round trip.
    Nop,
    /// NVMe commands through io_uring passthrough on /dev/ngXnY.
    Passthru,
    /// NVMe/TCP from user space to nvme-tcp://HOST[:PORT]/SUBNQN[/NSID].
    Tcp,
    /// numio's own polled user-space NVMe driver over VFIO on
    /// pci:DDDD:BB:SS.F[/NSID] (bound to vfio-pci for the run).
    Vfio,
    /// NVMe/RDMA from user space to nvme-rdma://HOST[:PORT]/SUBNQN[/NSID]
    /// (the system's rdma-core; an RDMA NIC or soft-RoCE).
    Rdma,
}

impl From<BackendArg> for engine::BackendKind {
    fn from(a: BackendArg) -> engine::BackendKind {
        use engine::BackendKind as K;
        match a {
            BackendArg::Uring => K::Uring,
            BackendArg::Sync => K::Sync,
            BackendArg::Null => K::Null,
            BackendArg::Nop => K::Nop,
            BackendArg::Passthru => K::Passthru,
            BackendArg::Tcp => K::Tcp,
            BackendArg::Vfio => K::Vfio,
            BackendArg::Rdma => K::Rdma,
        }
    }
}

/// io_uring IOPOLL (completion polling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IoPollArg {
    /// Where the device has poll queues and the target is O_DIRECT.
    Auto,
    /// Always: an error where the device has no poll queues.
    On,
    /// Never.
    Off,
}

impl From<IoPollArg> for engine::IoPoll {
    fn from(a: IoPollArg) -> engine::IoPoll {
        match a {
            IoPollArg::Auto => engine::IoPoll::Auto,
            IoPollArg::On => engine::IoPoll::On,
            IoPollArg::Off => engine::IoPoll::Off,
        }
    }
}

/// How a multipath NVMe/TCP target's I/Os choose a path (the kernel's
/// `iopolicy` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IoPolicyArg {
    /// A portal whose local interface is on the worker's node, else the
    /// first (an interface of no node, e.g. loopback, is local to all).
    Numa,
    /// Each I/O on the next usable path.
    RoundRobin,
    /// The usable path with the fewest I/Os in flight.
    QueueDepth,
}

impl From<IoPolicyArg> for nvmf::host::IoPolicy {
    fn from(a: IoPolicyArg) -> nvmf::host::IoPolicy {
        match a {
            IoPolicyArg::Numa => nvmf::host::IoPolicy::Numa,
            IoPolicyArg::RoundRobin => nvmf::host::IoPolicy::RoundRobin,
            IoPolicyArg::QueueDepth => nvmf::host::IoPolicy::QueueDepth,
        }
    }
}

/// How numio's NVMe driver (--backend vfio) names an I/O's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VfioDptrArg {
    /// One SGL data block where the controller takes SGLs and an I/O
    /// spans more than two pages, else PRPs.
    Auto,
    /// PRP1/PRP2 and PRP lists (every controller).
    Prp,
    /// One SGL data block descriptor per command (refused on a controller
    /// without SGLs).
    Sgl,
}

impl From<VfioDptrArg> for engine::backend::vfio::DataPointer {
    fn from(a: VfioDptrArg) -> engine::backend::vfio::DataPointer {
        use engine::backend::vfio::DataPointer;
        match a {
            VfioDptrArg::Auto => DataPointer::Auto,
            VfioDptrArg::Prp => DataPointer::Prp,
            VfioDptrArg::Sgl => DataPointer::Sgl,
        }
    }
}

/// io_uring task-run set-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UringSetupArg {
    /// A time-based run's trial keeps the faster of defer and coop;
    /// otherwise defer, else coop, else plain.
    Auto,
    /// SINGLE_ISSUER + DEFER_TASKRUN.
    Defer,
    /// COOP_TASKRUN + TASKRUN_FLAG.
    Coop,
    /// No task-run flags (what fio 3.33 gets).
    Plain,
}

impl From<UringSetupArg> for engine::UringSetup {
    fn from(a: UringSetupArg) -> engine::UringSetup {
        match a {
            UringSetupArg::Auto => engine::UringSetup::Auto,
            UringSetupArg::Defer => engine::UringSetup::DeferTaskrun,
            UringSetupArg::Coop => engine::UringSetup::CoopTaskrun,
            UringSetupArg::Plain => engine::UringSetup::Plain,
        }
    }
}

/// When the live progress line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressArg {
    /// On a terminal, without --json.
    Auto,
    /// Always; where stderr is not a terminal, one line per second.
    Always,
    /// Never.
    Never,
}

pub use planner::flags::parse_percentiles;

/// The workload of `plan`, `bench` and `compare`: fio's option names (the
/// old numio spellings and fio's underscores still work as aliases).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Workload (fio's names and units)")]
pub struct WorkloadArgs {
    /// Access pattern [default: randread].
    #[arg(long, value_enum, value_name = "MODE")]
    pub rw: Option<RwArg>,
    /// Percentage of reads in rw/randrw [default: 50].
    #[arg(long, value_name = "PCT")]
    pub rwmixread: Option<u8>,
    /// Block size, or a range (4k, 1.5k, 4k-64k) [default: 4k].
    #[arg(long, value_name = "SIZE|MIN-MAX", allow_hyphen_values = true)]
    pub bs: Option<String>,
    /// I/Os in flight per job [default: 64].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub iodepth: Option<i64>,
    /// Jobs (worker threads) per target [default: 1].
    #[arg(
        long,
        value_name = "N",
        visible_alias = "jobs",
        allow_negative_numbers = true
    )]
    pub numjobs: Option<i64>,
    /// Measured time per run (10s, 500ms, 1h; bare numbers are seconds)
    /// [default: 10s].
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub runtime: Option<String>,
    /// Warm-up before measuring, not measured [default: 0].
    #[arg(
        long,
        value_name = "TIME",
        visible_alias = "ramp",
        alias = "ramp_time",
        allow_hyphen_values = true
    )]
    pub ramp_time: Option<String>,
    /// Bytes of each target each job covers (default: all of it from --offset).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub size: Option<String>,
    /// Start offset in each target [default: 0].
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub offset: Option<String>,
    /// Stop when --size is covered instead of running for --runtime (fio time_based=0).
    #[arg(long)]
    pub no_time_based: bool,
    /// Stop each job after this many I/Os.
    #[arg(long, value_name = "N", alias = "number_ios")]
    pub number_ios: Option<u64>,
    /// Cap on I/Os per second per job.
    #[arg(long, value_name = "N", alias = "rate_iops")]
    pub rate_iops: Option<u64>,
    /// Offsets: random (uniform), zipf (θ 1.1) or zipf:θ (pareto, normal and
    /// zoned are not implemented) [default: random].
    #[arg(long, value_name = "DIST", alias = "random_distribution")]
    pub random_distribution: Option<String>,
    /// Zipf θ of random offsets: --random-distribution zipf:θ (older spelling).
    #[arg(
        long,
        value_name = "THETA",
        hide = true,
        conflicts_with = "random_distribution"
    )]
    pub zipf: Option<f64>,
    /// Seed of the offset generator.
    #[arg(long, value_name = "N")]
    pub randseed: Option<u64>,
    /// Hit every block once per pass before repeating (fio's random map,
    /// uniform offsets only; default is norandommap: offsets may repeat).
    #[arg(long)]
    pub randommap: bool,
    /// Use the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
    /// fio's `--direct=0|1` (`--direct=0` is numio's --buffered).
    #[arg(long, value_name = "0|1", hide = true, value_parser = ["0", "1"], conflicts_with = "buffered")]
    pub direct: Option<String>,
    /// fio's `--time_based`: numio's runs are time-based already.
    #[arg(
        long = "time_based",
        alias = "time-based",
        hide = true,
        conflicts_with = "no_time_based"
    )]
    pub time_based: bool,
}

impl WorkloadArgs {
    /// The flags as the planner reads them (`--direct=0` is `--buffered`).
    pub fn flags(&self) -> WorkloadFlags {
        WorkloadFlags {
            rw: self.rw.map(RwMode::from),
            rwmixread: self.rwmixread,
            bs: self.bs.clone(),
            iodepth: self.iodepth,
            numjobs: self.numjobs,
            runtime: self.runtime.clone(),
            ramp_time: self.ramp_time.clone(),
            size: self.size.clone(),
            offset: self.offset.clone(),
            no_time_based: self.no_time_based,
            number_ios: self.number_ios,
            rate_iops: self.rate_iops,
            random_distribution: self.random_distribution.clone(),
            zipf: self.zipf,
            randseed: self.randseed,
            randommap: self.randommap,
            buffered: self.buffered || self.direct.as_deref() == Some("0"),
        }
    }

    /// The workload these flags describe (defaults for those not given).
    pub fn workload(&self) -> anyhow::Result<Workload> {
        Ok(self.flags().workload()?)
    }

    /// The workload flags given on the command line, by their flag names.
    pub fn given(&self) -> Vec<&'static str> {
        self.flags().given()
    }

    /// [`WorkloadFlags::apply_over`]: the flags given over a plan or a job
    /// file (`from` names it); the notes added, with their target's path.
    pub fn apply_over(
        &self,
        placement: &mut Placement,
        from: &str,
    ) -> anyhow::Result<Vec<(String, String)>> {
        Ok(self.flags().apply_over(placement, from)?)
    }
}

/// Placement (`--numa`) of bench, plan, sweep and compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NumaArg {
    /// CPUs of each target's NUMA node (the default).
    Local,
    /// Job after job on the next NUMA node in turn, ignoring locality.
    Spread,
    /// Each target's jobs and buffers on the node farthest from it.
    Remote,
    /// No pinning (`off` too).
    #[value(alias = "off")]
    None,
    /// fio job files: numio's local placement for jobs without
    /// cpus_allowed / numa_cpu_nodes (with targets: local).
    Auto,
}

impl From<NumaArg> for planner::flags::Numa {
    fn from(a: NumaArg) -> Self {
        match a {
            NumaArg::Local => Self::Local,
            NumaArg::Spread => Self::Spread,
            NumaArg::Remote => Self::Remote,
            NumaArg::None => Self::None,
            NumaArg::Auto => Self::Auto,
        }
    }
}

/// The placement flags as the planner reads them.
pub fn placing(numa: Option<NumaArg>, cpus: Option<&str>, cpus_for: &[String]) -> Placing {
    Placing {
        numa: numa.map(Into::into),
        cpus: cpus.map(String::from),
        cpus_for: cpus_for.to_vec(),
    }
}

#[cfg(test)]
#[path = "flags_tests.rs"]
mod tests;

//! The study an older `numio fabric` printed with `--json` and kept with `--save`
//! (schema `numio-fabric`): the target, the initiators' stack, and every
//! run of every point (target cores × initiator count), each with the
//! initiators' fleet run and both sides' CPU. `report::fabric` draws it;
//! `numio report` still reprints such a file. The NVMe-oF study is now a
//! sweep over hosts (`session::fleet`), saved as any sweep.

use serde::{Deserialize, Serialize};

use crate::report::FleetReport;
use crate::target::TargetCpu;

/// Whose NVMe-oF host the initiators run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stack {
    /// numio bench's tcp (or rdma) backend.
    Numio,
    /// The Linux kernel's host, through its block device.
    Kernel,
}

/// The initiator hosts' machines over a point: their busy CPU (workers,
/// kernel threads, softirqs, whatever ran) per I/O, summed over hosts, and
/// the lowest host's unused share.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct InitiatorCpu {
    /// Busy CPU per I/O, summed over hosts, ns.
    pub machine_cpu_ns_per_io: Option<f64>,
    /// The lowest host's unused share, %.
    pub min_headroom_pct: Option<f64>,
}

impl InitiatorCpu {
    /// Over the hosts of `fleet`.
    pub fn of(fleet: &FleetReport) -> InitiatorCpu {
        let mut busy_per_s = None::<f64>;
        let mut iops = 0.0;
        let mut head = None::<f64>;
        for r in fleet.host_results() {
            let p = r.per_io();
            if let Some(ns) = p.machine_cpu_ns {
                *busy_per_s.get_or_insert(0.0) += ns * r.total.iops;
            }
            iops += r.total.iops;
            if let Some(h) = p.cpu_headroom_pct {
                head = Some(head.map_or(h, |x| x.min(h)));
            }
        }
        InitiatorCpu {
            machine_cpu_ns_per_io: busy_per_s.filter(|_| iops > 0.0).map(|b| b / iops),
            min_headroom_pct: head,
        }
    }
}

/// One run of one point of the study.
#[derive(Debug, Serialize, Deserialize)]
pub struct Point {
    /// The target's core count (`--target-core-counts`), if swept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cores: Option<usize>,
    /// Initiator hosts in this point.
    pub initiators: usize,
    /// Which run of this point (1 to `--repeat`).
    #[serde(default = "one")]
    pub run: usize,
    /// The initiators' machines' CPU.
    pub initiator_cpu: InitiatorCpu,
    /// The target's CPU (a target numio started).
    pub target_cpu: Option<TargetCpu>,
    /// The initiators' fleet run.
    pub fleet: FleetReport,
}

fn one() -> usize {
    1
}

/// The schema name of a study (`--json`, `--save`).
pub const FABRIC_SCHEMA: &str = "numio-fabric";

/// The whole study, as `--json` prints it and `--save` keeps it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Study {
    /// [`FABRIC_SCHEMA`].
    pub schema: String,
    /// The command line that made it.
    #[serde(default)]
    pub command: String,
    /// The target host (or the URL given).
    pub target: String,
    /// The namespace the initiators reached.
    pub url: String,
    /// Whose host the initiators ran.
    pub stack: Stack,
    /// Runs of each point.
    #[serde(default = "one")]
    pub repeat: usize,
    /// The target's start-up lines.
    pub target_lines: Vec<String>,
    /// Every run of every point, in the order run.
    pub points: Vec<Point>,
}

impl Study {
    /// Reads a study saved by `numio fabric --save`; `None` when `text` is
    /// another kind of file.
    pub fn from_json(text: &str) -> Option<Result<Study, serde_json::Error>> {
        #[derive(Deserialize)]
        struct Header {
            schema: Option<String>,
        }
        let h: Header = serde_json::from_str(text).ok()?;
        (h.schema.as_deref() == Some(FABRIC_SCHEMA)).then(|| serde_json::from_str(text))
    }

    /// The runs of each point (target cores, initiators), in study order.
    pub fn point_runs(&self) -> Vec<Vec<&Point>> {
        let mut groups: Vec<Vec<&Point>> = Vec::new();
        for p in self.points.iter().filter(|p| p.fleet.merged.is_some()) {
            match groups
                .iter_mut()
                .find(|g| (g[0].target_cores, g[0].initiators) == (p.target_cores, p.initiators))
            {
                Some(g) => g.push(p),
                None => groups.push(vec![p]),
            }
        }
        groups
    }
}

impl Point {
    /// Its merged IOPS (0 when no initiator ran).
    pub fn iops(&self) -> f64 {
        self.fleet.merged.as_ref().map_or(0.0, |m| m.total.iops)
    }
}

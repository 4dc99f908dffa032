//! The kernel's multipath path choice, per CPU node: which path of a
//! multipath namespace the I/O of each node takes, and whether that is a
//! nearest path. Pure over the model.
//!
//! The model follows `drivers/nvme/host/multipath.c` (Linux 6.1 to 6.15):
//!
//! - `numa` (`__nvme_find_path`): skip disabled paths (controller not
//!   `live`) and ANA states other than optimized / non-optimized; the
//!   distance is `node_distance(node, ctrl->numa_node)`, except that a
//!   controller of `numa_node` -1 (`NUMA_NO_NODE`) counts as
//!   `LOCAL_DISTANCE` (10) from every node (the stable fix "nvme-multipath:
//!   use LOCAL_DISTANCE for NUMA_NO_NODE"; before it x86 read a neighbour
//!   of the distance table); the optimized path of least distance wins,
//!   a strict `<` so a tie goes to the first path of the head's list; with
//!   no optimized path, the non-optimized one of least distance.
//! - `round-robin` (`nvme_round_robin_path`): every optimized path in turn
//!   (non-optimized ones only when none is optimized).
//! - `queue-depth` (`nvme_queue_depth_path`, Linux 6.11+): the optimized
//!   path with the fewest I/Os in flight, so under load all of them.
//!
//! The head's list is in the order the controllers found the namespace
//! (probe order), which sysfs does not show before 6.15: the model takes
//! controller order and says "may" for a tie. Where the kernel writes a
//! path's `numa_nodes` (6.15+), the nodes it lists are the kernel's own
//! choice and win over the model.

use serde::{Deserialize, Serialize};

use crate::model::{DeviceNode, Namespace, NodeId, Topology};

pub mod probe;

#[cfg(test)]
mod tests;

/// The kernel's `LOCAL_DISTANCE`.
pub const LOCAL_DISTANCE: u32 = 10;
/// The kernel's `REMOTE_DISTANCE`: what `node_distance` returns for a node
/// outside the distance table.
pub const REMOTE_DISTANCE: u32 = 20;

/// A multipath I/O policy (`/sys/class/nvme-subsystem/*/iopolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IoPolicy {
    /// `numa`: the nearest optimized path per node.
    Numa,
    /// `round-robin`: every optimized path in turn.
    RoundRobin,
    /// `queue-depth`: the optimized path with the fewest I/Os in flight.
    QueueDepth,
}

impl IoPolicy {
    /// Parses the kernel's name; `None` for a policy numio does not model.
    pub fn parse(text: &str) -> Option<IoPolicy> {
        match text.trim() {
            "numa" => Some(IoPolicy::Numa),
            "round-robin" => Some(IoPolicy::RoundRobin),
            "queue-depth" => Some(IoPolicy::QueueDepth),
            _ => None,
        }
    }

    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            IoPolicy::Numa => "numa",
            IoPolicy::RoundRobin => "round-robin",
            IoPolicy::QueueDepth => "queue-depth",
        }
    }
}

/// Where a node's route comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteSource {
    /// The kernel's own word: the path's `numa_nodes` lists the node.
    Kernel,
    /// numio's model of `multipath.c` (the kernel says nothing, or has not
    /// chosen for this node yet).
    Model,
}

/// Whether a node's I/O goes through a nearest path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every path taken is at the least known distance, and no tie could
    /// send the I/O elsewhere.
    Nearest,
    /// A tie: the path taken is nearest, but another path the kernel ranks
    /// equal is not (or its node is unknown); the head's list order decides.
    MayNotBeNearest,
    /// Some of the node's I/O goes through a path farther than another.
    NotNearest,
    /// The path taken has a controller of unknown node (`numa_node` -1),
    /// which the kernel counts as local; its real distance is unknown.
    UnknownNode,
    /// No usable path (every path inaccessible or its controller down).
    NoPath,
}

impl Verdict {
    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Nearest => "nearest",
            Verdict::MayNotBeNearest => "tie",
            Verdict::NotNearest => "NOT nearest",
            Verdict::UnknownNode => "unknown node",
            Verdict::NoPath => "no path",
        }
    }

    /// Whether `numio doctor` reports it.
    pub fn is_finding(self) -> bool {
        !matches!(self, Verdict::Nearest)
    }
}

/// One path of a multipath namespace as the audit sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathInfo {
    /// Path device (`nvme0c1n1`).
    pub device: String,
    /// Its controller (`nvme1`).
    pub controller: String,
    /// The controller's node as the kernel reports it.
    pub node: DeviceNode,
    /// ANA state (`optimized` where the controller reports none: the kernel
    /// treats a controller without ANA as optimized).
    pub ana_state: String,
    /// Whether the kernel may send I/O through it (controller `live`, ANA
    /// optimized or non-optimized).
    pub usable: bool,
    /// I/Os in flight, where the kernel reports them (queue-depth, 6.15+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
}

/// The paths one CPU node's I/O takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRoute {
    /// The CPU node.
    pub node: NodeId,
    /// Per path (in the order of [`HeadAudit::paths`]): the real distance
    /// from this node, `None` where the controller's node is unknown or not
    /// online.
    pub distances: Vec<Option<u32>>,
    /// Per path: the distance the kernel compares (-1 counts as local).
    pub kernel_distances: Vec<u32>,
    /// Indexes of the paths the I/O takes (one under `numa`; every
    /// optimized path under `round-robin` and `queue-depth`).
    pub taken: Vec<usize>,
    /// Under `numa`, other usable paths the kernel ranks equal to the one
    /// taken: a different list order would take one of them.
    pub ties: Vec<usize>,
    /// The least known distance of a usable path, when any is known.
    pub nearest_distance: Option<u32>,
    /// The verdict.
    pub verdict: Verdict,
    /// Who says which path is taken.
    pub source: RouteSource,
}

/// The audit of one multipath namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadAudit {
    /// Head block device (`nvme0n1`).
    pub block_device: String,
    /// Its subsystem (`nvme-subsys0`).
    pub subsystem: String,
    /// The subsystem's iopolicy as read (`numa` when the kernel writes none:
    /// the only policy before Linux 5.1).
    pub iopolicy: String,
    /// The policy modelled (`None`: one numio does not know).
    pub policy: Option<IoPolicy>,
    /// Whether the kernel reports its choice (`numa_nodes` on the paths,
    /// Linux 6.15+).
    pub kernel_reports: bool,
    /// Whether the kernel has the `queue-depth` iopolicy, as far as sysfs
    /// shows (it is in use, or the paths have a `queue_depth` attribute).
    pub queue_depth_available: bool,
    /// The paths, in the model's list order.
    pub paths: Vec<PathInfo>,
    /// One route per online node with CPUs.
    pub routes: Vec<NodeRoute>,
}

/// Audits every multipath namespace of `t` (a head with at least one path).
pub fn audit(t: &Topology) -> Vec<HeadAudit> {
    let mut out = Vec::new();
    for s in &t.subsystems {
        let iopolicy = s.iopolicy.clone().unwrap_or_else(|| "numa".to_string());
        for ns in s.namespaces.iter().filter(|ns| !ns.paths.is_empty()) {
            out.push(audit_head(t, &s.name, &iopolicy, ns));
        }
    }
    out
}

fn audit_head(t: &Topology, subsystem: &str, iopolicy: &str, ns: &Namespace) -> HeadAudit {
    let policy = IoPolicy::parse(iopolicy);
    let paths: Vec<PathInfo> = ns.paths.iter().map(|p| path_info(t, p)).collect();
    let kernel_reports = ns.paths.iter().any(|p| p.numa_nodes.is_some());
    let queue_depth_available =
        policy == Some(IoPolicy::QueueDepth) || ns.paths.iter().any(|p| p.queue_depth_attr);
    let routes = t
        .nodes
        .iter()
        .filter(|n| !n.cpus.is_empty())
        .map(|n| {
            let kernel = (policy == Some(IoPolicy::Numa))
                .then(|| kernel_choice(ns, n.id))
                .flatten();
            route(t, n.id, &paths, policy, kernel)
        })
        .collect();
    HeadAudit {
        block_device: ns.block_device.clone(),
        subsystem: subsystem.to_string(),
        iopolicy: iopolicy.to_string(),
        policy,
        kernel_reports,
        queue_depth_available,
        paths,
        routes,
    }
}

fn path_info(t: &Topology, p: &crate::model::NamespacePath) -> PathInfo {
    let ctrl = t.controllers.iter().find(|c| c.name == p.controller);
    let node = ctrl.map_or(DeviceNode::Unknown, |c| c.numa_node);
    let live = ctrl.is_none_or(|c| c.state == "live" || c.state == "deleting");
    let ana_state = p
        .ana_state
        .clone()
        .unwrap_or_else(|| "optimized".to_string());
    let usable = live && ana_tier(&ana_state).is_some();
    PathInfo {
        device: p.device.clone(),
        controller: p.controller.clone(),
        node,
        ana_state,
        usable,
        queue_depth: p.queue_depth,
    }
}

/// 0 for optimized, 1 for non-optimized, `None` for a state the kernel
/// never sends I/O to.
fn ana_tier(state: &str) -> Option<u8> {
    match state {
        "optimized" => Some(0),
        "non-optimized" => Some(1),
        _ => None,
    }
}

/// The path whose `numa_nodes` lists `node`, by index.
fn kernel_choice(ns: &Namespace, node: NodeId) -> Option<usize> {
    ns.paths.iter().position(|p| {
        p.numa_nodes
            .as_ref()
            .is_some_and(|nodes| nodes.contains(&node))
    })
}

/// A namespace asked for that is not a multipath head.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{wanted}' is not a multipath namespace head; give one of: {} (`numio topo` lists them)", if known.is_empty() { "none here".to_string() } else { known.join(", ") })]
pub struct NotAHead {
    /// The name as given.
    pub wanted: String,
    /// The heads there are.
    pub known: Vec<String>,
}

/// The heads of `all` named by `wanted` (`/dev/nvme0n1` or `nvme0n1`;
/// all when empty), in its order.
pub fn select(all: Vec<HeadAudit>, wanted: &[String]) -> Result<Vec<HeadAudit>, NotAHead> {
    if wanted.is_empty() {
        return Ok(all);
    }
    let mut out = Vec::new();
    for w in wanted {
        let name = w.strip_prefix("/dev/").unwrap_or(w);
        let Some(h) = all.iter().find(|h| h.block_device == name) else {
            return Err(NotAHead {
                wanted: w.clone(),
                known: all.iter().map(|h| h.block_device.clone()).collect(),
            });
        };
        out.push(h.clone());
    }
    Ok(out)
}

/// The real distance from `from` to a controller on `to`, when both are in
/// the distance table.
pub fn distance(t: &Topology, from: NodeId, to: DeviceNode) -> Option<u32> {
    let to = to.node()?;
    let col = t.nodes.iter().position(|n| n.id == to)?;
    let row = t.nodes.iter().find(|n| n.id == from)?;
    row.distances.get(col).copied()
}

/// The distance `__nvme_find_path` compares: `LOCAL_DISTANCE` for a
/// controller of node -1, the table's value, or `REMOTE_DISTANCE` (same
/// node: `LOCAL_DISTANCE`) for a node outside the table.
pub fn kernel_distance(t: &Topology, from: NodeId, to: DeviceNode) -> u32 {
    match to {
        DeviceNode::Unknown => LOCAL_DISTANCE,
        DeviceNode::Known(n) if n == from => distance(t, from, to).unwrap_or(LOCAL_DISTANCE),
        DeviceNode::Known(_) => distance(t, from, to).unwrap_or(REMOTE_DISTANCE),
    }
}

fn route(
    t: &Topology,
    node: NodeId,
    paths: &[PathInfo],
    policy: Option<IoPolicy>,
    kernel: Option<usize>,
) -> NodeRoute {
    let distances: Vec<Option<u32>> = paths.iter().map(|p| distance(t, node, p.node)).collect();
    let kernel_distances: Vec<u32> = paths
        .iter()
        .map(|p| match policy {
            Some(IoPolicy::Numa) | None => kernel_distance(t, node, p.node),
            _ => LOCAL_DISTANCE,
        })
        .collect();
    let (taken, ties, source) = match (kernel, policy) {
        (Some(i), _) => (
            vec![i],
            numa_ties(paths, &kernel_distances, i),
            RouteSource::Kernel,
        ),
        (None, Some(IoPolicy::RoundRobin | IoPolicy::QueueDepth)) => {
            (spread(paths), Vec::new(), RouteSource::Model)
        }
        (None, _) => match numa_choice(paths, &kernel_distances) {
            Some(i) => (
                vec![i],
                numa_ties(paths, &kernel_distances, i),
                RouteSource::Model,
            ),
            None => (Vec::new(), Vec::new(), RouteSource::Model),
        },
    };
    let nearest_distance = usable_tier(paths).filter_map(|i| distances[i]).min();
    let verdict = verdict(paths, &distances, nearest_distance, &taken, &ties);
    NodeRoute {
        node,
        distances,
        kernel_distances,
        taken,
        ties,
        nearest_distance,
        verdict,
        source,
    }
}

/// Indexes of the usable paths of the best ANA tier present.
fn usable_tier(paths: &[PathInfo]) -> impl Iterator<Item = usize> + '_ {
    let best = paths
        .iter()
        .filter(|p| p.usable)
        .filter_map(|p| ana_tier(&p.ana_state))
        .min();
    paths
        .iter()
        .enumerate()
        .filter(move |(_, p)| p.usable && ana_tier(&p.ana_state) == best)
        .map(|(i, _)| i)
}

/// `__nvme_find_path`: the first optimized path of least distance, else
/// the first non-optimized one of least distance.
fn numa_choice(paths: &[PathInfo], kernel_distances: &[u32]) -> Option<usize> {
    let mut found: Option<usize> = None;
    let mut fallback: Option<usize> = None;
    for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.usable) {
        let slot = match ana_tier(&p.ana_state) {
            Some(0) => &mut found,
            Some(_) => &mut fallback,
            None => continue,
        };
        if slot.is_none_or(|j| kernel_distances[i] < kernel_distances[j]) {
            *slot = Some(i);
        }
    }
    found.or(fallback)
}

/// Usable paths of the same ANA tier and kernel distance as `taken`.
fn numa_ties(paths: &[PathInfo], kernel_distances: &[u32], taken: usize) -> Vec<usize> {
    let tier = ana_tier(&paths[taken].ana_state);
    paths
        .iter()
        .enumerate()
        .filter(|&(i, p)| {
            i != taken
                && p.usable
                && ana_tier(&p.ana_state) == tier
                && kernel_distances[i] == kernel_distances[taken]
        })
        .map(|(i, _)| i)
        .collect()
}

/// `round-robin` and `queue-depth`: every path of the best usable tier.
fn spread(paths: &[PathInfo]) -> Vec<usize> {
    usable_tier(paths).collect()
}

fn verdict(
    paths: &[PathInfo],
    distances: &[Option<u32>],
    nearest: Option<u32>,
    taken: &[usize],
    ties: &[usize],
) -> Verdict {
    if taken.is_empty() {
        return Verdict::NoPath;
    }
    let near = |i: usize| distances[i].is_some() && distances[i] == nearest;
    if taken.iter().any(|&i| distances[i].is_some() && !near(i)) {
        return Verdict::NotNearest;
    }
    if taken
        .iter()
        .any(|&i| paths[i].node.node().is_none() || distances[i].is_none())
    {
        return Verdict::UnknownNode;
    }
    if ties.iter().any(|&i| !near(i)) {
        return Verdict::MayNotBeNearest;
    }
    Verdict::Nearest
}

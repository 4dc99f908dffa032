//! CPUs (`/sys/devices/system/cpu`): which exist, which are online, and
//! each one's package, core, SMT siblings and node.

use std::collections::BTreeMap;

use super::dirs::{numbered_dirs, CPU_DIR};
use super::nodes::{self, NodeMap};
use crate::cpulist::{trim_attr, CpuList};
use crate::error::TopologyError;
use crate::model::{Cpu, CpuId, Node, NodeId};
use crate::parse::{parse_bool, parse_id, parse_list};
use crate::reader::Reader;

/// Nodes and CPUs.
pub fn discover(r: &mut Reader) -> Result<(Vec<Node>, Vec<Cpu>), TopologyError> {
    let (online, derived) = online_cpus(r)?;
    let mut present = match derived {
        Some(all) => all,
        None => r
            .parse(&format!("{CPU_DIR}/present"), parse_list)
            .or_else(|| r.parse(&format!("{CPU_DIR}/possible"), parse_list))
            .unwrap_or_default(),
    };
    present.extend(&online);
    present.sort_unstable();
    present.dedup();
    let map = nodes::discover(r, &present)?;
    let cpus = read_cpus(r, &present, &online, &map);
    Ok((map.nodes, cpus))
}

/// The online CPUs (`cpu/online`), and when the kernel wrote no such list,
/// every CPU directory too (then `online` is derived from them).
pub(crate) fn online_cpus(r: &mut Reader) -> Result<(Vec<u32>, Option<Vec<u32>>), TopologyError> {
    let rel = format!("{CPU_DIR}/online");
    if let Some(text) = r.read(&rel) {
        return parse_list(&text).map(|ids| (ids, None)).map_err(|source| {
            TopologyError::Unparsable {
                path: r.abs(&rel),
                source,
            }
        });
    }
    if let Some(u) = r.unreadable.iter().find(|u| u.path == rel) {
        return Err(TopologyError::BadRequired {
            path: r.abs(&rel),
            reason: u.reason.clone(),
        });
    }
    let all = numbered_dirs(r, CPU_DIR, "cpu");
    if all.is_empty() {
        return Err(TopologyError::MissingRequired {
            path: r.abs(&rel),
            root: r.abs(""),
            what: "the list of online CPUs, and no cpuN directory to derive it from",
        });
    }
    // Without `cpuN/online` (CPU 0 usually, every CPU on a kernel without
    // CPU hotplug) a CPU cannot be taken offline: it is online. An empty
    // file (as some copies of sysfs hold) says nothing either.
    let online: Vec<u32> = all
        .iter()
        .copied()
        .filter(|id| {
            r.parse(&format!("{CPU_DIR}/cpu{id}/online"), |t| {
                if trim_attr(t).is_empty() {
                    Ok(true)
                } else {
                    parse_bool(t)
                }
            })
            .unwrap_or(true)
        })
        .collect();
    let message = format!(
        "the kernel wrote no list of online CPUs (kernels before 2.6.28 do not, and copies of sysfs often leave it out); numio listed the cpuN directories ({}) and read each cpuN/online, a CPU without one counting as online: online {}",
        CpuList::from_ids(all.iter().copied()),
        CpuList::from_ids(online.iter().copied())
    );
    r.note("cpu-online-missing", &rel, "missing".to_string(), message);
    Ok((online, Some(all)))
}

fn read_cpus(r: &mut Reader, present: &[u32], online: &[u32], map: &NodeMap) -> Vec<Cpu> {
    let mut cpus: Vec<Cpu> = Vec::with_capacity(present.len());
    // CPU → (package, SMT siblings) already read from a sibling: the
    // threads of a core are in one package and `thread_siblings` is the
    // same set for each, so a machine with SMT reads those once per core.
    // The core id is read for each CPU: threads of one core need not share
    // it (AMD compute units).
    let mut known: BTreeMap<u32, Shared> = BTreeMap::new();
    for &id in present {
        let online = online.binary_search(&id).is_ok();
        let node = map.node_of(r, id);
        let cpu = read_cpu(r, id, online, node, known.remove(&id));
        if cpu.online {
            for s in cpu.siblings.iter().filter(|s| s.0 > id) {
                let shared = Shared {
                    package: cpu.package,
                    siblings: cpu.siblings.clone(),
                };
                known.insert(s.0, shared);
            }
        }
        cpus.push(cpu);
    }
    cpus
}

/// What the SMT threads of one core share.
struct Shared {
    package: Option<u32>,
    siblings: Vec<CpuId>,
}

fn read_cpu(
    r: &mut Reader,
    id: u32,
    online: bool,
    node: Option<NodeId>,
    shared: Option<Shared>,
) -> Cpu {
    let dir = format!("{CPU_DIR}/cpu{id}");
    if !online {
        // The kernel removes `topology/` of an offline CPU.
        return Cpu {
            id: CpuId(id),
            online,
            package: None,
            core: None,
            siblings: vec![CpuId(id)],
            node,
        };
    }
    let core = r
        .parse(&format!("{dir}/topology/core_id"), parse_id)
        .flatten();
    let shared = shared.unwrap_or_else(|| Shared {
        package: r
            .parse(&format!("{dir}/topology/physical_package_id"), parse_id)
            .flatten(),
        siblings: r
            .cpu_set(
                &format!("{dir}/topology/thread_siblings_list"),
                &format!("{dir}/topology/thread_siblings"),
                parse_list,
            )
            .unwrap_or_default()
            .into_iter()
            .map(CpuId)
            .collect(),
    });
    let (package, mut siblings) = (shared.package, shared.siblings);
    if !siblings.contains(&CpuId(id)) {
        siblings.push(CpuId(id));
        siblings.sort_unstable();
    }
    Cpu {
        id: CpuId(id),
        online,
        package,
        core,
        siblings,
        node,
    }
}

//! The axes of a sweep (`numio sweep AXIS=VALUES …`, a coalescing sweep's
//! `threshold` × `devices`, a sweep over hosts): `AXIS=VALUES` words told
//! apart from targets, checked (unknown axis, empty or repeated values, an
//! axis twice, more than two), laid out as the points of a grid (first
//! axis fastest), each value's place on a chart, and the rules between
//! axes and targets (`transport`, `initiator-cores`, the cap on a cores
//! axis). Applying a value to a point's workload is the caller's (its flags
//! check the value as they check the flag).

/// The axes a sweep can vary.
pub const AXES: [&str; 10] = [
    "jobs",
    "iodepth",
    "bs",
    "devices",
    "rw",
    "rwmixread",
    "reactors",
    "initiator-cores",
    "transport",
    "initiators",
];

/// Why the axes or their targets cannot make a sweep; each names the word
/// and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AxisError {
    /// A word `NAME=…` whose name is no axis.
    #[error("{word}: unknown axis `{name}`; the axes are {}", AXES.join(", "))]
    Unknown {
        /// The word.
        word: String,
        /// Its name.
        name: String,
    },
    /// An empty value in a list.
    #[error("{word}: an empty value; give a list such as {name}=1,2,4")]
    EmptyValue {
        /// The word.
        word: String,
        /// The axis.
        name: String,
    },
    /// A value given twice.
    #[error("{word}: {value} is repeated; give each value once")]
    Repeated {
        /// The word.
        word: String,
        /// The value.
        value: String,
    },
    /// An axis given twice.
    #[error("{word}: axis {name} is given twice; give one list")]
    Twice {
        /// The word.
        word: String,
        /// The axis.
        name: String,
    },
    /// No axis at all.
    #[error("no axis: give one such as jobs=1,2,4 (axes: {})", AXES.join(", "))]
    None,
    /// More than two axes.
    #[error("{0} axes: a sweep has one, or two for a grid")]
    TooMany(usize),
    /// A transport other than tcp or rdma.
    #[error("transport={0}: give tcp or rdma")]
    Transport(String),
    /// A `transport` axis over a target that is not NVMe-oF.
    #[error(
        "transport={transport} with {target}: the axis reaches one NVMe-oF target over each transport; \
         give nvme-tcp:// or nvme-rdma:// targets (a target that listens with both, e.g. numio serve --transport tcp,rdma)"
    )]
    NotFabric {
        /// The transport.
        transport: String,
        /// The target.
        target: String,
    },
    /// `initiator-cores` beside `jobs`.
    #[error("initiator-cores={0} with jobs: both set the jobs per target; give one of them")]
    CoresTwice(String),
    /// `initiator-cores` without a target to initiate to.
    #[error(
        "initiator-cores={0} without a target: give nvme-tcp://HOST[:PORT]/NQN targets, \
         or a reactors= axis for a target the sweep serves itself"
    )]
    CoresWithoutTarget(String),
    /// `initiator-cores` with a local target.
    #[error(
        "initiator-cores={list} with {target}: the axis sweeps an NVMe-oF initiator; \
         give nvme-tcp:// or nvme-rdma:// targets, or use jobs= for local devices"
    )]
    CoresNotFabric {
        /// The axis's values.
        list: String,
        /// The target.
        target: String,
    },
}

/// The scheme of an NVMe-oF target over `transport` (`tcp`, `rdma`).
fn scheme(transport: &str) -> String {
    format!("nvme-{transport}://")
}

/// `targets` (NVMe/TCP or NVMe/RDMA, several portals each comma-separated)
/// reached over `transport`: the same address, port and subsystem, the
/// scheme changed. Anything else is an error naming it.
pub fn over_transport(targets: &[String], transport: &str) -> Result<Vec<String>, AxisError> {
    if !matches!(transport, "tcp" | "rdma") {
        return Err(AxisError::Transport(transport.to_string()));
    }
    targets
        .iter()
        .map(|t| {
            t.split(',')
                .map(|portal| {
                    let (_, rest) =
                        planner::target_addr::strip_scheme(portal).ok_or_else(|| {
                            AxisError::NotFabric {
                                transport: transport.to_string(),
                                target: t.clone(),
                            }
                        })?;
                    Ok(format!("{}{rest}", scheme(transport)))
                })
                .collect::<Result<Vec<_>, AxisError>>()
                .map(|v| v.join(","))
        })
        .collect()
}

/// The engine backend of a `transport` axis value.
pub fn transport_backend(transport: &str) -> engine::BackendKind {
    if transport == "rdma" {
        engine::BackendKind::Rdma
    } else {
        engine::BackendKind::Tcp
    }
}

/// Whether `name` is an axis of cores per target (jobs placed by the
/// planner, one per core): `jobs`, or `initiator-cores`, its name for an
/// NVMe/TCP initiator.
pub fn is_cores_axis(name: &str) -> bool {
    name == "jobs" || name == "initiator-cores"
}

/// `initiator-cores` is the jobs axis of an NVMe-oF initiator: it goes
/// with `nvme-tcp://` or `nvme-rdma://` targets or a `reactors` axis (a
/// target the sweep serves), and not beside `jobs`.
pub fn check_initiator_cores(axes: &[Axis], targets: &[String]) -> Result<(), AxisError> {
    let Some(a) = axes.iter().find(|a| a.name == "initiator-cores") else {
        return Ok(());
    };
    let list = a.values.join(",");
    if axes.iter().any(|a| a.name == "jobs") {
        return Err(AxisError::CoresTwice(list));
    }
    if axes.iter().any(|a| a.name == "reactors") {
        return Ok(());
    }
    if targets.is_empty() {
        return Err(AxisError::CoresWithoutTarget(list));
    }
    if let Some(t) = targets
        .iter()
        .find(|t| planner::TargetAddr::parse(t).fabric().is_none())
    {
        return Err(AxisError::CoresNotFabric {
            list,
            target: t.clone(),
        });
    }
    Ok(())
}

/// One axis and its values as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its name, one of [`AXES`].
    pub name: String,
    /// The values, in order.
    pub values: Vec<String>,
}

/// Splits the words into axes and targets; errors name the word and the fix.
pub fn parse_words(words: &[String]) -> Result<(Vec<Axis>, Vec<String>), AxisError> {
    let (mut axes, mut targets) = (Vec::<Axis>::new(), Vec::new());
    for w in words {
        let Some((name, list)) = w.split_once('=').filter(|(n, _)| !n.contains('/')) else {
            targets.push(w.clone());
            continue;
        };
        if !AXES.contains(&name) {
            return Err(AxisError::Unknown {
                word: w.clone(),
                name: name.to_string(),
            });
        }
        let values: Vec<String> = list.split(',').map(str::trim).map(String::from).collect();
        if values.iter().any(String::is_empty) {
            return Err(AxisError::EmptyValue {
                word: w.clone(),
                name: name.to_string(),
            });
        }
        if let Some((_, v)) = values
            .iter()
            .enumerate()
            .find(|(i, v)| values[..*i].contains(v))
        {
            return Err(AxisError::Repeated {
                word: w.clone(),
                value: v.clone(),
            });
        }
        if axes.iter().any(|a| a.name == name) {
            return Err(AxisError::Twice {
                word: w.clone(),
                name: name.to_string(),
            });
        }
        axes.push(Axis {
            name: name.to_string(),
            values,
        });
    }
    match axes.len() {
        0 => Err(AxisError::None),
        1 | 2 => Ok((axes, targets)),
        n => Err(AxisError::TooMany(n)),
    }
}

/// A point's position on the chart's x axis: the number itself for numeric
/// axes (bs in bytes), else its place in the list.
pub fn x_of(axis: &str, value: &str, index: usize) -> f64 {
    match axis {
        "bs" => {
            planner::fio::units::parse_size_range(value).map_or(index as f64, |(lo, _)| lo as f64)
        }
        "rw" | "transport" => index as f64,
        _ => value.parse().unwrap_or(index as f64),
    }
}

/// The axes as a result set keeps them: values and their places on the
/// chart.
pub fn spec(axes: &[Axis]) -> Vec<report::SweepAxis> {
    axes.iter()
        .map(|a| report::SweepAxis {
            name: a.name.clone(),
            values: a.values.clone(),
            xs: a
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| x_of(&a.name, v, i))
                .collect(),
        })
        .collect()
}

/// Every point of the grid: `(label, [value per axis])`, first axis fastest.
pub fn points(axes: &[Axis]) -> Vec<(String, Vec<(usize, String)>)> {
    let second: Vec<Option<(usize, &String)>> = match axes.get(1) {
        Some(a) => a.values.iter().enumerate().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for s in &second {
        for (i, v) in axes[0].values.iter().enumerate() {
            let mut label = format!("{}={v}", axes[0].name);
            let mut values = vec![(i, v.clone())];
            if let Some((j, sv)) = s {
                label.push_str(&format!(" {}={sv}", axes[1].name));
                values.push((*j, (*sv).clone()));
            }
            out.push((label, values));
        }
    }
    out
}

/// The jobs values capped at `cap` (values above it become `cap`, once),
/// with the warning that says so; `None` when nothing is over the cap.
pub fn cap_jobs(
    values: &[String],
    cap: usize,
    targets: &[String],
) -> Option<(Vec<String>, String)> {
    let over: Vec<&String> = values
        .iter()
        .filter(|v| v.parse::<usize>().is_ok_and(|n| n > cap))
        .collect();
    if over.is_empty() {
        return None;
    }
    let mut kept: Vec<String> = Vec::new();
    for v in values {
        let v = match v.parse::<usize>() {
            Ok(n) if n > cap => cap.to_string(),
            _ => v.clone(),
        };
        if !kept.contains(&v) {
            kept.push(v);
        }
    }
    let over: Vec<&str> = over.iter().map(|s| s.as_str()).collect();
    let warning = format!(
        "jobs={}: more cores than the {cap} CPUs the placement gives {} on its node; \
         capped at jobs={cap} (the sweep runs jobs={}); name targets on more nodes or use --numa spread for more",
        over.join(","),
        targets.first().map_or("the target", String::as_str),
        kept.join(",")
    );
    Some((kept, warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn jobs_over_the_cap_are_capped_once_and_named() {
        let (kept, warning) = cap_jobs(&s(&["1", "2", "4", "8"]), 3, &s(&["/dev/x"])).unwrap();
        assert_eq!(kept, ["1", "2", "3"]);
        assert!(
            warning.starts_with("jobs=4,8: more cores than the 3 CPUs"),
            "{warning}"
        );
        assert!(warning.contains("the sweep runs jobs=1,2,3"), "{warning}");
        assert_eq!(cap_jobs(&s(&["1", "2"]), 2, &[]), None);
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn axes_and_targets_are_told_apart_and_bad_axes_named() {
        let (axes, targets) =
            parse_words(&words(&["jobs=1,2", "/dev/nvme0n1", "iodepth=4,16"])).unwrap();
        assert_eq!(axes.len(), 2);
        assert_eq!(axes[1].values, ["4", "16"]);
        assert_eq!(targets, ["/dev/nvme0n1"]);
        let err = |w: &[&str]| parse_words(&words(w)).unwrap_err().to_string();
        assert!(err(&["cores=1,2"]).contains("unknown axis `cores`"));
        assert!(err(&["jobs=1,,2"]).contains("empty value"));
        assert!(err(&["jobs=1,2,1"]).contains("1 is repeated"));
        assert!(err(&["jobs=1", "jobs=2"]).contains("given twice"));
        assert!(err(&["/tmp/x"]).contains("no axis"));
        assert!(err(&["jobs=1", "bs=4k", "rw=read"]).contains("3 axes"));
    }

    #[test]
    fn transport_switches_the_scheme_of_every_portal() {
        let t = words(&["nvme-tcp://10.0.0.1:4420/nqn.x:y/2"]);
        assert_eq!(
            over_transport(&t, "rdma").unwrap(),
            ["nvme-rdma://10.0.0.1:4420/nqn.x:y/2"]
        );
        let r = words(&["nvme-rdma://a/n,nvme-rdma://b/n"]);
        assert_eq!(
            over_transport(&r, "tcp").unwrap(),
            ["nvme-tcp://a/n,nvme-tcp://b/n"]
        );
        let e = over_transport(&words(&["/dev/nvme0n1"]), "rdma")
            .unwrap_err()
            .to_string();
        assert!(e.contains("give nvme-tcp:// or nvme-rdma://"), "{e}");
        assert!(over_transport(&t, "fc")
            .unwrap_err()
            .to_string()
            .contains("give tcp or rdma"));
        assert_eq!(transport_backend("rdma"), engine::BackendKind::Rdma);
        let (axes, _) =
            parse_words(&words(&["transport=tcp,rdma", "initiator-cores=1,2"])).unwrap();
        assert_eq!(points(&axes)[1].0, "transport=rdma initiator-cores=1");
    }

    #[test]
    fn a_grid_runs_the_first_axis_fastest() {
        let (axes, _) = parse_words(&words(&["jobs=1,2", "bs=4k,64k"])).unwrap();
        let labels: Vec<String> = points(&axes).into_iter().map(|(l, _)| l).collect();
        assert_eq!(
            labels,
            [
                "jobs=1 bs=4k",
                "jobs=2 bs=4k",
                "jobs=1 bs=64k",
                "jobs=2 bs=64k"
            ]
        );
        assert_eq!(x_of("bs", "64k", 1), 65536.0);
        assert_eq!(x_of("rw", "randread", 1), 1.0);
    }
}

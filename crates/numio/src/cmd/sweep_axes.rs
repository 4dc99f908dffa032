//! The axes of `numio sweep`: `AXIS=VALUES` words told apart from
//! targets, checked (unknown axis, empty or repeated values, an axis twice,
//! more than two), laid out as the points of a grid (first axis fastest)
//! and applied to the workload flags of one point.

use anyhow::{bail, Context};
use clap::ValueEnum;

use super::flags::{parse_bs, RwArg, WorkloadArgs};

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

/// The scheme of an NVMe-oF target over `transport` (`tcp`, `rdma`).
fn scheme(transport: &str) -> String {
    format!("nvme-{transport}://")
}

/// `targets` (NVMe/TCP or NVMe/RDMA, several portals each comma-separated)
/// reached over `transport`: the same address, port and subsystem, the
/// scheme changed. Anything else is an error naming it.
pub fn over_transport(targets: &[String], transport: &str) -> anyhow::Result<Vec<String>> {
    if !matches!(transport, "tcp" | "rdma") {
        bail!("transport={transport}: give tcp or rdma");
    }
    targets
        .iter()
        .map(|t| {
            t.split(',')
                .map(|portal| {
                    let rest = planner::target_addr::strip_scheme(portal)
                        .map(|(_, rest)| rest)
                        .with_context(|| {
                            format!(
                                "transport={transport} with {t}: the axis reaches one NVMe-oF target over each transport; \
                                 give nvme-tcp:// or nvme-rdma:// targets (a target that listens with both, e.g. numio serve --transport tcp,rdma)"
                            )
                        })?;
                    Ok(format!("{}{rest}", scheme(transport)))
                })
                .collect::<anyhow::Result<Vec<_>>>()
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
pub fn check_initiator_cores(axes: &[Axis], targets: &[String]) -> anyhow::Result<()> {
    let Some(a) = axes.iter().find(|a| a.name == "initiator-cores") else {
        return Ok(());
    };
    let list = a.values.join(",");
    if axes.iter().any(|a| a.name == "jobs") {
        bail!("initiator-cores={list} with jobs: both set the jobs per target; give one of them");
    }
    if axes.iter().any(|a| a.name == "reactors") {
        return Ok(());
    }
    if targets.is_empty() {
        bail!(
            "initiator-cores={list} without a target: give nvme-tcp://HOST[:PORT]/NQN targets, \
             or a reactors= axis for a target the sweep serves itself"
        );
    }
    if let Some(t) = targets
        .iter()
        .find(|t| planner::TargetAddr::parse(t).fabric().is_none())
    {
        bail!(
            "initiator-cores={list} with {t}: the axis sweeps an NVMe-oF initiator; \
             give nvme-tcp:// or nvme-rdma:// targets, or use jobs= for local devices"
        );
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
pub fn parse_words(words: &[String]) -> anyhow::Result<(Vec<Axis>, Vec<String>)> {
    let (mut axes, mut targets) = (Vec::<Axis>::new(), Vec::new());
    for w in words {
        let Some((name, list)) = w.split_once('=').filter(|(n, _)| !n.contains('/')) else {
            targets.push(w.clone());
            continue;
        };
        if !AXES.contains(&name) {
            bail!(
                "{w}: unknown axis `{name}`; the axes are {}",
                AXES.join(", ")
            );
        }
        let values: Vec<String> = list.split(',').map(str::trim).map(String::from).collect();
        if values.iter().any(String::is_empty) {
            bail!("{w}: an empty value; give a list such as {name}=1,2,4");
        }
        if let Some(v) = values
            .iter()
            .enumerate()
            .find(|(i, v)| values[..*i].contains(v))
        {
            bail!("{w}: {} is repeated; give each value once", v.1);
        }
        if axes.iter().any(|a| a.name == name) {
            bail!("{w}: axis {name} is given twice; give one list");
        }
        axes.push(Axis {
            name: name.to_string(),
            values,
        });
    }
    match axes.len() {
        0 => bail!(
            "no axis: give one such as jobs=1,2,4 (axes: {})",
            AXES.join(", ")
        ),
        1 | 2 => Ok((axes, targets)),
        n => bail!("{n} axes: a sweep has one, or two for a grid"),
    }
}

/// The workload flags with `axis` set to `value` (all but `devices` and
/// `reactors`, which the placement and the served target take).
pub fn apply(w: &mut WorkloadArgs, axis: &str, value: &str) -> anyhow::Result<()> {
    let num = |v: &str| -> anyhow::Result<i64> {
        v.parse()
            .with_context(|| format!("{axis}={v}: not a whole number"))
    };
    match axis {
        "jobs" | "initiator-cores" => w.numjobs = Some(num(value)?),
        "iodepth" => w.iodepth = Some(num(value)?),
        "bs" => w.bs = Some(value.to_string()),
        "rwmixread" => {
            w.rwmixread = Some(
                value
                    .parse()
                    .ok()
                    .filter(|p: &u8| *p <= 100)
                    .with_context(|| format!("rwmixread={value}: give a percentage 0-100"))?,
            )
        }
        "rw" => {
            w.rw = Some(RwArg::from_str(value, true).map_err(|_| {
                anyhow::anyhow!("rw={value}: give read, write, randread, randwrite, rw or randrw")
            })?)
        }
        _ => {}
    }
    Ok(())
}

/// A point's position on the chart's x axis: the number itself for numeric
/// axes (bs in bytes), else its place in the list.
pub fn x_of(axis: &str, value: &str, index: usize) -> f64 {
    match axis {
        "bs" => parse_bs(value).map_or(index as f64, |(lo, _)| lo as f64),
        "rw" | "transport" => index as f64,
        _ => value.parse().unwrap_or(index as f64),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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

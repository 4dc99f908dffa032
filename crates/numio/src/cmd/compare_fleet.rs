//! `numio compare --a hosts=A,B --b hosts=C,D`: two fleets (or one fleet
//! on two sets of flags' hosts) run interleaved A B A B …, each run a
//! fleet run at one instant on every host of its arm (`numio bench
//! --hosts` underneath), merged per run, then compared with the same
//! statistics as any two arms; the per-host-and-drive rows (`HOST:PATH`)
//! show which host moved.

use std::sync::atomic::Ordering;

use anyhow::bail;
use fleet::HostRun;
use session::interrupt;

use super::bench::bench_fleet::SshArgs;
use super::bench::bench_fleet::{hosts_spec, run_fleet};
use super::report::{command_line, now_unix_s, ExportArgs};

/// What `numio compare` hands over for two `hosts=` arms.
pub struct FleetCompare<'a> {
    /// `--a`.
    pub a: &'a str,
    /// `--b`.
    pub b: &'a str,
    /// Runs per arm.
    pub repeat: usize,
    /// The targets (`HOST:PATH` for one host).
    pub targets: &'a [String],
    /// How to reach the hosts.
    pub ssh: &'a SshArgs,
    /// `--save`, `--csv`, `--chart`.
    pub export: &'a ExportArgs,
    /// `--json`.
    pub json: bool,
}

/// Whether an arm's text names hosts.
pub fn is_fleet_arm(text: &str) -> bool {
    text.starts_with("hosts=")
}

/// A `hosts=H1,H2[,label=NAME]` arm: its label and hosts.
fn parse_fleet_arm(flag: &str, text: &str) -> anyhow::Result<(String, Vec<fleet::Host>)> {
    let Some(rest) = text.strip_prefix("hosts=") else {
        bail!("{flag} {text}: with a hosts= arm the other arm names hosts too (hosts=H1,H2[,label=NAME])");
    };
    let mut label = None;
    let mut hosts = Vec::new();
    for part in rest.split(',') {
        match part.strip_prefix("label=") {
            Some(l) => label = Some(l.to_string()),
            None => hosts.push(part),
        }
    }
    let hosts = fleet::parse_host_list(&hosts.join(","))
        .map_err(|e| anyhow::anyhow!("{flag} {text}: {e}"))?;
    if hosts.is_empty() {
        bail!("{flag} {text}: name at least one host");
    }
    Ok((label.unwrap_or_else(|| rest.to_string()), hosts))
}

/// The compare arguments the hosts' bench takes: all but the arms.
fn bench_argv() -> Vec<String> {
    let all: Vec<String> = std::env::args().collect();
    let at = all
        .iter()
        .position(|a| a == "compare")
        .map_or(all.len(), |i| i + 1);
    let mut out = Vec::new();
    let mut skip = false;
    for a in &all[at..] {
        if skip {
            skip = false;
            continue;
        }
        match a.as_str() {
            "--a" | "--b" => skip = true,
            "--fio-numa-auto" => {}
            x if x.starts_with("--a=") || x.starts_with("--b=") => {}
            _ => out.push(a.clone()),
        }
    }
    out
}

/// Runs the two fleet arms interleaved and compares them.
pub fn run(args: &FleetCompare<'_>) -> anyhow::Result<i32> {
    let arms = [
        parse_fleet_arm("--a", args.a)?,
        parse_fleet_arm("--b", args.b)?,
    ];
    if arms[0].0 == arms[1].0 {
        bail!(
            "--a and --b are both labelled {}: add ,label=NAME to one",
            arms[0].0
        );
    }
    let opts = args.ssh.options()?;
    let argv = bench_argv();
    // `HOST:PATH` targets are split over the hosts of both arms, so a
    // target of one arm's host never goes to the other arm.
    let all: Vec<fleet::Host> = arms.iter().flat_map(|(_, h)| h.iter().cloned()).collect();
    let per = fleet::targets_per_host(args.targets, &all);
    let mut per = per.into_iter();
    let runs: Vec<Vec<HostRun>> = arms
        .iter()
        .map(|(_, hosts)| {
            hosts
                .iter()
                .cloned()
                .zip(per.by_ref())
                .map(|(host, targets)| HostRun {
                    host,
                    targets,
                    connect: None,
                })
                .collect()
        })
        .collect();
    let mut records: [Vec<report::RunRecord>; 2] = [Vec::new(), Vec::new()];
    let mut seq = 0;
    'rounds: for round in 1..=args.repeat {
        for (k, (label, _)) in arms.iter().enumerate() {
            if interrupt::flag().load(Ordering::Relaxed) {
                break 'rounds;
            }
            seq += 1;
            eprintln!("numio: round {round} of {}: {label}", args.repeat);
            let run = run_fleet(&runs[k], &argv, &opts, &mut |_| {})?;
            if run.merged.is_none() {
                bail!("{label}: no host ran: {}", run.failures());
            }
            if run.partial {
                bail!(
                    "{label}: {} (a comparison needs every host in every run)",
                    run.failures()
                );
            }
            if interrupt::flag().load(Ordering::Relaxed) {
                break 'rounds; // a run cut short is left out
            }
            records[k].extend(report::fleet::record(&run, seq)?);
        }
    }
    if records.iter().any(Vec::is_empty) {
        eprintln!("numio: interrupted before both arms had a completed run: nothing to compare");
        return Ok(interrupt::exit_code().unwrap_or(1));
    }
    let [ra, rb] = records;
    let arm = |(label, hosts): &(String, Vec<fleet::Host>), runs| report::Arm {
        label: label.clone(),
        spec: hosts_spec(hosts.iter()),
        runs,
    };
    let set = report::ResultSet::new(
        report::SetKind::Compare,
        command_line(),
        now_unix_s(),
        vec![arm(&arms[0], ra), arm(&arms[1], rb)],
    );
    args.export.finish(&set, args.json)?;
    Ok(interrupt::exit_code().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_arms_take_hosts_and_a_label() {
        let (l, h) = parse_fleet_arm("--a", "hosts=root@a,b:22,label=old").unwrap();
        assert_eq!(l, "old");
        assert_eq!(h.len(), 2);
        let (l, _) = parse_fleet_arm("--b", "hosts=c").unwrap();
        assert_eq!(l, "c");
        let e = parse_fleet_arm("--b", "policy=local").unwrap_err();
        assert!(
            e.to_string().contains("the other arm names hosts too"),
            "{e}"
        );
        assert!(parse_fleet_arm("--a", "hosts=label=x").is_err());
    }
}

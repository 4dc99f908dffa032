//! `numio compare --a hosts=A,B --b hosts=C,D`: two fleets run
//! interleaved A B A B …, each run a fleet run at one instant on every
//! host of its arm (`session::fleet_bench`), then compared with the same
//! statistics as any two arms; the per-host-and-drive rows (`HOST:PATH`)
//! show which host moved.

use session::fleet::FleetNote;
use session::fleet_bench::{FleetBench, HostsArm};
use session::interrupt;

use super::bench::bench_fleet::Progress;
use super::report::{command_line, now_unix_s};

/// Runs the two fleet arms of `args` interleaved and compares them.
pub fn run(args: &super::compare::Args) -> anyhow::Result<i32> {
    anyhow::ensure!(
        args.c.is_none(),
        "--c: a fleet comparison (hosts=) has two arms; drop --c"
    );
    let fleet = FleetBench {
        arms: vec![
            HostsArm::parse("--a", &args.a)?,
            HostsArm::parse("--b", &args.b)?,
        ],
        targets: args.targets.clone(),
        argv: bench_argv(),
        rounds: args.repeat,
        opts: args.ssh.options()?,
    };
    let mut progress = None;
    let mut notes = |n: FleetNote<'_>| match n {
        FleetNote::Hosts { run, hosts } => {
            let label = &fleet.arms[run.arm].label;
            eprintln!("numio: round {} of {}: {label}", run.round + 1, args.repeat);
            progress = Some(Progress::new(hosts));
        }
        FleetNote::Fleet(e) => {
            if let Some(p) = &mut progress {
                p.event(e);
            }
        }
        _ => {}
    };
    let arms = fleet.compare(interrupt::flag(), &mut notes)?;
    if arms.iter().any(|a| a.runs.is_empty()) {
        eprintln!("numio: interrupted before both arms had a completed run: nothing to compare");
        return Ok(interrupt::exit_code().unwrap_or(1));
    }
    let set = report::ResultSet::new(report::SetKind::Compare, command_line(), now_unix_s(), arms);
    args.export.finish(&set, args.json)?;
    Ok(interrupt::exit_code().unwrap_or(0))
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

//! The controller's side of a fleet run against agents played by a script
//! (`tests/fake-ssh`, standing in for ssh): the barrier, clock offsets,
//! merged results, and each way a host can fail. The real ssh and numio
//! agent are tested in numio's `fleet_ssh` tests.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use fleet::run::{run, FleetOptions, HostOutcome, HostRun};
use fleet::{parse_host, FleetEvent};

fn result_file() -> std::path::PathBuf {
    let r = results::RunResult {
        schema_version: results::RESULT_SCHEMA_VERSION,
        environment: Default::default(),
        policy: "local".into(),
        targets: vec![],
        read: Default::default(),
        write: Default::default(),
        total: results::IoStats {
            ops: 1000,
            iops: 1000.0,
            ..Default::default()
        },
        cpu_usage: Default::default(),
        process_cpu_usage: Default::default(),
        errors: vec![],
        runtime_ns: 1_000_000_000,
        interrupted: false,
        counters: None,
        ..Default::default()
    };
    let p = std::env::temp_dir().join(format!("fleet-fake-result-{}.json", std::process::id()));
    std::fs::write(&p, serde_json::to_string(&r).unwrap()).unwrap();
    p
}

fn fleet(names: &[&str], silence: Duration) -> (Vec<HostOutcome>, Vec<String>) {
    let file = result_file();
    std::env::set_var("FAKE_RESULT", &file);
    let hosts: Vec<HostRun> = names
        .iter()
        .map(|n| HostRun {
            host: parse_host(n).unwrap(),
            targets: vec!["/x".into()],
            connect: None,
        })
        .collect();
    let o = FleetOptions {
        ssh: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake-ssh").into(),
        version: "T".into(),
        pings: 3,
        silence_timeout: silence,
        start_lead: Duration::from_millis(50),
        ..FleetOptions::default()
    };
    let mut events = Vec::new();
    let out = run(&hosts, &[], &o, &AtomicBool::new(false), &mut |e| {
        events.push(match e {
            FleetEvent::Connected { host, .. } => format!("connected {host}"),
            FleetEvent::Ready { host, .. } => format!("ready {host}"),
            FleetEvent::Starting { hosts, .. } => format!("starting {hosts}"),
            FleetEvent::Progress { host, .. } => format!("progress {host}"),
            FleetEvent::Failed { host, reason } => format!("failed {host}: {reason}"),
        })
    });
    (out, events)
}

fn reason(o: &HostOutcome) -> &str {
    match o {
        HostOutcome::Failed { reason } => reason,
        HostOutcome::Done { .. } => panic!("expected a failure"),
    }
}

#[test]
fn every_host_starts_after_the_barrier_and_reports() {
    let (out, ev) = fleet(&["a", "b", "c"], Duration::from_secs(60));
    for o in &out {
        let HostOutcome::Done {
            result,
            offset,
            start_skew_ns,
        } = o
        else {
            panic!("{o:?}")
        };
        assert_eq!(result.total.ops, 1000);
        assert!(offset.offset_ns.abs() < 1_000_000_000, "one clock");
        assert!(start_skew_ns.is_some());
    }
    let starting = ev
        .iter()
        .position(|e| e == "starting 3")
        .expect("one start");
    for h in ["a", "b", "c"] {
        let ready = ev.iter().position(|e| *e == format!("ready {h}")).unwrap();
        assert!(ready < starting, "{h} was ready before the start: {ev:?}");
    }
}

#[test]
fn each_failing_host_is_named_and_the_others_kept() {
    let names = ["a", "oldver", "noagent", "unreachable", "bad", "dies"];
    let (out, _) = fleet(&names, Duration::from_secs(60));
    assert!(matches!(out[0], HostOutcome::Done { .. }));
    assert!(
        reason(&out[1]).contains("it runs numio 0.0.0-old"),
        "{}",
        reason(&out[1])
    );
    assert!(
        reason(&out[2]).contains("is not there or not executable"),
        "{}",
        reason(&out[2])
    );
    assert!(
        reason(&out[2]).contains("command not found"),
        "{}",
        reason(&out[2])
    );
    assert!(
        reason(&out[3]).starts_with("ssh could not reach"),
        "{}",
        reason(&out[3])
    );
    assert_eq!(reason(&out[4]), "cannot open /x: No such file");
    assert!(
        reason(&out[5]).contains("ended mid-run"),
        "{}",
        reason(&out[5])
    );
}

#[test]
fn a_host_silent_mid_run_is_given_up() {
    // The timeout is the only clock here: 3 s leaves the healthy host (a
    // bash script forking `date` on a loaded 2-core machine) room to speak;
    // at 1 s it was once given up too.
    let (out, _) = fleet(&["a", "silent"], Duration::from_secs(3));
    assert!(matches!(out[0], HostOutcome::Done { .. }), "{out:?}");
    assert!(
        reason(&out[1]).contains("said nothing for 3 s mid-run"),
        "{}",
        reason(&out[1])
    );
}

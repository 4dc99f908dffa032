use super::*;
use crate::testutil::{null_opts, TempFile};

fn ask<'a>(
    targets: &'a [String],
    placing: &'a Placing,
    flags: &'a WorkloadFlags,
    dir: &'a std::path::Path,
) -> PreconditionAsk<'a> {
    PreconditionAsk {
        targets,
        placing,
        workload: flags,
        fill: "0",
        round: "20ms",
        rounds_max: 12,
        steady: "snia",
        command: "numio precondition",
        state_dir: Some(dir),
    }
}

fn err(a: PreconditionAsk<'_>) -> String {
    let never = AtomicBool::new(false);
    run(&a, &null_opts(), &never, &mut |_| {})
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_flags_are_named_with_their_fix() {
    let dir = std::env::temp_dir();
    let (t, placing) = (vec!["/dev/null".to_string()], Placing::default());
    let flags = WorkloadFlags::default();
    let a = ask(&t, &placing, &flags, &dir);
    assert!(err(PreconditionAsk { fill: "two", ..a }).contains("--fill two: give"));
    assert!(err(PreconditionAsk { fill: "-1x", ..a }).contains("--fill -1x"));
    assert!(err(PreconditionAsk { rounds_max: 4, ..a }).contains("--rounds 4: give 5 to"));
    assert!(err(PreconditionAsk {
        steady: "bw:1%",
        ..a
    })
    .contains("--steady bw:1%"));
    assert!(err(PreconditionAsk { targets: &[], ..a }).contains("name the drives"));
    let runtime = WorkloadFlags {
        runtime: Some("10s".into()),
        ..WorkloadFlags::default()
    };
    let e = err(ask(&t, &placing, &runtime, &dir));
    assert!(
        e.contains("--runtime 10s: a precondition round's length is --round"),
        "{e}"
    );
}

#[test]
fn a_file_runs_fill_and_rounds_to_a_verdict_and_is_recorded() {
    let f = TempFile::new("precondition");
    let dir = std::env::temp_dir().join(format!("numio-precond-state-{}", std::process::id()));
    let targets = vec![f.path()];
    let placing = Placing {
        numa: Some(planner::flags::Numa::None),
        ..Placing::default()
    };
    let flags = WorkloadFlags {
        iodepth: Some(4),
        ..WorkloadFlags::default()
    };
    let a = PreconditionAsk {
        fill: "1.5x",
        ..ask(&targets, &placing, &flags, &dir)
    };
    let never = AtomicBool::new(false);
    let mut lines = Vec::new();
    let p = run(&a, &null_opts(), &never, &mut |l| lines.push(l)).unwrap();
    let d = &p.drives[0];
    // 1 MiB file: one whole pass, then half of it.
    let fill: Vec<u64> = d.fill.iter().map(|f| f.bytes).collect();
    assert_eq!(fill, [1 << 20, 1 << 19]);
    assert_eq!(d.workload.rw, RwMode::RandWrite);
    assert!(
        d.rounds.len() >= SNIA_WINDOW && d.rounds.len() <= 12,
        "{d:?}"
    );
    assert_ne!(d.verdict.outcome, Outcome::Interrupted);
    // The rounds stop at the verdict: the last round is the window's end.
    if d.verdict.outcome == Outcome::Steady {
        assert_eq!(d.verdict.window.unwrap()[1] as usize, d.rounds.len());
    }
    assert!(
        lines.iter().any(|l| l.starts_with("fill pass 2 of 2")),
        "{lines:?}"
    );
    let rec = state::load(&dir, &d.identity).expect("the drive's record");
    assert_eq!(rec.steady, d.verdict.outcome == Outcome::Steady);
    assert_eq!(rec.written_since_unix_s, None);
    std::fs::remove_dir_all(&dir).unwrap();
}

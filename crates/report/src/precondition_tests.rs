use super::*;

fn round(n: u32, iops: f64) -> Round {
    Round {
        round: n,
        iops,
        bandwidth_bytes_per_s: iops * 4096.0,
        lat_p99_ns: Some(250_000),
        runtime_ns: 1_000_000_000,
        errors: 0,
    }
}

fn run(series: &[f64], rounds_max: u32) -> Precondition {
    let verdict = (1..=series.len())
        .find_map(|n| Verdict::after_round(Criterion::Snia, 5, &series[..n], rounds_max))
        .expect("a verdict by the last round");
    let rounds = (1..=series.len() as u32)
        .zip(series)
        .map(|(n, &y)| round(n, y))
        .take(verdict.window.map_or(series.len(), |w| w[1] as usize))
        .collect();
    Precondition {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        command: "numio precondition /dev/loop0".into(),
        started_unix_s: 1_700_000_000,
        criterion: Criterion::Snia,
        window_rounds: 5,
        round_ns: 1_000_000_000,
        rounds_max,
        fill_multiple: 2.0,
        fill_bs_bytes: 128 << 10,
        interrupted: false,
        drives: vec![Drive {
            path: "/dev/loop0".into(),
            identity: "path:/dev/loop0:1073741824".into(),
            node: Some(NodeId(0)),
            cpus: vec![CpuId(2)],
            size_bytes: 1 << 30,
            workload: Workload::default(),
            fill: vec![FillPass {
                bytes: 1 << 30,
                runtime_ns: 2_000_000_000,
                bandwidth_bytes_per_s: (1u64 << 29) as f64,
            }],
            rounds,
            verdict,
        }],
    }
}

#[test]
fn rounds_stop_at_the_first_steady_window() {
    // A write cliff, then flat: steady in rounds 3-7, not before.
    let series = [
        900.0, 400.0, 200.0, 205.0, 198.0, 202.0, 200.0, 201.0, 199.0,
    ];
    let p = run(&series, 25);
    let d = &p.drives[0];
    assert_eq!(d.verdict.outcome, Outcome::Steady);
    assert_eq!(d.verdict.window, Some([3, 7]));
    assert_eq!(d.rounds.len(), 7);
    assert!(p.all_steady());
}

#[test]
fn the_round_limit_gives_a_plain_not_met() {
    let rising = [100.0, 120.0, 140.0, 160.0, 180.0, 200.0];
    let p = run(&rising, 6);
    let d = &p.drives[0];
    assert_eq!(d.verdict.outcome, Outcome::NotMet);
    assert_eq!(d.verdict.window, Some([2, 6]));
    let text = render(&p);
    assert!(
        text.contains("NOT steady after 6 rounds (the limit)"),
        "{text}"
    );
    assert!(!p.all_steady());
}

#[test]
fn a_limit_below_the_window_says_so() {
    let v = Verdict::after_round(Criterion::Snia, 5, &[1.0, 1.0, 1.0], 3).unwrap();
    assert_eq!(v.outcome, Outcome::NotMet);
    assert_eq!(v.window, None);
}

#[test]
fn the_view_shows_fill_rounds_window_and_verdict() {
    let series = [900.0, 400.0, 200.0, 205.0, 198.0, 202.0, 200.0];
    let text = render(&run(&series, 25));
    for want in [
        "precondition: fill 2x capacity with sequential 128.0 KiB writes, then rounds of 1.00s (at most 25); steady state by snia over 5 rounds",
        "drive /dev/loop0  node 0  CPUs 2  1.0 GiB  (path:/dev/loop0:1073741824)",
        "  fill pass 1: 1.0 GiB in 2.00s (512.0 MiB/s)",
        "  round      IOPS    bandwidth        p99",
        "      1       900    3.5 MiB/s    250.0µs",
        "  *   3       200    0.8 MiB/s    250.0µs",
        "  steady state in rounds 3-7 (*): mean 201 IOPS, data excursion 3.5 %",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn a_saved_file_reprints_as_printed_and_others_do_not() {
    let p = run(&[5.0, 5.0, 5.0, 5.0, 5.0], 25);
    let json = serde_json::to_string_pretty(&p).unwrap();
    assert_eq!(reprint(&json).as_deref(), Some(render(&p).as_str()));
    let newer = json.replace(
        &format!("\"schema_version\": {SCHEMA_VERSION}"),
        "\"schema_version\": 99",
    );
    assert_eq!(reprint(&newer), None);
    assert_eq!(reprint("{\"schema\": \"numio-results\"}"), None);
}

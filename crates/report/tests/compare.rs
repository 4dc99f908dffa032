//! Comparison and repeat statistics on synthetic result sets with known
//! answers (reference values from SciPy's `ttest_ind(equal_var=False)`).

mod common;

use common::{fixture, pair};
use report::compare::Method;
use report::model::TOTAL;
use report::repeat::Metric;

fn close(got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
}

#[test]
fn fixture_comparison_matches_scipy_welch_and_fieller() {
    let set = fixture("compare_local_spread.json");
    let c = report::analyze(&set).comparison.unwrap();
    let iops = c.get(TOTAL, Metric::Iops).unwrap();
    let Method::Welch { df, p_value } = iops.inference.method else {
        panic!("5 runs per arm use Welch, got {:?}", iops.inference.method)
    };
    close(df, 4.003_216_895_175_501, 1e-9);
    close(p_value, 0.001_586_736_770_580_377_6, 1e-9);
    let (low, high) = iops.inference.diff_ci.unwrap();
    close(low, 16_390.462_753_200_67, 1e-4);
    close(high, 35_169.537_246_799_33, 1e-4);
    close(iops.inference.pct.unwrap(), 3.325_336_016_304_203_4, 1e-9);
    let (pl, ph) = iops.inference.pct_ci.unwrap();
    close(pl, 2.088_899_566_830_404_5, 1e-6);
    close(ph, 4.592_077_831_622_099, 1e-6);
    assert_eq!(
        iops.verdict,
        "local: +3.3 % IOPS (95 % CI +2.1 … +4.6 %), run-to-run deviation 0.02 % vs 0.98 %"
    );
}

#[test]
fn lower_latency_wins_and_is_named() {
    let set = fixture("compare_local_spread.json");
    let c = report::analyze(&set).comparison.unwrap();
    let lat = c.get(TOTAL, Metric::LatMean).unwrap();
    assert!(lat.verdict.starts_with("local: -"), "{}", lat.verdict);
    assert!(lat.verdict.contains("mean latency"), "{}", lat.verdict);
}

#[test]
fn per_target_comparisons_exist_for_shared_targets() {
    let c = report::analyze(&fixture("compare_local_spread.json"))
        .comparison
        .unwrap();
    for t in ["/dev/nvme0n1", "/dev/nvme1n1"] {
        assert!(c.get(t, Metric::Iops).is_some(), "{t}");
    }
    assert_eq!(c.metrics.len(), 9, "3 metrics × (total + 2 targets)");
}

#[test]
fn b_winning_is_reported_as_b() {
    let set = pair(
        &[100.0, 101.0, 99.0, 100.5, 99.5],
        &[110.0, 111.0, 109.0, 110.5, 109.5],
    );
    let c = report::analyze(&set).comparison.unwrap();
    let v = &c.get(TOTAL, Metric::Iops).unwrap().verdict;
    assert!(v.starts_with("spread: +10.0 % IOPS (95 % CI +"), "{v}");
    // A relative to B stays negative in the numbers.
    assert!(c.get(TOTAL, Metric::Iops).unwrap().inference.pct.unwrap() < 0.0);
}

#[test]
fn overlapping_arms_give_no_significant_difference() {
    let set = pair(
        &[100.0, 104.0, 96.0, 102.0, 98.0],
        &[101.0, 97.0, 103.0, 99.0, 100.0],
    );
    let c = report::analyze(&set).comparison.unwrap();
    let m = c.get(TOTAL, Metric::Iops).unwrap();
    assert!(!m.inference.significant);
    assert!(
        m.verdict
            .starts_with("no significant difference in IOPS (local vs spread: "),
        "{}",
        m.verdict
    );
}

#[test]
fn zero_variance_equal_arms_say_no_difference_without_nan() {
    let set = pair(&[1000.0; 4], &[1000.0; 4]);
    let c = report::analyze(&set).comparison.unwrap();
    let m = c.get(TOTAL, Metric::Iops).unwrap();
    assert_eq!(
        m.verdict,
        "no difference in IOPS: every run of both arms gave 1,000 IOPS"
    );
    assert_eq!(m.inference.pct, Some(0.0));
    let json = serde_json::to_string(&c).unwrap();
    assert!(
        !json.contains("NaN") && !json.contains("null,\"pct\""),
        "{json}"
    );
}

#[test]
fn zero_variance_different_arms_give_an_exact_difference() {
    let set = pair(&[1100.0; 5], &[1000.0; 5]);
    let c = report::analyze(&set).comparison.unwrap();
    let m = c.get(TOTAL, Metric::Iops).unwrap();
    assert_eq!(m.inference.method, Method::Exact);
    assert_eq!(
        m.verdict,
        "local: +10.0 % IOPS (every run of each arm gave the same value: the difference is exact)"
    );
}

#[test]
fn few_runs_use_the_seeded_bootstrap_and_warn() {
    let set = pair(&[103.0, 104.0, 103.5], &[100.0, 100.5, 99.5]);
    let one = report::analyze(&set).comparison.unwrap();
    let two = report::analyze(&set).comparison.unwrap();
    let m = one.get(TOTAL, Metric::Iops).unwrap();
    assert!(matches!(
        m.inference.method,
        Method::Bootstrap {
            resamples: 10_000,
            ..
        }
    ));
    assert!(m.inference.significant);
    assert_eq!(one, two, "the bootstrap is deterministic");
    assert!(one
        .warnings
        .iter()
        .any(|w| w.contains("bootstrap") && w.contains("--repeat 5")));
}

#[test]
fn one_run_per_arm_cannot_be_compared() {
    let set = pair(&[103.0], &[100.0, 101.0]);
    let c = report::analyze(&set).comparison.unwrap();
    let m = c.get(TOTAL, Metric::Iops).unwrap();
    assert_eq!(m.inference.method, Method::TooFewRuns);
    assert!(
        m.verdict
            .starts_with("cannot compare IOPS: local has 1 run; use --repeat 2"),
        "{}",
        m.verdict
    );
}

#[test]
fn repeat_set_flags_the_outlier_run_with_a_fix() {
    let a = report::analyze(&fixture("repeat_outlier.json"));
    let arm = &a.arms[0];
    let iops = arm.total.metric(Metric::Iops);
    assert_eq!(iops.summary.n, 7);
    assert_eq!(iops.summary.median, 812_100.0);
    assert_eq!(iops.outliers.len(), 1);
    assert_eq!(iops.outliers[0].seq, 5);
    close(iops.outliers[0].z, -137.260_75, 1e-9);
    let w = a.warnings();
    assert!(
        w.iter().any(
            |w| w.contains("run 5 stands out in total: 771,400 IOPS (modified z -137.3)")
                && w.contains("longer --ramp")
        ),
        "{w:#?}"
    );
}

#[test]
fn steadily_rising_runs_warn_of_drift() {
    // The shape of a real repeat on a cold file target: every run faster.
    let set = report::ResultSet::new(
        report::SetKind::Repeat,
        "test",
        0,
        vec![common::arm(
            "local",
            &[10_661.0, 16_151.0, 32_053.0, 54_480.0, 70_418.0],
            1,
            1,
        )],
    );
    let a = report::analyze(&set);
    let t = a.arms[0].iops_trend.unwrap();
    assert_eq!(t.tau, 1.0);
    close(t.p_value, 1.0 / 60.0, 1e-12);
    let w = a.warnings();
    assert!(
        w.iter().any(|w| w
            .contains("IOPS drift up over the runs (Mann–Kendall: Kendall's tau +1.00")
            && w.contains("--ramp")),
        "{w:#?}"
    );
    // The outlier fixture has no trend to speak of: no drift warning.
    let quiet = report::analyze(&fixture("repeat_outlier.json")).warnings();
    assert!(quiet.iter().all(|w| !w.contains("drift")), "{quiet:#?}");
}

#[test]
fn a_third_arm_is_compared_with_the_first_and_rendered_after_b() {
    use report::model::SetKind;
    let set = report::ResultSet::new(
        SetKind::Compare,
        "test",
        0,
        vec![
            common::arm("vfio", &[100.0, 101.0, 99.0, 100.5, 100.2], 1, 3),
            common::arm("passthru", &[80.0, 81.0, 79.0, 80.5, 80.2], 2, 3),
            common::arm("uring", &[100.1, 100.9, 99.2, 100.4, 100.0], 3, 3),
        ],
    );
    let a = report::analyze(&set);
    let b = a.comparison.as_ref().unwrap();
    assert_eq!(
        (b.a.label.as_str(), b.b.label.as_str()),
        ("vfio", "passthru")
    );
    assert!(b
        .get(TOTAL, Metric::Iops)
        .unwrap()
        .verdict
        .starts_with("vfio: +"));
    assert_eq!(a.more_comparisons.len(), 1);
    let c = &a.more_comparisons[0];
    assert_eq!((c.a.label.as_str(), c.b.label.as_str()), ("vfio", "uring"));
    assert!(c
        .get(TOTAL, Metric::Iops)
        .unwrap()
        .verdict
        .starts_with("no significant difference"));
    let text = text_of(&set);
    let (pb, pc) = (
        text.find("Verdict, passthru vs vfio").expect("B's verdict"),
        text.find("Verdict, uring vs vfio").expect("C's verdict"),
    );
    assert!(pb < pc, "{text}");
    assert!(text.contains("runs interleaved A B C A B C"), "{text}");
    assert!(text.contains("  C: uring (policy=uring, 5 runs)"), "{text}");
    // Two arms keep the plain heading.
    let two = common::pair(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]);
    let t2 = text_of(&two);
    assert!(t2.contains("\nVerdict (95 % confidence)"), "{t2}");
    assert!(report::analyze(&two).more_comparisons.is_empty());
}

fn text_of(set: &report::ResultSet) -> String {
    use report::export::Exporter;
    let mut out = Vec::new();
    report::export::TextExporter
        .export(set, &mut out)
        .expect("text");
    String::from_utf8(out).expect("utf-8")
}

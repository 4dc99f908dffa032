//! The points of `numio coalesce sweep`: its flags read and checked
//! (`--threshold`, `--devices`, `--time`, `--max-latency`: every error names
//! the input and the fix, before anything changes), the grid they make
//! (threshold fastest, then devices), and the result set the runs become
//! (a sweep set over `threshold` × `devices` with a coalesce spec, which
//! `numio report` and `numio compare` read as they read any sweep).

use anyhow::{bail, Context};
use report::coalesce::{CoalesceSpec, LatencyBudget, DEVICES_AXIS, THRESHOLD_AXIS};
use report::ResultSet;
pub use session::coalesce::{points, Point};

use session::axes::Axis;

fn list<T: PartialEq + Copy>(
    flag: &str,
    text: &str,
    example: &str,
    one: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim) {
        if word.is_empty() {
            bail!("{flag} {text}: an empty value; give a list such as {example}");
        }
        let v = one(word)?;
        if out.contains(&v) {
            bail!("{flag} {text}: {word} is repeated; give each value once");
        }
        out.push(v);
    }
    Ok(out)
}

/// `--threshold 0,1,3,5,9`: raw thresholds 0..=255 (read as `numio
/// coalesce set` reads one), ascending; 0 (off, the baseline every
/// recommendation is measured against) is added when missing, and the
/// second value says so.
pub fn thresholds(text: &str) -> anyhow::Result<(Vec<u8>, bool)> {
    let mut v = list("--threshold", text, "0,3,9", |w| {
        Ok(tune::parse_threshold(w)?)
    })?;
    let added = !v.contains(&0);
    if added {
        v.push(0);
    }
    v.sort_unstable();
    Ok((v, added))
}

/// `--devices 1,2,4`: drive counts from 1 to the targets given, ascending;
/// none given: all the targets at once.
pub fn devices(text: Option<&str>, targets: &[String]) -> anyhow::Result<Vec<usize>> {
    let Some(text) = text else {
        return Ok(vec![targets.len()]);
    };
    let mut v = list("--devices", text, "1,2,4", |w| {
        let n: usize = w.parse().with_context(|| {
            format!(
                "--devices {text}: {w} is not a whole number; give counts of drives such as 1,2,4"
            )
        })?;
        if n == 0 {
            bail!(
                "--devices {text}: 0 drives run nothing; give counts from 1 to {}",
                targets.len()
            );
        }
        if n > targets.len() {
            bail!(
                "--devices {text}: {n} drives, but {} targets given ({}); name more targets or drop {n}",
                targets.len(),
                targets.join(", ")
            );
        }
        Ok(n)
    })?;
    v.sort_unstable();
    Ok(v)
}

/// `--time 100us`: the Aggregation Time as `numio coalesce set` reads it
/// (`100us`, `0.2ms` or a bare number of µs; a multiple of 100 µs up to
/// 25.5 ms), and not 0.
pub fn time_us(text: &str) -> anyhow::Result<u32> {
    let us = tune::parse_time_us(text)?;
    if us == 0 {
        bail!(
            "--time {text}: 0 means no delay: the controller raises every interrupt at once; give 100us or more"
        );
    }
    Ok(us)
}

/// `--max-latency p99.99=2ms` (repeatable, or comma-separated): the
/// latency budgets of the recommendation.
pub fn budgets(texts: &[String]) -> anyhow::Result<Vec<LatencyBudget>> {
    let mut out: Vec<LatencyBudget> = Vec::new();
    for word in texts.iter().flat_map(|t| t.split(',')).map(str::trim) {
        let b = budget(word)?;
        if out.iter().any(|o| o.percentile == b.percentile) {
            bail!(
                "--max-latency {word}: p{} is given twice; give one budget per percentile",
                b.percentile
            );
        }
        out.push(b);
    }
    Ok(out)
}

fn budget(word: &str) -> anyhow::Result<LatencyBudget> {
    let fix = "give a percentile and a time, such as p99.99=2ms or p99=500us";
    let (p, t) = word
        .split_once('=')
        .with_context(|| format!("--max-latency {word}: no `=`; {fix}"))?;
    let percentile: f64 = p
        .trim()
        .strip_prefix('p')
        .and_then(|n| n.parse().ok())
        .filter(|v: &f64| *v > 0.0 && *v < 100.0)
        .with_context(|| {
            format!("--max-latency {word}: `{p}` is not a percentile between p0 and p100 (exclusive); {fix}")
        })?;
    let t = t.trim();
    if t.chars().all(|c| c.is_ascii_digit()) {
        bail!("--max-latency {word}: `{t}` has no unit; {fix}");
    }
    let max_ns = planner::fio::units::parse_time_ns(t, 1)
        .ok()
        .filter(|&ns| ns > 0)
        .with_context(|| format!("--max-latency {word}: `{t}` is not a time above 0; {fix}"))?;
    Ok(LatencyBudget {
        percentile,
        max_ns: max_ns as f64,
    })
}

/// The percentiles every run measures: the engine's, the table's and the
/// budgets', ascending, each once.
pub fn percentiles(engine: &[f64], budgets: &[LatencyBudget]) -> Vec<f64> {
    let mut v: Vec<f64> = engine
        .iter()
        .copied()
        .chain(report::coalesce::PERCENTILES)
        .chain(budgets.iter().map(|b| b.percentile))
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// What the sweep was: thresholds, devices and the spec, for its result set.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Thresholds, ascending.
    pub thresholds: Vec<u8>,
    /// Device counts, ascending.
    pub devices: Vec<usize>,
    /// Time, targets, controllers, budgets.
    pub spec: CoalesceSpec,
}

/// The sweep's result set: its arms (one per point, in [`points`] order)
/// as a sweep over `threshold` × `devices` (as `numio sweep` saves a
/// grid), with the coalesce spec.
pub fn result_set(
    shape: &Shape,
    arms: Vec<report::Arm>,
    cores: Vec<usize>,
    interrupted: bool,
) -> ResultSet {
    let axes = [
        Axis {
            name: THRESHOLD_AXIS.into(),
            values: shape.thresholds.iter().map(u8::to_string).collect(),
        },
        Axis {
            name: DEVICES_AXIS.into(),
            values: shape.devices.iter().map(usize::to_string).collect(),
        },
    ];
    let knee = report::sweep::DEFAULT_KNEE_EFFICIENCY;
    let mut set = super::sweep_output::result_set(&axes, arms, cores, knee, None, interrupted);
    set.coalesce = Some(shape.spec.clone());
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn thresholds_are_sorted_with_off_added_and_bad_ones_named() {
        assert_eq!(
            thresholds("0,1,3,5,9").unwrap(),
            (vec![0, 1, 3, 5, 9], false)
        );
        assert_eq!(thresholds("9, 3").unwrap(), (vec![0, 3, 9], true));
        let err = |t: &str| thresholds(t).unwrap_err().to_string();
        assert!(
            err("0,256").contains("--threshold 256: above 255"),
            "{}",
            err("0,256")
        );
        assert!(err("0,x").contains("--threshold x: not a whole number"));
        assert!(err("3,3").contains("3 is repeated"));
        assert!(err("0,,3").contains("an empty value"));
    }

    #[test]
    fn devices_count_from_one_to_the_targets() {
        let t = s(&["/dev/a", "/dev/b", "/dev/c", "/dev/d"]);
        assert_eq!(devices(Some("4,1,2"), &t).unwrap(), [1, 2, 4]);
        assert_eq!(devices(None, &t).unwrap(), [4], "all at once by default");
        let err = |d: &str| devices(Some(d), &t[..2]).unwrap_err().to_string();
        assert!(
            err("0,1").contains("0 drives run nothing"),
            "{}",
            err("0,1")
        );
        assert!(
            err("1,4")
                .contains("4 drives, but 2 targets given (/dev/a, /dev/b); name more targets"),
            "{}",
            err("1,4")
        );
        assert!(err("1,1").contains("1 is repeated"));
    }

    #[test]
    fn times_are_100_us_steps_up_to_25_5_ms() {
        assert_eq!(time_us("100us").unwrap(), 100);
        assert_eq!(time_us("0.2ms").unwrap(), 200);
        assert_eq!(time_us("300").unwrap(), 300);
        assert_eq!(time_us("25.5ms").unwrap(), 25_500);
        let err = |t: &str| time_us(t).unwrap_err().to_string();
        assert!(
            err("150us").contains("not a multiple of 100 µs"),
            "{}",
            err("150us")
        );
        assert!(err("25.6ms").contains("above 25.5 ms"), "{}", err("25.6ms"));
        assert!(err("0").contains("0 means no delay"));
        assert!(
            err("fast").contains("--time fast: expected a number"),
            "{}",
            err("fast")
        );
    }

    #[test]
    fn latency_budgets_name_a_percentile_and_a_time() {
        let b = budgets(&s(&["p99.99=2ms", "p99=500us"])).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].percentile, b[0].max_ns), (99.99, 2e6));
        assert_eq!((b[1].percentile, b[1].max_ns), (99.0, 500e3));
        assert_eq!(budgets(&s(&["p50=1ms,p95=2ms"])).unwrap().len(), 2);
        let err = |t: &str| budgets(&s(&[t])).unwrap_err().to_string();
        assert!(err("p99.99").contains("no `=`"), "{}", err("p99.99"));
        assert!(
            err("p100=1ms").contains("not a percentile"),
            "{}",
            err("p100=1ms")
        );
        assert!(err("99=1ms").contains("not a percentile"));
        assert!(err("p99=2").contains("has no unit"));
        assert!(err("p99=2x").contains("not a time above 0"));
        assert!(err("p99=1ms,p99=2ms").contains("given twice"));
    }

    #[test]
    fn points_run_every_threshold_per_device_count() {
        let p = points(&[0, 3], &[1, 2]);
        let labels: Vec<String> = p.iter().map(Point::label).collect();
        assert_eq!(
            labels,
            [
                "threshold=0 devices=1",
                "threshold=3 devices=1",
                "threshold=0 devices=2",
                "threshold=3 devices=2"
            ]
        );
        let budget = LatencyBudget {
            percentile: 99.9,
            max_ns: 1e6,
        };
        assert_eq!(
            percentiles(&[50.0, 99.0], &[budget]),
            [50.0, 95.0, 99.0, 99.9, 99.99]
        );
    }
}

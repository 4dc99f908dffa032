//! `numio bench --metrics ADDR` serves the run in progress: scraped while
//! it runs, the counts are the sum of the result's first intervals (the
//! endpoint publishes at each interval's end), and the latency histogram
//! counts every I/O it counts.

mod common;

use common::running::{progress_s, Running};
use common::Temp;
use nvmf::tgt::metrics::parse_line;

#[test]
fn a_scrape_mid_run_is_a_prefix_of_the_result() {
    let f = Temp::filled("metrics", 8 << 20, 1);
    let run = Running::start(&[
        "bench",
        f.path(),
        "--runtime",
        "4s",
        "--interval",
        "500ms",
        "--metrics",
        "127.0.0.1:0",
        "--progress",
        "always",
        "--json",
        "--uring-setup",
        "defer",
    ]);
    let line = run.wait_for(1, "the metrics address", |l| {
        l.contains("live metrics at http://")
    });
    let addr: std::net::SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics"))
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    run.wait_for(1, "progress past 1.6 s", |l| {
        progress_s(l).is_some_and(|t| t >= 1.6)
    });
    let (status, text) = nvmf::metrics_http::get(addr, "/metrics").expect("a scrape");
    assert_eq!(status, 200, "{text}");
    let samples: Vec<_> = text.lines().filter_map(parse_line).collect();
    let value = |name: &str, op: &str| -> f64 {
        samples
            .iter()
            .filter(|s| s.name == name && s.label("op") == op)
            .map(|s| s.value)
            .sum()
    };
    let reads = value("numio_commands_total", "read");
    assert!(reads > 0.0, "{text}");
    assert_eq!(
        value("numio_command_latency_seconds_count", "read"),
        reads,
        "{text}"
    );
    assert_eq!(value("numio_bytes_total", "read"), reads * 4096.0, "{text}");
    assert!(samples
        .iter()
        .any(|s| s.label("target") == f.path() && s.label("job") == "0"));
    let (code, out, err) = run.wait();
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).expect("bench --json");
    // Each worker publishes at its cuts: the scrape is the sum of the
    // result's first k intervals for some k (one job: exactly).
    let ivs = r["targets"][0]["intervals"].as_array().expect("intervals");
    let mut prefix = 0.0;
    let mut sums = vec![0.0];
    for iv in ivs {
        prefix += iv["read"]["ops"].as_f64().unwrap();
        sums.push(prefix);
    }
    assert!(
        sums.contains(&reads),
        "scraped {reads} reads, the intervals' prefix sums are {sums:?}"
    );
    assert!(
        reads < r["read"]["ops"].as_f64().unwrap(),
        "a mid-run scrape saw the whole run"
    );
}

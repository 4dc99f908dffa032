//! Discovers a root and prints it, or times discovery.
//!
//! `cargo run -p topology --release --example discover -- ROOT [tree|json|bench N]`
//! (`bench N`: runs discover N times and prints the median and minimum time;
//! bench/topology-discover runs it on the largest fixture).

use std::path::PathBuf;
use std::time::Instant;

use topology::Topology;

fn main() {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().unwrap_or_else(|| "/".to_string()));
    let mode = args.next().unwrap_or_else(|| "tree".to_string());
    let opened = match topology::snapshot::open(&root) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("discover: {e}");
            std::process::exit(2);
        }
    };
    let topo = match opened.discover() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("discover: {e}");
            std::process::exit(2);
        }
    };
    match mode.as_str() {
        "json" => println!(
            "{}",
            serde_json::to_string_pretty(&topo).expect("serializable")
        ),
        "bench" => bench(&root, &opened, &topo, args.next()),
        _ => print!("{}", topology::render::tree(&topo)),
    }
}

/// Nanoseconds this thread has spent on a CPU (`/proc/thread-self/schedstat`),
/// so time spent waiting for a CPU on a busy machine is not counted.
fn on_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn bench(root: &std::path::Path, opened: &topology::Root, topo: &Topology, runs: Option<String>) {
    let runs: usize = runs.and_then(|n| n.parse().ok()).unwrap_or(50).max(1);
    let cpu_start = on_cpu_ns();
    let mut times_us: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let t = opened.discover().expect("discovered once already");
            std::hint::black_box(&t);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let on_cpu_ms = match (cpu_start, on_cpu_ns()) {
        (Some(a), Some(b)) => format!("{:.2} ms", (b - a) as f64 / 1e6 / runs as f64),
        _ => "unknown".to_string(),
    };
    times_us.sort_by(f64::total_cmp);
    let files = opened
        .discover_recorded()
        .map(|(_, r)| r.paths().len())
        .unwrap_or(0);
    println!(
        "discover {}: {} CPUs, {} controllers, {files} paths read; {runs} runs: wall median {:.2} ms, min {:.2} ms; on-CPU mean {on_cpu_ms} (target < 20 ms)",
        root.display(),
        topo.cpus.len(),
        topo.controllers.len(),
        times_us[runs / 2] / 1000.0,
        times_us[0] / 1000.0
    );
}

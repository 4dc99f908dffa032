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
    let topo = match Topology::discover(opened.path()) {
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
        "bench" => {
            let runs: usize = args
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(50)
                .max(1);
            let mut times_us: Vec<f64> = (0..runs)
                .map(|_| {
                    let start = Instant::now();
                    let t = Topology::discover(opened.path()).expect("discovered once already");
                    std::hint::black_box(&t);
                    start.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            times_us.sort_by(f64::total_cmp);
            let files = Topology::discover_recorded(opened.path())
                .map(|(_, r)| r.paths().len())
                .unwrap_or(0);
            println!(
                "discover {}: {} CPUs, {} controllers, {files} paths read; {runs} runs: median {:.2} ms, min {:.2} ms (target < 20 ms)",
                root.display(),
                topo.cpus.len(),
                topo.controllers.len(),
                times_us[runs / 2] / 1000.0,
                times_us[0] / 1000.0
            );
        }
        _ => print!("{}", topology::render::tree(&topo)),
    }
}

use std::path::{Path, PathBuf};

use super::*;
use crate::error::ParseError;

/// `tests/fixtures/counters/{before,after}`: a 4-CPU, 2-node machine with
/// two NVMe controllers (nvme0 with an `msi_irqs` directory, nvme1
/// without) and a numio process 4242 with two threads.
fn fixture(which: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/counters")
        .join(which)
}

fn delta() -> Delta {
    let a = sample(&fixture("before"), &[4242, 99]).expect("before");
    let b = sample(&fixture("after"), &[4242, 99]).expect("after");
    a.delta_to(&b)
}

#[test]
fn stat_gives_the_machine_and_each_cpu() {
    let d = delta();
    assert_eq!(d.total.user, 200);
    assert_eq!(d.total.system, 200);
    assert_eq!(d.total.idle, 100);
    assert_eq!(d.total.irq, 20);
    assert_eq!(d.total.softirq, 50);
    assert_eq!(d.total.busy(), 470);
    assert_eq!(d.total.total(), 570);
    let headroom = d.total.headroom_pct().unwrap();
    assert!(
        (headroom - 100.0 * 100.0 / 570.0).abs() < 1e-9,
        "{headroom}"
    );
    assert_eq!(d.context_switches, 30_000);
    assert_eq!(d.interrupts, 60_000);
    assert_eq!(d.cpus.len(), 4);
    assert_eq!(
        d.cpus[0],
        (
            CpuId(0),
            CpuTimes {
                user: 100,
                system: 100,
                ..Default::default()
            }
        )
    );
}

#[test]
fn nodes_split_the_headroom() {
    let d = delta();
    let nodes = d.nodes(&node_cpus(&fixture("after")).unwrap());
    assert_eq!(nodes.len(), 2);
    // Node 0's CPUs were busy the whole time, node 1's mostly idle.
    assert_eq!(nodes[0].cpus, [CpuId(0), CpuId(1)]);
    assert_eq!(nodes[0].times.headroom_pct(), Some(0.0));
    assert_eq!(nodes[1].times.busy(), 20 + 50);
    assert_eq!(nodes[1].times.unused(), 100);
}

#[test]
fn controller_irqs_come_from_msi_irqs_then_from_names() {
    let root = fixture("after");
    let ints = sample(&root, &[]).unwrap().interrupts.expect("parsed");
    assert_eq!(ints.cpus.len(), 4);
    assert_eq!(controller_irqs(&root, "nvme0", &ints), [40, 41, 42]);
    // No msi_irqs directory: the lines named nvme1qN.
    assert_eq!(controller_irqs(&root, "nvme1", &ints), [50, 51]);
    assert!(controller_irqs(&root, "nvme7", &ints).is_empty());
    assert_eq!(queue_controller("nvme12q3").as_deref(), Some("nvme12"));
    assert_eq!(queue_controller("nvme0n1"), None);
}

/// Regression: a per-CPU count in /proc/interrupts is 32 bits and wraps;
/// a naive subtraction saturated to 0 and hid 1,000 interrupts.
#[test]
fn interrupt_deltas_survive_a_32_bit_wrap() {
    let d = delta();
    let nvme0 = d.irq_interrupts(&[40, 41, 42]).unwrap();
    assert_eq!(nvme0, [(CpuId(0), 1), (CpuId(2), 1000), (CpuId(3), 20_000)]);
    assert_eq!(
        d.controller_interrupts(&["nvme0".to_string()]).unwrap(),
        nvme0
    );
    // nvme1 took none: an honest, measured 0.
    assert_eq!(
        d.controller_interrupts(&["nvme1".to_string()]),
        Some(vec![])
    );
}

#[test]
fn a_process_counts_every_thread() {
    let d = delta();
    assert_eq!(
        d.processes.len(),
        1,
        "pid 99 does not exist and is left out"
    );
    let p = d.processes[0];
    assert_eq!((p.pid, p.user_ticks, p.system_ticks), (4242, 200, 200));
    assert_eq!((p.voluntary_switches, p.involuntary_switches), (1002, 30));
}

#[test]
fn parsers_name_what_is_wrong() {
    assert_eq!(parse_stat("ctxt 5\n"), Err(ParseError::NoCpuLine));
    let e = parse_stat("cpu 1 2 x 4\n").unwrap_err();
    assert_eq!(
        e,
        ParseError::at_line(
            1,
            "cpu 1 2 x 4",
            ParseError::NotATickCount { word: "x".into() }
        )
    );
    assert_eq!(
        e.to_string(),
        "line 1: `x` is not a tick count: `cpu 1 2 x 4`"
    );
    let e = parse_stat("cpu 1 2\n").unwrap_err();
    assert!(e.to_string().contains("expected at least 4"), "{e}");
    // An old kernel without steal or guest columns.
    let s = parse_stat("cpu 1 2 3 4\nctxt 9\nintr 7 0\n").unwrap();
    assert_eq!(
        (
            s.total.idle,
            s.total.steal,
            s.context_switches,
            s.interrupts
        ),
        (4, 0, 9, 7)
    );
    // A command name with spaces and parentheses.
    let stat = "7 (a) b (c) S 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0";
    assert_eq!(parse_pid_stat(stat), Ok((11, 22)));
    assert_eq!(parse_pid_stat("7 no name"), Err(ParseError::NoComm));
    assert_eq!(
        parse_pid_stat("7 (a) S 1"),
        Err(ParseError::NoPidStatField {
            name: "utime",
            found: 2
        })
    );
    assert_eq!(parse_status_switches("Name:\tx\n"), (0, 0));
}

#[test]
fn a_root_without_proc_stat_is_an_error_naming_the_file() {
    let e = sample(Path::new(env!("CARGO_MANIFEST_DIR")), &[]).unwrap_err();
    assert!(e.to_string().contains("proc/stat"), "{e}");
}

#[test]
fn this_machine_counts_itself() {
    let pid = std::process::id();
    let a = sample(Path::new("/"), &[pid]).expect("/proc/stat");
    let b = sample(Path::new("/"), &[pid]).expect("/proc/stat");
    assert!(b.stat.total.total() >= a.stat.total.total());
    assert_eq!(a.processes.len(), 1, "this test's own process");
    assert!(b.stat.context_switches >= a.stat.context_switches);
}

#[test]
fn a_process_start_time_names_the_process_not_the_pid() {
    let me = process_start_ticks(Path::new("/"), std::process::id()).expect("this process runs");
    assert!(me > 0);
    assert_eq!(process_start_ticks(Path::new("/"), u32::MAX - 1), None);
    // A name with spaces and ')' does not shift the fields.
    let dir = std::env::temp_dir().join(format!("proc-start-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("proc/7")).unwrap();
    std::fs::write(
        dir.join("proc/7/stat"),
        format!("7 (a) b (c) S {}123 9\n", "1 ".repeat(18)),
    )
    .unwrap();
    assert_eq!(process_start_ticks(&dir, 7), Some(123));
    std::fs::remove_dir_all(dir).unwrap();
}

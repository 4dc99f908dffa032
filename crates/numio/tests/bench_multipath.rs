//! numio's initiator over two `numio serve` ports of one namespace
//! (loopback, ephemeral ports): failover and failback without a failed I/O
//! when one port turns ANA inaccessible (SIGHUP reload) and when one
//! target process is killed and started again, with verify checking the
//! data; and each policy's distribution. Every wait is for an event: a
//! line of numio serve or of numio bench (`set-up done`, a progress line,
//! a path's change), never a clock.

mod common;

use common::running::Running;
use common::serve::Serve;
use common::Temp;
use serde_json::Value;

const NQN: &str = "nqn.2026-01.io.numio:multipath";

fn target(ports: &[String]) -> String {
    ports
        .iter()
        .map(|p| format!("nvme-tcp://{p}/{NQN}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes the whole namespace once with verify blocks, so every later
/// read has a block to check.
fn fill(t: &str, state: &Temp) {
    let (code, _, err) = common::numio(&[
        "bench",
        "--backend",
        "tcp",
        "--rw",
        "write",
        "--bs",
        "64k",
        "--iodepth",
        "4",
        "--force-write",
        "--verify",
        "--verify-state",
        state.path(),
        t,
    ]);
    assert_eq!(code, 0, "{err}");
}

/// A time-based random read/write bench with verify on `t`, stopped by
/// the test (SIGINT) once what it waits for happened.
fn start_bench(t: &str, policy: &str, state: &Temp) -> Running {
    let b = Running::start(&[
        "bench",
        "--backend",
        "tcp",
        "--iopolicy",
        policy,
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--iodepth",
        "8",
        "--runtime",
        "600",
        "--force-write",
        "--verify",
        "--verify-state",
        state.path(),
        "--json",
        "--progress",
        "always",
        t,
    ]);
    b.wait_for(1, "set-up done", |l| l.contains("set-up done"));
    b
}

/// Waits for `n` more progress lines (I/O went on meanwhile).
fn progress(b: &Running, n: usize) {
    b.wait_for(n, "a progress line", |l| {
        l.contains("IOPS") && !l.contains("note")
    });
}

/// Stops the bench and returns its target's JSON result.
fn stop(b: Running) -> Value {
    let (code, out, err, _) = b.signal_and_wait(libc::SIGINT);
    assert_eq!(code, 130, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let t = v["targets"][0].clone();
    assert_eq!(t["errors"], Value::Array(vec![]), "no failed I/O; {err}");
    assert!(t["total"]["ops"].as_u64().unwrap() > 0);
    t
}

/// Where a verify state will be saved (no file yet).
fn state_file(tag: &str) -> Temp {
    let t = Temp::new(tag, 0);
    std::fs::remove_file(&t.0).unwrap();
    t
}

fn path(t: &Value, i: usize) -> &Value {
    &t["multipath"]["paths"][i]
}

fn count(t: &Value, i: usize, what: &str) -> u64 {
    path(t, i)[what]
        .as_u64()
        .unwrap_or_else(|| panic!("{what} of path {i}: {t}"))
}

fn verify_clean(t: &Value) {
    let v = &t["verify"];
    assert!(v["checked_blocks"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["mismatched_blocks"], serde_json::json!({}), "{v}");
    assert_eq!(v["ranges"], serde_json::json!([]), "{v}");
}

fn ana_toml(states: &str) -> String {
    format!(
        "listen = [\"127.0.0.1:0\", \"127.0.0.1:0\"]\ndiscovery_port = 0\nana = [{states}]\n\
         [[subsystem]]\nnqn = \"{NQN}\"\nallow_any_host = true\n\
         [[subsystem.namespace]]\nbacking = \"mem:8M\"\n"
    )
}

#[test]
fn a_port_turned_inaccessible_fails_over_and_back_without_a_failed_io() {
    let cfg = Temp::new("mp-ana.toml", 0);
    std::fs::write(cfg.path(), ana_toml("\"optimized\", \"optimized\"")).unwrap();
    let serve = Serve::start(&["--config", cfg.path(), "--cpus", "0"]);
    let ports = serve.ports(2);
    let t = target(&ports);
    let state = state_file("mp-ana-verify");
    fill(&t, &state);

    let b = start_bench(&t, "round-robin", &state);
    std::fs::write(cfg.path(), ana_toml("\"inaccessible\", \"optimized\"")).unwrap();
    serve.signal(libc::SIGHUP);
    serve.line("ANA optimized -> inaccessible");
    b.wait_for(1, "the path's change", |l| {
        l.contains(&format!("path {}: ANA optimized -> inaccessible", ports[0]))
    });
    progress(&b, 2);
    std::fs::write(cfg.path(), ana_toml("\"optimized\", \"optimized\"")).unwrap();
    serve.signal(libc::SIGHUP);
    b.wait_for(1, "the path's return", |l| {
        l.contains(&format!("path {}: ANA inaccessible -> optimized", ports[0]))
    });
    progress(&b, 2);
    let r = stop(b);
    verify_clean(&r);
    assert_eq!(r["multipath"]["policy"], "round-robin");
    assert_eq!(path(&r, 0)["portal"], ports[0].as_str());
    assert_eq!(count(&r, 0, "failovers"), 1, "{r}");
    assert_eq!(count(&r, 0, "state_changes"), 2, "{r}");
    assert_eq!(path(&r, 0)["state"], "optimized");
    assert_eq!(count(&r, 1, "failovers"), 0, "{r}");
    // Both carried I/O; the second carried it alone a while.
    assert!(
        count(&r, 0, "ios") > 0 && count(&r, 1, "ios") > count(&r, 0, "ios"),
        "{r}"
    );
}

/// The I/Os a `path … lost (…); N I/Os in flight sent again …` line moved.
fn moved_of(line: &str) -> u64 {
    line.rsplit_once("); ")
        .and_then(|(_, s)| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

fn serve_file(file: &Temp, listen: &str) -> (Serve, String) {
    let s = Serve::start(&[
        "--ns",
        file.path(),
        "--nqn",
        NQN,
        "--listen",
        listen,
        "--discovery-port",
        "0",
        "--allow-any-host",
        "--cpus",
        "0",
    ]);
    let port = s.ports(1).remove(0);
    (s, port)
}

#[test]
fn a_killed_target_fails_over_and_its_return_is_used_again() {
    // Two numio serve processes, one port each, of one namespace: the same
    // NQN and backing file (so the same NGUID and data).
    let file = Temp::new("mp-kill.img", 8 << 20);
    let (a, pa) = serve_file(&file, "127.0.0.1:0");
    let (_b, pb) = serve_file(&file, "127.0.0.1:0");
    let t = target(&[pa.clone(), pb.clone()]);
    let state = state_file("mp-kill-verify");
    fill(&t, &state);

    let bench = start_bench(&t, "round-robin", &state);
    progress(&bench, 1);
    drop(a); // SIGKILL: its connections reset, its I/Os in flight lost
    let lost = bench.wait_for(1, "the path's loss", |l| {
        l.contains(&format!("path {pa} lost"))
    });
    let moved = moved_of(&lost);
    progress(&bench, 2);
    let (_a, _) = serve_file(&file, &pa);
    bench.wait_for(1, "the path's return", |l| {
        l.contains(&format!("path {pa} reconnected (optimized)"))
    });
    progress(&bench, 2);
    let r = stop(bench);
    verify_clean(&r);
    assert_eq!(count(&r, 0, "failovers"), 1, "{r}");
    assert_eq!(count(&r, 0, "reconnects"), 1, "{r}");
    assert_eq!(count(&r, 1, "retries"), moved, "{r}");
    assert_eq!(path(&r, 0)["state"], "optimized");
    assert!(
        count(&r, 0, "ios") > 0 && count(&r, 1, "ios") > count(&r, 0, "ios"),
        "{r}"
    );
}

/// A short read run under `policy` at `iodepth`; the target's result.
fn read_run(t: &str, policy: &str, iodepth: &str) -> Value {
    let (code, out, err) = common::numio(&[
        "bench",
        "--backend",
        "tcp",
        "--iopolicy",
        policy,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--iodepth",
        iodepth,
        "--number-ios",
        "4000",
        "--json",
        t,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["targets"][0].clone()
}

#[test]
fn round_robin_alternates_numa_keeps_the_local_first_and_ana_decides_first() {
    let cfg = Temp::new("mp-policy.toml", 0);
    std::fs::write(cfg.path(), ana_toml("\"optimized\", \"optimized\"")).unwrap();
    let serve = Serve::start(&["--config", cfg.path(), "--cpus", "0"]);
    let ports = serve.ports(2);
    let t = target(&ports);

    // round-robin: every other I/O, so even within the I/Os in flight.
    let r = read_run(&t, "round-robin", "8");
    let (a, b) = (count(&r, 0, "ios"), count(&r, 1, "ios"));
    assert_eq!(a + b, 4000, "{r}");
    assert!(a.abs_diff(b) <= 8, "round-robin {a} vs {b}");
    // numa over loopback: no interface has a node, every path is local,
    // the first takes it all (the kernel's -1 rule).
    let r = read_run(&t, "numa", "8");
    assert_eq!((count(&r, 0, "ios"), count(&r, 1, "ios")), (4000, 0), "{r}");
    assert_eq!(r["multipath"]["policy"], "numa");
    // queue-depth with one I/O in flight: both queues are empty at every
    // pick, a tie, and a tie goes to the first.
    let r = read_run(&t, "queue-depth", "1");
    assert_eq!((count(&r, 0, "ios"), count(&r, 1, "ios")), (4000, 0), "{r}");

    // ANA non-optimized loses to optimized under every policy.
    std::fs::write(cfg.path(), ana_toml("\"non-optimized\", \"optimized\"")).unwrap();
    serve.signal(libc::SIGHUP);
    serve.line("ANA optimized -> non-optimized");
    for policy in ["numa", "round-robin", "queue-depth"] {
        let r = read_run(&t, policy, "8");
        assert_eq!(
            (count(&r, 0, "ios"), count(&r, 1, "ios")),
            (0, 4000),
            "{policy}: {r}"
        );
        assert_eq!(path(&r, 0)["state"], "non-optimized");
    }
}

/// Runs `policy` over two target processes until the first, stopped
/// (SIGSTOP) once the run is under way, is lost to the I/O or keep-alive
/// timeout; returns how many I/Os were stuck on it and the result.
fn stall_first(policy: &str) -> (u64, Value) {
    let file = Temp::new(&format!("mp-stall-{policy}.img"), 8 << 20);
    let (a, pa) = serve_file(&file, "127.0.0.1:0");
    let (_b, pb) = serve_file(&file, "127.0.0.1:0");
    let t = target(&[pa.clone(), pb]);
    let state = state_file(&format!("mp-stall-{policy}-verify"));
    fill(&t, &state);
    let bench = start_bench(&t, policy, &state);
    a.signal(libc::SIGSTOP);
    let lost = bench.wait_for(1, "the stalled path's loss", |l| {
        l.contains(&format!("path {pa} lost"))
    });
    let moved = moved_of(&lost);
    progress(&bench, 1);
    let r = stop(bench);
    a.signal(libc::SIGCONT);
    verify_clean(&r);
    assert_eq!(count(&r, 0, "failovers"), 1, "{r}");
    assert_eq!(count(&r, 1, "retries"), moved, "{r}");
    (moved, r)
}

#[test]
fn queue_depth_keeps_off_a_stalled_path_that_round_robin_fills() {
    // Round-robin sends every other I/O to the stalled path until the
    // slots wait there (all 8, or 7 when the worker waits for a batch of 2
    // completions with one I/O left on the live path); queue-depth sends
    // one there only while it holds no more than the live path (at most 5
    // of 8: 4 and the tie).
    let (rr, _) = stall_first("round-robin");
    assert!(rr >= 7, "round-robin left {rr} on the stalled path");
    let (qd, r) = stall_first("queue-depth");
    assert!(
        (1..=5).contains(&qd),
        "queue-depth left {qd} on the stalled path: {r}"
    );
}

#[test]
fn portals_of_two_namespaces_are_refused_naming_both() {
    // One NQN, two processes, two namespaces of different sizes.
    let small = Temp::new("mp-two-ns-a.img", 8 << 20);
    let large = Temp::new("mp-two-ns-b.img", 16 << 20);
    let (_a, pa) = serve_file(&small, "127.0.0.1:0");
    let (_b, pb) = serve_file(&large, "127.0.0.1:0");
    let (code, _, err) = common::numio(&[
        "bench",
        "--backend",
        "tcp",
        "--rw",
        "randread",
        "--number-ios",
        "10",
        &target(&[pa.clone(), pb.clone()]),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "portals {pa} and {pb} do not reach one namespace: different sizes"
        )),
        "{err}"
    );
}

#[test]
fn no_usable_path_fails_the_run_naming_every_portal() {
    let cfg = Temp::new("mp-none.toml", 0);
    std::fs::write(cfg.path(), ana_toml("\"inaccessible\", \"inaccessible\"")).unwrap();
    let serve = Serve::start(&["--config", cfg.path(), "--cpus", "0"]);
    let ports = serve.ports(2);
    let (code, out, err) = common::numio(&[
        "bench",
        "--backend",
        "tcp",
        "--rw",
        "randread",
        "--number-ios",
        "10",
        "--runtime",
        "120",
        &target(&ports),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains(&format!(
            "no usable path for 10 s to any of {} (inaccessible), {} (inaccessible)",
            ports[0], ports[1]
        )),
        "{out}"
    );
}

//! `numio serve --poll` with `numio bench --backend tcp --poll`: both sides
//! busy-poll, a verified write and its read back go through, and each side
//! says it polls. Waits are for lines, never a clock.

mod common;

use common::serve::Serve;

const NQN: &str = "nqn.2026-01.io.numio:poll";

#[test]
fn both_sides_busy_poll_a_verified_bench() {
    let srv = Serve::start(&[
        "--ns",
        "mem:8M",
        "--nqn",
        NQN,
        "--cpus",
        "0",
        "--listen",
        "127.0.0.1:0",
        "--discovery-port",
        "0",
        "--allow-any-host",
        "--poll",
    ]);
    let port = srv.line("port 1 ");
    let addr = port.split_whitespace().nth(4).unwrap().to_string();
    srv.line("reactors busy-poll (--poll)");
    srv.line("ready");
    let t = format!("nvme-tcp://{addr}/{NQN}/1");
    let dir = std::env::temp_dir().join(format!("numio-poll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("verify.json").display().to_string();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "--backend",
            "tcp",
            "--poll",
            "--bs",
            "16k",
            "--size",
            "1m",
        ];
        a.extend_from_slice(extra);
        a.push(&t);
        common::numio(&a)
    };
    let (code, out, err) = run(&[
        "--rw",
        "write",
        "--force-write",
        "--verify",
        "--verify-state",
        &state,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        format!("{out}{err}").contains("busy-polling"),
        "{out}\n{err}"
    );
    let (code, out, err) = run(&["--rw", "read", "--verify-only", "--verify-state", &state]);
    assert_eq!(code, 0, "read back:\n{out}\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

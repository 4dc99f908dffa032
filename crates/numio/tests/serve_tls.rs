//! `numio serve --tls --allow-host NQN,tls-key=FILE` with `numio bench
//! --backend tcp --tls-key-file FILE`: the host's key runs a verified bench
//! over TLS 1.3 on every queue; another key and plain text are refused with
//! a line that says so on both sides; a configuration that cannot work stops
//! numio serve before it listens. Waits are for lines, never a clock.

mod common;

use common::keys::KeyDir;
use common::serve::Serve;
use nvmf::tls::ConfiguredPsk;

const NQN: &str = "nqn.2026-01.io.numio:tls";
const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:0000-tls";

fn bench(target: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["bench", "--backend", "tcp", "--hostnqn", HOST];
    args.extend_from_slice(extra);
    args.push(target);
    common::numio(&args)
}

#[test]
fn the_hosts_key_runs_a_verified_bench_and_others_are_refused() {
    let d = KeyDir::new("ok");
    let key = d.file("host", &ConfiguredPsk::generate(48).encode(), 0o600);
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
        "--tls",
        "--allow-host",
        &format!("{HOST},tls-key={key}"),
        "--log-connections",
    ]);
    let listening = srv.line("NVMe/TCP listening on");
    assert!(listening.ends_with("(TLS 1.3 required)"), "{listening}");
    let port = srv.line("port 1 ");
    let addr = port.split_whitespace().nth(4).unwrap().to_string();
    let h = srv.line(&format!("host {HOST} connects over TLS 1.3"));
    assert!(h.contains("TLS_AES_256_GCM_SHA384"), "{h}");
    srv.line("ready");
    let t = format!("nvme-tcp://{addr}/{NQN}/1");
    let state = d.0.join("verify.json").display().to_string();
    let (code, out, err) = bench(
        &t,
        &[
            "--tls-key-file",
            &key,
            "--rw",
            "write",
            "--bs",
            "64k",
            "--size",
            "2m",
            "--force-write",
            "--verify",
            "--verify-state",
            &state,
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        format!("{out}{err}").contains("TLS 1.3 TLS_AES_256_GCM_SHA384"),
        "{out}\n{err}"
    );
    for qid in [0, 1] {
        let c = srv.line(&format!("connected {NQN} qid {qid}"));
        assert!(c.ends_with("tls TLS_AES_256_GCM_SHA384"), "{c}");
    }
    let (code, out, err) = bench(
        &t,
        &[
            "--tls-key-file",
            &key,
            "--rw",
            "read",
            "--bs",
            "64k",
            "--size",
            "2m",
            "--verify-only",
            "--verify-state",
            &state,
        ],
    );
    assert_eq!(code, 0, "read back over TLS:\n{out}\n{err}");

    let other = d.file("other", &ConfiguredPsk::generate(48).encode(), 0o600);
    let (code, _, err) = bench(
        &t,
        &["--tls-key-file", &other, "--rw", "read", "--size", "1m"],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("TLS handshake failed") && err.contains("--tls-key-file"),
        "{err}"
    );
    srv.line("TLS handshake refused");
    let (code, _, err) = bench(&t, &["--rw", "read", "--size", "1m"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("requires TLS (then --tls-key-file FILE)"),
        "{err}"
    );
    srv.line("plain-text NVMe/TCP");
}

#[test]
fn configurations_that_cannot_work_stop_serve_with_the_fix() {
    let d = KeyDir::new("cfg");
    let open = d.file("open", &ConfiguredPsk::generate(32).encode(), 0o644);
    let private = d.file("private", &ConfiguredPsk::generate(32).encode(), 0o600);
    let with_private = format!("{HOST},tls-key={private}");
    let with_open = format!("{HOST},tls-key={open}");
    for (args, want) in [
        (
            vec!["--tls", "--allow-host", HOST],
            "has no TLS key and TLS is required",
        ),
        (vec!["--tls"], "cannot go with allow_any_host"),
        (vec!["--allow-host", &with_private], "TLS is off: add --tls"),
        (vec!["--tls", "--allow-host", &with_open], "chmod 600"),
    ] {
        let mut a = vec![
            "serve",
            "--ns",
            "mem:1M",
            "--listen",
            "127.0.0.1:0",
            "--discovery-port",
            "0",
        ];
        a.extend(args);
        let (code, _, err) = common::numio(&a);
        assert_ne!(code, 0, "{a:?}");
        assert!(err.contains(want), "{a:?}: {err}");
    }
}

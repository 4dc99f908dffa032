//! `numio serve --allow-host NQN,dhchap-secret=FILE[,dhchap-ctrl-secret=FILE]`
//! with `numio bench --backend tcp --dhchap-secret-file FILE
//! [--dhchap-ctrl-secret-file FILE]`: the right secrets run a verified
//! bench over every queue; a wrong one is refused with a line that says
//! so on both sides; a secret file others can read stops numio serve
//! before it listens. Waits are for lines, never a clock.

mod common;

use common::keys::KeyDir;
use common::serve::Serve;
use nvmf::auth::{HashFn, Secret};

const NQN: &str = "nqn.2026-01.io.numio:dhchap";
const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:0000-dhchap";

/// numio serve with one subsystem of 8 MiB that `allow` (an --allow-host
/// value) may reach, on an ephemeral port.
fn serve(allow: &str) -> Serve {
    Serve::start(&[
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
        "--allow-host",
        allow,
        "--log-connections",
    ])
}

/// Its namespace's URL, once it is ready.
fn target(srv: &Serve) -> String {
    let addr = srv.ports(1).remove(0);
    format!("nvme-tcp://{addr}/{NQN}/1")
}

fn bench(target: &str, secrets: &[&str], extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["bench", "--backend", "tcp", "--hostnqn", HOST];
    args.extend_from_slice(secrets);
    args.extend_from_slice(extra);
    args.push(target);
    common::numio(&args)
}

#[test]
fn the_right_secrets_run_a_verified_bench_and_a_wrong_one_is_refused() {
    let d = KeyDir::new("ok");
    let host = Secret::generate(32, Some(HashFn::Sha256));
    let ctrl = Secret::generate(64, Some(HashFn::Sha512));
    let (hk, ck) = (
        d.file("host", &host.encode(), 0o600),
        d.file("ctrl", &ctrl.encode(), 0o600),
    );
    let srv = serve(&format!(
        "{HOST},dhchap-secret={hk},dhchap-ctrl-secret={ck},dhchap-dhgroup=ffdhe2048"
    ));
    let t = target(&srv);
    let state = d.0.join("verify.json").display().to_string();
    let io = [
        "--rw",
        "write",
        "--bs",
        "16k",
        "--size",
        "1m",
        "--force-write",
        "--verify",
        "--verify-state",
        &state,
    ];
    let (code, out, err) = bench(
        &t,
        &[
            "--dhchap-secret-file",
            &hk,
            "--dhchap-ctrl-secret-file",
            &ck,
        ],
        &io,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    // Both queues (admin and I/O) connected; none failed.
    for qid in [0, 1] {
        srv.line(&format!("connected {NQN} qid {qid}"));
        let a = srv.line(&format!("authenticated {NQN} qid {qid}"));
        assert!(
            a.contains(&format!(
                "host {HOST} hash sha256 dhgroup ffdhe2048 bidirectional yes"
            )),
            "{a}"
        );
    }
    let (code, out, err) = bench(
        &t,
        &["--dhchap-secret-file", &hk],
        &[
            "--rw",
            "read",
            "--bs",
            "16k",
            "--size",
            "1m",
            "--verify-only",
            "--verify-state",
            &state,
        ],
    );
    assert_eq!(
        code, 0,
        "read back with the host secret only:\n{out}\n{err}"
    );

    let wrong = d.file("wrong", &Secret::generate(32, None).encode(), 0o600);
    let (code, _, err) = bench(
        &t,
        &["--dhchap-secret-file", &wrong],
        &["--rw", "read", "--size", "1m"],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("DH-HMAC-CHAP") && err.contains("refused this host"),
        "{err}"
    );
    srv.line("DH-HMAC-CHAP failed for host");
    let (code, _, err) = bench(&t, &[], &["--rw", "read", "--size", "1m"]);
    assert_ne!(code, 0);
    assert!(err.contains("--dhchap-secret-file"), "{err}");
    // The controller secret the host holds is not the target's: the host
    // refuses the target.
    let (code, _, err) = bench(
        &t,
        &[
            "--dhchap-secret-file",
            &hk,
            "--dhchap-ctrl-secret-file",
            &wrong,
        ],
        &["--rw", "read", "--size", "1m"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("did not prove"), "{err}");
}

#[test]
fn secret_files_others_can_read_are_refused_on_both_sides() {
    let d = KeyDir::new("perm");
    let open = d.file("open", &Secret::generate(32, None).encode(), 0o644);
    let (code, _, err) = common::numio(&[
        "serve",
        "--ns",
        "mem:1M",
        "--listen",
        "127.0.0.1:0",
        "--discovery-port",
        "0",
        "--allow-host",
        &format!("{HOST},dhchap-secret={open}"),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("chmod 600") && err.contains(&open), "{err}");
    let (code, _, err) = bench(
        "nvme-tcp://127.0.0.1:9/nqn.x/1",
        &["--dhchap-secret-file", &open],
        &["--rw", "read"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("chmod 600"), "{err}");
    let (code, _, err) = common::numio(&[
        "serve",
        "--ns",
        "mem:1M",
        "--allow-host",
        &format!("{HOST},dhchap-hash=sha1"),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("dhchap-secret=FILE"), "{err}");
}

//! One host identity for numio's initiator and numio's target: `numio
//! serve --allow-host "$(cat /etc/nvme/hostnqn)"` admits `numio bench
//! nvme-tcp://…` with no host flag (bench reads nvme-cli's file, as
//! `numio connect` does), and a refused host is named on both sides.
//! `$NUMIO_SYSCONFDIR` stands in for /etc so the test owns the file.
//! Waits are for lines, never a clock.

mod common;

use common::keys::KeyDir;
use common::serve::Serve;

const NQN: &str = "nqn.2026-11.io.numio:identity";
const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:7d2f4a10-3c5e-4b8a-9f61-0e2d3c4b5a69";

fn bench(etc: &str, args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["bench"];
    argv.extend_from_slice(args);
    common::numio_env(&[("NUMIO_SYSCONFDIR", etc)], &argv)
}

#[test]
fn bench_connects_as_nvme_clis_host_nqn_and_a_refused_host_is_named() {
    let d = KeyDir::new("identity");
    std::fs::create_dir_all(d.0.join("nvme")).unwrap();
    std::fs::write(d.0.join("nvme/hostnqn"), format!("{HOST}\n")).unwrap();
    let etc = d.0.display().to_string();
    let allowed = std::fs::read_to_string(d.0.join("nvme/hostnqn")).unwrap();
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
        "--allow-host",
        allowed.trim(),
        "--log-connections",
    ]);
    let addr = srv.ports(1).remove(0);
    let target = format!("nvme-tcp://{addr}/{NQN}/1");
    let io = ["--rw", "randread", "--size", "1m", "--runtime", "200ms"];

    let mut args = vec![target.as_str()];
    args.extend_from_slice(&io);
    let (code, out, err) = bench(&etc, &args);
    assert_eq!(code, 0, "no host flag, the file's NQN:\n{out}\n{err}");
    let l = srv.line(&format!("connected {NQN} qid 1"));
    assert!(l.contains(&format!("host {HOST}")), "{l}");

    // Another NQN is refused, and both ends name it.
    let other = "nqn.2026-11.io.numio:not-on-the-list";
    let mut args = vec![target.as_str(), "--hostnqn", other];
    args.extend_from_slice(&io);
    let (code, _, err) = bench(&etc, &args);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("this host NQN {other} is not allowed")),
        "{err}"
    );
    let l = srv.line("Connect refused: host");
    assert!(
        l.contains(&format!("host {other} is not allowed on {NQN}"))
            && l.contains(&format!("--allow-host {other}")),
        "{l}"
    );

    // The spelling of earlier releases still works.
    let mut args = vec![target.as_str(), "--tcp-hostnqn", HOST];
    args.extend_from_slice(&io);
    let (code, out, err) = bench("/nonexistent", &args);
    assert_eq!(code, 0, "--tcp-hostnqn alias:\n{out}\n{err}");

    // No file and no flag: numio's fallback NQN, which this target refuses
    // by name.
    let mut args = vec![target.as_str()];
    args.extend_from_slice(&io);
    let (code, _, err) = bench("/nonexistent", &args);
    assert_ne!(code, 0);
    assert!(
        err.contains(nvmf::host::identity::FALLBACK_HOSTNQN),
        "{err}"
    );
}

#[test]
fn a_hostid_that_is_not_a_uuid_is_refused_before_connecting() {
    let (code, _, err) = bench(
        "/nonexistent",
        &["nvme-tcp://127.0.0.1:9/nqn.x/1", "--hostid", "42"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("--hostid: \"42\" is not a Host ID"), "{err}");
}

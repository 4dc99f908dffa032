//! `numio serve --metrics ADDR`: a host's reads, writes, a command on a
//! namespace that does not exist and a capsule with a broken data digest
//! show up in the Prometheus text scraped over HTTP, per subsystem, host,
//! queue and namespace, with each command in the latency histogram; a host
//! not on the allow list and an unknown subsystem are counted as refusals
//! (the first also as an auth failure); `numio serve --stats ADDR` prints
//! them per controller. Waits are for events (a line, the counters of the next
//! fold), never a fixed sleep.

mod common;

use common::lines::next_line;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nvme_spec::command::{io, SglDescriptor, SGL_IN_CAPSULE};
use nvme_spec::tcp::{self, pdu_type, Direction, Pdu};
use nvme_spec::Status;
use nvmf::host::command::rw_sqe;
use nvmf::{Initiator, InitiatorOptions};

const NQN: &str = "nqn.2026-01.io.numio:metrics";
const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:0000-metrics";
const WAIT: Duration = Duration::from_secs(120);

fn scrape(addr: SocketAddr) -> String {
    let mut c = TcpStream::connect(addr).expect("the metrics port answers");
    write!(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    body.to_string()
}

/// Scrapes until every line of `want` is in the text (the queues fold
/// their counters every reactor tick); the text.
fn scrape_until(addr: SocketAddr, want: &[String]) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let body = scrape(addr);
        if want.iter().all(|w| body.lines().any(|l| l == w)) {
            return body;
        }
        assert!(Instant::now() < deadline, "never saw {want:#?} in\n{body}");
        std::thread::yield_now();
    }
}

/// numio serve with one RAM namespace and `--metrics 127.0.0.1:0`: the
/// child, its NVMe/TCP listener and its metrics address.
fn start_serve() -> (Child, SocketAddr, SocketAddr) {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args([
            "serve",
            "--ns",
            "mem:16M",
            "--nqn",
            NQN,
            "--allow-host",
            HOST,
        ])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--discovery-port",
            "0",
            "--cpus",
            "0",
        ])
        .args(["--metrics", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("numio serve runs");
    let (tx, lines) = std::sync::mpsc::channel();
    let out = serve.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let listen = next_line(&lines, "NVMe/TCP listening on");
    let listen = listen.rsplit(' ').next().unwrap().parse().unwrap();
    let metrics = next_line(&lines, "metrics on http://");
    let metrics = metrics.split("http://").nth(1).unwrap();
    let metrics = metrics.split('/').next().unwrap().parse().unwrap();
    (serve, listen, metrics)
}

/// Sends a write capsule whose data digest is wrong (the last byte
/// flipped); the target fails only that command.
fn write_with_a_bad_digest(q: &mut Initiator) {
    let mut sqe = rw_sqe(io::WRITE, 1, 0, 1);
    sqe.flags = 0x40;
    sqe.cid = 9;
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: 512,
        rsvd: [0; 3],
        type_byte: SGL_IN_CAPSULE,
    };
    let mut b = Vec::new();
    let framing = q.framing();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &sqe.encode(),
        &[0xAA; 512],
        &framing,
    );
    let n = b.len();
    b[n - 1] ^= 1;
    q.send_raw(&b).unwrap();
    let resp = q.recv_pdu_bytes().unwrap();
    let Ok(Pdu::CapsuleResp(cqe)) = tcp::decode(&resp, Direction::ControllerToHost, &framing)
    else {
        panic!("expected a response capsule");
    };
    assert_eq!(cqe.status(), Status::TRANSIENT_TRANSPORT);
}

/// A host with data digests: an admin queue and I/O queue 1 to `listen`.
fn connect(listen: SocketAddr) -> (Initiator, Initiator) {
    let o = InitiatorOptions {
        hostnqn: HOST.into(),
        data_digest: true,
        timeout: WAIT,
        ..Default::default()
    };
    let mut a = Initiator::connect_admin(listen, NQN, &o).unwrap();
    a.enable().unwrap();
    let nq = a.set_features(nvme_spec::features::fid::NUM_QUEUES, 0);
    assert!(nq.unwrap().cqe.status().is_success());
    let q = Initiator::connect_io(listen, NQN, a.cntlid, 1, &o).unwrap();
    (a, q)
}

/// A host not on the allow list, then an unknown subsystem: both refused.
fn refused_connects(listen: SocketAddr) {
    let stranger = InitiatorOptions {
        hostnqn: "nqn.2014-08.org.nvmexpress:uuid:0000-stranger".into(),
        timeout: WAIT,
        ..Default::default()
    };
    assert!(Initiator::connect_admin(listen, NQN, &stranger).is_err());
    let o = InitiatorOptions {
        hostnqn: HOST.into(),
        timeout: WAIT,
        ..Default::default()
    };
    assert!(Initiator::connect_admin(listen, "nqn.2026-01.io.numio:none", &o).is_err());
}

/// `numio serve --stats` prints the controller's row and the port.
fn check_stats(metrics: SocketAddr, listen: SocketAddr, cntlid: u16) {
    let (code, stats, err) = common::numio(&["serve", "--stats", &metrics.to_string()]);
    assert_eq!(code, 0, "{err}");
    let row = stats
        .lines()
        .find(|l| l.starts_with(NQN))
        .unwrap_or_else(|| panic!("no row for {NQN}:\n{stats}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cols[1..6],
        [HOST, &cntlid.to_string(), "1", "3", "2"],
        "{stats}"
    );
    assert!(
        row.contains("12.0 KiB") && row.contains("36.0 KiB"),
        "{stats}"
    );
    assert!(stats.contains("connections: 2"), "{stats}");
    assert!(
        stats.contains("refused: host_not_allowed 1, unknown_subsystem 1 (auth failures 1)"),
        "{stats}"
    );
    let avg = cols.last().unwrap();
    assert!(avg.ends_with("us"), "average latency last: {stats}");
    assert!(
        stats.contains(&format!("port 1 {listen} ANA optimized")),
        "{stats}"
    );
}

#[test]
fn metrics_count_a_hosts_commands_per_queue_and_namespace() {
    let (mut serve, listen, metrics) = start_serve();
    let body = scrape(metrics);
    assert!(body.contains("numio_connections 0\n"), "{body}");

    // Before the host connects: its admin queue's keep-alive timer runs
    // from then on, and this test sends no Keep Alive.
    refused_connects(listen);
    let (a, mut q) = connect(listen);
    // The second write is 32 KiB, past the 16 KiB of in-capsule data: its
    // data comes by R2T in later receives, so its latency is above 0 (the
    // target reads its clock per receive, not per command).
    q.write(1, 0, &[0x5A; 4096]).unwrap();
    q.write(1, 8, &[0x5A; 32768]).unwrap();
    for lba in 0..3u64 {
        q.read(1, lba * 8, 8).unwrap();
    }
    let st = q.submit(rw_sqe(io::READ, 7, 0, 8), &[], 4096).unwrap();
    assert_eq!(st.cqe.status(), Status::INVALID_NS);
    write_with_a_bad_digest(&mut q);

    let c = format!(
        "subsystem=\"{NQN}\",host=\"{HOST}\",cntlid=\"{}\",port=\"1\"",
        a.cntlid
    );
    let want = [
        "numio_connections 2".to_string(),
        format!("numio_io_queues{{{c}}} 1"),
        format!("numio_commands_total{{{c},qid=\"1\",nsid=\"1\",op=\"read\"}} 3"),
        format!("numio_commands_total{{{c},qid=\"1\",nsid=\"1\",op=\"write\"}} 2"),
        format!("numio_bytes_total{{{c},qid=\"1\",nsid=\"1\",op=\"read\"}} 12288"),
        format!("numio_bytes_total{{{c},qid=\"1\",nsid=\"1\",op=\"write\"}} 36864"),
        format!("numio_errors_total{{{c},qid=\"1\",nsid=\"7\"}} 1"),
        format!("numio_errors_total{{{c},qid=\"1\",nsid=\"1\"}} 1"),
        format!("numio_digest_failures_total{{{c},qid=\"1\",nsid=\"1\"}} 1"),
        format!("numio_port_ana_state{{port=\"1\",addr=\"{listen}\",state=\"optimized\"}} 1"),
        // Every completed command of qid 1 on nsid 1: 3 reads, 2 writes,
        // the write whose digest failed, and the queue's Connect (other).
        format!("numio_commands_total{{{c},qid=\"1\",nsid=\"1\",op=\"other\"}} 1"),
        format!("numio_command_latency_seconds_count{{{c},qid=\"1\",nsid=\"1\"}} 7"),
        format!("numio_command_latency_seconds_bucket{{{c},qid=\"1\",nsid=\"1\",le=\"+Inf\"}} 7"),
        format!("numio_command_latency_seconds_count{{{c},qid=\"1\",nsid=\"7\"}} 1"),
        format!("numio_host_queues{{host=\"{HOST}\"}} 2"),
        "numio_refused_total{reason=\"host_not_allowed\"} 1".to_string(),
        "numio_refused_total{reason=\"unknown_subsystem\"} 1".to_string(),
        "numio_refused_total{reason=\"busy\"} 0".to_string(),
        "numio_auth_failures_total 1".to_string(),
    ];
    let body = scrape_until(metrics, &want);
    let admin = format!("numio_commands_total{{{c},qid=\"0\",nsid=\"0\",op=\"other\"}} ");
    assert!(
        body.lines().any(|l| l.starts_with(&admin)),
        "admin commands on qid 0:\n{body}"
    );
    assert!(
        !body.contains("qid=\"0\",nsid=\"0\",op=\"read\""),
        "no admin reads:\n{body}"
    );
    check_latency_buckets(&body, &c);
    check_stats(metrics, listen, a.cntlid);

    drop((a, q));
    // SAFETY: kill(2) on our own child, not yet waited for.
    assert_eq!(unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) }, 0);
    assert!(serve.wait().unwrap().success());
}

/// The histogram's buckets are cumulative and end at its count; the sum is
/// positive and below the count times the largest finite bound.
fn check_latency_buckets(body: &str, c: &str) {
    let prefix = format!("numio_command_latency_seconds_bucket{{{c},qid=\"1\",nsid=\"1\",le=");
    let counts: Vec<u64> = body
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 15, "14 bounds and +Inf:\n{body}");
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(*counts.last().unwrap(), 7);
    let sum_line = format!("numio_command_latency_seconds_sum{{{c},qid=\"1\",nsid=\"1\"}} ");
    let sum: f64 = body
        .lines()
        .find_map(|l| l.strip_prefix(&sum_line))
        .expect("a sum")
        .parse()
        .unwrap();
    assert!(sum > 0.0 && sum < 7.0, "the R2T write took time: {sum}");
}

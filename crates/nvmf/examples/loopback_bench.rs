//! Rough single-queue figures for the target over loopback, measured with the
//! blocking initiator (queue depth 1, so this is latency-bound, plus one
//! 4 KiB read row at queue depth 16):
//! `cargo run --release -p nvmf --example loopback_bench [SECONDS [BACKING]]`.
//! BACKING defaults to `mem:256M`; a file path of at least 256 MiB measures
//! the O_DIRECT path through the reactor's io_uring.

use std::time::{Duration, Instant};

use nvmf::config::{NamespaceConfig, SubsystemConfig};
use nvmf::{Initiator, InitiatorOptions, Server, TargetConfig};

const NQN: &str = "nqn.2026-01.io.numio:bench";

/// 4 KiB random-ish reads with 16 commands in flight (post/reap).
fn qd16_reads(
    q: &mut Initiator,
    secs: u64,
    digests: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let (mut n, mut i, start) = (0u64, 0u64, Instant::now());
    while start.elapsed() < Duration::from_secs(secs) {
        while q.in_flight() < 16 {
            let sqe = nvmf::host::command::rw_sqe(
                nvme_spec::command::io::READ,
                1,
                (i * 7919 % 65536) * 8,
                8,
            );
            q.post(sqe, Vec::new(), 4096)?;
            i += 1;
        }
        q.reap()?;
        n += 1;
    }
    while q.in_flight() > 0 {
        q.reap()?;
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "digests={digests:<5} {:<13} QD16: {:>7.0} IOPS {:>8.1} MiB/s",
        "4 KiB read",
        n as f64 / s,
        n as f64 * 4096.0 / s / (1 << 20) as f64
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let backing = std::env::args().nth(2).unwrap_or_else(|| "mem:256M".into());
    let mut cfg = TargetConfig {
        listen: vec!["127.0.0.1:0".parse()?],
        discovery_port: 0,
        cpus: vec![0],
        ..Default::default()
    };
    cfg.subsystems.push(SubsystemConfig {
        nqn: NQN.into(),
        serial: "BENCH".into(),
        model: "bench".into(),
        allowed_hosts: vec![],
        allow_any_host: true,
        hosts: Vec::new(),
        namespaces: vec![NamespaceConfig::new(&backing)],
    });
    let srv = Server::start(&cfg)?;
    let addr = srv.listen_addrs[0];
    let ns = srv.target.subsystems[0].namespace(1).expect("nsid 1");
    println!("namespace {backing}: {}", ns.describe_access());
    for digests in [false, true] {
        let opts = InitiatorOptions {
            header_digest: digests,
            data_digest: digests,
            queue_entries: 32,
            ..Default::default()
        };
        let mut admin = Initiator::connect_admin(addr, NQN, &opts)?;
        admin.enable()?;
        let mut q = Initiator::connect_io(addr, NQN, admin.cntlid, 1, &opts)?;
        for (what, bytes, write) in [
            ("4 KiB read", 4096usize, false),
            ("4 KiB write", 4096, true),
            ("128 KiB read", 131072, false),
            ("128 KiB write", 131072, true),
        ] {
            admin.keep_alive()?; // KATO is enforced: no TBKAS
            let buf = vec![0x5Au8; bytes];
            let blocks = (bytes / 512) as u32;
            let span = (256u64 << 20) / bytes as u64;
            let (mut n, start) = (0u64, Instant::now());
            while start.elapsed() < Duration::from_secs(secs) {
                let slba = (n % span) * blocks as u64;
                if write {
                    q.write(1, slba, &buf)?;
                } else {
                    q.read(1, slba, blocks)?;
                }
                n += 1;
            }
            let s = start.elapsed().as_secs_f64();
            println!(
                "digests={digests:<5} {what:<13} QD1: {:>8.0} IOPS {:>8.1} MiB/s {:>6.1} us/op",
                n as f64 / s,
                n as f64 * bytes as f64 / s / (1 << 20) as f64,
                s * 1e6 / n as f64
            );
        }
        admin.keep_alive()?;
        qd16_reads(&mut q, secs, digests)?;
    }
    srv.stop()?;
    Ok(())
}

//! A misbehaving NVMe/RDMA host for the VM lab's fault checks
//! (tests/vm/tests/one-node/77-nvmf-rdma-faults.sh), on the same verbs
//! boundary numio uses:
//!
//! `rdma_probe ADDR:PORT req QID HSQSIZE HRQSIZE [RECFMT]`: sends a connect
//! request with that private data and prints `accepted crqsize=N` or
//! `rejected status=S (what)`.
//!
//! `rdma_probe ADDR:PORT norecv SUBNQN HOSTNQN`: connects an admin queue properly,
//! then sends a Fabrics Connect without posting any receive for its
//! response, and prints `disconnected` once the target gives the queue up
//! (or `still connected` after 60 s).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use nvme_spec::rdma::{CmAccept, CmRequest, KeyedSgl, RejectStatus};
use sysapi::rdma::{self, Answer, CmId, ConnParams, Endpoint, EventChannel, QueueSizes};

fn endpoint(addr: SocketAddr) -> Result<Endpoint, String> {
    let mut ch = EventChannel::new().map_err(|e| e.0)?;
    let id = CmId::new(&ch).map_err(|e| e.0)?;
    id.resolve(&mut ch, addr, Duration::from_secs(10))
        .map_err(|e| e.0)?;
    Endpoint::new(
        id,
        QueueSizes {
            send: 8,
            recv: 8,
            region_bytes: 1 << 16,
            node: None,
        },
    )
    .map_err(|e| e.0)
}

fn params() -> ConnParams {
    ConnParams {
        responder_resources: 1,
        initiator_depth: 0,
        rnr_retry: 7,
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let usage =
        "usage: rdma_probe ADDR:PORT req QID HSQSIZE HRQSIZE [RECFMT] | ADDR:PORT norecv SUBNQN HOSTNQN";
    let addr: SocketAddr = args
        .get(1)
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("{e}"))?;
    let num = |i: usize| -> Result<u16, String> {
        args.get(i)
            .ok_or(usage)?
            .parse()
            .map_err(|e| format!("{e}"))
    };
    match args.get(2).map(String::as_str) {
        Some("req") => {
            let req = CmRequest {
                recfmt: if args.len() > 6 { num(6)? } else { 0 },
                qid: num(3)?,
                hsqsize: num(4)?,
                hrqsize: num(5)?,
                cntlid: 0xFFFF,
            };
            let mut ep = endpoint(addr)?;
            match ep
                .connect(&req.encode(), params(), Duration::from_secs(10))
                .map_err(|e| e.0)?
            {
                Answer::Accepted(p) => {
                    println!(
                        "accepted crqsize={}",
                        CmAccept::decode(&p).map_or(0, |a| a.crqsize)
                    );
                    ep.disconnect();
                }
                Answer::Rejected {
                    status,
                    private_data,
                } => match RejectStatus::decode(&private_data) {
                    Some(s) => println!("rejected status={} ({})", s as u16, s.describe()),
                    None => println!("rejected cm-reason={status}"),
                },
            }
            Ok(())
        }
        Some("norecv") => {
            let subnqn = args.get(3).ok_or(usage)?;
            let hostnqn = args.get(4).ok_or(usage)?;
            let req = CmRequest {
                recfmt: 0,
                qid: 0,
                hsqsize: 31,
                hrqsize: 32,
                cntlid: 0xFFFF,
            };
            let mut ep = endpoint(addr)?;
            match ep
                .connect(&req.encode(), params(), Duration::from_secs(10))
                .map_err(|e| e.0)?
            {
                Answer::Accepted(_) => {}
                Answer::Rejected { status, .. } => return Err(format!("rejected ({status})")),
            }
            // Connect data at 4096, the capsule at 0; no receive posted.
            let host = nvmf::host::command::HostIdentity {
                hostnqn: hostnqn.clone(),
                hostid: [0xAA; 16],
            };
            let (mut sqe, data) = nvmf::host::command::connect(
                &host,
                subnqn,
                &nvmf::host::command::ConnectParams {
                    qid: 0,
                    cntlid: 0xFFFF,
                    entries: 32,
                    kato_ms: 0,
                    disable_sq_flow: false,
                },
            );
            let (addr_base, rkey) = (ep.region().addr(), ep.region().rkey());
            sqe.flags = 0x40;
            sqe.dptr = KeyedSgl {
                addr: addr_base + 4096,
                length: data.len() as u32,
                key: rkey,
                invalidate: false,
            }
            .to_dptr();
            let r = ep.region_mut().bytes_mut();
            r[4096..4096 + data.len()].copy_from_slice(&data);
            r[..64].copy_from_slice(&sqe.encode());
            ep.post_send(1, 0, 64, None, true).map_err(|e| e.0)?;
            let start = Instant::now();
            let mut wcs = Vec::new();
            while start.elapsed() < Duration::from_secs(60) {
                let _ = ep.poll(&mut wcs);
                if let Some(e) = ep.try_event().map_err(|e| e.0)? {
                    if e.kind == rdma::event::DISCONNECTED {
                        println!("disconnected after {:.1} s", start.elapsed().as_secs_f64());
                        return Ok(());
                    }
                }
                let _ = rdma::poll_in(&ep.fds(), Duration::from_millis(100));
            }
            println!("still connected");
            Ok(())
        }
        _ => Err(usage.into()),
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("rdma_probe: {e}");
        std::process::exit(2);
    }
}

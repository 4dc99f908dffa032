//! The host queue state machine against the target's connection state
//! machine, in memory: no socket, no reactor. What one sends the other is
//! handed, in pieces of every size, so both ends' framing, Connect,
//! property get/set, Identify, in-capsule and R2T writes, C2HData with and
//! without SUCCESS and digests are checked against each other.

mod common;

use nvme_spec::fabrics::{prop, CNTLID_DYNAMIC, CSTS_READY};
use nvme_spec::identify::{cns, IdentifyController};
use nvme_spec::{Cqe, Sqe};
use nvmf::host::command::{self, ConnectParams, HostIdentity};
use nvmf::host::{ControllerLimits, DataBuffers, HostQueue, QueueConfig, Transfer};
use nvmf::tgt::queue::Connection;

const NQN: &str = "nqn.2026-01.io.numio:hq";
const ENTRIES: u16 = 16;
/// Sizes of the pieces bytes are handed over in, so PDUs split anywhere.
const PIECES: [usize; 6] = [1, 7, 64, 1000, 65536, usize::MAX];

/// Each command id's data.
struct Bufs(Vec<(Vec<u8>, Vec<u8>)>);

impl DataBuffers for Bufs {
    fn outgoing(&self, cid: u16) -> &[u8] {
        &self.0[cid as usize].0
    }
    fn incoming(&mut self, cid: u16) -> &mut [u8] {
        &mut self.0[cid as usize].1
    }
}

/// A host queue wired to a target connection.
struct Pair {
    host: HostQueue,
    conn: Connection,
    bufs: Bufs,
    /// Hand-overs so far: their size cycles through [`PIECES`].
    turns: usize,
}

impl Pair {
    fn new(target: &std::sync::Arc<nvmf::tgt::subsystem::Target>, cfg: QueueConfig) -> Self {
        let mut p = Pair {
            host: HostQueue::new(cfg),
            conn: Connection::new(target.clone()),
            bufs: Bufs((0..cfg.entries).map(|_| (Vec::new(), Vec::new())).collect()),
            turns: 0,
        };
        p.pump();
        assert!(p.host.is_ready(), "ICReq/ICResp");
        p
    }

    /// Moves bytes both ways until neither side has any to send.
    fn pump(&mut self) {
        loop {
            let piece = PIECES[self.turns % PIECES.len()];
            self.turns += 1;
            let out = self.host.tx_pending(&self.bufs).to_vec();
            self.host.tx_sent(out.len());
            for chunk in out.chunks(piece) {
                self.conn.on_bytes(chunk);
            }
            let back = self.conn.take_tx();
            for chunk in back.chunks(piece) {
                self.host.on_bytes(chunk, &mut self.bufs).unwrap();
            }
            if out.is_empty() && back.is_empty() && !self.host.wants_to_send() {
                return;
            }
        }
    }

    /// Runs one command to its completion; returns the CQE and read data.
    fn run(&mut self, cid: u16, sqe: Sqe, xfer: Transfer, out: Vec<u8>) -> (Cqe, Vec<u8>) {
        let read = match xfer {
            Transfer::FromController(n) => vec![0; n as usize],
            _ => Vec::new(),
        };
        self.bufs.0[cid as usize] = (out, read);
        self.host.submit(cid, sqe, xfer, &self.bufs).unwrap();
        self.pump();
        let c = self.host.completion().expect("completed");
        assert_eq!(c.cqe.cid, cid);
        assert_eq!(self.host.completion(), None);
        (c.cqe, std::mem::take(&mut self.bufs.0[cid as usize].1))
    }

    fn connect(&mut self, qid: u16, cntlid: u16, disable_sq_flow: bool) -> u16 {
        let host = HostIdentity {
            hostnqn: common::HOST.into(),
            hostid: [9; 16],
        };
        let p = ConnectParams {
            qid,
            cntlid,
            entries: ENTRIES,
            kato_ms: 0,
            disable_sq_flow,
        };
        let (sqe, data) = command::connect(&host, NQN, &p);
        let (cqe, _) = self.run(0, sqe, Transfer::ToController(1024), data);
        assert!(cqe.status().is_success(), "{:?}", cqe.status());
        assert_eq!(self.host.qid(), Some(qid));
        cqe.result as u16
    }
}

fn cfg(digests: bool, hpda: u8, in_capsule_max_bytes: u32) -> QueueConfig {
    QueueConfig {
        entries: ENTRIES,
        max_data_bytes: 1 << 20,
        in_capsule_max_bytes,
        header_digest: digests,
        data_digest: digests,
        hpda,
        max_r2t: 3,
    }
}

#[test]
fn host_and_target_state_machines_speak_to_each_other() {
    let target = common::one_subsystem(NQN, &["mem:8M"]);
    for (digests, hpda, sq_flow_off) in [(false, 0, false), (true, 7, true)] {
        let mut admin = Pair::new(&target, cfg(digests, hpda, 8192));
        assert_eq!(admin.host.framing().header_digest, digests);
        let cntlid = admin.connect(0, CNTLID_DYNAMIC, false);
        assert_eq!(admin.host.cntlid(), Some(cntlid));
        let sqe = command::property_set(prop::CC, command::CC_ENABLED);
        assert!(admin
            .run(1, sqe, Transfer::None, vec![])
            .0
            .status()
            .is_success());
        let (cqe, _) = admin.run(
            2,
            command::property_get(prop::CSTS, false),
            Transfer::None,
            vec![],
        );
        assert_eq!(cqe.result & CSTS_READY, CSTS_READY);
        let (cap, _) = admin.run(
            3,
            command::property_get(prop::CAP, true),
            Transfer::None,
            vec![],
        );
        let (sqe, x) = command::identify(cns::CONTROLLER, 0);
        let (_, id) = admin.run(4, sqe, x, vec![]);
        let id = IdentifyController::decode(&id);
        assert_eq!(id.subnqn, NQN);
        let limits = ControllerLimits::new(u64::from(cap.result) | u64::from(cap.dw1) << 32, &id);
        assert_eq!(limits.in_capsule_max_bytes, 16384);
        let sqe = command::set_features(nvme_spec::features::fid::NUM_QUEUES, 0);
        assert!(admin
            .run(5, sqe, Transfer::None, vec![])
            .0
            .status()
            .is_success());

        let mut io = Pair::new(&target, cfg(digests, hpda, limits.in_capsule_max_bytes));
        io.connect(1, cntlid, sq_flow_off);
        // In-capsule, then R2T (several R2Ts of MAXH2CDATA), then read back.
        for (i, len) in [4096u32, 16384, 300 << 10].into_iter().enumerate() {
            let data = common::pattern(i as u32, len as usize);
            let (sqe, x) = command::write(1, (i as u64) << 20, len, 9);
            let (cqe, _) = io.run(1 + i as u16, sqe, x, data.clone());
            assert!(cqe.status().is_success(), "{:?}", cqe.status());
            let (sqe, x) = command::read(1, (i as u64) << 20, len, 9);
            let (cqe, back) = io.run(5 + i as u16, sqe, x, vec![]);
            assert!(cqe.status().is_success());
            assert_eq!(cqe.sqid, 1);
            assert!(back == data, "read {i} returns what write {i} wrote");
        }
        assert_eq!(io.host.in_flight(), 0);
        io.conn.release();
        admin.conn.release();
    }
    assert_eq!(target.controller_count(), 0);
}

//! The `rdma_queue` target: NVMe/RDMA command capsules and keyed SGLs
//! through the target's [`RdmaQueue`], with no RDMA hardware. The queue is
//! already a state machine (capsules and completions in, posts out); here
//! the harness plays the driver and the host's memory: it connects an
//! admin queue and I/O queue 1 as a Linux host does (Connect data by
//! keyed SGL, moved by RDMA READ), then feeds the input's operations to
//! one of them.
//!
//! Input: a knobs byte ([`RdmaKnobs`]), then [`RdmaOp`]s, each an opcode
//! byte (modulo their number) and its fields; a field cut short ends the
//! input. [`encode_ops`] writes what [`parse_ops`] reads, so the seeds are
//! built from ops.
//!
//! Invariants: no panic; every RDMA READ or WRITE the queue posts stays
//! inside a keyed SGL that a capsule with its command id named (its key,
//! its address range) and inside one staging buffer; every SEND is one
//! CQE; once closing, the queue stays closing; after both queues are
//! released no controller remains.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use nvme_spec::fabrics::{ConnectCmd, ConnectData, CNTLID_DYNAMIC};
use nvme_spec::rdma::KeyedSgl;
use nvme_spec::{Cqe, Sqe};
use nvmf::tgt::queue::Connection;
use nvmf::tgt::rdma_queue::{Post, RdmaQueue};
use nvmf::tgt::subsystem::Target;

use crate::wire::{HOSTID, HOSTNQN, SUBNQN};

/// Staging buffer bytes: the target's largest R2T and C2HData chunk.
pub const STAGE_BYTES: u32 = 16 * 1024;
/// The host address the harness's own keyed SGLs (the Connects') name.
const CONNECT_ADDR: u64 = 0x1000_0000;
/// The longest capsule an input may send (an SQE and 8 KiB of in-capsule
/// data, the target's limit).
pub const CAPSULE_MAX: usize = Sqe::SIZE + 8192;

/// The `rdma_queue` target: an RDMA port (keyed SGLs advertised), RAM
/// namespaces of 512- and 4096-byte blocks, transfers of at most 64 KiB
/// in 8 KiB RDMA READs and 16 KiB RDMA WRITEs.
pub fn rdma_target() -> &'static Arc<Target> {
    static T: OnceLock<Arc<Target>> = OnceLock::new();
    T.get_or_init(|| {
        nvmf::log::init(nvmf::log::Format::Text, nvmf::log::Level::Error);
        let mut cfg = nvmf::TargetConfig::from_toml(
            &format!(
                r#"
                [limits]
                max_queue_depth = 32
                io_in_capsule_bytes = 8192
                max_h2c_data_bytes = 8192
                max_transfer_bytes = 65536
                max_c2h_data_bytes = {STAGE_BYTES}
                [[subsystem]]
                nqn = "{SUBNQN}"
                allow_any_host = true
                [[subsystem.namespace]]
                backing = "mem:1M"
                [[subsystem.namespace]]
                backing = "mem:1M"
                block_size = 4096
                "#
            ),
            "fuzz",
        )
        .expect("fuzz config");
        cfg.rdma_listen = cfg.listen.clone();
        cfg.listen.clear();
        crate::harness::dh_inline(Target::new(&cfg).expect("fuzz target"))
    })
}

/// The knobs byte: bit 0 the ops go to the admin queue (not I/O queue 1),
/// bit 1 the queue has 4 staging buffers (not 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RdmaKnobs {
    /// The ops go to the admin queue.
    pub admin: bool,
    /// 4 staging buffers.
    pub few_stages: bool,
}

impl RdmaKnobs {
    /// The knobs byte `b` sets.
    pub fn from_byte(b: u8) -> Self {
        Self {
            admin: b & 1 != 0,
            few_stages: b & 2 != 0,
        }
    }

    /// The byte that sets these knobs.
    pub fn to_byte(self) -> u8 {
        u8::from(self.admin) | u8::from(self.few_stages) << 1
    }

    fn stages(self) -> u32 {
        if self.few_stages {
            4
        } else {
            32
        }
    }
}

/// One operation of the driver or the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdmaOp {
    /// A command capsule received: an SQE (its SGL a keyed one, or not)
    /// and in-capsule data, as the bytes are (up to [`CAPSULE_MAX`]).
    Capsule(Vec<u8>),
    /// The RDMA READ or WRITE posted this many posts ago (modulo those
    /// outstanding) completed; a READ's staging buffer holds this byte.
    Complete {
        /// Which outstanding post.
        index: u8,
        /// The READ's data, every byte.
        fill: u8,
    },
    /// Every outstanding post completed, oldest first.
    CompleteAll,
    /// The queue's periodic work.
    Tick,
}

impl RdmaOp {
    const KINDS: u8 = 4;

    /// Appends its bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            RdmaOp::Capsule(b) => {
                let b = &b[..b.len().min(CAPSULE_MAX)];
                out.push(0);
                out.extend_from_slice(&(b.len() as u16).to_le_bytes());
                out.extend_from_slice(b);
            }
            RdmaOp::Complete { index, fill } => out.extend_from_slice(&[1, *index, *fill]),
            RdmaOp::CompleteAll => out.push(2),
            RdmaOp::Tick => out.push(3),
        }
    }
}

/// The ops of `b` (any bytes; a field cut short ends them).
pub fn parse_ops(mut b: &[u8]) -> Vec<RdmaOp> {
    let mut ops = Vec::new();
    while let Some((&op, rest)) = b.split_first() {
        b = rest;
        let op = match op % RdmaOp::KINDS {
            0 => {
                let [l0, l1, rest @ ..] = b else { break };
                let len = (u16::from_le_bytes([*l0, *l1]) as usize).min(CAPSULE_MAX);
                if rest.len() < len {
                    break;
                }
                b = &rest[len..];
                RdmaOp::Capsule(rest[..len].to_vec())
            }
            1 => {
                let [index, fill, rest @ ..] = b else { break };
                b = rest;
                RdmaOp::Complete {
                    index: *index,
                    fill: *fill,
                }
            }
            2 => RdmaOp::CompleteAll,
            _ => RdmaOp::Tick,
        };
        ops.push(op);
    }
    ops
}

/// The bytes of `ops`.
pub fn encode_ops(ops: &[RdmaOp]) -> Vec<u8> {
    let mut out = Vec::new();
    for op in ops {
        op.encode(&mut out);
    }
    out
}

/// A command capsule: `sqe` then `data`.
pub fn capsule(sqe: &Sqe, data: &[u8]) -> Vec<u8> {
    let mut b = sqe.encode().to_vec();
    b.extend_from_slice(data);
    b
}

/// One queue, driven as `target::rdma` drives one, with the checks.
#[derive(Debug)]
struct Driven {
    q: RdmaQueue,
    stages: u32,
    /// Keyed SGLs each command id's capsules named.
    sgls: HashMap<u16, Vec<KeyedSgl>>,
    /// RDMA READs and WRITEs posted, not yet completed.
    outstanding: Vec<Post>,
    /// Response capsules sent.
    sent: Vec<Cqe>,
    closed: bool,
}

impl Driven {
    fn new(t: &Arc<Target>, stages: u32) -> Self {
        Self {
            q: RdmaQueue::new(Connection::new(t.clone()), stages, STAGE_BYTES),
            stages,
            sgls: HashMap::new(),
            outstanding: Vec::new(),
            sent: Vec::new(),
            closed: false,
        }
    }

    fn capsule(&mut self, b: &[u8]) {
        if b.len() >= Sqe::SIZE {
            let sqe = Sqe::decode(&b[..Sqe::SIZE]);
            if let Some(k) = KeyedSgl::from_dptr(&sqe.dptr) {
                self.sgls.entry(sqe.cid).or_default().push(k);
            }
        }
        self.q.on_capsule(b);
        self.collect();
    }

    /// Takes the queue's posts: SENDs are done at once, READs and WRITEs
    /// wait for a completion; each is checked against its command's SGLs.
    fn collect(&mut self) {
        while let Some(p) = self.q.next_post() {
            match &p {
                Post::Read {
                    cid,
                    stage,
                    len,
                    raddr,
                    rkey,
                } => self.check(*cid, *stage, *len as usize, *raddr, *rkey),
                Post::Write {
                    cid,
                    stage,
                    data,
                    raddr,
                    rkey,
                } => self.check(*cid, *stage, data.len(), *raddr, *rkey),
                Post::Send { cqe, .. } => {
                    self.sent.push(Cqe::decode(cqe));
                    continue;
                }
            }
            self.outstanding.push(p);
        }
        let closing = self.q.closing().is_some();
        assert!(closing || !self.closed, "a closing queue reopened");
        self.closed = closing;
    }

    fn check(&self, cid: u16, stage: u32, len: usize, raddr: u64, rkey: u32) {
        assert!(
            stage < self.stages,
            "staging buffer {stage} of {}",
            self.stages
        );
        assert!(
            len <= STAGE_BYTES as usize,
            "{len} bytes past a staging buffer"
        );
        let inside = self.sgls.get(&cid).is_some_and(|ks| {
            ks.iter().any(|k| {
                k.key == rkey
                    && raddr >= k.addr
                    && raddr - k.addr + len as u64 <= u64::from(k.length)
            })
        });
        assert!(
            inside,
            "command {cid}: an RDMA transfer of {len} bytes at {raddr:#x} key {rkey:#x} \
             outside every keyed SGL it named"
        );
    }

    /// The outstanding post `i` completed (a READ's buffer all `fill`).
    fn complete(&mut self, i: usize, fill: u8) {
        if self.outstanding.is_empty() {
            return;
        }
        match self.outstanding.remove(i % self.outstanding.len()) {
            Post::Read { cid, .. } => {
                let staged = vec![fill; STAGE_BYTES as usize];
                self.q.read_done(cid, &staged);
            }
            Post::Write { cid, .. } => self.q.write_done(cid),
            Post::Send { .. } => unreachable!("SENDs are not kept"),
        }
        self.collect();
    }

    fn run(&mut self, op: &RdmaOp) {
        match op {
            RdmaOp::Capsule(b) => self.capsule(b),
            RdmaOp::Complete { index, fill } => self.complete(usize::from(*index), *fill),
            RdmaOp::CompleteAll => {
                while !self.outstanding.is_empty() && !self.closed {
                    self.complete(0, 0xA5);
                }
            }
            RdmaOp::Tick => {
                self.q.tick(std::time::Instant::now());
                self.collect();
            }
        }
    }

    /// Connects the queue as a Linux host does (Connect data by keyed
    /// SGL); panics unless it succeeds. Returns the controller id.
    fn connect(&mut self, qid: u16, cntlid: u16) -> u16 {
        let data = ConnectData::new(HOSTID, cntlid, SUBNQN, HOSTNQN).encode();
        let sqe = connect_sqe(qid, data.len() as u32);
        self.capsule(&capsule(&sqe, &[]));
        let Some(Post::Read { cid, len, .. }) = self.outstanding.pop() else {
            panic!("the Connect's data was not read: {:?}", self.q.closing());
        };
        let mut staged = data.to_vec();
        assert_eq!(staged.len(), len as usize);
        staged.resize(STAGE_BYTES as usize, 0);
        self.q.read_done(cid, &staged);
        self.collect();
        match self.sent.pop() {
            Some(c) if c.status().is_success() => c.result as u16,
            other => panic!("the harness's Connect failed: {other:?}"),
        }
    }

    fn release(mut self) {
        self.q.conn.run_storage_blocking();
        self.q.conn.release();
    }
}

/// A Connect of queue `qid` whose `len` bytes of data a keyed SGL names
/// (cid 1, 32 entries).
pub fn connect_sqe(qid: u16, len: u32) -> Sqe {
    let mut sqe = Sqe {
        cid: 1,
        flags: 0x40,
        ..Default::default()
    };
    ConnectCmd {
        recfmt: 0,
        qid,
        sqsize: 31,
        cattr: 0,
        kato_ms: 0,
    }
    .to_sqe(&mut sqe);
    sqe.dptr = KeyedSgl {
        addr: CONNECT_ADDR,
        length: len,
        key: 1,
        invalidate: false,
    }
    .to_dptr();
    sqe
}

/// An admin queue and I/O queue 1 of its controller on [`rdma_target`].
#[derive(Debug)]
pub struct RdmaSession {
    admin: Driven,
    io: Driven,
    knobs: RdmaKnobs,
}

impl RdmaSession {
    /// Connects both queues; panics unless both Connects succeed.
    pub fn open(knobs: RdmaKnobs) -> Self {
        let t = rdma_target();
        let mut admin = Driven::new(t, knobs.stages());
        let cntlid = admin.connect(0, CNTLID_DYNAMIC);
        let mut io = Driven::new(t, knobs.stages());
        io.connect(1, cntlid);
        assert_eq!(io.q.conn.qid(), Some(1));
        Self { admin, io, knobs }
    }

    fn queue(&mut self) -> &mut Driven {
        if self.knobs.admin {
            &mut self.admin
        } else {
            &mut self.io
        }
    }

    /// Runs `ops` until the queue closes.
    pub fn run(&mut self, ops: &[RdmaOp]) {
        for op in ops {
            if self.queue().closed {
                break;
            }
            self.queue().run(op);
        }
    }

    /// The response capsules the fuzzed queue sent, by command id (the
    /// Connect's included).
    pub fn responses(&self) -> Vec<Cqe> {
        if self.knobs.admin {
            self.admin.sent.clone()
        } else {
            self.io.sent.clone()
        }
    }

    /// Whether the fuzzed queue is closing.
    pub fn closing(&self) -> bool {
        if self.knobs.admin {
            self.admin.closed
        } else {
            self.io.closed
        }
    }

    /// Releases both queues (the I/O queue first) and checks that no
    /// controller is left.
    pub fn close(self) {
        self.io.release();
        self.admin.release();
        assert_eq!(
            rdma_target().controller_count(),
            0,
            "a controller outlived its queues"
        );
    }
}

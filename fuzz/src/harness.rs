//! The targets the fuzzers run against (one per process, built at the
//! first input) and a connection driven the way the reactor drives one,
//! checking the invariants every fuzz target shares: no panic, a closing
//! connection stays closing, and (where the harness knows the framing)
//! every PDU the target sends decodes.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use nvme_spec::tcp::Framing;
use nvmf::tgt::queue::{Connection, Phase};
use nvmf::tgt::subsystem::Target;

use crate::wire::{self, Connect, FromController, HostStream, IcParams, HOSTID, HOSTNQN, SUBNQN};

/// The controller id of the `connection` target's resident controller
/// (the first one its target creates).
pub const RESIDENT_CNTLID: u16 = 1;

/// The `io_queue` target's MAXH2CDATA: small, so a write of a few blocks
/// takes several R2Ts.
pub const IO_MAXH2CDATA: u32 = 8192;
/// The `io_queue` target's I/O in-capsule data limit.
pub const IO_IN_CAPSULE: u32 = 8192;

/// Keeps the target's log to errors: every refused host or failed
/// authentication is a warning line, and a fuzzer makes thousands.
fn quiet() {
    nvmf::log::init(nvmf::log::Format::Text, nvmf::log::Level::Error);
}

/// `t` with its DH-HMAC-CHAP work done inline, on the thread that drives
/// the connection (`DhPool::inline`): a fuzz target drives connections
/// without a reactor, and waiting for a pool worker (`run_auth_blocking`
/// yields until the result is in) cost more than the work.
pub fn dh_inline(mut t: Arc<Target>) -> Arc<Target> {
    Arc::get_mut(&mut t).expect("a fresh target").dh = nvmf::tgt::dh_pool::DhPool::inline();
    t
}

/// A directory of this process's own under the temporary directory
/// (mode 0700), for namespace backings and secrets; the caller removes
/// it once the target has opened what it holds.
pub fn private_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("numio-fuzz-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod 700");
    dir
}

/// The `connection` target: one subsystem open to any host with one RAM
/// namespace, and a resident controller ([`RESIDENT_CNTLID`], host
/// [`HOSTNQN`]) that no input owns, so an input may connect an I/O queue.
pub fn connection_target() -> &'static Arc<Target> {
    static T: OnceLock<Arc<Target>> = OnceLock::new();
    T.get_or_init(|| {
        quiet();
        let cfg = nvmf::TargetConfig::from_toml(
            &format!(
                r#"
                [[subsystem]]
                nqn = "{SUBNQN}"
                allow_any_host = true
                [[subsystem.namespace]]
                backing = "mem:1M"
                "#
            ),
            "fuzz",
        )
        .expect("fuzz config");
        let t = dh_inline(Target::new(&cfg).expect("fuzz target"));
        let c = t
            .create_controller(1, SUBNQN, HOSTNQN, HOSTID, 0)
            .expect("the resident controller");
        assert_eq!(c.cntlid, RESIDENT_CNTLID);
        t
    })
}

/// The `io_queue` target: RAM namespaces of 512- and 4096-byte blocks and
/// a file namespace (storage operations, run with blocking calls), small
/// MAXH2CDATA, in-capsule and C2HData limits so transfers come in pieces.
pub fn io_target() -> &'static Arc<Target> {
    static T: OnceLock<Arc<Target>> = OnceLock::new();
    T.get_or_init(|| {
        quiet();
        let dir = private_dir("io");
        let file = dir.join("ns3");
        std::fs::write(&file, vec![0u8; 1 << 20]).expect("the file namespace");
        let cfg = nvmf::TargetConfig::from_toml(
            &format!(
                r#"
                [limits]
                max_queue_depth = 32
                io_in_capsule_bytes = {IO_IN_CAPSULE}
                max_h2c_data_bytes = {IO_MAXH2CDATA}
                max_transfer_bytes = 65536
                max_c2h_data_bytes = 16384
                [[subsystem]]
                nqn = "{SUBNQN}"
                allow_any_host = true
                [[subsystem.namespace]]
                backing = "mem:1M"
                [[subsystem.namespace]]
                backing = "mem:1M"
                block_size = 4096
                [[subsystem.namespace]]
                backing = "{}"
                "#,
                file.display()
            ),
            "fuzz",
        )
        .expect("fuzz config");
        let t = dh_inline(Target::new(&cfg).expect("fuzz target"));
        // The namespace holds its descriptor; nothing is left behind.
        std::fs::remove_dir_all(&dir).expect("remove the temporary directory");
        t
    })
}

/// One connection, fed as the reactor feeds one.
#[derive(Debug)]
pub struct Driven {
    /// The connection.
    pub conn: Connection,
    /// The framing it uses, where the harness negotiated it (the target's
    /// output is then decoded and checked).
    pub framing: Option<Framing>,
    closed: bool,
}

impl Driven {
    /// A fresh connection to `target`.
    pub fn new(target: &Arc<Target>) -> Self {
        Self {
            conn: Connection::new(target.clone()),
            framing: None,
            closed: false,
        }
    }

    /// Feeds `bytes`, runs the storage operations they start, and goes on
    /// with PDUs held back by the reply budget as the reactor does once
    /// its replies are sent. Returns everything the target sent.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.conn.on_bytes(bytes);
        let mut tx = Vec::new();
        loop {
            self.conn.run_auth_blocking();
            self.conn.run_storage_blocking();
            tx.extend_from_slice(&self.conn.take_tx());
            self.check_phase();
            if self.conn.phase() == Phase::Closing || !self.conn.rx_waiting() {
                break;
            }
            self.conn.on_bytes(&[]);
        }
        if let Some(f) = &self.framing {
            wire::from_controller(&tx, f);
        }
        tx
    }

    /// Feeds `bytes` and decodes what came back (the framing is known).
    pub fn exchange(&mut self, bytes: &[u8]) -> Vec<FromController> {
        let f = self.framing.expect("a negotiated framing");
        let tx = self.feed(bytes);
        wire::from_controller(&tx, &f)
    }

    /// Periodic work at `now`.
    pub fn tick(&mut self, now: std::time::Instant) {
        self.conn.tick(now);
        self.check_phase();
    }

    /// Whether the connection is closing.
    pub fn closing(&self) -> bool {
        self.conn.phase() == Phase::Closing
    }

    fn check_phase(&mut self) {
        if self.closed {
            assert_eq!(
                self.conn.phase(),
                Phase::Closing,
                "a closed connection reopened"
            );
        }
        self.closed = self.conn.phase() == Phase::Closing;
    }

    /// Closes the connection as the reactor does once its socket is gone.
    pub fn release(mut self) {
        self.conn.run_storage_blocking();
        self.conn.release();
    }

    /// ICReq asking for `ic`, then `connect`; panics unless the Connect
    /// succeeds. Returns the response's dword 0 (the controller id, and
    /// ATR where the host must authenticate).
    pub fn connect(&mut self, ic: IcParams, connect: &Connect<'_>) -> u32 {
        let mut s = HostStream::new();
        s.icreq(ic).connect(connect);
        self.framing = Some(ic.framing());
        let out = self.exchange(&s.out);
        match out.as_slice() {
            [FromController::IcResp, FromController::Response(c)] if c.status().is_success() => {
                c.result
            }
            other => panic!("the harness's Connect failed: {other:?}"),
        }
    }
}

/// The `io_queue` target's knobs, its input's second byte: bit 0 header
/// digests, bit 1 data digests, bit 2 SQ flow control disabled, bits 3-4
/// MAXR2T, bit 5 a 4-entry queue (instead of 32), bit 6 the admin queue
/// closes before the I/O queue (its controller goes first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoKnobs {
    /// What the I/O queue's ICReq asks for.
    pub ic: IcParams,
    /// SQ flow control disabled (Connect CATTR).
    pub disable_sq_flow: bool,
    /// A 4-entry queue.
    pub small_queue: bool,
    /// The admin queue closes first.
    pub admin_first: bool,
}

impl IoKnobs {
    /// The knobs byte `b` sets.
    pub fn from_byte(b: u8) -> Self {
        Self {
            ic: IcParams {
                header_digest: b & 1 != 0,
                data_digest: b & 2 != 0,
                maxr2t: u32::from(b >> 3 & 3),
            },
            disable_sq_flow: b & 4 != 0,
            small_queue: b & 0x20 != 0,
            admin_first: b & 0x40 != 0,
        }
    }

    /// The byte that sets these knobs.
    pub fn to_byte(self) -> u8 {
        u8::from(self.ic.header_digest)
            | u8::from(self.ic.data_digest) << 1
            | u8::from(self.disable_sq_flow) << 2
            | (self.ic.maxr2t.min(3) as u8) << 3
            | u8::from(self.small_queue) << 5
            | u8::from(self.admin_first) << 6
    }

    /// Entries of the I/O queue.
    pub fn entries(self) -> u16 {
        if self.small_queue {
            4
        } else {
            32
        }
    }
}

/// A live I/O queue (qid 1) of a controller that its own admin queue
/// created, on [`io_target`].
#[derive(Debug)]
pub struct IoSession {
    /// The admin queue.
    pub admin: Driven,
    /// I/O queue 1.
    pub io: Driven,
    knobs: IoKnobs,
}

impl IoSession {
    /// Connects the admin queue, then I/O queue 1 as `knobs` say; panics
    /// unless both Connects succeed.
    pub fn open(knobs: IoKnobs) -> Self {
        let t = io_target();
        let mut admin = Driven::new(t);
        let cntlid = admin.connect(IcParams::default(), &Connect::admin()) as u16;
        let mut io = Driven::new(t);
        let c = Connect {
            entries: knobs.entries(),
            disable_sq_flow: knobs.disable_sq_flow,
            ..Connect::io(1, cntlid)
        };
        io.connect(knobs.ic, &c);
        assert_eq!(io.conn.qid(), Some(1));
        Self { admin, io, knobs }
    }

    /// Feeds `stream` to the I/O queue in chunks of `chunk` bytes
    /// (storage operations run after each); returns what it sent back.
    pub fn run(&mut self, stream: &[u8], chunk: usize) -> Vec<u8> {
        let mut tx = Vec::new();
        for c in stream.chunks(chunk.max(1)) {
            tx.extend(self.io.feed(c));
        }
        tx
    }

    /// Closes both queues (in the order the knobs say, with the periodic
    /// work between) and checks that no controller is left.
    pub fn close(self) {
        let Self {
            admin,
            mut io,
            knobs,
        } = self;
        let now = std::time::Instant::now();
        if knobs.admin_first {
            admin.release();
            io.tick(now);
            assert!(io.closing(), "an I/O queue outlived its controller");
            io.release();
        } else {
            io.tick(now);
            io.release();
            admin.release();
        }
        assert_eq!(
            io_target().controller_count(),
            0,
            "a controller outlived its queues"
        );
    }
}

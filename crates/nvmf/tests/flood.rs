//! The attacks of issue #20 as loopback tests, bounded in count and time.
//! A good client (an admin and an I/O queue reading 4 KiB blocks of a RAM
//! namespace, 16 in flight) keeps a stated share of its read rate through
//! a 1,000-connection flood from 46 addresses and through a slowloris from
//! three; the attack adds a bounded RSS; refused sockets close at once and
//! idle or slow ones within their deadlines (ICReq 5 s, Connect 10 s after
//! the accept, however slowly they trickle bytes); a new host connects
//! beside a slowloris that holds its share, and once the deadlines have
//! emptied the slots a flood took. Linux only (VmRSS, 127.0.0.x sources).
//! The numbers print with `cargo test -p nvmf --test flood -- --nocapture`.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering::Acquire;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use nvme_spec::command::io;
use nvme_spec::tcp::pdu_type;
use nvmf::host::command::rw_sqe;
use nvmf::tgt::counters::Refused;
use nvmf::tgt::queue::{CONNECT_DEADLINE, ICREQ_DEADLINE};
use nvmf::tgt::subsystem::Target;
use nvmf::Initiator;
use rustix::event::{poll, PollFd, PollFlags, Timespec};

/// The tests measure the rates and the RSS of one process: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Reads in one measured batch.
const BATCH_READS: u32 = 4096;
/// Reads the good client keeps in flight.
const DEPTH: usize = 16;
/// Alone / under attack pairs measured; the best pair's share counts (a
/// noisy 2-core machine slows some pairs for reasons of its own).
const ROUNDS: usize = 3;
/// What a close may take past its deadline: the target's 100 ms tick,
/// then a loaded machine's scheduling.
const SLACK: Duration = Duration::from_secs(3);
/// Failure bound of one attack's whole life.
const ATTACK_BOUND: Duration = Duration::from_secs(30);
/// A slowloris sends one byte per socket this often (an ICReq would take
/// 32 s, past its 5 s deadline; a Connect header 18 s, past its 10 s).
const TRICKLE_EVERY: Duration = Duration::from_millis(250);
/// File descriptors the flood needs: its 1,000 sockets, the target's 256
/// and the rest of the process.
const FDS_NEEDED: u64 = 2048;
/// The good client's queues: an admin and an I/O queue.
const GOOD_QUEUES: u32 = 2;
/// The connection limits the attacks run into (the defaults before
/// issue 38 raised them for large hosts; the plans are sized for these).
const MAX_CONNECTIONS: u32 = 256;
const MAX_PER_SOURCE: u32 = 64;

fn flood_config() -> nvmf::TargetConfig {
    let mut c = config(None);
    c.limits.max_connections = MAX_CONNECTIONS;
    c.limits.max_connections_per_source = MAX_PER_SOURCE;
    c
}

/// Share of its alone rate the good client keeps during the flood (the
/// worse of its two measurements in a round; the best round counts), at
/// the least. Measured over 5 runs on 2 busy cores, debug build: 63-87 %
/// (the accept storm is the worse, 50-87 % of a round; once held, 76-138
/// %), 82 % with two more busy-looping processes. About half the worst.
const FLOOD_SHARE_MIN: f64 = 0.3;
/// The same during the slowloris. Measured: 81-107 %, 91 % loaded.
const SLOWLORIS_SHARE_MIN: f64 = 0.4;
/// RSS an attack may add to the process. The target's side of one
/// socket before Connect: its 128 KiB receive buffer and 128 request
/// slots of 176 + 32 bytes, about 155 KiB; 254 of them 38.5 MiB (measured:
/// 5-25 MiB, as much as malloc hands back fresh zeroed pages or reuses
/// freed ones).
const ATTACK_RSS_MAX_BYTES: u64 = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Connects and sends nothing.
    Silent,
    /// Sends 3 bytes of an ICReq's header, then nothing.
    HalfIcReq,
    /// Sends ICReq, never Connect.
    IcReqOnly,
    /// Sends ICReq and 5 bytes of a Connect capsule's header, then nothing.
    HalfConnect,
    /// Trickles an ICReq, a byte per [`TRICKLE_EVERY`].
    TrickleIcReq,
    /// Sends ICReq, then trickles a Connect capsule.
    TrickleConnect,
}

impl Kind {
    /// What it sends once connected.
    fn first_bytes(self) -> Vec<u8> {
        match self {
            Kind::Silent | Kind::TrickleIcReq => Vec::new(),
            Kind::HalfIcReq => icreq()[..3].to_vec(),
            Kind::IcReqOnly | Kind::TrickleConnect => icreq().to_vec(),
            Kind::HalfConnect => [&icreq()[..], &connect_header()[..5]].concat(),
        }
    }

    /// What it then sends a byte at a time.
    fn trickled(self) -> Vec<u8> {
        match self {
            Kind::TrickleIcReq => icreq().to_vec(),
            Kind::TrickleConnect => connect_header().to_vec(),
            _ => Vec::new(),
        }
    }

    /// How long the target lets it be once admitted.
    fn deadline(self) -> Duration {
        match self {
            Kind::Silent | Kind::HalfIcReq | Kind::TrickleIcReq => ICREQ_DEADLINE,
            Kind::IcReqOnly | Kind::HalfConnect | Kind::TrickleConnect => CONNECT_DEADLINE,
        }
    }

    /// Whether it sent a whole ICReq (so an admitted one gets an ICResp).
    fn sends_icreq(self) -> bool {
        self.deadline() == CONNECT_DEADLINE
    }
}

/// A plain ICReq (no digests, alignment 0, one R2T).
fn icreq() -> [u8; 128] {
    let mut b = [0u8; 128];
    b[2] = 128; // HLEN
    b[4] = 128; // PLEN
    b
}

/// The PDU header of a Connect command capsule (HLEN 72, PDO 72, PLEN
/// 72 + the 1,024 bytes of Connect data): the SQE is the Fabrics Connect
/// opcode and type; no attack here sends more than this header.
fn connect_header() -> [u8; 72] {
    let mut b = [0u8; 72];
    b[0] = pdu_type::CAPSULE_CMD;
    b[2] = 72;
    b[3] = 72;
    b[4..8].copy_from_slice(&(72u32 + 1024).to_le_bytes());
    b[8] = 0x7F; // Fabrics
    b[12] = 0x01; // Connect
    b
}

/// A TCP connection to `to` from local address `from` (each 127.0.0.x
/// stands for another host).
fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).expect("socket");
    bind(&fd, &SocketAddr::from((from, 0))).expect("bind a loopback source");
    connect(&fd, &to).unwrap_or_else(|e| panic!("connect from {from}: {e}"));
    TcpStream::from(fd)
}

/// 1,000 sockets: 100 from 127.0.0.2 (64 within its share, 36 past it),
/// then 20 from each of 127.0.0.3..=127.0.0.47; the four kinds in turn.
fn flood_plan() -> Vec<(Ipv4Addr, Kind)> {
    const KINDS: [Kind; 4] = [
        Kind::Silent,
        Kind::HalfIcReq,
        Kind::IcReqOnly,
        Kind::HalfConnect,
    ];
    (0..1000u32)
        .map(|i| {
            let host = if i < 100 { 2 } else { 3 + (i - 100) / 20 };
            (Ipv4Addr::new(127, 0, 0, host as u8), KINDS[i as usize % 4])
        })
        .collect()
}

/// 210 sockets, 70 from each of 127.0.1.1..=127.0.1.3 (64 within each
/// share, 6 past it), trickling an ICReq or a Connect in turn.
fn slowloris_plan() -> Vec<(Ipv4Addr, Kind)> {
    (0..210u32)
        .map(|i| {
            let kind = if i % 2 == 0 {
                Kind::TrickleIcReq
            } else {
                Kind::TrickleConnect
            };
            (Ipv4Addr::new(127, 0, 1, 1 + (i / 70) as u8), kind)
        })
        .collect()
}

/// One attacking socket and what became of it.
struct Sock {
    s: TcpStream,
    kind: Kind,
    /// Taken before connect(2): the target's clock for it starts later.
    opened: Instant,
    /// How long connect(2) took.
    connect_time: Duration,
    /// Bytes of [`Kind::trickled`] sent.
    trickled: usize,
    /// Bytes the target sent it.
    got_bytes: usize,
    /// When the target closed it (EOF or reset), after `opened`.
    closed_after: Option<Duration>,
}

impl Sock {
    fn open(from: Ipv4Addr, to: SocketAddr, kind: Kind) -> Self {
        let opened = Instant::now();
        let s = connect_from(from, to);
        let connect_time = opened.elapsed();
        s.set_nonblocking(true).expect("non-blocking");
        let mut me = Self {
            s,
            kind,
            opened,
            connect_time,
            trickled: 0,
            got_bytes: 0,
            closed_after: None,
        };
        let first = kind.first_bytes();
        if !first.is_empty() && me.s.write_all(&first).is_err() {
            me.closed(); // refused and reset already
        }
        me
    }

    fn is_open(&self) -> bool {
        self.closed_after.is_none()
    }

    fn closed(&mut self) {
        self.closed_after.get_or_insert(self.opened.elapsed());
    }

    /// Takes in what arrived; EOF or an error is the target's close.
    fn on_readable(&mut self) {
        let mut b = [0u8; 256];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return self.closed(),
                Ok(n) => self.got_bytes += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => return self.closed(),
            }
        }
    }

    /// Sends the next byte of its trickle, if it has one.
    fn trickle(&mut self) {
        let bytes = self.kind.trickled();
        if !self.is_open() || self.trickled >= bytes.len() {
            return;
        }
        match self.s.write(&bytes[self.trickled..=self.trickled]) {
            Ok(n) => self.trickled += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => self.closed(),
        }
    }
}

/// Waits up to `wait` for a close (or data) on the open sockets or for the
/// stop signal, and takes in what came; true when told to stop.
fn watch(socks: &mut [Sock], stop: &UnixStream, wait: Duration) -> bool {
    let open: Vec<usize> = (0..socks.len()).filter(|&i| socks[i].is_open()).collect();
    let mut fds = Vec::with_capacity(open.len() + 1);
    fds.push(PollFd::new(stop, PollFlags::IN));
    fds.extend(
        open.iter()
            .map(|&i| PollFd::new(&socks[i].s, PollFlags::IN)),
    );
    let timeout = Timespec::try_from(wait).expect("a short wait");
    match poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(e) => panic!("poll: {e}"),
    }
    let stopped = !fds[0].revents().is_empty();
    let ready: Vec<usize> = fds[1..]
        .iter()
        .zip(&open)
        .filter(|(f, _)| !f.revents().is_empty())
        .map(|(_, &i)| i)
        .collect();
    drop(fds);
    for i in ready {
        socks[i].on_readable();
    }
    stopped
}

/// What an attack held, once it ended.
struct Held {
    socks: Vec<Sock>,
    /// How long its connects took.
    connect_time: Duration,
}

/// Connects `plan`'s sockets, then holds them (trickling where their kind
/// does) until told to stop, until the target has closed them all, or
/// [`ATTACK_BOUND`].
fn attack(to: SocketAddr, plan: &[(Ipv4Addr, Kind)], stop: &UnixStream) -> Held {
    let start = Instant::now();
    let mut socks = Vec::with_capacity(plan.len());
    for (i, &(from, kind)) in plan.iter().enumerate() {
        socks.push(Sock::open(from, to, kind));
        if i % 25 == 24 {
            watch(&mut socks, stop, Duration::ZERO); // refused ones close at once
        }
    }
    let connect_time = start.elapsed();
    let end = start + ATTACK_BOUND;
    let mut next_trickle = Instant::now();
    loop {
        let now = Instant::now();
        if now >= next_trickle {
            socks.iter_mut().for_each(Sock::trickle);
            next_trickle = now + TRICKLE_EVERY;
        }
        if now >= end || socks.iter().all(|s| !s.is_open()) {
            break;
        }
        if watch(&mut socks, stop, next_trickle.min(end) - now) {
            break;
        }
    }
    Held {
        socks,
        connect_time,
    }
}

/// An attack running on its own thread.
struct Attack {
    started: Instant,
    stop: UnixStream,
    thread: JoinHandle<Held>,
}

impl Attack {
    fn start(to: SocketAddr, plan: Vec<(Ipv4Addr, Kind)>) -> Self {
        let (stop, stop_rx) = UnixStream::pair().expect("socketpair");
        let started = Instant::now();
        let thread = std::thread::spawn(move || attack(to, &plan, &stop_rx));
        Self {
            started,
            stop,
            thread,
        }
    }

    /// Whether it ended by itself (every socket closed by the target).
    fn ended(&self) -> bool {
        self.thread.is_finished()
    }

    fn join(self) -> Held {
        self.thread.join().expect("attack thread")
    }

    /// Ends it now; its sockets close when the result is dropped.
    fn stop(mut self) -> Held {
        self.stop.write_all(&[1]).expect("stop signal");
        self.join()
    }
}

/// A host doing its work: 4 KiB reads of the 64 MiB RAM namespace.
struct Good {
    admin: Initiator,
    io: Initiator,
    next: u64,
}

impl Good {
    fn connect(to: SocketAddr) -> Self {
        let mut o = opts();
        o.timeout = LONG;
        let (admin, io) = controller(to, &o);
        Self { admin, io, next: 0 }
    }

    /// Reads per second over `reads` reads, [`DEPTH`] in flight, spread
    /// over the namespace; then a Keep Alive (its KATO is 5 s).
    fn rate(&mut self, reads: u32) -> f64 {
        let start = Instant::now();
        let (mut posted, mut done) = (0, 0);
        while done < reads {
            while posted < reads && self.io.in_flight() < DEPTH {
                let slba = (self.next * 7919 % 16384) * 8;
                self.next += 1;
                let sqe = rw_sqe(io::READ, 1, slba, 8);
                self.io.post(sqe, Vec::new(), 4096).expect("read posted");
                posted += 1;
            }
            let c = self.io.reap().expect("read completed");
            assert!(c.cqe.status().is_success(), "read: {:?}", c.cqe.status());
            assert_eq!(c.data.len(), 4096);
            done += 1;
        }
        let rate = reads as f64 / start.elapsed().as_secs_f64();
        self.admin.keep_alive().expect("keep alive");
        rate
    }
}

/// Refusals by reason, in [`Refused::ALL`]'s order.
fn refusals(t: &Target) -> Vec<u64> {
    t.refusals.snapshot().iter().map(|&(_, n)| n).collect()
}

/// Refusals for `why` since `since`.
fn since(t: &Target, since: &[u64], why: Refused) -> u64 {
    refusals(t)[why as usize] - since[why as usize]
}

/// Sockets closed at once for a full target or source since `before`.
fn refused_by_limit(t: &Target, before: &[u64]) -> u64 {
    since(t, before, Refused::ConnectionLimit) + since(t, before, Refused::SourceLimit)
}

fn open_connections(t: &Target) -> u32 {
    t.connections.load(Acquire)
}

/// Room for the attack's sockets and the target's: raises the soft
/// RLIMIT_NOFILE to [`FDS_NEEDED`] where the hard limit allows; false
/// (the test skips, saying why) where it does not.
fn fds_for_the_attack() -> bool {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let r = getrlimit(Resource::Nofile);
    if r.current.is_none() || r.current >= Some(FDS_NEEDED) {
        return true;
    }
    if r.maximum.is_some_and(|m| m < FDS_NEEDED) {
        eprintln!(
            "skipped: the flood needs {FDS_NEEDED} file descriptors and RLIMIT_NOFILE's \
             hard limit is {:?} (raise it: ulimit -Hn {FDS_NEEDED})",
            r.maximum
        );
        return false;
    }
    let want = Rlimit {
        current: Some(FDS_NEEDED),
        maximum: r.maximum,
    };
    setrlimit(Resource::Nofile, want).expect("raise RLIMIT_NOFILE");
    true
}

/// What the target must have done with an attack's sockets once they
/// are all connected.
#[derive(Clone, Copy)]
struct Expect {
    /// Connections open, the good client's included.
    open: u32,
    /// Sockets closed at once for a full target or source.
    refused: u64,
    /// Sockets without a Connect closed to admit newer ones.
    evicted: u64,
}

/// The good client's rates in one round.
struct Round {
    alone: f64,
    /// From the attack's first connect (the accept storm).
    storm: f64,
    /// Once every socket was admitted or refused (the attack held).
    held: f64,
    /// RSS the attack added, measured once it was held.
    rss_added_bytes: u64,
}

impl Round {
    /// The worse of its two shares of the alone rate.
    fn share(&self) -> f64 {
        self.storm.min(self.held) / self.alone
    }
}

/// Measures the good client alone, then from the start of an attack of
/// `plan` and once the target has taken it all in; returns the attack
/// still running, with the refusal counts from before it.
fn round(
    good: &mut Good,
    t: &Target,
    to: SocketAddr,
    plan: &[(Ipv4Addr, Kind)],
    want: Expect,
) -> (Round, Attack, Vec<u64>) {
    let alone = good.rate(BATCH_READS);
    let before = refusals(t);
    let rss_before = rss_bytes();
    let attack = Attack::start(to, plan.to_vec());
    let storm = good.rate(BATCH_READS);
    // Every socket is open, refused, or (where the connects outlasted a
    // deadline) closed by it; the good client reads meanwhile, and keeps
    // its controller alive.
    let accounted = |t: &Target| {
        let open = open_connections(t).saturating_sub(GOOD_QUEUES) as u64;
        let expired =
            since(t, &before, Refused::IcreqDeadline) + since(t, &before, Refused::ConnectDeadline);
        let evicted = since(t, &before, Refused::Evicted);
        open + expired + refused_by_limit(t, &before) + evicted == plan.len() as u64
    };
    while !accounted(t) {
        assert!(attack.started.elapsed() < LONG, "the attack not taken in");
        good.rate(256);
    }
    if attack.started.elapsed() < ICREQ_DEADLINE {
        // No deadline can have freed a slot yet: the limits alone decided.
        assert_eq!(open_connections(t), want.open, "slots taken");
        assert_eq!(refused_by_limit(t, &before), want.refused, "refused");
        assert_eq!(since(t, &before, Refused::Evicted), want.evicted, "evicted");
    } else {
        eprintln!("the connects outlasted the ICReq deadline: their counts not checked");
    }
    let held = good.rate(BATCH_READS);
    let rss_added_bytes = rss_bytes().saturating_sub(rss_before);
    let r = Round {
        alone,
        storm,
        held,
        rss_added_bytes,
    };
    (r, attack, before)
}

/// Stops an attack and waits for the target to give its slots back.
fn end(attack: Attack, t: &Target) {
    drop(attack.stop());
    wait_for(t, "the attack's slots given back", |t| {
        open_connections(t) == GOOD_QUEUES
    });
}

/// Worst close times of an attack held to its deadlines.
#[derive(Debug, Default)]
struct Closes {
    /// Most bytes a slowloris socket trickled before its close.
    trickled_max: usize,
    /// Closed before any deadline: refused, or closed for room.
    refused: u64,
    refused_worst: Duration,
    /// Admitted sockets closed at the ICReq deadline, and the latest.
    icreq: u64,
    icreq_worst: Duration,
    /// Admitted sockets closed at the Connect deadline, and the latest.
    connect: u64,
    connect_worst: Duration,
}

/// Checks every socket of an attack held to its end: one closed before
/// the ICReq deadline was refused at once (unanswered, within
/// [`SLACK`]) or closed to make room for a newer one (answered at most
/// its ICResp); an admitted one closed after its deadline and within
/// [`SLACK`] of it, an ICResp its only answer.
fn closes(held: &Held) -> Closes {
    let mut c = Closes::default();
    for (i, s) in held.socks.iter().enumerate() {
        let took = s
            .closed_after
            .unwrap_or_else(|| panic!("socket {i} ({:?}) still open", s.kind));
        if took < ICREQ_DEADLINE {
            let icresp = if s.kind.sends_icreq() { 128 } else { 0 };
            assert!(
                s.got_bytes == 0 || s.got_bytes == icresp,
                "socket {i}: refused or closed for room, yet answered {} bytes",
                s.got_bytes
            );
            assert!(took <= SLACK, "socket {i}: refused after {took:?}");
            c.refused += 1;
            c.refused_worst = c.refused_worst.max(took);
            continue;
        }
        let deadline = s.kind.deadline();
        assert!(
            took >= deadline && took <= deadline + SLACK,
            "socket {i} ({:?}) closed after {took:?}, its deadline {deadline:?}",
            s.kind
        );
        let answer = if s.kind.sends_icreq() { 128 } else { 0 };
        assert_eq!(s.got_bytes, answer, "socket {i} ({:?})", s.kind);
        let trickle = s.kind.trickled().len();
        assert!(
            trickle == 0 || (1..trickle).contains(&s.trickled),
            "socket {i} ({:?}) trickled {} of {trickle} bytes: a slowloris sends some, never all",
            s.kind,
            s.trickled
        );
        c.trickled_max = c.trickled_max.max(s.trickled);
        let (n, worst) = if deadline == ICREQ_DEADLINE {
            (&mut c.icreq, &mut c.icreq_worst)
        } else {
            (&mut c.connect, &mut c.connect_worst)
        };
        *n += 1;
        *worst = (*worst).max(took);
    }
    c
}

/// Keeps the good client reading until the attack has ended by itself
/// (the target closed all its sockets); checks the closes and that the
/// target counted each admitted one under its deadline.
fn hold_to_the_deadlines(good: &mut Good, t: &Target, attack: Attack, before: &[u64]) -> Closes {
    let (mut reads, start) = (0u64, Instant::now());
    while !attack.ended() {
        good.rate(1024);
        reads += 1024;
    }
    let rate = reads as f64 / start.elapsed().as_secs_f64();
    let held = attack.join();
    let c = closes(&held);
    wait_for(t, "each deadline close counted", |t| {
        since(t, before, Refused::IcreqDeadline) == c.icreq
            && since(t, before, Refused::ConnectDeadline) == c.connect
    });
    let slowest = held.socks.iter().map(|s| s.connect_time).max().unwrap();
    let slow = held
        .socks
        .iter()
        .filter(|s| s.connect_time > Duration::from_millis(500))
        .count();
    eprintln!(
        "{} sockets connected in {:?} (the slowest in {slowest:?}, {slow} over 500 ms); \
         the good client read {rate:.0}/s until the deadlines closed them",
        held.socks.len(),
        held.connect_time
    );
    c
}

/// While the flood's sockets, none connected, take every slot, a new host
/// connects and reads: two of them are closed to make room (issue 38).
fn probe_while_full(to: SocketAddr, t: &Target) {
    let evicted = refusals(t)[Refused::Evicted as usize];
    let (_a, mut q) = controller(to, &opts());
    assert_eq!(q.read(1, 0, 8).expect("a new host reads").len(), 4096);
    assert_eq!(refusals(t)[Refused::Evicted as usize] - evicted, 2);
}

#[test]
fn a_good_client_keeps_its_share_through_a_1000_connection_flood() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !fds_for_the_attack() {
        return;
    }
    let (s, addr) = start(&flood_config());
    let t = &s.target;
    let mut good = Good::connect(addr);
    let plan = flood_plan();
    let admitted = MAX_CONNECTIONS - GOOD_QUEUES;
    // 36 from the first address past its share; of the rest, each past
    // the slots left closes the oldest socket without a Connect.
    let refused = 100 - MAX_PER_SOURCE as u64;
    let want = Expect {
        open: MAX_CONNECTIONS,
        refused,
        evicted: plan.len() as u64 - refused - admitted as u64,
    };
    // The first round is held to the deadlines.
    let (first, attack, before) = round(&mut good, t, addr, &plan, want);
    probe_while_full(addr, t);
    assert!(
        since(t, &before, Refused::SourceLimit) >= 1 && since(t, &before, Refused::Evicted) >= 1,
        "the source limit was met, and the full target made room"
    );
    let c = hold_to_the_deadlines(&mut good, t, attack, &before);
    // The sockets closed before any deadline are the ones refused.
    assert_eq!(
        c.refused,
        refused_by_limit(t, &before) + since(t, &before, Refused::Evicted)
    );
    wait_for(t, "the flood's slots given back", |t| {
        open_connections(t) == GOOD_QUEUES
    });
    // A new host connects now, and the good client was served throughout.
    let (_a, mut q) = controller(addr, &opts());
    assert_eq!(q.read(1, 0, 8).expect("a new host reads").len(), 4096);
    drop((_a, q));
    let mut rounds = vec![first];
    for _ in 1..ROUNDS {
        let (r, attack, _) = round(&mut good, t, addr, &plan, want);
        end(attack, t);
        rounds.push(r);
    }
    report("flood", &rounds, &c);
    check(&rounds, FLOOD_SHARE_MIN);
    s.stop().unwrap();
}

#[test]
fn a_good_client_keeps_its_share_through_a_slowloris_and_a_new_host_connects() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !fds_for_the_attack() {
        return;
    }
    let (s, addr) = start(&flood_config());
    let t = &s.target;
    let mut good = Good::connect(addr);
    let plan = slowloris_plan();
    let sources = 3;
    let want = Expect {
        open: GOOD_QUEUES + sources * MAX_PER_SOURCE,
        refused: plan.len() as u64 - (sources * MAX_PER_SOURCE) as u64,
        evicted: 0,
    };
    let (first, attack, before) = round(&mut good, t, addr, &plan, want);
    // The attackers hold their shares; another host connects and reads.
    {
        let (_a, mut q) = controller(addr, &opts());
        assert_eq!(q.read(1, 0, 8).expect("a new host reads").len(), 4096);
    }
    let c = hold_to_the_deadlines(&mut good, t, attack, &before);
    assert_eq!(c.refused, refused_by_limit(t, &before));
    assert_eq!(since(t, &before, Refused::Evicted), 0);
    wait_for(t, "the slowloris' slots given back", |t| {
        open_connections(t) == GOOD_QUEUES
    });
    let mut rounds = vec![first];
    for _ in 1..ROUNDS {
        let (r, attack, _) = round(&mut good, t, addr, &plan, want);
        end(attack, t);
        rounds.push(r);
    }
    report("slowloris", &rounds, &c);
    check(&rounds, SLOWLORIS_SHARE_MIN);
    s.stop().unwrap();
}

fn report(what: &str, rounds: &[Round], c: &Closes) {
    for (i, r) in rounds.iter().enumerate() {
        eprintln!(
            "{what} round {i}: alone {:.0} reads/s, during the connects {:.0} ({:.0}%), held {:.0} ({:.0}%), RSS +{:.1} MiB",
            r.alone,
            r.storm,
            100.0 * r.storm / r.alone,
            r.held,
            100.0 * r.held / r.alone,
            r.rss_added_bytes as f64 / (1 << 20) as f64,
        );
    }
    eprintln!(
        "{what}: {} refused, closed within {:?}; {} closed at the ICReq deadline, the last after {:?}; \
         {} at the Connect deadline, the last after {:?}; at most {} bytes trickled",
        c.refused,
        c.refused_worst,
        c.icreq,
        c.icreq_worst,
        c.connect,
        c.connect_worst,
        c.trickled_max
    );
}

/// The best round's share holds the bound; every round's RSS does.
fn check(rounds: &[Round], share_min: f64) {
    let best = rounds.iter().map(Round::share).fold(0.0, f64::max);
    assert!(
        best >= share_min,
        "the good client kept {:.0}% of its rate at best, under the {:.0}% bound",
        100.0 * best,
        100.0 * share_min
    );
    for r in rounds {
        assert!(
            r.rss_added_bytes < ATTACK_RSS_MAX_BYTES,
            "the attack added {} MiB of RSS",
            r.rss_added_bytes >> 20
        );
    }
}

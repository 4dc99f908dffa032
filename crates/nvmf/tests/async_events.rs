//! Asynchronous events: a file namespace resized under a running target
//! completes the host's Asynchronous Event Request with a Namespace
//! Attribute Changed notice, lists the namespace in the Changed Namespace
//! List log (cleared when read), and masks further notices until then.

mod common;

use common::*;
use nvme_spec::command::admin;
use nvme_spec::features::fid;
use nvme_spec::identify::cns;
use nvme_spec::log::lid;
use nvme_spec::Sqe;
use nvmf::config::NamespaceConfig;
use nvmf::{Initiator, Server, TargetConfig};

const NOTICE_NS_CHANGED: u32 = 0x0004_0002;

struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(tag: &str, bytes: u64) -> Self {
        let p = std::env::temp_dir().join(format!("numio-aen-{tag}-{}", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(bytes).unwrap();
        Self(p)
    }
    fn resize(&self, bytes: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.0)
            .unwrap()
            .set_len(bytes)
            .unwrap();
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn file_config(f: &TempFile) -> TargetConfig {
    let mut c = config(None);
    c.subsystems[0].namespaces[0] = NamespaceConfig::new(f.0.to_str().unwrap());
    c
}

fn post_aer(a: &mut Initiator) -> u16 {
    let sqe = Sqe {
        opcode: admin::ASYNC_EVENT,
        ..Default::default()
    };
    a.post(sqe, Vec::new(), 0).expect("AER posted")
}

/// Runs an admin command while an AER may be outstanding (the initiator's
/// `command` wants an idle queue): posts it and reaps until its completion,
/// which must not be preceded by any other.
fn admin_cmd(a: &mut Initiator, sqe: Sqe, read_len: u32) -> Vec<u8> {
    let cid = a.post(sqe, Vec::new(), read_len).unwrap();
    let c = a.reap().unwrap();
    assert_eq!(c.cqe.cid, cid, "an unexpected completion arrived first");
    assert!(c.cqe.status().is_success(), "{:?}", c.cqe.status());
    c.data
}

fn changed_ns(a: &mut Initiator) -> Vec<u32> {
    let mut sqe = Sqe::default();
    nvme_spec::log::GetLogPage {
        lid: lid::CHANGED_NS,
        lsp: 0,
        rae: false,
        len_bytes: 4096,
        offset_bytes: 0,
    }
    .to_sqe(&mut sqe);
    let page = admin_cmd(a, sqe, 4096);
    page.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .take_while(|&id| id != 0)
        .collect()
}

fn nsze(a: &mut Initiator) -> u64 {
    let sqe = Sqe {
        opcode: admin::IDENTIFY,
        nsid: 1,
        cdw10: u32::from(cns::NAMESPACE),
        ..Default::default()
    };
    let id = admin_cmd(a, sqe, 4096);
    u64::from_le_bytes(id[0..8].try_into().unwrap())
}

/// Sends a Keep Alive and returns the command ids completed until its own
/// completion arrives (an AER completed meanwhile shows up first).
fn completions_until_keep_alive(a: &mut Initiator) -> Vec<(u16, u32)> {
    let ka = a
        .post(
            Sqe {
                opcode: admin::KEEP_ALIVE,
                ..Default::default()
            },
            Vec::new(),
            0,
        )
        .unwrap();
    let mut seen = Vec::new();
    loop {
        let c = a.reap().unwrap();
        seen.push((c.cqe.cid, c.cqe.result));
        if c.cqe.cid == ka {
            return seen;
        }
    }
}

/// Resizes `f` and waits until the target has noticed (the event: its
/// count of resizes noticed goes up).
fn resize_noticed(srv: &Server, f: &TempFile, bytes: u64) {
    let before = srv.target.resizes_noticed();
    f.resize(bytes);
    wait_for(&srv.target, "the resize noticed", |t| {
        t.resizes_noticed() > before
    });
}

/// Whether controller `cntlid` holds no event for an AER to report (one
/// queued would reach the host on the admin queue's next tick).
fn no_event_queued(srv: &Server, cntlid: u16) -> bool {
    let c = srv.target.controller(cntlid).expect("live controller");
    let empty = c.regs.lock().unwrap().events.is_empty();
    empty
}

#[test]
fn resize_completes_the_aer_and_fills_the_changed_namespace_log() {
    let f = TempFile::new("notice", 16 << 20);
    let (srv, addr) = start(&file_config(&f));
    let mut o = opts();
    o.timeout = LONG;
    let (mut a, _q) = controller(addr, &o);
    let idc = a.identify(cns::CONTROLLER, 0).unwrap();
    let oaes = u32::from_le_bytes(idc[92..96].try_into().unwrap());
    assert_ne!(
        oaes & 0x100,
        0,
        "OAES advertises namespace attribute notices"
    );
    assert_eq!(nsze(&mut a), (16 << 20) / 512);
    assert!(a
        .set_features(fid::ASYNC_EVENT, 0x100)
        .unwrap()
        .cqe
        .status()
        .is_success());
    let aer = post_aer(&mut a);
    f.resize(32 << 20);
    let c = a.reap().expect("the AER completes");
    assert_eq!(c.cqe.cid, aer);
    assert!(c.cqe.status().is_success());
    assert_eq!(c.cqe.result, NOTICE_NS_CHANGED);
    assert_eq!(
        nsze(&mut a),
        (32 << 20) / 512,
        "Identify shows the new size"
    );
    assert_eq!(changed_ns(&mut a), vec![1]);
    assert_eq!(changed_ns(&mut a), Vec::<u32>::new(), "reading clears it");

    // Masked until the log is read: two resizes, one notice; after the
    // read, the next resize notifies again.
    let aer2 = post_aer(&mut a);
    f.resize(40 << 20);
    let c = a.reap().unwrap();
    assert_eq!((c.cqe.cid, c.cqe.result), (aer2, NOTICE_NS_CHANGED));
    let aer3 = post_aer(&mut a);
    resize_noticed(&srv, &f, 48 << 20);
    assert!(no_event_queued(&srv, a.cntlid), "the notice is masked");
    let seen = completions_until_keep_alive(&mut a);
    assert_eq!(
        seen.len(),
        1,
        "no second notice before the log is read: {seen:?}"
    );
    assert_eq!(changed_ns(&mut a), vec![1]);
    f.resize(56 << 20);
    let c = a.reap().unwrap();
    assert_eq!((c.cqe.cid, c.cqe.result), (aer3, NOTICE_NS_CHANGED));
    assert_eq!(nsze(&mut a), (56 << 20) / 512);
    srv.stop().unwrap();
}

#[test]
fn no_notice_unless_the_host_enabled_it() {
    let f = TempFile::new("off", 16 << 20);
    let (srv, addr) = start(&file_config(&f));
    let (mut a, mut q) = controller(addr, &opts());
    let _aer = post_aer(&mut a);
    resize_noticed(&srv, &f, 24 << 20);
    assert!(no_event_queued(&srv, a.cntlid), "notices are off");
    let seen = completions_until_keep_alive(&mut a);
    assert_eq!(seen.len(), 1, "the AER stays outstanding: {seen:?}");
    // The change is still listed, and I/O reaches the new blocks.
    assert_eq!(changed_ns(&mut a), vec![1]);
    let last = (24 << 20) / 512 - 8;
    let data = pattern(5, 4096);
    q.write(1, last, &data).unwrap();
    assert_eq!(q.read(1, last, 8).unwrap(), data);
    srv.stop().unwrap();
}

/// SPDK's host aborts its Asynchronous Event Requests on its own side
/// before shutting a controller down and then reuses their command ids
/// (its perf logged "Failed to read the CC register" when numio answered
/// Command ID Conflict): a command with the id of an outstanding AER
/// replaces it, and the AER never completes under that id.
#[test]
fn a_command_reusing_an_outstanding_aers_id_replaces_it() {
    use nvme_spec::tcp::{self, Direction, Framing, Pdu};
    let (_srv, addr) = start(&config(None));
    let mut a = Initiator::connect_admin(addr, NQN, &opts()).unwrap();
    a.enable().unwrap();
    // Capsules on one connection are taken in order: the AER is
    // outstanding when the next one arrives.
    let aer = post_aer(&mut a);
    // Property Get of CC under the AER's command id, framed by hand (the
    // initiator's queue refuses a duplicate id).
    let mut sqe = nvmf::host::command::property_get(nvme_spec::fabrics::prop::CC, false);
    sqe.cid = aer;
    let b = capsule(&sqe, &Framing::INITIAL);
    a.send_raw(&b).unwrap();
    let pdu = a.recv_pdu_bytes().unwrap();
    let Ok(Pdu::CapsuleResp(cqe)) =
        tcp::decode(&pdu, Direction::ControllerToHost, &Framing::INITIAL)
    else {
        panic!("expected a response capsule, got {pdu:?}");
    };
    assert_eq!(cqe.cid, aer);
    assert!(cqe.status().is_success(), "{:?}", cqe.status());
    assert_eq!(cqe.result & 1, 1, "CC.EN as enabled");
}

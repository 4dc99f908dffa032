//! Ports and ANA over loopback: a subsystem behind two listeners (two NVMe
//! ports), a host controller through each. Identify advertises ANA, each
//! port's ANA log shows its own state of the one group; a state change
//! completes the Asynchronous Event Request of that port's controller with
//! the ANA Change notice, I/O through an inaccessible port gets the path
//! status and I/O through the other port goes on; then back.

mod common;

use common::*;
use nvme_spec::ana::{self, AnaState, AEC_ANA_CHANGE, AEN_ANA_CHANGE};
use nvme_spec::command::{admin, io};
use nvme_spec::identify::{cns, IdentifyController, IdentifyNamespace, CMIC_ANA};
use nvme_spec::{Sqe, Status};
use nvmf::host::command::rw_sqe;
use nvmf::Initiator;

fn two_ports() -> nvmf::TargetConfig {
    let mut c = config(None);
    c.listen = vec![
        "127.0.0.1:0".parse().unwrap(),
        "127.0.0.1:0".parse().unwrap(),
    ];
    c.ana = vec!["optimized".into(), "non-optimized".into()];
    c
}

fn ana_log(a: &mut Initiator) -> (u64, Vec<ana::AnaGroup>) {
    let page = a.get_log_page(ana::LID_ANA, 0xFFFF_FFFF, 4096, 0).unwrap();
    ana::decode_ana_log(&page).unwrap()
}

fn post_aer(a: &mut Initiator) -> u16 {
    let sqe = Sqe {
        opcode: admin::ASYNC_EVENT,
        ..Default::default()
    };
    a.post(sqe, Vec::new(), 0).expect("AER posted")
}

fn read_status(q: &mut Initiator) -> Status {
    q.submit(rw_sqe(io::READ, 1, 0, 8), &[], 8 * 512)
        .unwrap()
        .cqe
        .status()
}

#[test]
fn two_ports_on_one_address_share_one_discovery_listener() {
    let mut c = two_ports();
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    c.discovery_port = probe.local_addr().unwrap().port();
    drop(probe);
    let s = nvmf::Server::start(&c).expect("two ports on 127.0.0.1 with discovery start");
    assert_eq!(s.discovery_addrs.len(), 1, "{:?}", s.discovery_addrs);
    // The discovery listener is not one of the subsystem's ports (the
    // discovery log lists the two NVMe ports): as nvmet, an NVM subsystem
    // Connect through it is refused, SUBNQN named as the bad field; the
    // discovery subsystem itself is served there.
    let d = s.discovery_addrs[0];
    let e = Initiator::connect_admin(d, NQN, &opts()).expect_err("no I/O subsystem on discovery");
    assert!(
        e.to_string().contains("sc=0x82"),
        "Connect Invalid Parameters: {e}"
    );
    Initiator::connect_admin(d, nvme_spec::fabrics::DISCOVERY_NQN, &opts())
        .expect("the discovery subsystem is served on the discovery listener");
    s.stop().unwrap();
}

#[test]
fn two_ports_report_their_own_ana_state_and_announce_changes() {
    let s = nvmf::Server::start(&two_ports()).expect("target starts");
    let (p1, p2) = (s.listen_addrs[0], s.listen_addrs[1]);
    let mut o = opts();
    o.timeout = LONG;
    let (mut a1, mut q1) = controller(p1, &o);
    let (mut a2, mut q2) = controller(p2, &o);
    assert_ne!(a1.cntlid, a2.cntlid, "one controller per port and host");

    let id = IdentifyController::decode(&a1.identify(cns::CONTROLLER, 0).unwrap());
    assert_ne!(id.cmic & CMIC_ANA, 0, "CMIC bit 3: ANA reporting");
    assert_eq!((id.anacap & 0x1F, id.anagrpmax, id.nanagrpid), (0x1F, 1, 1));
    assert_eq!((id.mnan, id.nn), (2, 2));
    assert!(id.anatt > 0);
    assert_ne!(id.oaes & (1 << 11), 0, "OAES: ANA Change notices");
    let ns = IdentifyNamespace::decode(&a2.identify(cns::NAMESPACE, 2).unwrap());
    assert_eq!(ns.anagrpid, 1);

    let (_, g1) = ana_log(&mut a1);
    let (_, g2) = ana_log(&mut a2);
    assert_eq!((g1[0].grpid, &g1[0].nsids[..]), (1, &[1, 2][..]));
    assert_eq!(
        (g1[0].state, g2[0].state),
        (AnaState::Optimized, AnaState::NonOptimized)
    );

    for a in [&mut a1, &mut a2] {
        let c = a.set_features(nvme_spec::features::fid::ASYNC_EVENT, AEC_ANA_CHANGE);
        assert!(c.unwrap().cqe.status().is_success());
    }
    let aer = post_aer(&mut a1);
    let change = s.target.set_ana_state(1, AnaState::Inaccessible).unwrap();
    assert_eq!(change.notified, 1, "only port 1's controller is told");
    let c = a1.reap().expect("the AER completes");
    assert_eq!((c.cqe.cid, c.cqe.result), (aer, AEN_ANA_CHANGE));
    let (chg, g1) = ana_log(&mut a1);
    assert_eq!(
        (chg, g1[0].state, g1[0].chgcnt),
        (1, AnaState::Inaccessible, 1)
    );
    assert_eq!(ana_log(&mut a2).1[0].state, AnaState::NonOptimized);

    let st = read_status(&mut q1);
    assert_eq!(
        st,
        Status::ANA_INACCESSIBLE,
        "SCT 3 SC 02h on the inaccessible path"
    );
    assert!(!st.dnr(), "the host may retry elsewhere");
    assert!(
        read_status(&mut q2).is_success(),
        "the other port serves I/O"
    );

    // Back: the log was read without RAE, so the next change notifies again.
    let aer = post_aer(&mut a1);
    assert_eq!(
        s.target
            .set_ana_state(1, AnaState::Optimized)
            .unwrap()
            .notified,
        1
    );
    let c = a1.reap().expect("the second AER completes");
    assert_eq!((c.cqe.cid, c.cqe.result), (aer, AEN_ANA_CHANGE));
    assert_eq!(ana_log(&mut a1).1[0].state, AnaState::Optimized);
    assert!(read_status(&mut q1).is_success());
    s.stop().unwrap();
}

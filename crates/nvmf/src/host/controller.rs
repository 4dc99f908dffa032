//! A controller as its host sees it: what the queues of one controller
//! share. Its admin queue creates it (Connect with a dynamic controller
//! id); each I/O queue is a [`HostQueue`](super::HostQueue) of its own,
//! connected to the same controller id, with its own transport below it.
//! No I/O here: the limits come from values the admin queue read.

use nvme_spec::fabrics::CNTLID_DYNAMIC;
use nvme_spec::identify::IdentifyController;
use nvme_spec::Sqe;

use super::command::{self, ConnectParams, HostIdentity};

/// Bytes of the SQE in a command capsule (IOCCSZ counts them).
const SQE_BYTES: u32 = 64;

/// What a controller takes, from CAP and Identify Controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerLimits {
    /// Largest transfer of one command (MDTS in CAP.MPSMIN pages;
    /// `u64::MAX` when MDTS is 0, no limit).
    pub max_transfer_bytes: u64,
    /// Largest write sent in the command capsule (IOCCSZ less the SQE).
    pub in_capsule_max_bytes: u32,
    /// Largest I/O queue it grants (CAP.MQES + 1).
    pub max_queue_entries: u32,
}

impl ControllerLimits {
    /// The limits in the CAP property and Identify Controller data.
    pub fn new(cap: u64, id: &IdentifyController) -> Self {
        // CAP.MPSMIN (bits 51:48) gives the page size MDTS counts in.
        let page = 4096u64 << ((cap >> 48) & 0xF);
        Self {
            max_transfer_bytes: match id.mdts {
                0 => u64::MAX,
                m => page << m,
            },
            in_capsule_max_bytes: (id.ioccsz * 16).saturating_sub(SQE_BYTES),
            max_queue_entries: (cap & 0xFFFF) as u32 + 1,
        }
    }
}

/// One controller of a subsystem: who connects to it, its id once the
/// admin queue's Connect returned it, and what it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller {
    /// The subsystem.
    pub subnqn: String,
    /// The host.
    pub host: HostIdentity,
    /// Controller id ([`CNTLID_DYNAMIC`] until the admin queue connects).
    pub cntlid: u16,
    /// What it takes, once read.
    pub limits: Option<ControllerLimits>,
}

impl Controller {
    /// A controller of `subnqn` not yet connected.
    pub fn new(subnqn: &str, host: HostIdentity) -> Self {
        Self {
            subnqn: subnqn.to_string(),
            host,
            cntlid: CNTLID_DYNAMIC,
            limits: None,
        }
    }

    /// The Connect of queue `qid` with `entries` entries (qid 0 creates
    /// the controller with keep-alive timeout `kato_ms`; another joins the
    /// controller the admin queue created) and its Connect data.
    pub fn connect(
        &self,
        qid: u16,
        entries: u16,
        kato_ms: u32,
        disable_sq_flow: bool,
    ) -> (Sqe, Vec<u8>) {
        let p = ConnectParams {
            qid,
            cntlid: if qid == 0 {
                CNTLID_DYNAMIC
            } else {
                self.cntlid
            },
            entries,
            kato_ms,
            disable_sq_flow,
        };
        command::connect(&self.host, &self.subnqn, &p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvme_spec::fabrics::ConnectData;

    #[test]
    fn limits_from_cap_and_identify() {
        let mut id = IdentifyController {
            mdts: 8,
            ioccsz: (64 + 16384) / 16,
            ..Default::default()
        };
        // MQES 127, MPSMIN 0 (4 KiB pages).
        let l = ControllerLimits::new(127, &id);
        assert_eq!(
            (
                l.max_transfer_bytes,
                l.in_capsule_max_bytes,
                l.max_queue_entries
            ),
            (1 << 20, 16384, 128)
        );
        // MPSMIN 1 (8 KiB pages); MDTS 0 is no limit.
        assert_eq!(
            ControllerLimits::new(1 << 48, &id).max_transfer_bytes,
            2 << 20
        );
        id.mdts = 0;
        id.ioccsz = 0;
        let l = ControllerLimits::new(0, &id);
        assert_eq!(
            (l.max_transfer_bytes, l.in_capsule_max_bytes),
            (u64::MAX, 0)
        );
    }

    #[test]
    fn io_queues_join_the_admin_queues_controller() {
        let host = HostIdentity {
            hostnqn: "nqn.h".into(),
            hostid: [1; 16],
        };
        let mut c = Controller::new("nqn.s", host);
        let (_, d) = c.connect(0, 32, 0, false);
        assert_eq!(ConnectData::decode(&d).unwrap().cntlid, CNTLID_DYNAMIC);
        c.cntlid = 5;
        let (_, d) = c.connect(2, 64, 0, false);
        assert_eq!(ConnectData::decode(&d).unwrap().cntlid, 5);
    }
}

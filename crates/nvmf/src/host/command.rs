//! The commands a host sends to set up and use a controller, as SQEs with
//! the data they move: Connect, Property Get/Set, Identify, Set Features,
//! Get Log Page, Keep Alive, Read and Write. No I/O: a queue
//! ([`HostQueue::submit`](super::HostQueue::submit)) frames them.

use nvme_spec::command::{admin, io};
use nvme_spec::fabrics::{self, ConnectCmd, ConnectData};
use nvme_spec::log::GetLogPage;
use nvme_spec::Sqe;

use super::queue::Transfer;

/// Bytes of Identify data.
pub const IDENTIFY_BYTES: u32 = 4096;
/// CC with the controller enabled and 64/16-byte queue entries
/// (IOSQES 6, IOCQES 4).
pub const CC_ENABLED: u32 = fabrics::CC_ENABLE | (6 << 16) | (4 << 20);

/// Connect attribute bit 2: the host disables SQ flow control (the
/// controller may then complete reads with C2HData SUCCESS).
const CATTR_DISABLE_SQ_FLOW: u8 = 0x04;

/// Who connects: the host's NQN and identifier, named by every Connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIdentity {
    /// Host NQN.
    pub hostnqn: String,
    /// Host identifier.
    pub hostid: [u8; 16],
}

/// What one queue's Connect asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectParams {
    /// Queue id: 0 for the admin queue.
    pub qid: u16,
    /// Controller id: [`fabrics::CNTLID_DYNAMIC`] for an admin queue, the
    /// admin queue's controller for an I/O queue.
    pub cntlid: u16,
    /// Submission queue entries (one-based).
    pub entries: u16,
    /// Keep alive timeout, ms (admin queue only; 0: none).
    pub kato_ms: u32,
    /// Disable SQ flow control.
    pub disable_sq_flow: bool,
}

/// The Connect command of a queue to subsystem `subnqn` and its 1024 bytes
/// of Connect data, sent in the capsule.
pub fn connect(host: &HostIdentity, subnqn: &str, p: &ConnectParams) -> (Sqe, Vec<u8>) {
    let mut sqe = Sqe::default();
    ConnectCmd {
        recfmt: 0,
        qid: p.qid,
        sqsize: p.entries - 1,
        cattr: if p.disable_sq_flow {
            CATTR_DISABLE_SQ_FLOW
        } else {
            0
        },
        kato_ms: if p.qid == 0 { p.kato_ms } else { 0 },
    }
    .to_sqe(&mut sqe);
    let data = ConnectData::new(host.hostid, p.cntlid, subnqn, &host.hostnqn).encode();
    (sqe, data)
}

/// Property Get of the 4- or 8-byte register at `offset`; the value comes
/// back in completion dwords 0 and 1.
pub fn property_get(offset: u32, eight_bytes: bool) -> Sqe {
    Sqe {
        opcode: admin::FABRICS,
        nsid: fabrics::FCTYPE_PROPERTY_GET as u32,
        cdw10: eight_bytes as u32,
        cdw11: offset,
        ..Default::default()
    }
}

/// Property Set of the 4-byte register at `offset`.
pub fn property_set(offset: u32, value: u32) -> Sqe {
    Sqe {
        opcode: admin::FABRICS,
        nsid: fabrics::FCTYPE_PROPERTY_SET as u32,
        cdw11: offset,
        cdw12: value,
        ..Default::default()
    }
}

/// Identify with `cns` for `nsid`; reads [`IDENTIFY_BYTES`].
pub fn identify(cns: u8, nsid: u32) -> (Sqe, Transfer) {
    let sqe = Sqe {
        opcode: admin::IDENTIFY,
        nsid,
        cdw10: cns as u32,
        ..Default::default()
    };
    (sqe, Transfer::FromController(IDENTIFY_BYTES))
}

/// Set Features `fid` to `cdw11`.
pub fn set_features(fid: u8, cdw11: u32) -> Sqe {
    Sqe {
        opcode: admin::SET_FEATURES,
        cdw10: fid as u32,
        cdw11,
        ..Default::default()
    }
}

/// Get Log Page `lid` of `nsid`: `len` bytes from byte `offset`.
pub fn get_log_page(lid: u8, nsid: u32, len: u32, offset: u64) -> (Sqe, Transfer) {
    let mut sqe = Sqe {
        nsid,
        ..Default::default()
    };
    GetLogPage {
        lid,
        lsp: 0,
        rae: false,
        len_bytes: len as u64,
        offset_bytes: offset,
    }
    .to_sqe(&mut sqe);
    (sqe, Transfer::FromController(len))
}

/// Keep Alive.
pub fn keep_alive() -> Sqe {
    Sqe {
        opcode: admin::KEEP_ALIVE,
        ..Default::default()
    }
}

/// A Read or Write SQE of `nlb` (one-based) blocks from `slba`.
pub fn rw_sqe(opcode: u8, nsid: u32, slba: u64, nlb: u32) -> Sqe {
    Sqe {
        opcode,
        nsid,
        cdw10: slba as u32,
        cdw11: (slba >> 32) as u32,
        cdw12: nlb.saturating_sub(1) & 0xFFFF,
        ..Default::default()
    }
}

/// A Read of `len_bytes` at byte `offset_bytes` of a namespace with
/// `2^lba_shift`-byte blocks (both multiples of the block).
pub fn read(nsid: u32, offset_bytes: u64, len_bytes: u32, lba_shift: u32) -> (Sqe, Transfer) {
    let sqe = rw_sqe(
        io::READ,
        nsid,
        offset_bytes >> lba_shift,
        len_bytes >> lba_shift,
    );
    (sqe, Transfer::FromController(len_bytes))
}

/// A Write of `len_bytes` at byte `offset_bytes` (see [`read`]).
pub fn write(nsid: u32, offset_bytes: u64, len_bytes: u32, lba_shift: u32) -> (Sqe, Transfer) {
    let sqe = rw_sqe(
        io::WRITE,
        nsid,
        offset_bytes >> lba_shift,
        len_bytes >> lba_shift,
    );
    (sqe, Transfer::ToController(len_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvme_spec::fabrics::CNTLID_DYNAMIC;

    #[test]
    fn connect_names_the_queue_host_and_subsystem() {
        let host = HostIdentity {
            hostnqn: "nqn.2026-01.io.numio:h".into(),
            hostid: [7; 16],
        };
        let p = ConnectParams {
            qid: 0,
            cntlid: CNTLID_DYNAMIC,
            entries: 32,
            kato_ms: 5000,
            disable_sq_flow: true,
        };
        let (sqe, data) = connect(&host, "nqn.2026-01.io.numio:s", &p);
        let c = ConnectCmd::from_sqe(&sqe);
        assert_eq!((c.qid, c.sqsize, c.cattr, c.kato_ms), (0, 31, 4, 5000));
        let d = ConnectData::decode(&data).unwrap();
        assert_eq!(
            (d.cntlid, d.hostid, d.subnqn_str(), d.hostnqn_str()),
            (CNTLID_DYNAMIC, [7; 16], p_str("s"), p_str("h"))
        );
        // An I/O queue's Connect carries no keep-alive.
        let io = ConnectParams { qid: 3, ..p };
        assert_eq!(ConnectCmd::from_sqe(&connect(&host, "x", &io).0).kato_ms, 0);
    }

    fn p_str(s: &str) -> String {
        format!("nqn.2026-01.io.numio:{s}")
    }

    #[test]
    fn reads_and_writes_count_blocks() {
        let (sqe, x) = read(1, 8192, 4096, 9);
        assert_eq!((sqe.opcode, sqe.slba(), sqe.nlb()), (io::READ, 16, 8));
        assert_eq!(x, Transfer::FromController(4096));
        let (sqe, x) = write(2, 4096, 4096, 12);
        assert_eq!((sqe.nsid, sqe.slba(), sqe.nlb()), (2, 1, 1));
        assert_eq!(x, Transfer::ToController(4096));
    }
}

//! NVMe over Fabrics: fabrics command types, Connect data, controller
//! properties (CAP, VS, CC, CSTS) and the well-known NQNs.

use crate::bytes::{get_u16, put_str_zero_padded, put_u16};

/// Fabrics command type: Property Set.
pub const FCTYPE_PROPERTY_SET: u8 = 0x00;
/// Fabrics command type: Connect.
pub const FCTYPE_CONNECT: u8 = 0x01;
/// Fabrics command type: Property Get.
pub const FCTYPE_PROPERTY_GET: u8 = 0x04;
/// Fabrics command type: Disconnect.
pub const FCTYPE_DISCONNECT: u8 = 0x08;

/// NQN of the discovery subsystem.
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";
/// Longest NQN in bytes (the field is 256 bytes with a NUL).
pub const NQN_MAX_LEN: usize = 223;
/// Controller id meaning "allocate any" in Connect data (dynamic model).
pub const CNTLID_DYNAMIC: u16 = 0xFFFF;

/// Property offsets.
pub mod prop {
    /// Controller capabilities (8 bytes).
    pub const CAP: u32 = 0x00;
    /// Version (4 bytes).
    pub const VS: u32 = 0x08;
    /// Controller configuration (4 bytes).
    pub const CC: u32 = 0x14;
    /// Controller status (4 bytes).
    pub const CSTS: u32 = 0x1C;
    /// NVM subsystem reset (4 bytes).
    pub const NSSR: u32 = 0x20;
}

/// CC.EN.
pub const CC_ENABLE: u32 = 1;
/// CC.SHN shift and mask (2 bits).
pub const CC_SHN_SHIFT: u32 = 14;
/// CSTS.RDY.
pub const CSTS_READY: u32 = 1;
/// CSTS.CFS (controller fatal status).
pub const CSTS_FATAL: u32 = 1 << 1;
/// CSTS.SHST = shutdown processing complete.
pub const CSTS_SHST_COMPLETE: u32 = 2 << 2;

/// Version register value for NVMe `major.minor.tertiary`.
pub const fn version(major: u32, minor: u32, tertiary: u32) -> u32 {
    (major << 16) | (minor << 8) | tertiary
}

/// Builds CAP: MQES (zero-based), CQR, TO in 500 ms units, CSS NVM, 4 KiB pages.
pub const fn cap(mqes_zero_based: u16, timeout_500ms: u8) -> u64 {
    mqes_zero_based as u64 | (1 << 16) | ((timeout_500ms as u64) << 24) | (1 << 37)
}

/// Connect command fields (SQE CDW10..12 on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectCmd {
    /// Record format (0).
    pub recfmt: u16,
    /// Queue id: 0 admin, else I/O.
    pub qid: u16,
    /// Submission queue size, zero-based.
    pub sqsize: u16,
    /// Connect attributes.
    pub cattr: u8,
    /// Keep alive timeout in milliseconds (admin queue only).
    pub kato_ms: u32,
}

impl ConnectCmd {
    /// Reads the Connect fields out of an SQE.
    pub fn from_sqe(s: &crate::command::Sqe) -> Self {
        Self {
            recfmt: (s.cdw10 & 0xFFFF) as u16,
            qid: (s.cdw10 >> 16) as u16,
            sqsize: (s.cdw11 & 0xFFFF) as u16,
            cattr: ((s.cdw11 >> 16) & 0xFF) as u8,
            kato_ms: s.cdw12,
        }
    }

    /// Writes the Connect fields into an SQE.
    pub fn to_sqe(&self, s: &mut crate::command::Sqe) {
        s.opcode = crate::command::admin::FABRICS;
        s.nsid = FCTYPE_CONNECT as u32;
        s.cdw10 = self.recfmt as u32 | ((self.qid as u32) << 16);
        s.cdw11 = self.sqsize as u32 | ((self.cattr as u32) << 16);
        s.cdw12 = self.kato_ms;
    }
}

/// The 1024-byte Connect data.
#[repr(C)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectData {
    /// Host identifier.
    pub hostid: [u8; 16],
    /// Controller id (0xFFFF: allocate on admin connect).
    pub cntlid: u16,
    /// Reserved.
    pub rsvd: [u8; 238],
    /// Subsystem NQN (NUL terminated).
    pub subnqn: [u8; 256],
    /// Host NQN (NUL terminated).
    pub hostnqn: [u8; 256],
    /// Reserved.
    pub rsvd2: [u8; 256],
}
const _: () = assert!(core::mem::size_of::<ConnectData>() == 1024);

/// A Connect data field that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectDataError {
    /// Fewer than 1024 bytes.
    #[error("connect data is {len} bytes, 1024 needed")]
    Short {
        /// Bytes received.
        len: usize,
    },
    /// An NQN without a NUL or empty.
    #[error("connect data {field} (byte offset {offset}) is not a NUL-terminated NQN")]
    BadNqn {
        /// Field name.
        field: &'static str,
        /// Byte offset of the field.
        offset: u32,
    },
}

impl ConnectData {
    /// Wire size.
    pub const SIZE: usize = 1024;

    /// Builds Connect data.
    pub fn new(hostid: [u8; 16], cntlid: u16, subnqn: &str, hostnqn: &str) -> Self {
        let mut d = Self {
            hostid,
            cntlid,
            rsvd: [0; 238],
            subnqn: [0; 256],
            hostnqn: [0; 256],
            rsvd2: [0; 256],
        };
        put_str_zero_padded(&mut d.subnqn, 0, 256, subnqn);
        put_str_zero_padded(&mut d.hostnqn, 0, 256, hostnqn);
        d
    }

    /// Decodes and checks both NQNs are NUL terminated UTF-8, the
    /// subsystem's non-empty. An empty host NQN decodes (SPDK's perf sends
    /// one unless told `hostnqn:`; Linux nvmet and SPDK's target admit it
    /// where any host may connect): the target decides.
    pub fn decode(b: &[u8]) -> Result<Self, ConnectDataError> {
        if b.len() < Self::SIZE {
            return Err(ConnectDataError::Short { len: b.len() });
        }
        for (field, offset) in [("subnqn", 256usize), ("hostnqn", 512usize)] {
            let f = &b[offset..offset + 256];
            let end = f.iter().position(|&c| c == 0);
            let empty_refused = f[0] == 0 && field == "subnqn";
            if empty_refused || end.is_none_or(|e| std::str::from_utf8(&f[..e]).is_err()) {
                return Err(ConnectDataError::BadNqn {
                    field,
                    offset: offset as u32,
                });
            }
        }
        let mut d = Self::new([0; 16], get_u16(b, 16), "", "");
        d.hostid.copy_from_slice(&b[0..16]);
        d.subnqn.copy_from_slice(&b[256..512]);
        d.hostnqn.copy_from_slice(&b[512..768]);
        Ok(d)
    }

    /// Encodes into 1024 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; Self::SIZE];
        b[0..16].copy_from_slice(&self.hostid);
        put_u16(&mut b, 16, self.cntlid);
        b[256..512].copy_from_slice(&self.subnqn);
        b[512..768].copy_from_slice(&self.hostnqn);
        b
    }

    /// Subsystem NQN as text: every byte before the NUL, nothing trimmed
    /// (an NQN is compared exactly; a trailing space makes another NQN).
    pub fn subnqn_str(&self) -> String {
        nqn_text(&self.subnqn)
    }

    /// Host NQN as text, exactly as sent (see [`ConnectData::subnqn_str`]).
    pub fn hostnqn_str(&self) -> String {
        nqn_text(&self.hostnqn)
    }
}

/// The UTF-8 text of an NQN field up to its NUL, untrimmed.
fn nqn_text(field: &[u8]) -> String {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Sqe;

    #[test]
    fn connect_data_round_trip_and_errors() {
        let d = ConnectData::new(
            [7; 16],
            CNTLID_DYNAMIC,
            "nqn.2026-01.io.numio:sub",
            "nqn.host",
        );
        let b = d.encode();
        assert_eq!(b.len(), 1024);
        assert_eq!(&b[16..18], &[0xFF, 0xFF]);
        assert_eq!(&b[256..260], b"nqn.");
        let back = ConnectData::decode(&b).unwrap();
        assert_eq!(back, d);
        assert_eq!(back.subnqn_str(), "nqn.2026-01.io.numio:sub");
        assert_eq!(back.hostnqn_str(), "nqn.host");
        assert_eq!(
            ConnectData::decode(&b[..1000]),
            Err(ConnectDataError::Short { len: 1000 })
        );
        let mut bad = b.clone();
        bad[512..768].fill(b'a');
        assert_eq!(
            ConnectData::decode(&bad),
            Err(ConnectDataError::BadNqn {
                field: "hostnqn",
                offset: 512
            })
        );
        let mut anonymous = b.clone();
        anonymous[512..768].fill(0);
        assert_eq!(ConnectData::decode(&anonymous).unwrap().hostnqn_str(), "");
        let mut no_subsystem = b.clone();
        no_subsystem[256..512].fill(0);
        assert!(matches!(
            ConnectData::decode(&no_subsystem),
            Err(ConnectDataError::BadNqn {
                field: "subnqn",
                ..
            })
        ));
        let mut not_utf8 = b.clone();
        not_utf8[256..259].copy_from_slice(&[b'n', 0xFF, 0]);
        assert_eq!(
            ConnectData::decode(&not_utf8),
            Err(ConnectDataError::BadNqn {
                field: "subnqn",
                offset: 256
            })
        );
        // A trailing space is part of the NQN: never trimmed away.
        let spaced = ConnectData::new([0; 16], 1, "nqn.2026-01.io.numio:a ", "nqn.h ");
        let back = ConnectData::decode(&spaced.encode()).unwrap();
        assert_eq!(
            (back.subnqn_str(), back.hostnqn_str()),
            ("nqn.2026-01.io.numio:a ".to_string(), "nqn.h ".to_string())
        );
    }

    #[test]
    fn connect_cmd_round_trip() {
        let c = ConnectCmd {
            recfmt: 0,
            qid: 3,
            sqsize: 127,
            cattr: 0,
            kato_ms: 5000,
        };
        let mut s = Sqe::default();
        c.to_sqe(&mut s);
        assert_eq!(s.fctype(), FCTYPE_CONNECT);
        let b = s.encode();
        assert_eq!(&b[42..44], &[3, 0], "QID at byte 42");
        assert_eq!(&b[44..46], &[127, 0], "SQSIZE at byte 44");
        assert_eq!(ConnectCmd::from_sqe(&Sqe::decode(&b)), c);
    }

    #[test]
    fn cap_fields() {
        let c = cap(127, 20);
        assert_eq!(c & 0xFFFF, 127);
        assert_eq!((c >> 16) & 1, 1);
        assert_eq!((c >> 24) & 0xFF, 20);
        assert_eq!((c >> 37) & 1, 1);
        assert_eq!(version(1, 3, 0), 0x0001_0300);
    }
}

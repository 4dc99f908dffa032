//! Get Log Page: identifiers, command fields and the pages a target returns
//! (error information, SMART / health, discovery). The changed namespace
//! list is a list of namespace ids, built by the target.

use crate::bytes::{
    get_str, get_u16, get_u64, put_ascii_padded, put_str_zero_padded, put_u16, put_u64,
};

/// Log page identifiers.
pub mod lid {
    /// Error information.
    pub const ERROR_INFO: u8 = 0x01;
    /// SMART / health information.
    pub const SMART: u8 = 0x02;
    /// Firmware slot information.
    pub const FW_SLOT: u8 = 0x03;
    /// Changed namespace list.
    pub const CHANGED_NS: u8 = 0x04;
    /// Commands supported and effects.
    pub const CMD_EFFECTS: u8 = 0x05;
    /// Asymmetric Namespace Access ([`crate::ana`]).
    pub const ANA: u8 = 0x0C;
    /// Discovery log (discovery controllers only).
    pub const DISCOVERY: u8 = 0x70;
}

/// Get Log Page command fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetLogPage {
    /// Log page id.
    pub lid: u8,
    /// Log specific field.
    pub lsp: u8,
    /// Retain asynchronous event.
    pub rae: bool,
    /// Bytes requested.
    pub len_bytes: u64,
    /// Byte offset into the page.
    pub offset_bytes: u64,
}

impl GetLogPage {
    /// From CDW10..13.
    pub fn from_sqe(s: &crate::command::Sqe) -> Self {
        let numd = ((s.cdw10 >> 16) as u64 | (((s.cdw11 & 0xFFFF) as u64) << 16)) + 1;
        Self {
            lid: (s.cdw10 & 0xFF) as u8,
            lsp: ((s.cdw10 >> 8) & 0x7F) as u8,
            rae: s.cdw10 & (1 << 15) != 0,
            len_bytes: numd * 4,
            offset_bytes: s.cdw12 as u64 | ((s.cdw13 as u64) << 32),
        }
    }

    /// Writes into an SQE (len must be a non-zero dword multiple).
    pub fn to_sqe(&self, s: &mut crate::command::Sqe) {
        let numd = self.len_bytes / 4 - 1;
        s.opcode = crate::command::admin::GET_LOG_PAGE;
        s.cdw10 = self.lid as u32
            | ((self.lsp as u32) << 8)
            | ((self.rae as u32) << 15)
            | (((numd & 0xFFFF) as u32) << 16);
        s.cdw11 = (numd >> 16) as u32;
        s.cdw12 = self.offset_bytes as u32;
        s.cdw13 = (self.offset_bytes >> 32) as u32;
    }
}

/// Size of one error information log entry.
pub const ERROR_ENTRY_SIZE: usize = 64;
/// Size of the SMART / health page.
pub const SMART_SIZE: usize = 512;

/// One error information log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorEntry {
    /// Error count (unique, increasing; 0 = empty entry).
    pub error_count: u64,
    /// Submission queue id.
    pub sqid: u16,
    /// Command id.
    pub cid: u16,
    /// Status field (bits 15:1) and phase.
    pub status: u16,
    /// LBA.
    pub lba: u64,
    /// Namespace.
    pub nsid: u32,
}

impl ErrorEntry {
    /// Encodes 64 bytes.
    pub fn encode(&self) -> [u8; ERROR_ENTRY_SIZE] {
        let mut b = [0u8; ERROR_ENTRY_SIZE];
        put_u64(&mut b, 0, self.error_count);
        put_u16(&mut b, 8, self.sqid);
        put_u16(&mut b, 10, self.cid);
        put_u16(&mut b, 12, self.status);
        put_u16(&mut b, 14, 0xFFFF); // parameter error location: none
        put_u64(&mut b, 16, self.lba);
        b[24..28].copy_from_slice(&self.nsid.to_le_bytes());
        b[29] = 3; // transport type TCP
        b
    }

    /// Decodes 64 bytes.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            error_count: get_u64(b, 0),
            sqid: get_u16(b, 8),
            cid: get_u16(b, 10),
            status: get_u16(b, 12),
            lba: get_u64(b, 16),
            nsid: u32::from_le_bytes([b[24], b[25], b[26], b[27]]),
        }
    }
}

/// SMART / health counters a target keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmartLog {
    /// Composite temperature in kelvin.
    pub temperature_k: u16,
    /// Available spare, percent.
    pub avail_spare_pct: u8,
    /// Bytes read by hosts.
    pub read_bytes: u64,
    /// Bytes written by hosts.
    pub written_bytes: u64,
    /// Read commands completed.
    pub host_reads: u64,
    /// Write commands completed.
    pub host_writes: u64,
    /// Power on hours.
    pub power_on_hours: u64,
    /// Error log entries over the controller's life.
    pub error_entries: u64,
}

impl SmartLog {
    /// Encodes the 512-byte page. Data units are thousands of 512-byte units,
    /// rounded up.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; SMART_SIZE];
        put_u16(&mut b, 1, self.temperature_k);
        b[3] = self.avail_spare_pct;
        b[4] = 10; // spare threshold
        put_u64(&mut b, 32, self.read_bytes.div_ceil(512_000));
        put_u64(&mut b, 48, self.written_bytes.div_ceil(512_000));
        put_u64(&mut b, 64, self.host_reads);
        put_u64(&mut b, 80, self.host_writes);
        put_u64(&mut b, 128, self.power_on_hours);
        put_u64(&mut b, 176, self.error_entries);
        b
    }

    /// Data units read and written, as the page reports them.
    pub fn decode_data_units(b: &[u8]) -> (u64, u64) {
        (get_u64(b, 32), get_u64(b, 48))
    }
}

/// Size of the discovery log page header and of each entry.
pub const DISCOVERY_RECORD_SIZE: usize = 1024;

/// Transport type: RDMA.
pub const TRTYPE_RDMA: u8 = 1;
/// Transport type: TCP.
pub const TRTYPE_TCP: u8 = 3;
/// TSAS of an RDMA port: QP type reliable connected.
pub const RDMA_QPTYPE_CONNECTED: u8 = 1;
/// TSAS of an RDMA port: provider type not specified.
pub const RDMA_PRTYPE_NOT_SPECIFIED: u8 = 1;
/// TSAS of an RDMA port: connection management RDMA_CM.
pub const RDMA_CMS_RDMA_CM: u8 = 1;
/// Address family: IPv4.
pub const ADRFAM_IPV4: u8 = 1;
/// Address family: IPv6.
pub const ADRFAM_IPV6: u8 = 2;
/// Subsystem type: NVM subsystem.
pub const SUBTYPE_NVME: u8 = 2;
/// Subsystem type: current discovery subsystem.
pub const SUBTYPE_CURRENT_DISCOVERY: u8 = 3;
/// TREQ secure channel: required (bits 1:0 = 01b).
pub const TREQ_SECURE_CHANNEL_REQUIRED: u8 = 1;
/// TSAS security type of a TCP port: TLS 1.3 (NVMe/TCP §3.6.1.1).
pub const TCP_SECTYPE_TLS13: u8 = 2;

/// One discovery log page entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryEntry {
    /// Transport type.
    pub trtype: u8,
    /// Address family.
    pub adrfam: u8,
    /// Subsystem type.
    pub subtype: u8,
    /// Transport requirements.
    pub treq: u8,
    /// Port id.
    pub portid: u16,
    /// Controller id (0xFFFF: dynamic).
    pub cntlid: u16,
    /// Admin max submission queue size.
    pub asqsz: u16,
    /// Transport service id (the TCP port, as text).
    pub trsvcid: String,
    /// Subsystem NQN.
    pub subnqn: String,
    /// Transport address.
    pub traddr: String,
    /// TSAS of a TCP port: its security type (0 none,
    /// [`TCP_SECTYPE_TLS13`]); 0 for other transports. An RDMA entry's TSAS
    /// is always reliable connected through RDMA_CM (written by `encode`).
    pub tcp_sectype: u8,
}

impl DiscoveryEntry {
    /// Encodes 1024 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; DISCOVERY_RECORD_SIZE];
        b[0] = self.trtype;
        b[1] = self.adrfam;
        b[2] = self.subtype;
        b[3] = self.treq;
        put_u16(&mut b, 4, self.portid);
        put_u16(&mut b, 6, self.cntlid);
        put_u16(&mut b, 8, self.asqsz);
        put_ascii_padded(&mut b, 32, 32, &self.trsvcid);
        put_str_zero_padded(&mut b, 256, 256, &self.subnqn);
        put_ascii_padded(&mut b, 512, 256, &self.traddr);
        if self.trtype == TRTYPE_RDMA {
            // RDMA TSAS: RDMA_QPTYPE, RDMA_PRTYPE (not specified), RDMA_CMS.
            b[768] = RDMA_QPTYPE_CONNECTED;
            b[769] = RDMA_PRTYPE_NOT_SPECIFIED;
            b[770] = RDMA_CMS_RDMA_CM;
        } else if self.trtype == TRTYPE_TCP {
            b[768] = self.tcp_sectype;
        }
        b
    }

    /// Decodes 1024 bytes.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            trtype: b[0],
            adrfam: b[1],
            subtype: b[2],
            treq: b[3],
            portid: get_u16(b, 4),
            cntlid: get_u16(b, 6),
            asqsz: get_u16(b, 8),
            trsvcid: get_str(b, 32, 32),
            subnqn: get_str(b, 256, 256),
            traddr: get_str(b, 512, 256),
            tcp_sectype: if b[0] == TRTYPE_TCP { b[768] } else { 0 },
        }
    }
}

/// Encodes a whole discovery log page: header (generation counter, record
/// count, format 0) followed by the entries.
pub fn encode_discovery_log(genctr: u64, entries: &[DiscoveryEntry]) -> Vec<u8> {
    let mut b = vec![0u8; DISCOVERY_RECORD_SIZE];
    put_u64(&mut b, 0, genctr);
    put_u64(&mut b, 8, entries.len() as u64);
    for e in entries {
        b.extend_from_slice(&e.encode());
    }
    b
}

/// Decodes a discovery log page into (generation counter, entries present).
pub fn decode_discovery_log(b: &[u8]) -> (u64, Vec<DiscoveryEntry>) {
    if b.len() < 16 {
        return (0, Vec::new());
    }
    let numrec = get_u64(b, 8) as usize;
    let entries = b[DISCOVERY_RECORD_SIZE.min(b.len())..]
        .chunks_exact(DISCOVERY_RECORD_SIZE)
        .take(numrec)
        .map(DiscoveryEntry::decode)
        .collect();
    (get_u64(b, 0), entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Sqe;

    #[test]
    fn get_log_page_fields() {
        let g = GetLogPage {
            lid: lid::DISCOVERY,
            lsp: 0,
            rae: true,
            len_bytes: 4 * 0x1_0001,
            offset_bytes: 1 << 33,
        };
        let mut s = Sqe::default();
        g.to_sqe(&mut s);
        assert_eq!(s.cdw11, 1);
        assert_eq!(GetLogPage::from_sqe(&s), g);
    }

    #[test]
    fn rdma_entries_carry_the_rdma_tsas() {
        let e = DiscoveryEntry {
            trtype: TRTYPE_RDMA,
            adrfam: ADRFAM_IPV4,
            subtype: SUBTYPE_NVME,
            treq: 0,
            portid: 2,
            cntlid: 0xFFFF,
            asqsz: 32,
            trsvcid: "4420".into(),
            subnqn: "nqn.x:y".into(),
            traddr: "10.0.0.1".into(),
            tcp_sectype: 0,
        };
        let b = e.encode();
        // nvme-cli prints these as rdma_qptype connected, rdma_prtype not
        // specified, rdma_cms rdma-cm.
        assert_eq!(&b[768..771], &[1, 1, 1]);
        assert_eq!(DiscoveryEntry::decode(&b), e);
    }

    #[test]
    fn discovery_log_round_trip() {
        let e = DiscoveryEntry {
            trtype: TRTYPE_TCP,
            adrfam: ADRFAM_IPV4,
            subtype: SUBTYPE_NVME,
            treq: 0,
            portid: 1,
            cntlid: 0xFFFF,
            asqsz: 32,
            trsvcid: "4420".into(),
            subnqn: "nqn.a".into(),
            traddr: "127.0.0.1".into(),
            tcp_sectype: TCP_SECTYPE_TLS13,
        };
        let page = encode_discovery_log(7, &[e.clone(), e.clone()]);
        assert_eq!(page.len(), 3 * 1024);
        assert_eq!(&page[1024 + 32..1024 + 36], b"4420");
        assert_eq!(page[1024 + 36], b' ');
        let (gen, entries) = decode_discovery_log(&page);
        assert_eq!((gen, entries.len()), (7, 2));
        assert_eq!(entries[0], e);
        // A truncated page yields what is complete, never a panic.
        assert_eq!(decode_discovery_log(&page[..2000]).1.len(), 0);
        assert_eq!(decode_discovery_log(&page[..10]).1.len(), 0);
    }

    #[test]
    fn smart_and_error_entries() {
        let s = SmartLog {
            read_bytes: 512_001,
            written_bytes: 512_000,
            ..Default::default()
        };
        assert_eq!(SmartLog::decode_data_units(&s.encode()), (2, 1));
        let e = ErrorEntry {
            error_count: 1,
            sqid: 2,
            cid: 3,
            status: 4,
            lba: 5,
            nsid: 6,
        };
        assert_eq!(ErrorEntry::decode(&e.encode()), e);
    }
}

//! Identify data structures (CNS 0x00 namespace, 0x01 controller, 0x02 active
//! namespace list, 0x03 namespace identification descriptors).
//!
//! Each structure is 4096 bytes on the wire; only the fields a fabrics target
//! fills are modelled, at their byte offsets from the NVMe base spec.

use crate::bytes::{
    get_str, get_u16, get_u32, get_u64, put_ascii_padded, put_str_zero_padded, put_u16, put_u32,
    put_u64,
};

/// Size of every Identify data structure.
pub const IDENTIFY_SIZE: usize = 4096;

/// CNS values.
pub mod cns {
    /// Identify namespace.
    pub const NAMESPACE: u8 = 0x00;
    /// Identify controller.
    pub const CONTROLLER: u8 = 0x01;
    /// Active namespace id list.
    pub const ACTIVE_NS_LIST: u8 = 0x02;
    /// Namespace identification descriptor list.
    pub const NS_DESC_LIST: u8 = 0x03;
    /// I/O command set specific Identify controller.
    pub const CS_CONTROLLER: u8 = 0x06;
}

/// Controller type: I/O controller.
pub const CNTRLTYPE_IO: u8 = 1;
/// Controller type: discovery controller.
pub const CNTRLTYPE_DISCOVERY: u8 = 2;
/// ONCS bit: Dataset Management.
pub const ONCS_DSM: u16 = 1 << 2;
/// ONCS bit: Write Zeroes.
pub const ONCS_WRITE_ZEROES: u16 = 1 << 3;
/// OAES bit: namespace attribute notices.
pub const OAES_NS_ATTR: u32 = 1 << 8;
/// CMIC bit 3: Asymmetric Namespace Access reporting.
pub const CMIC_ANA: u8 = 1 << 3;
/// OAES bit 11: Asymmetric Namespace Access Change notices.
pub const OAES_ANA_CHANGE: u32 = 1 << 11;
/// ANACAP bit 0: reports the ANA Optimized state.
pub const ANACAP_OPTIMIZED: u8 = 1 << 0;
/// ANACAP bit 1: reports the ANA Non-Optimized state.
pub const ANACAP_NON_OPTIMIZED: u8 = 1 << 1;
/// ANACAP bit 2: reports the ANA Inaccessible state.
pub const ANACAP_INACCESSIBLE: u8 = 1 << 2;
/// ANACAP bit 3: reports the ANA Persistent Loss state.
pub const ANACAP_PERSISTENT_LOSS: u8 = 1 << 3;
/// ANACAP bit 4: reports the ANA Change state.
pub const ANACAP_CHANGE: u8 = 1 << 4;
/// ANACAP bit 6: a namespace's ANAGRPID does not change while attached.
pub const ANACAP_GRPID_STATIC: u8 = 1 << 6;
/// SGLS bits: SGLs supported (bit 0) and offset SGLs for in-capsule data (bit 20).
pub const SGLS_SUPPORTED: u32 = 1;
/// SGLS bits 1:0: 01b SGLs supported for NVM commands with no alignment
/// requirement, 10b with dword alignment, 00b not supported.
pub const SGLS_SUPPORT_MASK: u32 = 3;

/// Whether a controller reporting `sgls` takes SGLs in NVM I/O commands.
pub fn sgls_for_io(sgls: u32) -> bool {
    sgls & SGLS_SUPPORT_MASK != 0
}

/// SGLS bit 20: SGL offset supported.
pub const SGLS_OFFSET: u32 = 1 << 20;

/// Identify Controller fields a fabrics target reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdentifyController {
    /// PCI vendor id.
    pub vid: u16,
    /// Serial number (20 ASCII).
    pub serial: String,
    /// Model number (40 ASCII).
    pub model: String,
    /// Firmware revision (8 ASCII).
    pub firmware: String,
    /// Controller multi-path I/O and sharing capabilities.
    pub cmic: u8,
    /// Maximum data transfer size as a power of two of 4 KiB pages (0 = none).
    pub mdts: u8,
    /// Controller id.
    pub cntlid: u16,
    /// Version.
    pub ver: u32,
    /// Optional asynchronous events supported.
    pub oaes: u32,
    /// Controller type.
    pub cntrltype: u8,
    /// Abort command limit, zero-based.
    pub acl: u8,
    /// Asynchronous event request limit, zero-based.
    pub aerl: u8,
    /// Log page attributes.
    pub lpa: u8,
    /// Error log page entries, zero-based.
    pub elpe: u8,
    /// Keep alive support granularity in 100 ms units (0 = unsupported).
    pub kas: u16,
    /// Maximum outstanding commands.
    pub maxcmd: u16,
    /// Number of namespaces (highest valid nsid).
    pub nn: u32,
    /// Optional NVM command support.
    pub oncs: u16,
    /// Volatile write cache present (bit 0).
    pub vwc: u8,
    /// SGL support.
    pub sgls: u32,
    /// ANA transition time, seconds (0 without ANA reporting).
    pub anatt: u8,
    /// ANA capabilities (the [`ANACAP_OPTIMIZED`].. bits).
    pub anacap: u8,
    /// Largest ANA group id.
    pub anagrpmax: u32,
    /// Number of ANA group ids the controller supports.
    pub nanagrpid: u32,
    /// Maximum number of allowed namespaces (needed with ANA reporting).
    pub mnan: u32,
    /// Subsystem NQN.
    pub subnqn: String,
    /// I/O queue command capsule supported size in 16-byte units.
    pub ioccsz: u32,
    /// I/O queue response capsule supported size in 16-byte units.
    pub iorcsz: u32,
    /// In-capsule data offset in 16-byte units.
    pub icdoff: u16,
    /// Maximum SGL data block descriptors.
    pub msdbd: u8,
}

impl IdentifyController {
    /// Encodes into 4096 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; IDENTIFY_SIZE];
        put_u16(&mut b, 0, self.vid);
        put_u16(&mut b, 2, self.vid);
        put_ascii_padded(&mut b, 4, 20, &self.serial);
        put_ascii_padded(&mut b, 24, 40, &self.model);
        put_ascii_padded(&mut b, 64, 8, &self.firmware);
        b[72] = 6; // RAB
        b[76] = self.cmic;
        b[77] = self.mdts;
        put_u16(&mut b, 78, self.cntlid);
        put_u32(&mut b, 80, self.ver);
        put_u32(&mut b, 92, self.oaes);
        b[111] = self.cntrltype;
        b[258] = self.acl;
        b[259] = self.aerl;
        b[260] = 0x03; // FRMW: slot 1 read-only, one slot
        b[261] = self.lpa;
        b[262] = self.elpe;
        put_u16(&mut b, 320, self.kas);
        b[342] = self.anatt;
        b[343] = self.anacap;
        put_u32(&mut b, 344, self.anagrpmax);
        put_u32(&mut b, 348, self.nanagrpid);
        b[512] = 0x66; // SQES: 64 bytes
        b[513] = 0x44; // CQES: 16 bytes
        put_u16(&mut b, 514, self.maxcmd);
        put_u32(&mut b, 516, self.nn);
        put_u16(&mut b, 520, self.oncs);
        b[525] = self.vwc;
        put_u32(&mut b, 536, self.sgls);
        put_u32(&mut b, 540, self.mnan);
        put_str_zero_padded(&mut b, 768, 256, &self.subnqn);
        put_u32(&mut b, 1792, self.ioccsz);
        put_u32(&mut b, 1796, self.iorcsz);
        put_u16(&mut b, 1800, self.icdoff);
        b[1803] = self.msdbd;
        // Power state 0: 25 W maximum (centiwatts).
        put_u16(&mut b, 2048, 2500);
        b
    }

    /// Decodes from 4096 bytes.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            vid: get_u16(b, 0),
            serial: get_str(b, 4, 20),
            model: get_str(b, 24, 40),
            firmware: get_str(b, 64, 8),
            cmic: b[76],
            mdts: b[77],
            cntlid: get_u16(b, 78),
            ver: get_u32(b, 80),
            oaes: get_u32(b, 92),
            cntrltype: b[111],
            acl: b[258],
            aerl: b[259],
            lpa: b[261],
            elpe: b[262],
            kas: get_u16(b, 320),
            anatt: b[342],
            anacap: b[343],
            anagrpmax: get_u32(b, 344),
            nanagrpid: get_u32(b, 348),
            mnan: get_u32(b, 540),
            maxcmd: get_u16(b, 514),
            nn: get_u32(b, 516),
            oncs: get_u16(b, 520),
            vwc: b[525],
            sgls: get_u32(b, 536),
            subnqn: get_str(b, 768, 256),
            ioccsz: get_u32(b, 1792),
            iorcsz: get_u32(b, 1796),
            icdoff: get_u16(b, 1800),
            msdbd: b[1803],
        }
    }
}

/// Identify Namespace fields for a namespace with one LBA format.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdentifyNamespace {
    /// Namespace size in logical blocks.
    pub nsze: u64,
    /// Namespace capacity in logical blocks.
    pub ncap: u64,
    /// Namespace utilization in logical blocks.
    pub nuse: u64,
    /// Namespace features.
    pub nsfeat: u8,
    /// Multi-path I/O and sharing capabilities (bit 0: may be shared).
    pub nmic: u8,
    /// Deallocate logical block features.
    pub dlfeat: u8,
    /// Namespace globally unique identifier.
    pub nguid: [u8; 16],
    /// log2 of the logical block size.
    pub lbads: u8,
    /// ANA group the namespace belongs to (0: none).
    pub anagrpid: u32,
}

impl IdentifyNamespace {
    /// Encodes into 4096 bytes (NLBAF 0, FLBAS 0, LBAF0 = lbads).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; IDENTIFY_SIZE];
        put_u64(&mut b, 0, self.nsze);
        put_u64(&mut b, 8, self.ncap);
        put_u64(&mut b, 16, self.nuse);
        b[24] = self.nsfeat;
        b[25] = 0; // NLBAF zero-based
        b[26] = 0; // FLBAS
        b[30] = self.nmic;
        b[33] = self.dlfeat;
        put_u32(&mut b, 92, self.anagrpid);
        b[104..120].copy_from_slice(&self.nguid);
        b[128 + 2] = self.lbads;
        b
    }

    /// Decodes from 4096 bytes (the format FLBAS selects).
    pub fn decode(b: &[u8]) -> Self {
        let fmt = (b[26] & 0x0F) as usize;
        let mut nguid = [0u8; 16];
        nguid.copy_from_slice(&b[104..120]);
        Self {
            nsze: get_u64(b, 0),
            ncap: get_u64(b, 8),
            nuse: get_u64(b, 16),
            nsfeat: b[24],
            nmic: b[30],
            dlfeat: b[33],
            nguid,
            lbads: b[128 + 4 * fmt + 2],
            anagrpid: get_u32(b, 92),
        }
    }
}

/// Namespace identification descriptor types.
pub mod nidt {
    /// IEEE EUI-64 (8 bytes).
    pub const EUI64: u8 = 1;
    /// NGUID (16 bytes).
    pub const NGUID: u8 = 2;
    /// UUID (16 bytes).
    pub const UUID: u8 = 3;
    /// Command set identifier (1 byte).
    pub const CSI: u8 = 4;
}

/// Encodes a namespace identification descriptor list (CNS 0x03).
pub fn encode_ns_descriptors(descs: &[(u8, &[u8])]) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_SIZE];
    let mut off = 0;
    for (t, id) in descs {
        b[off] = *t;
        b[off + 1] = id.len() as u8;
        b[off + 4..off + 4 + id.len()].copy_from_slice(id);
        off += 4 + id.len();
    }
    b
}

/// Decodes a descriptor list into (type, id) pairs; stops at type 0 or at a
/// descriptor that would run past the buffer.
pub fn decode_ns_descriptors(b: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 4 <= b.len() && b[off] != 0 {
        let len = b[off + 1] as usize;
        if off + 4 + len > b.len() {
            break;
        }
        out.push((b[off], b[off + 4..off + 4 + len].to_vec()));
        off += 4 + len;
    }
    out
}

/// Encodes an active namespace list: ids above `after`, ascending, at most 1024.
pub fn encode_ns_list(nsids: &[u32], after: u32) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_SIZE];
    let mut ids: Vec<u32> = nsids.iter().copied().filter(|&n| n > after).collect();
    ids.sort_unstable();
    for (i, n) in ids.iter().take(1024).enumerate() {
        put_u32(&mut b, 4 * i, *n);
    }
    b
}

/// Decodes an active namespace list.
pub fn decode_ns_list(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .take_while(|&n| n != 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_round_trip_and_offsets() {
        let c = IdentifyController {
            vid: 0x1b36,
            serial: "SN1".into(),
            model: "numio".into(),
            firmware: "0.1".into(),
            cmic: 2,
            mdts: 8,
            cntlid: 3,
            ver: 0x10300,
            cntrltype: CNTRLTYPE_IO,
            kas: 10,
            maxcmd: 128,
            nn: 2,
            oncs: ONCS_DSM | ONCS_WRITE_ZEROES,
            vwc: 1,
            sgls: SGLS_SUPPORTED | SGLS_OFFSET,
            subnqn: "nqn.x".into(),
            ioccsz: 4 + 512,
            iorcsz: 1,
            msdbd: 1,
            anatt: 10,
            anacap: ANACAP_OPTIMIZED | ANACAP_INACCESSIBLE,
            anagrpmax: 2,
            nanagrpid: 3,
            mnan: 4,
            ..Default::default()
        };
        let b = c.encode();
        // ANA fields at the offsets Linux's struct nvme_id_ctrl has them.
        assert_eq!(&b[342..352], &[10, 5, 2, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(&b[540..544], &[4, 0, 0, 0]);
        assert_eq!(b.len(), 4096);
        assert_eq!(&b[4..8], b"SN1 ");
        assert_eq!(&b[78..80], &[3, 0]);
        assert_eq!(&b[768..773], b"nqn.x");
        assert_eq!(b[512], 0x66);
        // Regression: ICDOFF sits at 1800 and MSDBD at 1803 (after the 4-byte
        // IORCSZ); a Linux host refused to connect with "icdoff is not supported!".
        assert_eq!(&b[1796..1804], &[1, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!((b[111], b[320], b[525], b[536]), (CNTRLTYPE_IO, 10, 1, 1));
        assert_eq!(IdentifyController::decode(&b), c);
    }

    #[test]
    fn namespace_round_trip() {
        let n = IdentifyNamespace {
            nsze: 1 << 21,
            ncap: 1 << 21,
            nuse: 1 << 21,
            nsfeat: 0,
            nmic: 1,
            dlfeat: 9,
            nguid: [5; 16],
            lbads: 9,
            anagrpid: 7,
        };
        let b = n.encode();
        assert_eq!(b[130], 9);
        assert_eq!(&b[92..96], &[7, 0, 0, 0]);
        assert_eq!(IdentifyNamespace::decode(&b), n);
    }

    #[test]
    fn descriptors_and_lists() {
        let b = encode_ns_descriptors(&[
            (nidt::NGUID, &[1; 16]),
            (nidt::UUID, &[2; 16]),
            (nidt::CSI, &[0]),
        ]);
        assert_eq!(&b[0..4], &[2, 16, 0, 0]);
        assert_eq!(b[20], nidt::UUID);
        let d = decode_ns_descriptors(&b);
        assert_eq!(d.len(), 3);
        assert_eq!(d[1], (nidt::UUID, vec![2; 16]));
        // A descriptor claiming to run past the end is dropped, not a panic.
        let mut bad = vec![0u8; 8];
        bad[0] = 2;
        bad[1] = 16;
        assert!(decode_ns_descriptors(&bad).is_empty());
        let l = encode_ns_list(&[3, 1, 2], 1);
        assert_eq!(decode_ns_list(&l), vec![2, 3]);
    }
}

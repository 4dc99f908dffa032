//! Asymmetric Namespace Access: the ANA states, the ANA log page (Log
//! Identifier 0Ch) and the Asymmetric Namespace Access Change notice.
//!
//! Layout (NVMe base spec, "Asymmetric Namespace Access Log"; Linux's
//! `struct nvme_ana_rsp_hdr` and `struct nvme_ana_group_desc`): a 16-byte
//! header (change count u64, number of group descriptors u16), then per
//! group a 32-byte descriptor (group id u32, number of nsids u32, change
//! count u64, state u8) followed by its namespace ids (u32 each). With
//! Return Groups Only (RGO, LSP bit 0) the descriptors carry no nsids.

use crate::bytes::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

/// Log identifier of the ANA log page.
pub const LID_ANA: u8 = 0x0C;
/// Get Log Page LSP bit 0 for the ANA log: Return Groups Only.
pub const LSP_RGO: u8 = 1;
/// Bytes of the log page header.
pub const HEADER_SIZE: usize = 16;
/// Bytes of a group descriptor before its namespace ids.
pub const DESCRIPTOR_SIZE: usize = 32;
/// AER completion dword 0 of an Asymmetric Namespace Access Change notice:
/// type 2 (notice), information 03h, log page 0Ch.
pub const AEN_ANA_CHANGE: u32 = 0x000C_0302;
/// Asynchronous Event Configuration bit 11: ANA Change notices.
pub const AEC_ANA_CHANGE: u32 = 1 << 11;

/// The state of an ANA group as seen through one controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnaState {
    /// ANA Optimized (01h).
    Optimized,
    /// ANA Non-Optimized (02h).
    NonOptimized,
    /// ANA Inaccessible (03h).
    Inaccessible,
    /// ANA Persistent Loss (04h).
    PersistentLoss,
    /// ANA Change (0Fh): in transition.
    Change,
}

impl AnaState {
    /// Every state, in code order.
    pub const ALL: [AnaState; 5] = [
        AnaState::Optimized,
        AnaState::NonOptimized,
        AnaState::Inaccessible,
        AnaState::PersistentLoss,
        AnaState::Change,
    ];

    /// The state's code in a group descriptor.
    pub fn code(self) -> u8 {
        match self {
            AnaState::Optimized => 0x01,
            AnaState::NonOptimized => 0x02,
            AnaState::Inaccessible => 0x03,
            AnaState::PersistentLoss => 0x04,
            AnaState::Change => 0x0F,
        }
    }

    /// The state of a descriptor code, if it is one.
    pub fn from_code(c: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.code() == c)
    }

    /// The name used in configurations and output (`optimized`,
    /// `non-optimized`, `inaccessible`, `persistent-loss`, `change`).
    pub fn name(self) -> &'static str {
        match self {
            AnaState::Optimized => "optimized",
            AnaState::NonOptimized => "non-optimized",
            AnaState::Inaccessible => "inaccessible",
            AnaState::PersistentLoss => "persistent-loss",
            AnaState::Change => "change",
        }
    }

    /// Parses a [`AnaState::name`].
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.name() == s)
    }

    /// True when I/O may go through a path in this state.
    pub fn accessible(self) -> bool {
        matches!(self, AnaState::Optimized | AnaState::NonOptimized)
    }
}

impl std::fmt::Display for AnaState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One ANA group descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnaGroup {
    /// ANA group id (non-zero).
    pub grpid: u32,
    /// Change count of this group's state.
    pub chgcnt: u64,
    /// State through the controller that returns the log.
    pub state: AnaState,
    /// Namespace ids in the group (empty with RGO).
    pub nsids: Vec<u32>,
}

/// Encodes the ANA log page: `chgcnt` in the header, then every group;
/// with `groups_only` (RGO) no namespace ids are listed.
pub fn encode_ana_log(chgcnt: u64, groups: &[AnaGroup], groups_only: bool) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_SIZE];
    put_u64(&mut b, 0, chgcnt);
    put_u16(&mut b, 8, groups.len() as u16);
    for g in groups {
        let nsids: &[u32] = if groups_only { &[] } else { &g.nsids };
        let at = b.len();
        b.resize(at + DESCRIPTOR_SIZE + 4 * nsids.len(), 0);
        put_u32(&mut b, at, g.grpid);
        put_u32(&mut b, at + 4, nsids.len() as u32);
        put_u64(&mut b, at + 8, g.chgcnt);
        b[at + 16] = g.state.code();
        for (i, n) in nsids.iter().enumerate() {
            put_u32(&mut b, at + DESCRIPTOR_SIZE + 4 * i, *n);
        }
    }
    b
}

/// Why an ANA log page did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnaLogError {
    /// The page ends inside the header or a descriptor.
    #[error("ANA log page truncated at byte {0}")]
    Truncated(usize),
    /// A descriptor's state code is not an ANA state.
    #[error("ANA group {grpid} has state code {code:#04x}, not an ANA state")]
    BadState {
        /// Group id.
        grpid: u32,
        /// The code found.
        code: u8,
    },
}

/// Decodes an ANA log page into (change count, groups).
pub fn decode_ana_log(b: &[u8]) -> Result<(u64, Vec<AnaGroup>), AnaLogError> {
    if b.len() < HEADER_SIZE {
        return Err(AnaLogError::Truncated(b.len()));
    }
    let ngrps = get_u16(b, 8) as usize;
    let mut at = HEADER_SIZE;
    let mut groups = Vec::with_capacity(ngrps);
    for _ in 0..ngrps {
        if b.len() < at + DESCRIPTOR_SIZE {
            return Err(AnaLogError::Truncated(b.len()));
        }
        let grpid = get_u32(b, at);
        let n = get_u32(b, at + 4) as usize;
        let code = b[at + 16];
        let state = AnaState::from_code(code).ok_or(AnaLogError::BadState { grpid, code })?;
        let end = at + DESCRIPTOR_SIZE + 4 * n;
        if b.len() < end {
            return Err(AnaLogError::Truncated(b.len()));
        }
        let nsids = (0..n)
            .map(|i| get_u32(b, at + DESCRIPTOR_SIZE + 4 * i))
            .collect();
        groups.push(AnaGroup {
            grpid,
            chgcnt: get_u64(b, at + 8),
            state,
            nsids,
        });
        at = end;
    }
    Ok((get_u64(b, 0), groups))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_page_layout_at_the_specs_offsets() {
        let groups = [
            AnaGroup {
                grpid: 1,
                chgcnt: 5,
                state: AnaState::Inaccessible,
                nsids: vec![1, 2],
            },
            AnaGroup {
                grpid: 2,
                chgcnt: 6,
                state: AnaState::Optimized,
                nsids: vec![3],
            },
        ];
        let b = encode_ana_log(9, &groups, false);
        assert_eq!(b.len(), 16 + 32 + 8 + 32 + 4);
        assert_eq!(&b[0..10], &[9, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
        // First descriptor: grpid 1, two nsids, chgcnt 5, state 03h.
        assert_eq!(&b[16..20], &[1, 0, 0, 0]);
        assert_eq!(&b[20..24], &[2, 0, 0, 0]);
        assert_eq!(b[24], 5);
        assert_eq!(b[32], 0x03);
        assert_eq!(&b[48..56], &[1, 0, 0, 0, 2, 0, 0, 0]);
        // Second descriptor right after the first one's nsids.
        assert_eq!(&b[56..60], &[2, 0, 0, 0]);
        assert_eq!(b[72], 0x01);
        assert_eq!(&b[88..92], &[3, 0, 0, 0]);
        assert_eq!(decode_ana_log(&b).unwrap(), (9, groups.to_vec()));
    }

    #[test]
    fn groups_only_lists_no_nsids() {
        let g = AnaGroup {
            grpid: 1,
            chgcnt: 1,
            state: AnaState::NonOptimized,
            nsids: vec![1, 2, 3],
        };
        let b = encode_ana_log(1, std::slice::from_ref(&g), true);
        assert_eq!(b.len(), 48);
        assert_eq!(&b[20..24], &[0, 0, 0, 0]);
        let (_, got) = decode_ana_log(&b).unwrap();
        assert!(got[0].nsids.is_empty());
        assert_eq!(got[0].state, AnaState::NonOptimized);
    }

    #[test]
    fn bad_pages_are_errors_not_panics() {
        let g = AnaGroup {
            grpid: 4,
            chgcnt: 1,
            state: AnaState::Change,
            nsids: vec![1],
        };
        let b = encode_ana_log(1, &[g], false);
        assert_eq!(b[32], 0x0F);
        assert!(matches!(
            decode_ana_log(&b[..40]),
            Err(AnaLogError::Truncated(40))
        ));
        assert!(decode_ana_log(&b[..51]).is_err());
        let mut bad = b.clone();
        bad[32] = 0x07;
        assert_eq!(
            decode_ana_log(&bad),
            Err(AnaLogError::BadState { grpid: 4, code: 7 })
        );
        assert!(decode_ana_log(&[0; 4]).is_err());
    }

    #[test]
    fn state_names_and_codes() {
        for s in AnaState::ALL {
            assert_eq!(AnaState::parse(s.name()), Some(s));
            assert_eq!(AnaState::from_code(s.code()), Some(s));
        }
        assert_eq!(AnaState::parse("optimised"), None);
        assert!(AnaState::NonOptimized.accessible());
        assert!(!AnaState::Inaccessible.accessible());
        assert_eq!(AEN_ANA_CHANGE & 0x7, 2);
        assert_eq!((AEN_ANA_CHANGE >> 8) & 0xFF, 3);
        assert_eq!((AEN_ANA_CHANGE >> 16) & 0xFF, 0x0C);
    }
}

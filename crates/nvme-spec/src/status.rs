//! NVMe status codes: a 15-bit field of SC, SCT, CRD, More and DNR.

/// Status code type (SCT): bits 10:8 of the 15-bit status field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusCodeType {
    /// Generic command status.
    Generic,
    /// Command specific status.
    CommandSpecific,
    /// Media and data integrity errors.
    MediaError,
    /// Path related status.
    Path,
    /// Any other value (reserved or vendor specific).
    Other(u8),
}

impl StatusCodeType {
    fn to_bits(self) -> u16 {
        match self {
            Self::Generic => 0,
            Self::CommandSpecific => 1,
            Self::MediaError => 2,
            Self::Path => 3,
            Self::Other(v) => (v & 7) as u16,
        }
    }

    fn from_bits(v: u16) -> Self {
        match v & 7 {
            0 => Self::Generic,
            1 => Self::CommandSpecific,
            2 => Self::MediaError,
            3 => Self::Path,
            o => Self::Other(o as u8),
        }
    }
}

/// A completion status: the 15-bit status field without the phase tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(u16);

impl Status {
    /// Successful completion.
    pub const SUCCESS: Status = Status(0);
    /// Invalid command opcode.
    pub const INVALID_OPCODE: Status = Status::generic(0x01).dnr_const();
    /// Invalid field in command.
    pub const INVALID_FIELD: Status = Status::generic(0x02).dnr_const();
    /// Command id conflict.
    pub const CID_CONFLICT: Status = Status::generic(0x03).dnr_const();
    /// Data transfer error.
    pub const DATA_TRANSFER_ERROR: Status = Status::generic(0x04);
    /// Internal error.
    pub const INTERNAL_ERROR: Status = Status::generic(0x06);
    /// Command aborted by request.
    pub const ABORT_REQUESTED: Status = Status::generic(0x07);
    /// Command aborted: SQ deleted.
    pub const ABORT_SQ_DELETED: Status = Status::generic(0x08);
    /// Invalid namespace or format.
    pub const INVALID_NS: Status = Status::generic(0x0B).dnr_const();
    /// Command sequence error.
    pub const CMD_SEQ_ERROR: Status = Status::generic(0x0C).dnr_const();
    /// Data SGL length invalid.
    pub const SGL_LENGTH_INVALID: Status = Status::generic(0x0F).dnr_const();
    /// SGL descriptor type invalid.
    pub const SGL_TYPE_INVALID: Status = Status::generic(0x11).dnr_const();
    /// SGL offset invalid.
    pub const SGL_OFFSET_INVALID: Status = Status::generic(0x16).dnr_const();
    /// Transient transport error.
    pub const TRANSIENT_TRANSPORT: Status = Status::generic(0x22);
    /// LBA out of range.
    pub const LBA_RANGE: Status = Status::generic(0x80).dnr_const();
    /// Invalid queue identifier.
    pub const INVALID_QID: Status = Status::specific(0x01).dnr_const();
    /// Invalid queue size.
    pub const INVALID_QUEUE_SIZE: Status = Status::specific(0x02).dnr_const();
    /// Asynchronous event request limit exceeded.
    pub const AER_LIMIT: Status = Status::specific(0x05).dnr_const();
    /// Invalid log page.
    pub const INVALID_LOG_PAGE: Status = Status::specific(0x09).dnr_const();
    /// Feature identifier not saveable.
    pub const FEATURE_NOT_SAVEABLE: Status = Status::specific(0x0D).dnr_const();
    /// Set Features: feature not changeable.
    pub const FEATURE_NOT_CHANGEABLE: Status = Status::specific(0x0E).dnr_const();
    /// Set Features: feature not namespace specific.
    pub const FEATURE_NOT_NS_SPECIFIC: Status = Status::specific(0x0F).dnr_const();
    /// Connect: incompatible format.
    pub const CONNECT_INCOMPATIBLE_FORMAT: Status = Status::specific(0x80).dnr_const();
    /// Connect: controller busy.
    pub const CONNECT_CTRL_BUSY: Status = Status::specific(0x81);
    /// Connect: invalid parameters.
    pub const CONNECT_INVALID_PARAM: Status = Status::specific(0x82).dnr_const();
    /// Connect: invalid host.
    pub const CONNECT_INVALID_HOST: Status = Status::specific(0x84).dnr_const();
    /// Authentication required (a queue not yet authenticated).
    pub const AUTH_REQUIRED: Status = Status::specific(0x91).dnr_const();

    /// Path related status 01h: Asymmetric Access Persistent Loss.
    pub const ANA_PERSISTENT_LOSS: Status = Status((3 << 8) | 0x01);
    /// Path related status 02h: Asymmetric Access Inaccessible (the host
    /// retries on another path).
    pub const ANA_INACCESSIBLE: Status = Status((3 << 8) | 0x02);
    /// Path related status 03h: Asymmetric Access Transition.
    pub const ANA_TRANSITION: Status = Status((3 << 8) | 0x03);

    /// A status from its type and code.
    pub fn new(sct: StatusCodeType, sc: u8) -> Self {
        Status((sct.to_bits() << 8) | sc as u16)
    }

    const fn generic(sc: u8) -> Self {
        Status(sc as u16)
    }

    const fn specific(sc: u8) -> Self {
        Status((1 << 8) | sc as u16)
    }

    const fn dnr_const(self) -> Self {
        Status(self.0 | (1 << 14))
    }

    /// The same status with Do Not Retry set.
    pub fn with_dnr(self) -> Self {
        self.dnr_const()
    }

    /// From the 15-bit status field (CQE DW3 bits 31:17).
    pub fn from_field(v: u16) -> Self {
        Status(v & 0x7FFF)
    }

    /// The 15-bit status field.
    pub fn field(self) -> u16 {
        self.0
    }

    /// Status code.
    pub fn sc(self) -> u8 {
        (self.0 & 0xFF) as u8
    }

    /// Status code type.
    pub fn sct(self) -> StatusCodeType {
        StatusCodeType::from_bits(self.0 >> 8)
    }

    /// Do Not Retry.
    pub fn dnr(self) -> bool {
        self.0 & (1 << 14) != 0
    }

    /// True for successful completion.
    pub fn is_success(self) -> bool {
        self.sc() == 0 && self.sct() == StatusCodeType::Generic
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sct={:?} sc={:#04x}{}",
            self.sct(),
            self.sc(),
            if self.dnr() { " dnr" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_layout() {
        assert_eq!(Status::SUCCESS.field(), 0);
        assert!(Status::SUCCESS.is_success());
        let s = Status::CONNECT_INVALID_HOST;
        assert_eq!(s.sc(), 0x84);
        assert_eq!(s.sct(), StatusCodeType::CommandSpecific);
        assert!(s.dnr());
        assert!(!s.is_success());
        assert_eq!(Status::from_field(s.field()), s);
        assert!(!Status::TRANSIENT_TRANSPORT.dnr());
        assert_eq!(
            Status::new(StatusCodeType::Other(7), 1).sct(),
            StatusCodeType::Other(7)
        );
    }
}

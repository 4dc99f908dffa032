//! Feature identifiers and the encodings of the ones numio reads or writes.

/// Feature identifiers.
pub mod fid {
    /// Arbitration.
    pub const ARBITRATION: u8 = 0x01;
    /// Power management.
    pub const POWER_MGMT: u8 = 0x02;
    /// Temperature threshold.
    pub const TEMP_THRESHOLD: u8 = 0x04;
    /// Error recovery.
    pub const ERROR_RECOVERY: u8 = 0x05;
    /// Volatile write cache.
    pub const VOLATILE_WC: u8 = 0x06;
    /// Number of queues.
    pub const NUM_QUEUES: u8 = 0x07;
    /// Interrupt coalescing (PCIe only; fabrics rejects it).
    pub const IRQ_COALESCE: u8 = 0x08;
    /// Interrupt vector configuration (PCIe only).
    pub const IRQ_CONFIG: u8 = 0x09;
    /// Write atomicity normal.
    pub const WRITE_ATOMIC: u8 = 0x0A;
    /// Asynchronous event configuration.
    pub const ASYNC_EVENT: u8 = 0x0B;
    /// Autonomous power state transition.
    pub const APST: u8 = 0x0C;
    /// Timestamp.
    pub const TIMESTAMP: u8 = 0x0E;
    /// Keep alive timer.
    pub const KATO: u8 = 0x0F;
}

/// Number of queues (feature 0x07) as one-based counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumQueues {
    /// I/O submission queues.
    pub nsq: u32,
    /// I/O completion queues.
    pub ncq: u32,
}

impl NumQueues {
    /// Encodes dword 11 / completion dword 0 (zero-based counts).
    pub fn encode(&self) -> u32 {
        (self.nsq.saturating_sub(1) & 0xFFFF) | ((self.ncq.saturating_sub(1) & 0xFFFF) << 16)
    }

    /// Decodes dword 11 / completion dword 0.
    pub fn decode(v: u32) -> Self {
        Self {
            nsq: (v & 0xFFFF) + 1,
            ncq: (v >> 16) + 1,
        }
    }
}

/// Interrupt coalescing (feature 0x08): aggregation time and threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqCoalescing {
    /// Aggregation time in 100 µs units (bits 15:8); 0 disables the timer.
    pub time_100us: u8,
    /// Aggregation threshold, zero-based, in completions (bits 7:0).
    pub thr_zero_based: u8,
}

/// Coalescing settings that do not fit the feature's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CoalescingError {
    /// More than 25.5 ms.
    #[error(
        "coalescing time {time_us} µs is above the 25500 µs the 8-bit field in 100 µs units holds"
    )]
    TimeTooLong {
        /// Requested time.
        time_us: u32,
    },
    /// Threshold outside 1..=256.
    #[error("coalescing threshold {threshold} is outside 1..=256 completions")]
    ThresholdOutOfRange {
        /// Requested threshold.
        threshold: u32,
    },
}

impl IrqCoalescing {
    /// From a time in µs (rounded down to 100 µs) and a one-based threshold.
    pub fn from_us_and_threshold(time_us: u32, threshold: u32) -> Result<Self, CoalescingError> {
        if time_us / 100 > 255 {
            return Err(CoalescingError::TimeTooLong { time_us });
        }
        if !(1..=256).contains(&threshold) {
            return Err(CoalescingError::ThresholdOutOfRange { threshold });
        }
        Ok(Self {
            time_100us: (time_us / 100) as u8,
            thr_zero_based: (threshold - 1) as u8,
        })
    }

    /// Encodes dword 11.
    pub fn encode(&self) -> u32 {
        ((self.time_100us as u32) << 8) | self.thr_zero_based as u32
    }

    /// Decodes dword 11 (bits 31:16 are reserved and ignored).
    pub fn decode(v: u32) -> Self {
        Self {
            time_100us: ((v >> 8) & 0xFF) as u8,
            thr_zero_based: (v & 0xFF) as u8,
        }
    }

    /// Aggregation time in µs.
    pub fn time_us(&self) -> u32 {
        self.time_100us as u32 * 100
    }

    /// Aggregation threshold as a one-based count of completions.
    pub fn threshold(&self) -> u32 {
        self.thr_zero_based as u32 + 1
    }
}

/// Interrupt vector configuration (feature 0x09): dword 11 names the
/// vector; the value adds its Coalescing Disable bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrqVectorConfig {
    /// Interrupt vector (bits 15:0).
    pub vector: u16,
    /// Coalescing Disable (bit 16): interrupts of this vector are never
    /// coalesced, whatever feature 0x08 says.
    pub coalescing_disabled: bool,
}

impl IrqVectorConfig {
    /// Encodes dword 11.
    pub fn encode(&self) -> u32 {
        u32::from(self.vector) | u32::from(self.coalescing_disabled) << 16
    }

    /// Decodes dword 11 / completion dword 0 (bits 31:17 reserved).
    pub fn decode(v: u32) -> Self {
        Self {
            vector: (v & 0xFFFF) as u16,
            coalescing_disabled: v & (1 << 16) != 0,
        }
    }
}

/// A feature's supported capabilities: completion dword 0 of Get Features
/// with Select = 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureCapabilities {
    /// Bit 0: the value can be saved (Set Features with SV).
    pub saveable: bool,
    /// Bit 1: the value is per namespace.
    pub namespace_specific: bool,
    /// Bit 2: the value can be changed.
    pub changeable: bool,
}

impl FeatureCapabilities {
    /// Decodes completion dword 0 (bits 31:3 reserved).
    pub fn decode(v: u32) -> Self {
        Self {
            saveable: v & 1 != 0,
            namespace_specific: v & 2 != 0,
            changeable: v & 4 != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_encode_decode() {
        let c = IrqCoalescing::from_us_and_threshold(200, 8).unwrap();
        assert_eq!(c.encode(), 0x0207);
        assert_eq!(IrqCoalescing::decode(0xFFFF_0207), c);
        assert_eq!((c.time_us(), c.threshold()), (200, 8));
        assert_eq!(
            IrqCoalescing::from_us_and_threshold(25_500, 256)
                .unwrap()
                .encode(),
            0xFFFF
        );
        assert!(IrqCoalescing::from_us_and_threshold(25_600, 1).is_err());
        assert!(IrqCoalescing::from_us_and_threshold(100, 0).is_err());
        assert!(IrqCoalescing::from_us_and_threshold(100, 257).is_err());
    }

    #[test]
    fn vector_config_and_capabilities() {
        let v = IrqVectorConfig::decode(0x0001_0003);
        assert_eq!(
            v,
            IrqVectorConfig {
                vector: 3,
                coalescing_disabled: true
            }
        );
        assert_eq!(v.encode(), 0x0001_0003);
        assert!(!IrqVectorConfig::decode(0xFFFE_0007).coalescing_disabled);
        let c = FeatureCapabilities::decode(0b101);
        assert!(c.saveable && c.changeable && !c.namespace_specific);
        assert_eq!(
            FeatureCapabilities::decode(0xFFFF_FFF8),
            FeatureCapabilities::decode(0)
        );
    }

    #[test]
    fn num_queues() {
        let n = NumQueues { nsq: 4, ncq: 2 };
        assert_eq!(n.encode(), 0x0001_0003);
        assert_eq!(NumQueues::decode(n.encode()), n);
    }
}

//! What a controller's coalescing is now: the value (Get Features 0x08),
//! whether the controller lets it change and save it (Select = 3), and the
//! Coalescing Disable bit of each I/O queue vector (Get Features 0x09).

use nvme_spec::features::{fid, FeatureCapabilities, IrqCoalescing, IrqVectorConfig, NumQueues};
use nvme_spec::Status;

use crate::admin::{Admin, AdminError, Select};
use crate::controller::Controller;
use crate::error::TuneError;

/// Most vectors read when the IRQs were not seen and Number of Queues
/// gives the count.
pub const MAX_VECTORS: u16 = 1024;

/// One I/O queue vector's Coalescing Disable bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct VectorState {
    /// The interrupt vector.
    pub vector: u16,
    /// Coalescing Disable: this vector's interrupts are never coalesced.
    pub coalescing_disabled: bool,
}

/// A controller's coalescing as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoalesceState {
    /// Completion dword 0 of Get Features 0x08 (current).
    pub raw: u32,
    /// `raw` decoded.
    pub value: IrqCoalescing,
    /// Select = 3; `None` when the controller does not support Select
    /// (it answers "invalid field").
    pub capabilities: Option<FeatureCapabilities>,
    /// Each I/O queue vector, ascending.
    pub vectors: Vec<VectorState>,
    /// Why the vectors are incomplete, when they are.
    pub vectors_note: Option<String>,
}

/// Get Features 0x08, current value.
pub fn read_value(admin: &mut dyn Admin, ctrl: &Controller) -> Result<u32, TuneError> {
    admin
        .get_features(fid::IRQ_COALESCE, Select::Current, 0)
        .map_err(|e| TuneError::admin(ctrl, "Get Features 0x08 (interrupt coalescing)", e))
}

/// Reads the value, the capabilities and the vectors of `ctrl`. An error
/// only when the value itself cannot be read.
pub fn read_state(admin: &mut dyn Admin, ctrl: &Controller) -> Result<CoalesceState, TuneError> {
    let raw = read_value(admin, ctrl)?;
    let capabilities = match admin.get_features(fid::IRQ_COALESCE, Select::Capabilities, 0) {
        Ok(dw0) => Some(FeatureCapabilities::decode(dw0)),
        Err(AdminError::Status(_)) => None,
        Err(e) => {
            return Err(TuneError::admin(
                ctrl,
                "Get Features 0x08 with Select = 3 (capabilities)",
                e,
            ))
        }
    };
    let (vectors, vectors_note) = read_vectors(admin, ctrl);
    Ok(CoalesceState {
        raw,
        value: IrqCoalescing::decode(raw),
        capabilities,
        vectors,
        vectors_note,
    })
}

/// Why the vectors to read are not known (said in
/// [`CoalesceState::vectors_note`]).
#[derive(Debug, thiserror::Error)]
#[error("no queue IRQs seen and Get Features 0x07 (number of queues) failed: {source}")]
struct NoVectorList {
    /// Why Get Features 0x07 failed.
    #[source]
    source: AdminError,
}

/// The vectors to read: the I/O queue IRQs seen, else 1..=NCQA from
/// Number of Queues (at most [`MAX_VECTORS`]).
fn vector_list(admin: &mut dyn Admin, ctrl: &Controller) -> Result<Vec<u16>, NoVectorList> {
    if !ctrl.vectors.is_empty() {
        return Ok(ctrl.vectors.clone());
    }
    match admin.get_features(fid::NUM_QUEUES, Select::Current, 0) {
        Ok(dw0) => {
            let ncq = NumQueues::decode(dw0).ncq.min(u32::from(MAX_VECTORS));
            Ok((1..=ncq as u16).collect())
        }
        Err(source) => Err(NoVectorList { source }),
    }
}

fn read_vectors(admin: &mut dyn Admin, ctrl: &Controller) -> (Vec<VectorState>, Option<String>) {
    let list = match vector_list(admin, ctrl) {
        Ok(list) => list,
        Err(note) => return (Vec::new(), Some(note.to_string())),
    };
    let from_irqs = !ctrl.vectors.is_empty();
    let mut out = Vec::with_capacity(list.len());
    for vector in list {
        let cdw11 = IrqVectorConfig {
            vector,
            coalescing_disabled: false,
        }
        .encode();
        match admin.get_features(fid::IRQ_CONFIG, Select::Current, cdw11) {
            Ok(dw0) => out.push(VectorState {
                vector,
                coalescing_disabled: IrqVectorConfig::decode(dw0).coalescing_disabled,
            }),
            // Number of Queues counts queues the driver may not use: the
            // first vector past the controller's ends the list.
            Err(AdminError::Status(s)) if !from_irqs && s.sc() == Status::INVALID_FIELD.sc() => {
                break
            }
            Err(e) => {
                return (
                    out,
                    Some(format!("Get Features 0x09 (vector {vector}) failed: {e}")),
                )
            }
        }
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{controller, MemoryController};

    #[test]
    fn reads_value_capabilities_and_vectors() {
        let mut dev = MemoryController::new(0x0109, 4).disable_vector(3);
        let s = read_state(&mut dev, &controller("nvme0", 4)).unwrap();
        assert_eq!(s.raw, 0x0109);
        assert_eq!((s.value.threshold(), s.value.time_us()), (10, 100));
        let caps = s.capabilities.unwrap();
        assert!(caps.changeable && !caps.saveable);
        let cd: Vec<bool> = s.vectors.iter().map(|v| v.coalescing_disabled).collect();
        assert_eq!(cd, [false, false, true, false]);
        assert_eq!(s.vectors_note, None);
    }

    #[test]
    fn without_irqs_number_of_queues_bounds_the_vectors() {
        let mut dev = MemoryController::new(0, 3);
        // NCQA 7 (0-based 6): vectors past 3 answer "invalid field".
        dev.set_features(fid::NUM_QUEUES, 6 << 16 | 6, false)
            .unwrap();
        let s = read_state(&mut dev, &controller("nvme0", 0)).unwrap();
        assert_eq!(s.vectors.len(), 3);
        assert_eq!(s.vectors_note, None);
        assert!(!s.capabilities.unwrap().saveable);
    }

    #[test]
    fn a_vanished_controller_is_named() {
        let mut dev = MemoryController::new(0, 1);
        dev.vanish();
        let e = read_state(&mut dev, &controller("nvme3", 1)).unwrap_err();
        assert!(matches!(e, TuneError::Gone { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("nvme3") && text.contains("SN-nvme3") && text.contains("vanished"),
            "{text}"
        );
    }
}

//! One reactor's io_uring: set-up with feature probing, the `user_data`
//! encoding of every operation, and the single place SQEs are pushed.
//!
//! Every `unsafe` that hands memory to the kernel lives here, at
//! [`Ring::push`]: its callers state who owns the buffer until the
//! completion arrives.

use io_uring::{opcode, squeue, IoUring};
use sysapi::uring::{RingSpec, TaskRun};

/// Submission queue entries per reactor ring.
pub const RING_ENTRIES: u32 = 512;
/// Completion queue entries (room for every connection's recv and send plus
/// a full queue of storage operations on several queues).
pub const CQ_ENTRIES: u32 = 8 * RING_ENTRIES;

/// Why a reactor's ring cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    /// io_uring_setup failed (every flag set tried).
    #[error(
        "cannot create an io_uring ({source}); numio serve needs io_uring (Linux 5.11 or later, \
         and not disabled by the kernel.io_uring_disabled sysctl or a seccomp filter)"
    )]
    Create {
        /// The OS error.
        source: std::io::Error,
    },
    /// The opcode probe shows operations the reactor uses missing.
    #[error(
        "this kernel's io_uring lacks {}; numio serve needs Linux 5.11 or later",
        missing.join(", ")
    )]
    Opcodes {
        /// The missing operations, by their io_uring names (`RECV`, …).
        missing: Vec<&'static str>,
    },
}

/// What a completion belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// A storage operation of request `slot` on connection `conn`.
    Storage {
        /// Connection index in the reactor's slab.
        conn: u32,
        /// Request slot.
        slot: u16,
    },
    /// The connection's socket receive.
    Recv {
        /// Connection index.
        conn: u32,
    },
    /// The connection's socket send.
    Send {
        /// Connection index.
        conn: u32,
    },
    /// The wake-up eventfd read (new connections or shutdown).
    Wake,
    /// The tick timeout (kernels without IORING_FEAT_EXT_ARG).
    Tick,
}

impl Tag {
    /// Packs into `user_data`: kind in bits 56..64, connection in 16..48,
    /// slot in 0..16.
    pub fn encode(self) -> u64 {
        let (kind, conn, slot) = match self {
            Tag::Storage { conn, slot } => (1u64, conn, slot),
            Tag::Recv { conn } => (2, conn, 0),
            Tag::Send { conn } => (3, conn, 0),
            Tag::Wake => (4, 0, 0),
            Tag::Tick => (5, 0, 0),
        };
        (kind << 56) | ((conn as u64) << 16) | slot as u64
    }

    /// Unpacks `user_data`; None for values this module never produced.
    pub fn decode(v: u64) -> Option<Self> {
        let conn = ((v >> 16) & 0xFFFF_FFFF) as u32;
        let slot = (v & 0xFFFF) as u16;
        Some(match v >> 56 {
            1 => Tag::Storage { conn, slot },
            2 => Tag::Recv { conn },
            3 => Tag::Send { conn },
            4 => Tag::Wake,
            5 => Tag::Tick,
            _ => return None,
        })
    }
}

/// A reactor's ring and what set-up and probing found.
pub struct Ring {
    /// The ring.
    pub ring: IoUring,
    /// Set-up flags in use, one name each (`no set-up flags` for none).
    pub features: Vec<String>,
    /// Fallbacks taken, in words (printed at start-up).
    pub notes: Vec<String>,
    /// IORING_FEAT_EXT_ARG: waits carry their own timeout.
    pub ext_arg: bool,
    /// Entries that found the submission queue full and could not be
    /// submitted at once (the kernel refused with EBUSY while completions
    /// were pending); pushed again before each wait, so none is lost.
    backlog: std::collections::VecDeque<squeue::Entry>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("features", &self.features)
            .field("notes", &self.notes)
            .finish_non_exhaustive()
    }
}

impl Ring {
    /// Builds a ring by the one set-up chain (`sysapi::uring::build_ring`),
    /// trying the cheapest task-work mode first (plain when
    /// `defer_taskrun` is false: its fd is then pollable), and checks the
    /// kernel has every operation the reactor uses. Must run on the thread
    /// that will submit (single-issuer rings remember it).
    pub fn new(defer_taskrun: bool) -> Result<Self, RingError> {
        let spec = RingSpec {
            taskrun: if defer_taskrun {
                TaskRun::Defer
            } else {
                TaskRun::Plain
            },
            cq_entries: Some(CQ_ENTRIES),
            ..RingSpec::new(RING_ENTRIES)
        };
        let built =
            sysapi::uring::build_ring(&spec).map_err(|source| RingError::Create { source })?;
        let mut features = built.features;
        if features.is_empty() {
            features.push("no set-up flags".into());
        }
        let mut me = Self {
            ext_arg: built.ring.params().is_feature_ext_arg(),
            backlog: std::collections::VecDeque::new(),
            ring: built.ring,
            features,
            notes: built.notes,
        };
        me.probe()?;
        Ok(me)
    }

    fn probe(&mut self) -> Result<(), RingError> {
        let mut probe = io_uring::Probe::new();
        if let Err(e) = self.ring.submitter().register_probe(&mut probe) {
            self.notes.push(format!(
                "io_uring opcode probe failed ({e}); assuming Linux 5.11 opcodes"
            ));
            return Ok(());
        }
        let needed = [
            ("RECV", opcode::Recv::CODE),
            ("SEND", opcode::Send::CODE),
            ("READ", opcode::Read::CODE),
            ("WRITE", opcode::Write::CODE),
            ("FSYNC", opcode::Fsync::CODE),
        ];
        let missing: Vec<&'static str> = needed
            .iter()
            .filter(|(_, c)| !probe.is_supported(*c))
            .map(|(n, _)| *n)
            .collect();
        if !missing.is_empty() {
            return Err(RingError::Opcodes { missing });
        }
        let p = self.ring.params();
        if !p.is_feature_fast_poll() {
            self.notes.push(
                "io_uring without FAST_POLL: socket receives wait in io-wq worker threads".into(),
            );
        }
        if !self.ext_arg {
            self.notes
                .push("io_uring without EXT_ARG: the tick is an IORING_OP_TIMEOUT".into());
        }
        Ok(())
    }

    /// Queues one SQE. When the submission queue is full it submits, and
    /// when the kernel cannot take more yet (completions waiting to be
    /// reaped) the entry waits in a backlog for [`Ring::flush_backlog`].
    ///
    /// # Safety
    /// Every buffer and descriptor `e` names must stay valid, and buffers
    /// untouched by anyone else, until the completion with `e`'s
    /// `user_data` has been reaped.
    pub unsafe fn push(&mut self, e: &squeue::Entry) {
        if self.backlog.is_empty() {
            // SAFETY: the caller's contract covers what `e` points at.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return;
            }
            if self.ring.submit().is_ok() {
                // SAFETY: as above.
                if unsafe { self.ring.submission().push(e) }.is_ok() {
                    return;
                }
            }
        }
        self.backlog.push_back(e.clone());
    }

    /// Moves backlogged entries into the submission queue while there is
    /// room; true when some are still waiting.
    pub fn flush_backlog(&mut self) -> bool {
        while let Some(e) = self.backlog.front() {
            // SAFETY: the entry was pushed under Ring::push's contract, which
            // holds until its completion, and it has not been submitted yet.
            if unsafe { self.ring.submission().push(e) }.is_err() {
                break;
            }
            self.backlog.pop_front();
        }
        !self.backlog.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        for t in [
            Tag::Storage {
                conn: 0xDEAD_BEEF,
                slot: 0xFFFF,
            },
            Tag::Storage { conn: 0, slot: 0 },
            Tag::Recv { conn: 7 },
            Tag::Send { conn: u32::MAX },
            Tag::Wake,
            Tag::Tick,
        ] {
            assert_eq!(Tag::decode(t.encode()), Some(t));
        }
        assert_eq!(Tag::decode(0), None);
        assert_eq!(Tag::decode(u64::MAX), None);
    }

    #[test]
    fn missing_opcodes_are_named() {
        let e = RingError::Opcodes {
            missing: vec!["RECV", "SEND"],
        };
        assert_eq!(
            e.to_string(),
            "this kernel's io_uring lacks RECV, SEND; numio serve needs Linux 5.11 or later"
        );
        let e = RingError::Create {
            source: std::io::Error::from_raw_os_error(libc::EPERM),
        };
        assert!(
            e.to_string().starts_with("cannot create an io_uring ("),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
    }

    /// More entries than the submission and completion queues hold, pushed
    /// without reaping: none is lost (full queue, EBUSY, backlog).
    #[test]
    fn no_entry_is_lost_when_the_queues_fill() {
        let mut r = Ring::new(true).unwrap();
        let n = 3 * CQ_ENTRIES as u64;
        for i in 0..n {
            let e = opcode::Nop::new().build().user_data(i);
            // SAFETY: a NOP names no memory.
            unsafe { r.push(&e) };
        }
        let mut seen = vec![false; n as usize];
        let mut reaped = 0u64;
        while reaped < n {
            let want = if r.flush_backlog() { 0 } else { 1 };
            match r.ring.submit_and_wait(want) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => panic!("{e}"),
            }
            for c in r.ring.completion() {
                assert!(!seen[c.user_data() as usize], "completed once");
                seen[c.user_data() as usize] = true;
                reaped += 1;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}

//! The `null` backend: every I/O completes at once without touching anything.
//! It measures the engine itself (fio's `ioengine=null`).

use std::io;

use super::{Backend, Completion, IoRequest};

/// Completes every queued I/O successfully on the next reap.
#[derive(Debug)]
pub struct NullBackend {
    done: Vec<Completion>,
    len: usize,
}

impl NullBackend {
    /// A queue for up to `depth` I/Os in flight.
    pub fn new(depth: usize) -> NullBackend {
        NullBackend {
            done: vec![Completion::default(); depth.max(1)],
            len: 0,
        }
    }
}

impl Backend for NullBackend {
    #[inline]
    unsafe fn queue(&mut self, io: IoRequest) {
        self.done[self.len] = Completion {
            slot: io.slot,
            result: io.len_bytes as i32,
        };
        self.len += 1;
    }

    #[inline]
    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    #[inline]
    fn reap(&mut self, out: &mut [Completion], _min: usize) -> io::Result<usize> {
        let n = self.len.min(out.len());
        out[..n].copy_from_slice(&self.done[self.len - n..self.len]);
        self.len -= n;
        Ok(n)
    }
}

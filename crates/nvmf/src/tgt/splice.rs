//! Output bytes that stay where they are: a read of a RAM namespace goes
//! to the socket straight from the namespace's memory (one copy, the
//! kernel's into its socket buffer) instead of being copied into the
//! request's buffer, then into the connection's output, then by the kernel.
//!
//! A connection's output is its byte buffer (headers, responses, data of
//! other namespaces) with [`Splices`] inserted at byte positions of it: the
//! logical output is `bytes[..at0]`, splice 0, `bytes[at0..at1]`, splice 1,
//! …, `bytes[atN..]`. The reactor sends it with one `sendmsg` of
//! [`Splices::iovecs`]; a consumer that wants plain bytes (TLS, tests)
//! calls [`Splices::flatten`].
//!
//! Data digests and TLS need the bytes themselves, so those connections
//! never splice (`lifecycle.rs`); neither do small payloads, which are
//! cheaper to copy than to describe.

pub use crate::SPLICE_MIN_BYTES;

/// Most iovecs one send carries (IOV_MAX is 1024).
pub const MAX_IOVECS: usize = 256;

/// One slice of memory that goes into the output at byte `at` of the
/// output's byte buffer.
#[derive(Debug, Clone, Copy)]
struct Splice {
    at: usize,
    ptr: *const u8,
    len: usize,
}

/// The splices of one output, in output order.
#[derive(Debug, Default)]
pub struct Splices {
    list: Vec<Splice>,
    /// Sum of their lengths.
    bytes: usize,
}

// SAFETY: a splice is a read-only view of a RAM namespace that the pusher
// guarantees stays mapped while the splice exists (see `push`); reading it
// from another thread is as sound as from this one.
unsafe impl Send for Splices {}

impl Splices {
    /// Inserts `len` bytes at `ptr` at byte `at` of the output's byte
    /// buffer, after any splice already there.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay mapped and readable for as long as this
    /// splice is held (until [`clear`](Self::clear) or the output is
    /// sent), and `at` must not be less than an earlier splice's.
    pub unsafe fn push(&mut self, at: usize, ptr: *const u8, len: usize) {
        debug_assert!(self.list.last().is_none_or(|s| s.at <= at));
        self.list.push(Splice { at, ptr, len });
        self.bytes += len;
    }

    /// Appends `len` bytes at `ptr` to the output whose byte buffer is
    /// `bytes`: spliced in when `splice` allows and the payload is at least
    /// [`SPLICE_MIN_BYTES`], else copied onto the end of `bytes`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be readable now, and, where spliced, for as long
    /// as [`push`](Self::push) requires.
    pub unsafe fn append(&mut self, bytes: &mut Vec<u8>, ptr: *const u8, len: usize, splice: bool) {
        if splice && len >= SPLICE_MIN_BYTES {
            // SAFETY: the caller's contract; appending at the end of `bytes`
            // keeps the splices in output order.
            unsafe { self.push(bytes.len(), ptr, len) };
        } else {
            // SAFETY: the caller's contract.
            unsafe { copy_onto(bytes, ptr, len) };
        }
    }

    /// Bytes spliced in.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// No splices.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Drops every splice (the output was sent).
    pub fn clear(&mut self) {
        self.list.clear();
        self.bytes = 0;
    }

    /// Appends the logical output of `bytes` with these splices to `into`.
    pub fn flatten(&self, bytes: &[u8], into: &mut Vec<u8>) {
        into.reserve(bytes.len() + self.bytes);
        let mut from = 0;
        for s in &self.list {
            into.extend_from_slice(&bytes[from..s.at]);
            from = s.at;
            // SAFETY: push's contract keeps ptr..ptr+len readable while the
            // splice is held.
            unsafe { copy_onto(into, s.ptr, s.len) };
        }
        into.extend_from_slice(&bytes[from..]);
    }

    /// Fills `iov` with the logical output of `bytes` from logical byte
    /// `pos` on (at most [`MAX_IOVECS`] entries; the send goes on from
    /// where it stopped).
    pub fn iovecs(&self, bytes: &[u8], pos: usize, iov: &mut Vec<libc::iovec>) {
        iov.clear();
        let mut skip = pos;
        let mut add = |ptr: *const u8, len: usize, iov: &mut Vec<libc::iovec>| {
            if len <= skip {
                skip -= len;
                return;
            }
            if iov.len() < MAX_IOVECS {
                iov.push(libc::iovec {
                    // SAFETY: skip < len, so the pointer stays inside the
                    // segment.
                    iov_base: unsafe { ptr.add(skip) } as *mut libc::c_void,
                    iov_len: len - skip,
                });
            }
            skip = 0;
        };
        let mut from = 0;
        for s in &self.list {
            add(bytes[from..s.at].as_ptr(), s.at - from, iov);
            add(s.ptr, s.len, iov);
            from = s.at;
        }
        add(bytes[from..].as_ptr(), bytes.len() - from, iov);
    }
}

/// Appends `len` bytes at `src` to `into`.
///
/// # Safety
/// `src..src+len` must be readable and must not overlap `into`'s spare
/// capacity.
unsafe fn copy_onto(into: &mut Vec<u8>, src: *const u8, len: usize) {
    let at = into.len();
    into.reserve(len);
    // SAFETY: src is readable for len bytes (the caller's contract); `into`
    // has room for len more bytes, which the copy initializes before the
    // length covers them.
    unsafe {
        std::ptr::copy_nonoverlapping(src, into.as_mut_ptr().add(at), len);
        into.set_len(at + len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gather(iov: &[libc::iovec]) -> Vec<u8> {
        let mut v = Vec::new();
        for i in iov {
            // SAFETY: the iovecs point into live test buffers.
            v.extend_from_slice(unsafe {
                std::slice::from_raw_parts(i.iov_base as *const u8, i.iov_len)
            });
        }
        v
    }

    #[test]
    fn flatten_and_iovecs_agree_from_every_position() {
        let bytes: Vec<u8> = (0..10).collect();
        let a = [100u8, 101, 102];
        let b = [200u8; 5];
        let mut s = Splices::default();
        // SAFETY: a and b outlive s.
        unsafe {
            s.push(0, a.as_ptr(), a.len());
            s.push(4, b.as_ptr(), b.len());
            s.push(4, a.as_ptr(), 1);
            s.push(10, b.as_ptr(), 2);
        }
        assert_eq!(s.bytes(), 11);
        let mut flat = Vec::new();
        s.flatten(&bytes, &mut flat);
        let want: Vec<u8> = [&a[..], &bytes[..4], &b[..], &a[..1], &bytes[4..], &b[..2]].concat();
        assert_eq!(flat, want);
        let mut iov = Vec::new();
        for pos in 0..=want.len() {
            s.iovecs(&bytes, pos, &mut iov);
            assert_eq!(gather(&iov), want[pos..], "from {pos}");
            assert!(
                iov.iter().all(|i| i.iov_len > 0),
                "no empty iovec from {pos}"
            );
        }
    }

    #[test]
    fn iovecs_stop_at_the_limit_and_go_on_from_there() {
        let bytes = vec![7u8; MAX_IOVECS * 2];
        let data = [9u8; 3];
        let mut s = Splices::default();
        for i in 0..MAX_IOVECS {
            // SAFETY: data outlives s.
            unsafe { s.push(i * 2 + 1, data.as_ptr(), data.len()) };
        }
        let mut want = Vec::new();
        s.flatten(&bytes, &mut want);
        let (mut pos, mut got, mut iov) = (0, Vec::new(), Vec::new());
        while pos < want.len() {
            s.iovecs(&bytes, pos, &mut iov);
            assert!(iov.len() <= MAX_IOVECS);
            let part = gather(&iov);
            pos += part.len();
            got.extend(part);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn without_splices_the_output_is_its_bytes() {
        let s = Splices::default();
        let mut flat = vec![1];
        s.flatten(&[2, 3], &mut flat);
        assert_eq!(flat, [1, 2, 3]);
        let mut iov = Vec::new();
        s.iovecs(&[2, 3], 1, &mut iov);
        assert_eq!(gather(&iov), [3]);
    }
}

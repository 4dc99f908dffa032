//! A host queue's send buffer: framed bytes, and (when the transport sends
//! vectored) references to write data that stays in the caller's buffers
//! until the socket takes it, so a write's data is copied once (by the
//! kernel) instead of twice.
//!
//! The bytes to send are `bytes[sent..]` with each reference's data
//! inserted before `bytes[r.at]`, in order. A reference names the command
//! id and the range of its outgoing buffer, never an address: the data is
//! looked up through [`DataBuffers`] whenever it is sent, so a buffer the
//! caller moved is never read. A command whose completion arrives while
//! its data is still referenced (a target that answers what it has not
//! received) has its data copied in first ([`TxBuf::flatten`]): after its
//! completion the buffer is the caller's again.

use std::collections::VecDeque;
use std::io::IoSlice;

use super::buffers::DataBuffers;

/// Data of command `cid`, `outgoing(cid)[offset..offset + len]`, to be sent
/// before `bytes[at]`.
#[derive(Debug, Clone, Copy)]
struct TxRef {
    at: usize,
    cid: u16,
    offset: u32,
    len: u32,
}

/// See the module documentation.
#[derive(Debug)]
pub struct TxBuf {
    bytes: Vec<u8>,
    /// `bytes[..sent]` went out.
    sent: usize,
    refs: VecDeque<TxRef>,
    /// Bytes of `refs[0]` that went out.
    ref_sent: usize,
    /// Unsent bytes of all references.
    ref_bytes: usize,
}

impl TxBuf {
    /// A buffer that holds `capacity` bytes when every reference is copied
    /// in, and up to `refs` references.
    pub fn with_capacity(capacity: usize, refs: usize) -> Self {
        TxBuf {
            bytes: Vec::with_capacity(capacity),
            sent: 0,
            refs: VecDeque::with_capacity(refs),
            ref_sent: 0,
            ref_bytes: 0,
        }
    }

    /// Bytes not yet sent, referenced data included.
    pub fn unsent(&self) -> usize {
        self.bytes.len() - self.sent + self.ref_bytes
    }

    /// Bytes held, sent or not, referenced data included: what copying
    /// every reference in would need.
    pub fn len(&self) -> usize {
        self.bytes.len() + self.ref_bytes
    }

    /// Room for all of it, references copied in.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// True when nothing waits to be sent.
    pub fn is_empty(&self) -> bool {
        self.unsent() == 0
    }

    /// Framed bytes go on the end of this.
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Sends `outgoing(cid)[offset..offset + len]` next, from the caller's
    /// buffer.
    pub fn push_ref(&mut self, cid: u16, offset: u32, len: u32) {
        debug_assert!(self.refs.len() < self.refs.capacity());
        self.refs.push_back(TxRef {
            at: self.bytes.len(),
            cid,
            offset,
            len,
        });
        self.ref_bytes += len as usize;
    }

    /// Whether data of command `cid` waits to be sent from its buffer.
    pub fn references(&self, cid: u16) -> bool {
        self.refs.iter().any(|r| r.cid == cid)
    }

    /// Drops what was sent, so appends reuse its room.
    pub fn compact(&mut self) {
        if self.sent == 0 {
            return;
        }
        self.bytes.copy_within(self.sent.., 0);
        self.bytes.truncate(self.bytes.len() - self.sent);
        for r in &mut self.refs {
            r.at -= self.sent;
        }
        self.sent = 0;
    }

    /// Copies every referenced byte into the buffer: what is unsent is then
    /// `bytes[sent..]`, contiguous.
    pub fn flatten<B: DataBuffers + ?Sized>(&mut self, bufs: &B) -> &[u8] {
        if !self.refs.is_empty() {
            self.compact();
            let old_len = self.bytes.len();
            let new_len = old_len + self.ref_bytes;
            assert!(
                new_len <= self.bytes.capacity(),
                "the send buffer holds every reference"
            );
            self.bytes.resize(new_len, 0);
            // From the back, each run of framed bytes moves up past the
            // references before it; then the reference's data goes below.
            let (mut src_end, mut dst_end) = (old_len, new_len);
            for (i, r) in self.refs.iter().enumerate().rev() {
                let run = src_end - r.at;
                self.bytes.copy_within(r.at..src_end, dst_end - run);
                dst_end -= run;
                let skip = if i == 0 { self.ref_sent } else { 0 };
                let at = r.offset as usize + skip;
                let data = &bufs.outgoing(r.cid)[at..r.offset as usize + r.len as usize];
                self.bytes[dst_end - data.len()..dst_end].copy_from_slice(data);
                dst_end -= data.len();
                src_end = r.at;
            }
            debug_assert_eq!(src_end, dst_end);
            self.refs.clear();
            self.ref_sent = 0;
            self.ref_bytes = 0;
        }
        &self.bytes[self.sent..]
    }

    /// The unsent bytes in order, as up to `iov.len()` slices (fewer when
    /// there are more: the rest goes in a later send); returns how many.
    pub fn iovecs<'a, B: DataBuffers + ?Sized>(
        &'a self,
        bufs: &'a B,
        iov: &mut [IoSlice<'a>],
    ) -> usize {
        let mut n = 0;
        let mut pos = self.sent;
        for (i, r) in self.refs.iter().enumerate() {
            if n + 2 > iov.len() {
                return n;
            }
            if r.at > pos {
                iov[n] = IoSlice::new(&self.bytes[pos..r.at]);
                n += 1;
            }
            let skip = if i == 0 { self.ref_sent } else { 0 };
            let from = r.offset as usize + skip;
            iov[n] = IoSlice::new(&bufs.outgoing(r.cid)[from..r.offset as usize + r.len as usize]);
            n += 1;
            pos = r.at;
        }
        if pos < self.bytes.len() && n < iov.len() {
            iov[n] = IoSlice::new(&self.bytes[pos..]);
            n += 1;
        }
        n
    }

    /// `n` of the unsent bytes went out.
    pub fn sent(&mut self, mut n: usize) {
        assert!(n <= self.unsent(), "sent more than was pending");
        while n > 0 {
            let run_end = self.refs.front().map_or(self.bytes.len(), |r| r.at);
            if run_end > self.sent {
                let k = n.min(run_end - self.sent);
                self.sent += k;
                n -= k;
                continue;
            }
            let r = *self
                .refs
                .front()
                .expect("unsent bytes are framed or referenced");
            let k = n.min(r.len as usize - self.ref_sent);
            self.ref_sent += k;
            self.ref_bytes -= k;
            n -= k;
            if self.ref_sent == r.len as usize {
                self.refs.pop_front();
                self.ref_sent = 0;
            }
        }
        if self.sent == self.bytes.len() && self.refs.is_empty() {
            self.bytes.clear();
            self.sent = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bufs(Vec<Vec<u8>>);
    impl DataBuffers for Bufs {
        fn outgoing(&self, cid: u16) -> &[u8] {
            &self.0[cid as usize]
        }
        fn incoming(&mut self, cid: u16) -> &mut [u8] {
            &mut self.0[cid as usize]
        }
    }

    /// Three framed runs with two references between (and one at the end),
    /// and the same bytes written out flat.
    fn sample() -> (TxBuf, Bufs, Vec<u8>) {
        let bufs = Bufs(vec![
            (0..5000u32).map(|i| (i % 251) as u8).collect(),
            (0..3000u32).map(|i| (i % 13 + 100) as u8).collect(),
        ]);
        let mut t = TxBuf::with_capacity(64 << 10, 8);
        let mut flat = Vec::new();
        for (head, cid, off, len) in [
            (&b"head-one"[..], 0u16, 100u32, 4000u32),
            (b"h2", 1, 0, 3000),
        ] {
            t.bytes_mut().extend_from_slice(head);
            flat.extend_from_slice(head);
            t.push_ref(cid, off, len);
            flat.extend_from_slice(&bufs.0[cid as usize][off as usize..(off + len) as usize]);
        }
        t.bytes_mut().extend_from_slice(b"tail");
        flat.extend_from_slice(b"tail");
        t.push_ref(0, 0, 1500);
        flat.extend_from_slice(&bufs.0[0][..1500]);
        (t, bufs, flat)
    }

    fn gather(t: &TxBuf, bufs: &Bufs, max: usize) -> Vec<u8> {
        let mut iov = vec![IoSlice::new(&[]); max];
        let n = t.iovecs(bufs, &mut iov);
        iov[..n].iter().flat_map(|s| s.iter().copied()).collect()
    }

    #[test]
    fn iovecs_and_flatten_agree_from_every_position() {
        let (t0, bufs, flat) = sample();
        assert_eq!(t0.unsent(), flat.len());
        for cut in 0..=flat.len() {
            let (mut t, _, _) = sample();
            t.sent(cut);
            assert_eq!(t.unsent(), flat.len() - cut);
            assert_eq!(gather(&t, &bufs, 64), flat[cut..], "iovecs after {cut}");
            let mut f = sample().0;
            f.sent(cut);
            assert_eq!(f.flatten(&bufs), &flat[cut..], "flatten after {cut}");
            assert!(!f.references(0) && !f.references(1));
        }
    }

    #[test]
    fn sends_in_pieces_when_iovecs_are_few() {
        let (mut t, bufs, flat) = sample();
        let mut out = Vec::new();
        while !t.is_empty() {
            let part = gather(&t, &bufs, 2);
            assert!(!part.is_empty(), "two iovecs always make progress");
            // Take odd amounts, as a socket does.
            let k = part.len().min(777);
            out.extend_from_slice(&part[..k]);
            t.sent(k);
        }
        assert_eq!(out, flat);
        assert_eq!(t.len(), 0, "an empty buffer starts over");
    }

    #[test]
    fn compact_keeps_the_references_in_place() {
        let (mut t, bufs, flat) = sample();
        t.sent(5);
        t.compact();
        t.bytes_mut().extend_from_slice(b"more");
        let mut want = flat[5..].to_vec();
        want.extend_from_slice(b"more");
        assert_eq!(gather(&t, &bufs, 64), want);
        assert!(t.references(1));
    }

    #[test]
    #[should_panic(expected = "sent more than was pending")]
    fn sending_more_than_pending_is_a_bug() {
        let (mut t, _, flat) = sample();
        t.sent(flat.len() + 1);
    }
}

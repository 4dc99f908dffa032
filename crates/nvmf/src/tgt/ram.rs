//! A RAM namespace's memory: one anonymous mapping, read and written with
//! plain copies (no system call, no page-cache lookup per I/O, as SPDK's
//! malloc bdev). 2 MiB hugetlb pages when enough are reserved
//! (`vm.nr_hugepages`), else base pages. Not `MADV_HUGEPAGE`: with the
//! kernel's default THP defrag setting (`madvise`) a fault in an advised
//! region compacts memory directly, and random 4 KiB first writes over 1 GiB
//! ran at 309 per second with it against 180,000 without (a C loop on the
//! development machine). Pages are
//! placed on first touch, so the reactors that write a namespace first (the
//! host's preconditioning, on the reactors' node) decide its node.
//!
//! Several reactors copy in and out of one region without a lock, as they
//! read and write one file with `pread`/`pwrite`: two commands that
//! overlap in flight race, and NVMe leaves the data of such commands
//! undefined (a host orders them itself). Only raw-pointer copies touch the
//! mapping; no reference to it is ever made.

use std::io;

/// Bytes of one hugetlb page (x86-64's default huge page size).
const HUGE_PAGE: usize = 2 << 20;
/// Bytes of a base page.
const PAGE: usize = 4096;

/// What backs the mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// 2 MiB hugetlb pages, reserved at start-up.
    Hugetlb,
    /// 4 KiB pages (transparent huge pages where the kernel's THP setting
    /// is `always`).
    Base,
}

/// One RAM namespace's memory.
#[derive(Debug)]
pub struct RamRegion {
    ptr: *mut u8,
    /// Bytes the namespace holds.
    len: usize,
    /// Bytes mapped (len rounded up to the page size).
    mapped: usize,
    /// What backs it.
    pub pages: Pages,
}

// SAFETY: the region is plain memory owned by this value; every access is a
// raw-pointer copy bounded by `len` (see the module doc on concurrent
// copies), so it may be shared and sent between reactor threads.
unsafe impl Send for RamRegion {}
// SAFETY: as above.
unsafe impl Sync for RamRegion {}

fn map(len: usize, flags: libc::c_int) -> Option<*mut u8> {
    // SAFETY: an anonymous mapping names no file and no existing memory;
    // the result is checked before use.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p.cast())
}

impl RamRegion {
    /// Maps `len` bytes of zeroes.
    pub fn new(len: usize) -> io::Result<Self> {
        let huge = len.div_ceil(HUGE_PAGE) * HUGE_PAGE;
        if let Some(ptr) = map(huge, libc::MAP_HUGETLB) {
            return Ok(Self {
                ptr,
                len,
                mapped: huge,
                pages: Pages::Hugetlb,
            });
        }
        let mapped = len.div_ceil(PAGE) * PAGE;
        let ptr = map(mapped, libc::MAP_NORESERVE).ok_or_else(io::Error::last_os_error)?;
        Ok(Self {
            ptr,
            len,
            mapped,
            pages: Pages::Base,
        })
    }

    fn check(&self, off: u64, len: usize) -> io::Result<usize> {
        let off = usize::try_from(off).map_err(|_| io::ErrorKind::InvalidInput)?;
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(off),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{len} bytes at {off} pass the end of a {}-byte RAM namespace",
                    self.len
                ),
            )),
        }
    }

    /// Copies `buf.len()` bytes at byte `off` into `buf`.
    pub fn read(&self, off: u64, buf: &mut [u8]) -> io::Result<()> {
        let off = self.check(off, buf.len())?;
        // SAFETY: off..off+len lies inside the mapping (checked); buf is a
        // distinct, exclusively borrowed buffer.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Where `len` bytes at byte `off` are, for a reader that copies them
    /// later ([`super::splice`]): valid for as long as the region lives.
    pub fn source(&self, off: u64, len: usize) -> io::Result<*const u8> {
        let off = self.check(off, len)?;
        // SAFETY: off..off+len lies inside the mapping (checked).
        Ok(unsafe { self.ptr.add(off) })
    }

    /// Copies `buf` to byte `off`.
    pub fn write(&self, off: u64, buf: &[u8]) -> io::Result<()> {
        let off = self.check(off, buf.len())?;
        // SAFETY: as in read, the other way.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), self.ptr.add(off), buf.len()) };
        Ok(())
    }

    /// Zeroes `len` bytes at `off`: whole base pages go back to the kernel
    /// (`MADV_DONTNEED`: they read as zeroes and hold no memory), the edges
    /// are cleared. Hugetlb pages are cleared in place.
    pub fn zero(&self, off: u64, len: usize) -> io::Result<()> {
        let off = self.check(off, len)?;
        let (first, last) = (off.div_ceil(PAGE) * PAGE, (off + len) / PAGE * PAGE);
        // SAFETY: first..last is a page-aligned range inside the private
        // anonymous mapping (off..off+len is, checked); DONTNEED makes it
        // read as zeroes.
        let given_back = self.pages != Pages::Hugetlb
            && first < last
            && unsafe {
                libc::madvise(
                    self.ptr.add(first).cast(),
                    last - first,
                    libc::MADV_DONTNEED,
                )
            } == 0;
        // SAFETY: every range cleared lies inside off..off+len (checked).
        unsafe {
            if given_back {
                std::ptr::write_bytes(self.ptr.add(off), 0, first - off);
                std::ptr::write_bytes(self.ptr.add(last), 0, off + len - last);
            } else {
                std::ptr::write_bytes(self.ptr.add(off), 0, len);
            }
        }
        Ok(())
    }

    /// In words, for start-up.
    pub fn describe(&self) -> &'static str {
        match self.pages {
            Pages::Hugetlb => "RAM, 2 MiB hugetlb pages",
            Pages::Base => "RAM, 4 KiB pages",
        }
    }
}

impl Drop for RamRegion {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, unmapped once; nothing refers to
        // it past this value.
        unsafe { libc::munmap(self.ptr.cast(), self.mapped) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_was_written_and_zeroes_ranges() {
        let r = RamRegion::new(3 * PAGE + 512).unwrap();
        let mut b = vec![0u8; 3 * PAGE + 512];
        r.read(0, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0), "a new region reads zeroes");
        let data: Vec<u8> = (0..b.len()).map(|i| (i % 251) as u8 + 1).collect();
        r.write(0, &data).unwrap();
        r.read(0, &mut b).unwrap();
        assert_eq!(b, data);
        // Zero from mid first page to mid last page: edges cleared, whole
        // pages given back.
        r.zero(512, 2 * PAGE + 512).unwrap();
        r.read(0, &mut b).unwrap();
        assert_eq!(&b[..512], &data[..512]);
        assert!(b[512..2 * PAGE + 1024].iter().all(|&x| x == 0));
        assert_eq!(&b[2 * PAGE + 1024..], &data[2 * PAGE + 1024..]);
        let e = r.read(3 * PAGE as u64, &mut [0u8; 1024]).unwrap_err();
        assert!(e.to_string().contains("pass the end"), "{e}");
        assert!(r.write(u64::MAX, &[0]).is_err());
    }
}

//! The `passthru` backend: NVMe Read and Write commands sent through io_uring
//! passthrough (`IORING_OP_URING_CMD`, `cmd_op` = `NVME_URING_CMD_IO`) on a
//! namespace's generic character device `/dev/ngXnY`. The driver turns our
//! command into an NVMe SQE as it is: no bio splitting, merging or I/O
//! scheduler on the way.
//!
//! The kernel requires a ring of 128-byte SQEs and 32-byte CQEs
//! (`IORING_SETUP_SQE128 | IORING_SETUP_CQE32`). The 72-byte
//! `struct nvme_uring_cmd` (`include/uapi/linux/nvme_ioctl.h`) lies in the
//! SQE's 80-byte command area, which starts at byte 48. A completion's `res`
//! is 0 on success, the NVMe status (`SCT << 8 | SC`, with CRD, More and DNR
//! above) when positive, a negated errno when negative.
//!
//! Set-up mirrors `uring`: SINGLE_ISSUER + DEFER_TASKRUN where granted, else
//! COOP_TASKRUN, else plain; the target registered as a fixed file; each
//! slot's buffer registered as its own fixed buffer (index = slot) and used
//! with `IORING_URING_CMD_FIXED` (Linux ≥ 6.1); the ring fd registered.
//! One buffer per slot, not one for the region as `uring` does: Linux 6.1
//! maps a command's fixed buffer with every page of the registered buffer
//! as a segment, and fails (EINVAL) past the device's `max_segments`.
//! [`PassthruBackend::start`] sends one read of LBA 0 before the run, which
//! proves the command path and permissions, and falls back to plain buffers
//! where the kernel refuses fixed ones for commands (EINVAL before 6.1).
//! SQPOLL and IOPOLL are not used (a note says so when asked): polling
//! passthrough commands crashed Debian's Linux 6.1 in the VM lab (general
//! protection fault in `bio_poll` under `nvme_ns_chr_uring_cmd_iopoll`, two
//! polled rings on one namespace).
//!
//! Hot path: like `uring`, each command's per-I/O fields are patched from
//! a per-direction template, typed as `sysapi::uring::NvmeSqe` (the SQE
//! head and `struct nvme_uring_cmd`, offsets asserted there), into the
//! next staged entry; a batch goes into the ring with the crate's
//! `push_multiple` at submit. The NVMe opcodes are `nvme_spec`'s.

use std::io;
use std::os::fd::RawFd;

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use nvme_spec::command::io::{READ as NVME_CMD_READ, WRITE as NVME_CMD_WRITE};
use sysapi::uring::{Enter, NvmeSqe, NvmeUringCmd, RingSpec, SqeView, NVME_URING_CMD_IO};

use super::uring::{UringOptions, UringSetup};
use super::{Backend, Completion, IoRequest};
use crate::stats::Dir;
use results::NVME_STATUS_BASE;

/// The kernel refuses registered buffers larger than this.
const MAX_FIXED_BUFFER_BYTES: usize = 1 << 30;

/// The namespace commands go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvmeNamespace {
    /// Namespace id.
    pub nsid: u32,
    /// LBA size in bytes (a power of two, ≥ 512).
    pub lba_bytes: u32,
}

/// One io_uring of 128-byte SQEs owned by one worker, sending NVMe commands.
pub struct PassthruBackend {
    /// Before `ring`: dropped first, it unregisters the ring fd by the fd.
    enter: Enter,
    /// The commands queued since the last submit, in order, patched by
    /// `queue` from a template and copied into the ring by `submit`.
    sqes: Vec<squeue::Entry128>,
    ring: IoUring<squeue::Entry128, cqueue::Entry32>,
    fd: RawFd,
    ns: NvmeNamespace,
    lba_shift: u32,
    region: (*mut u8, usize),
    fixed_file: bool,
    fixed_buffers: bool,
    /// Bits of `buf_index` that take the slot index: all 16 with fixed
    /// buffers, none without.
    buf_index_mask: u16,
    /// SQEs written since the last submit (at most the depth, which is
    /// `slot_len.len()`).
    staged: u32,
    /// Read and write SQEs with user_data, addr, data_len, SLBA and NLB zero.
    templates: [NvmeSqe; 2],
    /// Bytes of the I/O in each slot (a successful command reports 0).
    slot_len: Vec<u32>,
    /// Features granted, e.g. `DEFER_TASKRUN`, `fixed buffers`.
    pub features: Vec<String>,
    /// Fallbacks taken, in words.
    pub notes: Vec<String>,
}

impl std::fmt::Debug for PassthruBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassthruBackend")
            .field("ns", &self.ns)
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

type PassthruRing = IoUring<squeue::Entry128, cqueue::Entry32>;

/// The ring, the task-run flags granted, and the fallbacks taken.
fn build_ring(
    depth: u32,
    setup: UringSetup,
) -> io::Result<(PassthruRing, Vec<String>, Vec<String>)> {
    let spec = RingSpec {
        taskrun: super::uring::taskrun(setup),
        label: "SQE128+CQE32",
        ..RingSpec::new(depth)
    };
    let b = sysapi::uring::build_ring(&spec)?;
    let mut features = vec!["SQE128+CQE32".to_string()];
    features.extend(b.features);
    Ok((b.ring, features, b.notes))
}

impl PassthruBackend {
    /// A ring of `depth` 128-byte entries sending commands for namespace `ns`
    /// to `fd` (an open `/dev/ngXnY`, owned by the caller for the whole run).
    /// `region` is the worker's buffer region of `depth` equal slots; each
    /// slot is registered as fixed buffer `slot` when asked. Issues no I/O;
    /// [`start`](Self::start) also probes.
    pub fn new(
        fd: RawFd,
        ns: NvmeNamespace,
        depth: u32,
        region: (*mut u8, usize),
        opts: &UringOptions,
    ) -> io::Result<PassthruBackend> {
        if !ns.lba_bytes.is_power_of_two() || ns.lba_bytes < 512 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("LBA size {} is not a power of two ≥ 512", ns.lba_bytes),
            ));
        }
        let (ring, mut features, mut notes) = build_ring(depth, opts.setup)?;
        if opts.sqpoll_idle_ms.is_some() {
            notes.push("SQPOLL is not used by the passthru backend".into());
        }
        if opts.iopoll {
            notes.push(
                "IOPOLL is not used by the passthru backend (polled passthrough crashed Linux 6.1 in numio's lab): completions are interrupt-driven"
                    .into(),
            );
        }
        let mut fixed_file = false;
        if opts.registered_files {
            match ring.submitter().register_files(&[fd]) {
                Ok(()) => {
                    fixed_file = true;
                    features.push("registered files".into());
                }
                Err(e) => notes.push(format!("register_files failed ({e}); using the plain fd")),
            }
        }
        let slots = depth.max(1) as usize;
        let fixed_buffers =
            opts.fixed_buffers && register_slot_buffers(&ring, region, slots, &mut notes);
        let enter = Enter::register(&ring, &mut features, &mut notes);
        let mut b = PassthruBackend {
            ring,
            fd,
            ns,
            lba_shift: ns.lba_bytes.trailing_zeros(),
            region,
            fixed_file,
            fixed_buffers,
            buf_index_mask: 0,
            enter,
            sqes: vec![opcode::Nop::new().build().into(); slots],
            staged: 0,
            templates: [NvmeSqe::default(); 2],
            slot_len: vec![0; slots],
            features,
            notes,
        };
        b.build_templates();
        Ok(b)
    }

    /// [`new`](Self::new), then one read of LBA 0 into the start of `region`
    /// (its bytes are restored after): fails with the cause and the fix when
    /// the kernel, driver or permissions refuse NVMe commands, and turns
    /// fixed buffers off where the kernel refuses them for commands.
    pub fn start(
        fd: RawFd,
        ns: NvmeNamespace,
        depth: u32,
        region: (*mut u8, usize),
        opts: &UringOptions,
    ) -> io::Result<PassthruBackend> {
        let mut b = PassthruBackend::new(fd, ns, depth, region, opts)?;
        b.probe()?;
        Ok(b)
    }

    fn build_templates(&mut self) {
        self.buf_index_mask = if self.fixed_buffers { 0xffff } else { 0 };
        for dir in [Dir::Read, Dir::Write] {
            self.templates[dir as usize] = NvmeSqe::from_entry(self.entry(&IoRequest::blank(dir)));
        }
    }

    /// The SQE for `io`, built by the io-uring crate (start-up and tests;
    /// the hot path patches a template made from it, see [`patch_sqe`]).
    fn entry(&self, io: &IoRequest) -> squeue::Entry128 {
        let cmd = NvmeUringCmd {
            opcode: match io.dir {
                Dir::Read => NVME_CMD_READ,
                Dir::Write => NVME_CMD_WRITE,
            },
            nsid: self.ns.nsid,
            addr: io.buf as u64,
            data_len: io.len_bytes,
            cdw10: (io.offset_bytes >> self.lba_shift) as u32,
            cdw11: ((io.offset_bytes >> self.lba_shift) >> 32) as u32,
            cdw12: (io.len_bytes >> self.lba_shift).saturating_sub(1),
            ..NvmeUringCmd::default()
        };
        let buf_index = self.fixed_buffers.then_some(io.slot as u16);
        let e = if self.fixed_file {
            opcode::UringCmd80::new(types::Fixed(0), NVME_URING_CMD_IO)
                .cmd(cmd.to_cmd_area())
                .buf_index(buf_index)
                .build()
        } else {
            opcode::UringCmd80::new(types::Fd(self.fd), NVME_URING_CMD_IO)
                .cmd(cmd.to_cmd_area())
                .buf_index(buf_index)
                .build()
        };
        e.user_data(u64::from(io.slot))
    }

    /// One read of LBA 0 into the start of the region, waited for.
    fn probe(&mut self) -> io::Result<()> {
        let len = self.ns.lba_bytes;
        if self.region.1 < len as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "buffer region smaller than one logical block",
            ));
        }
        // SAFETY: the region is the worker's, at least `len` bytes long (checked
        // above), and no I/O is in flight: the worker has not started.
        let saved = unsafe { std::slice::from_raw_parts(self.region.0, len as usize) }.to_vec();
        let mut result = self.probe_once(len);
        if self.fixed_buffers && result == Err(libc::EINVAL) {
            self.fixed_buffers = false;
            self.build_templates();
            result = self.probe_once(len);
            if result.is_ok() {
                self.notes.push(
                    "NVMe commands on fixed buffers were refused (EINVAL: IORING_URING_CMD_FIXED needs Linux ≥ 6.1, and 6.1 takes at most the device's max_segments pages per buffer): plain buffers".into(),
                );
            }
        }
        // SAFETY: the probe's completion was reaped, so the kernel is done
        // with the region; we restore the bytes the read replaced.
        unsafe { std::ptr::copy_nonoverlapping(saved.as_ptr(), self.region.0, saved.len()) };
        if self.fixed_buffers {
            self.features
                .push("fixed buffers (IORING_URING_CMD_FIXED)".into());
        }
        result.map_err(probe_error)
    }

    /// Sends one read of `len` bytes at LBA 0; `Err(errno)` or `Err` of an
    /// NVMe status code (≥ [`NVME_STATUS_BASE`]) when it fails.
    fn probe_once(&mut self, len: u32) -> Result<(), i32> {
        // SAFETY: the region is the worker's, outlives this backend and is
        // at least `len` bytes long (checked by `probe`); no other I/O is in
        // flight (the worker has not started), and `probe` touches the
        // region again only after this read's completion is reaped (or the
        // submit failed and the backend is dropped with the error).
        unsafe {
            self.queue(IoRequest {
                slot: 0,
                dir: Dir::Read,
                offset_bytes: 0,
                len_bytes: len,
                buf: self.region.0,
            })
        };
        self.submit()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        let mut out = [Completion::default()];
        self.reap(&mut out, 1)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        match out[0].result {
            r if r == len as i32 => Ok(()),
            r if r < 0 => Err(-r),
            _ => Err(libc::EIO),
        }
    }

    fn drain(&mut self, out: &mut [Completion]) -> usize {
        let mut cq = self.ring.completion();
        let mut n = 0;
        while n < out.len() {
            let Some(cqe) = cq.next() else { break };
            let slot = cqe.user_data() as u32;
            out[n] = Completion {
                slot,
                result: completion_result(cqe.result(), self.slot_len[slot as usize]),
            };
            n += 1;
        }
        n
    }
}

/// The engine's completion result for a command's `res`: its length on
/// success, the negated errno, or the negated NVMe status code.
#[inline]
fn completion_result(res: i32, len_bytes: u32) -> i32 {
    match res {
        0 => len_bytes as i32,
        r if r < 0 => r,
        status => -(NVME_STATUS_BASE + (status & 0x7ff)),
    }
}

/// The probe's failure, with the cause and the fix in words.
fn probe_error(code: i32) -> io::Error {
    let hint = match code {
        libc::EACCES | libc::EPERM => {
            "NVMe passthrough needs CAP_SYS_ADMIN (run as root; Linux ≥ 6.2 also lets the device's owner read)"
        }
        libc::EOPNOTSUPP | libc::ENOTTY => {
            "the device does not take io_uring NVMe commands (Linux ≥ 5.19 and an NVMe generic device /dev/ngXnY needed)"
        }
        libc::EINVAL => "the kernel refused the command (is this an NVMe I/O command set namespace?)",
        _ => "",
    };
    if code >= NVME_STATUS_BASE {
        let status = crate::stats::nvme_status_name((code - NVME_STATUS_BASE) as u16);
        return io::Error::other(format!("a read of LBA 0 failed with {status}"));
    }
    let e = io::Error::from_raw_os_error(code);
    if hint.is_empty() {
        e
    } else {
        io::Error::new(e.kind(), format!("{e}: {hint}"))
    }
}

/// `template` with the per-I/O fields of `io` written: user_data, fixed
/// buffer index (the bits of `buf_index_mask`), buffer address, data
/// length, starting LBA (CDW10-11) and the 0's based block count (CDW12).
#[inline(always)]
fn patch_sqe(template: &NvmeSqe, io: &IoRequest, lba_shift: u32, buf_index_mask: u16) -> NvmeSqe {
    let t = template;
    let slba = io.offset_bytes >> lba_shift;
    NvmeSqe {
        head: sysapi::uring::SqeHead {
            user_data: u64::from(io.slot),
            buf_index: t.head.buf_index | (io.slot as u16 & buf_index_mask),
            ..t.head
        },
        cmd: NvmeUringCmd {
            addr: io.buf as u64,
            data_len: io.len_bytes,
            cdw10: slba as u32,
            cdw11: (slba >> 32) as u32,
            cdw12: (io.len_bytes >> lba_shift).wrapping_sub(1) & 0xffff,
            ..t.cmd
        },
        ..*t
    }
}

/// Registers each of the `slots` equal slots of `region` as its own fixed
/// buffer (index = slot); `false`, with a note, when that cannot be done.
fn register_slot_buffers(
    ring: &PassthruRing,
    region: (*mut u8, usize),
    slots: usize,
    notes: &mut Vec<String>,
) -> bool {
    let slot_bytes = region.1 / slots.max(1);
    if slot_bytes > MAX_FIXED_BUFFER_BYTES || slot_bytes == 0 || slots > 1 << 16 {
        notes.push(format!(
            "{slots} slots of {slot_bytes} bytes cannot be fixed buffers: plain buffers"
        ));
        return false;
    }
    let iovs: Vec<libc::iovec> = (0..slots)
        .map(|i| libc::iovec {
            iov_base: region.0.wrapping_add(i * slot_bytes).cast(),
            iov_len: slot_bytes,
        })
        .collect();
    // SAFETY: every iovec lies inside the worker's own mapping, which
    // outlives the ring (the worker drops the backend before its buffers);
    // each slot is handed to the kernel only by `queue`, until its
    // completion is reaped.
    match unsafe { ring.submitter().register_buffers(&iovs) } {
        Ok(()) => true,
        Err(e) => {
            notes.push(format!(
                "register_buffers failed ({e}); using plain buffers"
            ));
            false
        }
    }
}

impl Backend for PassthruBackend {
    #[inline]
    unsafe fn queue(&mut self, io: IoRequest) {
        debug_assert!(io.len_bytes >> self.lba_shift >= 1);
        debug_assert!(io.len_bytes >> self.lba_shift <= 1 << 16);
        self.slot_len[io.slot as usize] = io.len_bytes;
        debug_assert!(
            (self.staged as usize) < self.slot_len.len(),
            "more I/Os queued than the depth"
        );
        let t = &self.templates[io.dir as usize];
        self.sqes[self.staged as usize] =
            patch_sqe(t, &io, self.lba_shift, self.buf_index_mask).into_entry();
        self.staged += 1;
    }

    fn submit(&mut self) -> io::Result<()> {
        let n = std::mem::take(&mut self.staged);
        if n > 0 {
            // SAFETY: only this worker's thread touches this ring, so no
            // other SubmissionQueue exists.
            let mut sq = unsafe { self.ring.submission_shared() };
            // SAFETY: each command points at its slot's buffer in this
            // worker's region (registered or not), which the worker keeps
            // and leaves alone until the completion carrying the slot is
            // reaped (`Backend::queue`'s contract). The ring has at least
            // `depth` entries and no more than `depth` I/Os are ever in
            // flight, so the push cannot fail.
            let pushed = unsafe { sq.push_multiple(&self.sqes[..n as usize]) };
            debug_assert!(pushed.is_ok(), "more I/Os queued than the ring holds");
        }
        self.enter.submit(n)
    }

    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize> {
        let mut n = self.drain(out);
        while n < min {
            self.enter.wait((min - n) as u32)?;
            n += self.drain(&mut out[n..]);
        }
        Ok(n)
    }
}

#[cfg(test)]
#[path = "passthru_tests.rs"]
mod tests;

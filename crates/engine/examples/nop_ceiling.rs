//! The io_uring NOP ceiling: a bare loop with no engine around it, the
//! reference the `nop` backend is measured against (bench/nop.sh).
//!
//! It does what t/io_uring -N1 does: keep `depth` NOPs in flight, submit a
//! batch and wait for completions in one io_uring_enter, reap, resubmit. The
//! ring gets the same set-up as numio's best (`sysapi::uring`'s chain:
//! SINGLE_ISSUER + DEFER_TASKRUN where granted, the ring fd registered, one
//! io_uring_enter per batch).
//!
//! Usage: nop_ceiling [SECONDS] [DEPTH] [CPU]; prints one line:
//! `ops=N seconds=S ops_per_s=R cpu_s=C ops_per_cpu_s=P`.

use io_uring::opcode;
use sysapi::uring::{build_ring, Enter, RingSpec};

fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data and a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let depth: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(128);
    if let Some(cpu) = args.get(3).and_then(|s| s.parse::<u32>().ok()) {
        sysapi::affinity::pin_current_thread(&[cpu])?;
    }
    let mut ring: io_uring::IoUring = build_ring(&RingSpec::new(depth))?.ring;
    let mut enter = Enter::register(&ring, &mut Vec::new(), &mut Vec::new());
    let nop = opcode::Nop::new().build();
    let batch = vec![nop; depth as usize];
    let start = std::time::Instant::now();
    let cpu0 = cpu_seconds();
    let mut ops: u64 = 0;
    let mut inflight = 0usize;
    let mut iter = 0u64;
    loop {
        let room = depth as usize - inflight;
        if room > 0 {
            // SAFETY: NOPs carry no buffers.
            unsafe { ring.submission().push_multiple(&batch[..room]) }.expect("room was counted");
            inflight += room;
        }
        enter.submit_and_wait(room as u32, 1)?;
        let n = ring.completion().count();
        inflight -= n;
        ops += n as u64;
        iter += 1;
        if iter % 1024 == 0 && start.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    println!(
        "ops={ops} seconds={secs:.3} ops_per_s={:.0} cpu_s={cpu:.3} ops_per_cpu_s={:.0}",
        ops as f64 / secs,
        ops as f64 / cpu.max(1e-9)
    );
    Ok(())
}

//! CPU affinity of the calling thread (`sched_setaffinity(2)`,
//! `sched_getaffinity(2)`), and its scheduling class for background work
//! (`sched_setscheduler(2)`).

use std::io;

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

/// Most CPUs an affinity mask names (`CPU_SETSIZE`): CPUs are numbered
/// below it.
pub const MAX_CPUS: usize = CpuSet::MAX_CPU;

/// Restricts the calling thread to `cpus`. `EINVAL` for a CPU at or past
/// [`MAX_CPUS`], or (from the kernel) for a set with no online CPU.
pub fn pin_current_thread(cpus: &[u32]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        let cpu = cpu as usize;
        if cpu >= MAX_CPUS {
            return Err(io::Error::from(rustix::io::Errno::INVAL));
        }
        set.set(cpu);
    }
    sched_setaffinity(None, &set).map_err(io::Error::from)
}

/// The CPUs the calling thread may run on, ascending.
pub fn allowed_cpus() -> io::Result<Vec<u32>> {
    let set = sched_getaffinity(None).map_err(io::Error::from)?;
    Ok((0..MAX_CPUS)
        .filter(|&c| set.is_set(c))
        .map(|c| c as u32)
        .collect())
}

/// Nice value of background work where `SCHED_IDLE` is refused.
pub const BACKGROUND_NICE: i32 = 19;

/// Makes the calling thread background work: `SCHED_IDLE`, which any
/// waking thread of a normal class preempts at once (a nice value only
/// lowers its share, and a reactor waking on a CPU where the work runs
/// still waits for the scheduler's next tick or slice). Where that class
/// is refused (a seccomp filter), nice [`BACKGROUND_NICE`] instead. The
/// thread still progresses on a busy machine (the kernel gives it a
/// minimal weight).
pub fn background_current_thread() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler on this thread (pid 0 = the calling
    // thread on Linux) with a valid, initialised sched_param; it changes
    // only this thread's scheduling class.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        // SAFETY: setpriority on this thread (who 0 = the calling thread
        // on Linux) changes only its scheduling priority.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_threads_are_sched_idle() {
        std::thread::spawn(|| {
            background_current_thread();
            // SAFETY: sched_getscheduler(0) reads the calling thread's class.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_IDLE);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pins_and_restores_the_calling_thread() {
        let allowed = allowed_cpus().expect("sched_getaffinity works");
        assert!(!allowed.is_empty());
        assert!(allowed.windows(2).all(|w| w[0] < w[1]), "ascending");
        let last = *allowed.last().expect("one CPU");
        pin_current_thread(&[last]).expect("pin to an allowed CPU");
        assert_eq!(allowed_cpus().expect("read back"), vec![last]);
        pin_current_thread(&allowed).expect("restore");
        assert_eq!(allowed_cpus().expect("read back"), allowed);
    }

    #[test]
    fn refuses_cpus_past_the_mask() {
        let e = pin_current_thread(&[MAX_CPUS as u32]).expect_err("past the mask");
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::INVAL.raw_os_error())
        );
    }
}

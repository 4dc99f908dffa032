//! The environment recorded with every result: kernel, CPU model, host,
//! NVMe poll queues.

use crate::backend::BackendKind;
use crate::result::Environment;

/// Reads the machine's side of the environment; targets and CPUs are filled
/// in by the run.
pub fn capture(backend: BackendKind) -> Environment {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    Environment {
        numio_version: env!("CARGO_PKG_VERSION").to_string(),
        hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
        kernel: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
        cpu_model: read("/proc/cpuinfo")
            .map(|s| cpu_model(&s))
            .unwrap_or_default(),
        online_cpus: read("/sys/devices/system/cpu/online")
            .map(|s| count_cpu_list(&s))
            .unwrap_or(0),
        nvme_poll_queues: read("/sys/module/nvme/parameters/poll_queues")
            .and_then(|s| s.parse().ok()),
        backend: backend.name().to_string(),
        ..Environment::default()
    }
}

/// The first `model name` of /proc/cpuinfo.
pub fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// Number of CPUs in a kernel CPU list (`0-3,8,10-11`).
pub fn count_cpu_list(s: &str) -> u32 {
    s.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => u32::from(p.parse::<u32>().is_ok()),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpuinfo_and_lists() {
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 9654\n"),
            "AMD EPYC 9654"
        );
        assert_eq!(count_cpu_list("0-3,8,10-11\n"), 7);
        assert_eq!(count_cpu_list("0\n"), 1);
    }

    #[test]
    fn captures_this_machine() {
        let e = capture(BackendKind::Null);
        assert!(!e.kernel.is_empty());
        assert!(e.online_cpus >= 1);
        assert_eq!(e.backend, "null");
    }
}

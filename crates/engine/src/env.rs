//! The environment recorded with every result: kernel, CPU model, host,
//! online CPUs, NVMe poll queues (from `topology`'s host record).

use std::path::Path;

use crate::backend::BackendKind;
use crate::targets::SYS_ROOT;
use results::Environment;

/// The machine's side of the environment; targets and CPUs are filled in
/// by the run.
pub fn capture(backend: BackendKind) -> Environment {
    capture_at(backend, Path::new(SYS_ROOT))
}

/// [`capture`] of the machine whose sysfs/procfs root is `root`; what the
/// root does not say is left empty.
pub fn capture_at(backend: BackendKind, root: &Path) -> Environment {
    let host = topology::host::host_record(root).unwrap_or_default();
    Environment {
        numio_version: env!("CARGO_PKG_VERSION").to_string(),
        hostname: host.hostname,
        kernel: host.kernel,
        cpu_model: host.cpu_model,
        online_cpus: host.online_cpus.len() as u32,
        nvme_poll_queues: host.nvme_poll_queues,
        backend: backend.name().to_string(),
        ..Environment::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_a_fixture_machine() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-blockstack");
        let e = capture_at(BackendKind::Uring, &root);
        assert_eq!(e.hostname, "blockstack");
        assert_eq!(e.kernel, "6.12.12-numio-fixture");
        assert_eq!(e.cpu_model, "Intel(R) Xeon(R) Gold 6430");
        assert_eq!(e.online_cpus, 8);
        assert_eq!(e.nvme_poll_queues, Some(2));
        assert_eq!(e.backend, "uring");
    }

    #[test]
    fn captures_this_machine() {
        let e = capture(BackendKind::Null);
        assert!(!e.kernel.is_empty());
        assert!(e.online_cpus >= 1);
        assert_eq!(e.backend, "null");
    }
}

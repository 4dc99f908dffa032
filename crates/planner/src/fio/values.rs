//! The vocabularies of fio values numio takes where an option takes one
//! of a few words (`cpus_allowed_policy`, `ioengine`, `numa_mem_policy`):
//! one table each, which parsing and the messages that list what would
//! work both read.

/// How the jobs of a section share its `cpus_allowed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpusPolicy {
    /// Every job may run on every CPU of the set (fio's default).
    #[default]
    Shared,
    /// Each job gets one CPU of the set, by fio's global job number.
    Split,
}

impl CpusPolicy {
    /// Every policy, in the order messages list them.
    pub const ALL: [CpusPolicy; 2] = [CpusPolicy::Shared, CpusPolicy::Split];

    /// fio's spelling.
    pub fn fio_name(self) -> &'static str {
        match self {
            CpusPolicy::Shared => "shared",
            CpusPolicy::Split => "split",
        }
    }
}

/// How numio takes one of fio's `ioengine`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineMapping {
    /// The backend is that engine (written back under its name).
    Same,
    /// Another name of a sync engine, kept so a job file written back
    /// names it again.
    Alias,
    /// An engine numio has not, run on another backend with a warning.
    Warned,
}

/// One `ioengine` numio takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ioengine {
    /// fio's name.
    pub fio: &'static str,
    /// The numio backend it runs on.
    pub backend: &'static str,
    /// How.
    pub mapping: EngineMapping,
}

/// Every `ioengine` numio takes, in the order messages list them.
pub const IOENGINES: &[Ioengine] = &[
    Ioengine {
        fio: "io_uring",
        backend: "uring",
        mapping: EngineMapping::Same,
    },
    Ioengine {
        fio: "io_uring_cmd",
        backend: "passthru",
        mapping: EngineMapping::Same,
    },
    Ioengine {
        fio: "libaio",
        backend: "uring",
        mapping: EngineMapping::Warned,
    },
    Ioengine {
        fio: "posixaio",
        backend: "uring",
        mapping: EngineMapping::Warned,
    },
    Ioengine {
        fio: "psync",
        backend: "sync",
        mapping: EngineMapping::Same,
    },
    Ioengine {
        fio: "sync",
        backend: "sync",
        mapping: EngineMapping::Alias,
    },
    Ioengine {
        fio: "pvsync",
        backend: "sync",
        mapping: EngineMapping::Alias,
    },
    Ioengine {
        fio: "pvsync2",
        backend: "sync",
        mapping: EngineMapping::Alias,
    },
    Ioengine {
        fio: "vsync",
        backend: "sync",
        mapping: EngineMapping::Alias,
    },
    Ioengine {
        fio: "null",
        backend: "null",
        mapping: EngineMapping::Same,
    },
];

/// The `numa_mem_policy` forms numio takes, as messages list them.
pub const MEM_POLICIES: &[&str] = &["default", "local", "bind:NODES"];

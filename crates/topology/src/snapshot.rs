//! Snapshots: the files discovery read, as a `.tar.gz` with a manifest.
//!
//! A snapshot holds exactly what [`crate::Topology::discover_recorded`] read:
//! files with the contents seen, symlinks kept as symlinks, directories that
//! were listed, and `numio-snapshot.json` (schema version, the paths, and the
//! files that were unreadable with their reasons, so a replay reports them
//! the same way). Replaying a snapshot gives the same JSON as the original.
//! [`open`] reads a `.tar.gz` snapshot into memory (nothing is extracted);
//! an extracted snapshot directory works as a root too. The recording and
//! its manifest live in `recording.rs`, below discovery.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::TopologyError;
use crate::model::Topology;
use crate::recording::{io_err, manifest_unreadable};
pub use crate::recording::{Manifest, Recording, MANIFEST_NAME};
use crate::source::{MemTree, Source};

/// A root ready to discover: a directory, or a `.tar.gz` snapshot read
/// into memory (nothing is extracted to disk).
#[derive(Debug, Clone)]
pub struct Root {
    source: Source,
}

impl Root {
    /// A directory root (`/` or an extracted snapshot), not checked yet.
    pub fn dir(path: &Path) -> Root {
        Root {
            source: Source::Dir(path.to_path_buf()),
        }
    }

    /// [`crate::Topology::discover`] of this root.
    pub fn discover(&self) -> Result<Topology, TopologyError> {
        self.discover_recorded().map(|(t, _)| t)
    }

    /// [`crate::Topology::discover_recorded`] of this root.
    pub fn discover_recorded(&self) -> Result<(Topology, Recording), TopologyError> {
        crate::discover::discover_source(self.source.clone())
    }

    /// The directory or archive, for messages.
    pub fn path(&self) -> PathBuf {
        self.source.abs("")
    }
}

/// Opens a root: a directory, or a `.tar.gz` snapshot made by
/// [`Recording::save`] (it must hold a manifest of this schema version).
pub fn open(path: &Path) -> Result<Root, TopologyError> {
    let meta = std::fs::metadata(path).map_err(|_| TopologyError::RootMissing {
        path: path.to_path_buf(),
    })?;
    if meta.is_dir() {
        return Ok(Root::dir(path));
    }
    let mut magic = [0u8; 2];
    let is_gzip = File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == [0x1f, 0x8b];
    if !is_gzip {
        return Err(TopologyError::NotASnapshot {
            path: path.to_path_buf(),
        });
    }
    let tree = MemTree::from_tar_gz(path).map_err(io_err("reading snapshot", path))?;
    if tree.file(MANIFEST_NAME).is_none() {
        return Err(TopologyError::BadManifest {
            path: path.to_path_buf(),
            reason: format!("no {MANIFEST_NAME} inside, so it was not made by `numio topo --save`"),
        });
    }
    let source = Source::Memory(Arc::new(tree));
    manifest_unreadable(&source)?;
    Ok(Root { source })
}

impl Topology {
    /// Reads a snapshot directory or `.tar.gz` file (or a live root).
    pub fn load(path: &Path) -> Result<Topology, TopologyError> {
        open(path)?.discover()
    }

    /// Reads a `numio topo --json` file (by its `.json` name), else as
    /// [`Topology::load`].
    pub fn read(path: &Path) -> Result<Topology, TopologyError> {
        if path.extension().is_none_or(|e| e != "json") {
            return Topology::load(path);
        }
        let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Io {
            action: "reading",
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| TopologyError::NotATopologyJson {
            path: path.to_path_buf(),
            source,
        })
    }
}

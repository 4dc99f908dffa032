//! What one discovery read ([`Recording`]), the manifest that describes it,
//! and writing it out as a snapshot (`.tar.gz`). Below both discovery (which
//! records) and `snapshot` (which opens and replays).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::TopologyError;
use crate::model::{Unreadable, SCHEMA_VERSION};
use crate::reader::Reader;
use crate::source::Source;

/// Name of the manifest at the top of a snapshot.
pub const MANIFEST_NAME: &str = "numio-snapshot.json";

/// The manifest of a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`SCHEMA_VERSION`] of the numio that saved it.
    pub schema_version: u32,
    /// The tool and version that saved it.
    pub tool: String,
    /// Files read (relative to the root).
    pub files: Vec<String>,
    /// Symlinks resolved, with their targets.
    pub links: BTreeMap<String, String>,
    /// Directories listed.
    pub dirs: Vec<String>,
    /// Files that existed but could not be read, with the reason.
    pub unreadable: Vec<Unreadable>,
}

/// Everything one discovery read.
#[derive(Debug, Clone)]
pub struct Recording {
    files: BTreeMap<String, String>,
    links: BTreeMap<String, String>,
    dirs: Vec<String>,
    unreadable: Vec<Unreadable>,
}

pub(crate) fn io_err(
    action: &'static str,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> TopologyError {
    let path = path.to_path_buf();
    move |source| TopologyError::Io {
        action,
        path,
        source,
    }
}

impl Recording {
    pub(crate) fn from_reader(r: Reader) -> Recording {
        Recording {
            files: r.files,
            links: r.links,
            dirs: r.dirs.into_iter().collect(),
            unreadable: r.unreadable,
        }
    }

    /// The paths read (files, symlinks and listed directories), relative to
    /// the root, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .files
            .keys()
            .chain(self.links.keys())
            .chain(self.dirs.iter())
            .cloned()
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// The manifest this recording is saved with.
    pub fn manifest(&self) -> Manifest {
        Manifest {
            schema_version: SCHEMA_VERSION,
            tool: concat!("numio ", env!("CARGO_PKG_VERSION")).to_string(),
            files: self.files.keys().cloned().collect(),
            links: self.links.clone(),
            dirs: self.dirs.clone(),
            unreadable: self.unreadable.clone(),
        }
    }

    /// Writes the snapshot as a gzip-compressed tar file at `path`.
    pub fn save(&self, path: &Path) -> Result<(), TopologyError> {
        let err = io_err("writing snapshot", path);
        let file = File::create(path).map_err(io_err("creating snapshot", path))?;
        let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        self.append_all(&mut tar)
            .map_err(io_err("writing snapshot", path))?;
        let gz = tar.into_inner().map_err(io_err("writing snapshot", path))?;
        gz.finish().and_then(|mut f| f.flush()).map_err(err)
    }

    fn append_all<W: Write>(&self, tar: &mut tar::Builder<W>) -> std::io::Result<()> {
        let manifest =
            serde_json::to_vec_pretty(&self.manifest()).map_err(std::io::Error::other)?;
        append_file(tar, MANIFEST_NAME, &manifest)?;
        for dir in self.dirs.iter().filter(|d| !d.is_empty()) {
            let mut h = header(tar::EntryType::Directory, 0o755, 0);
            tar.append_data(&mut h, dir, std::io::empty())?;
        }
        for (path, text) in &self.files {
            append_file(tar, path, text.as_bytes())?;
        }
        for (path, target) in &self.links {
            let mut h = header(tar::EntryType::Symlink, 0o777, 0);
            tar.append_link(&mut h, path, target)?;
        }
        Ok(())
    }
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(0);
    h
}

fn append_file<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    data: &[u8],
) -> std::io::Result<()> {
    let mut h = header(tar::EntryType::Regular, 0o444, data.len() as u64);
    tar.append_data(&mut h, path, data)
}

/// Files that could not be read, each with the reason (path → reason).
pub(crate) type UnreadableReasons = BTreeMap<String, String>;

/// The unreadable files listed by the manifest of a snapshot, refusing
/// another schema version. A directory without a manifest (a live root, a
/// hand-made fixture) gives an empty map.
pub(crate) fn manifest_unreadable(source: &Source) -> Result<UnreadableReasons, TopologyError> {
    let path = source.abs(MANIFEST_NAME);
    let text = match source {
        Source::Dir(root) => match crate::source::in_root(root, MANIFEST_NAME, true)
            .and_then(std::fs::read_to_string)
        {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => {
                return Err(TopologyError::Io {
                    action: "reading",
                    path,
                    source: e,
                })
            }
        },
        Source::Memory(tree) => match tree.file(MANIFEST_NAME) {
            Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            None => return Ok(BTreeMap::new()),
        },
    };
    let bad = |reason: String| TopologyError::BadManifest {
        path: path.clone(),
        reason,
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let found = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| bad("no schema_version".to_string()))?;
    if found != u64::from(SCHEMA_VERSION) {
        let path = match source {
            Source::Memory(tree) => tree.origin.clone(),
            Source::Dir(_) => path,
        };
        return Err(TopologyError::SchemaMismatch {
            path,
            found: found as u32,
            expected: SCHEMA_VERSION,
        });
    }
    let manifest: Manifest = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
    Ok(manifest
        .unreadable
        .into_iter()
        .map(|u| (u.path, u.reason))
        .collect())
}

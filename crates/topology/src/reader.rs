//! A reader of a sysfs/procfs root that records everything it reads.
//!
//! Every file read, directory listed and symlink resolved is kept, so that a
//! snapshot can hold exactly what discovery used and nothing else. Paths are
//! relative to the root, `/`-separated, without a leading slash
//! (`sys/class/nvme/nvme0`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::path::PathBuf;

use crate::cpulist::trim_attr;
use crate::error::ParseError;
use crate::model::{DiscoveryNote, Unreadable};
use crate::parse::parse_mask;
use crate::relpath::{join_normalized, parent};
use crate::source::{Source, LINK_HOPS_MAX, READ_CHUNK_BYTES};

/// Reads files under a root and records what it read.
#[derive(Debug)]
pub struct Reader {
    source: Source,
    /// Files read, with their contents.
    pub files: BTreeMap<String, String>,
    /// Symlinks resolved, with their targets as stored.
    pub links: BTreeMap<String, String>,
    /// Directories listed.
    pub dirs: BTreeSet<String>,
    /// Files that exist but could not be read or parsed.
    pub unreadable: Vec<Unreadable>,
    /// What discovery read instead of files older kernels lack, and which
    /// of two contradicting files it believed.
    pub notes: Vec<DiscoveryNote>,
    /// List files that were missing, so their mask was read ([`Reader::cpu_set`]).
    pub masks_read: Vec<String>,
    /// Files a snapshot manifest says were unreadable when it was taken.
    preset_unreadable: BTreeMap<String, String>,
    /// Read buffer reused across files.
    scratch: Vec<u8>,
}

impl Reader {
    /// A reader of `root`; `preset_unreadable` comes from a snapshot manifest.
    pub fn new(source: Source, preset_unreadable: BTreeMap<String, String>) -> Reader {
        Reader {
            source,
            files: BTreeMap::new(),
            links: BTreeMap::new(),
            dirs: BTreeSet::new(),
            unreadable: Vec::new(),
            notes: Vec::new(),
            masks_read: Vec::new(),
            preset_unreadable,
            scratch: vec![0; READ_CHUNK_BYTES],
        }
    }

    /// The absolute path of `rel`.
    pub fn abs(&self, rel: &str) -> PathBuf {
        self.source.abs(rel)
    }

    fn note_unreadable(&mut self, rel: &str, reason: String) {
        if !self.unreadable.iter().any(|u| u.path == rel) {
            self.unreadable.push(Unreadable {
                path: rel.to_string(),
                reason,
            });
        }
    }

    /// The contents of a file; `None` when it is absent (not an error) or
    /// unreadable (recorded).
    pub fn read(&mut self, rel: &str) -> Option<String> {
        if let Some(text) = self.files.get(rel) {
            return Some(text.clone());
        }
        if let Some(reason) = self.preset_unreadable.get(rel).cloned() {
            self.note_unreadable(rel, reason);
            return None;
        }
        let result = self.source.read(rel, &mut self.scratch);
        match result.map(|len| std::str::from_utf8(&self.scratch[..len]).map(str::to_string)) {
            Ok(text) => match text {
                Ok(text) => {
                    self.files.insert(rel.to_string(), text.clone());
                    Some(text)
                }
                Err(_) => {
                    self.note_unreadable(rel, "not UTF-8 text".to_string());
                    None
                }
            },
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => {
                self.note_unreadable(rel, e.to_string());
                None
            }
        }
    }

    /// A file parsed by `parse`; a parse failure is recorded as unreadable
    /// with the parser's reason (its text: the record is plain data, saved
    /// in snapshots).
    pub fn parse<T>(
        &mut self,
        rel: &str,
        parse: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Option<T> {
        let text = self.read(rel)?;
        match parse(&text) {
            Ok(v) => Some(v),
            Err(reason) => {
                self.note_unreadable(rel, reason.to_string());
                None
            }
        }
    }

    /// A file's contents, trimmed of surrounding whitespace and NULs.
    pub fn read_trimmed(&mut self, rel: &str) -> Option<String> {
        self.read(rel).map(|t| trim_attr(&t).to_string())
    }

    /// A set of CPUs the kernel writes as a list (`list`, e.g.
    /// `nodeN/cpulist`) and as a hex mask (`mask`, e.g. `nodeN/cpumap`):
    /// the list, or the mask where an older kernel wrote no list (noted in
    /// [`Reader::masks_read`]). `None` when neither can be read.
    pub fn cpu_set(
        &mut self,
        list: &str,
        mask: &str,
        parse_list: fn(&str) -> Result<Vec<u32>, ParseError>,
    ) -> Option<Vec<u32>> {
        if let Some(ids) = self.parse(list, parse_list) {
            return Some(ids);
        }
        if self.unreadable.iter().any(|u| u.path == list) {
            return None;
        }
        let ids = self.parse(mask, parse_mask)?;
        self.masks_read.push(list.to_string());
        Some(ids)
    }

    /// Records a discovery note (once per code and path).
    pub fn note(&mut self, code: &str, path: &str, value: String, message: String) {
        if self.notes.iter().any(|n| n.code == code && n.path == path) {
            return;
        }
        self.notes.push(DiscoveryNote {
            code: code.to_string(),
            path: path.to_string(),
            value,
            message,
        });
    }

    /// The sorted entry names of a directory; `None` when it is absent.
    pub fn list(&mut self, rel: &str) -> Option<Vec<String>> {
        match self.source.list(rel) {
            Ok(names) => {
                self.dirs.insert(rel.to_string());
                Some(names)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => {
                self.note_unreadable(rel, e.to_string());
                None
            }
        }
    }

    /// Whether `rel` exists (as anything), without recording it.
    pub fn exists(&self, rel: &str) -> bool {
        self.source.exists(rel)
    }

    /// The target of the symlink `rel` as stored (not followed, not
    /// recorded); `None` when it is absent or no symlink.
    pub fn link_target(&self, rel: &str) -> Option<String> {
        self.source.read_link(rel).ok()
    }

    /// Resolves `rel` when it is a symlink (following chains, staying inside
    /// the root) and returns the path it leads to; a non-link is returned
    /// as is; `None` when it is absent.
    pub fn resolve(&mut self, rel: &str) -> Option<String> {
        let mut current = rel.to_string();
        for _ in 0..LINK_HOPS_MAX {
            match self.source.read_link(&current) {
                Ok(target) => {
                    let next = join_normalized(parent(&current), &target);
                    self.links.insert(current, target);
                    current = next;
                }
                Err(e) if e.kind() == ErrorKind::InvalidInput => return Some(current),
                Err(e) if e.kind() == ErrorKind::NotFound => return None,
                Err(e) => {
                    self.note_unreadable(&current, e.to_string());
                    return None;
                }
            }
        }
        self.note_unreadable(rel, format!("more than {LINK_HOPS_MAX} symlink hops"));
        None
    }
}

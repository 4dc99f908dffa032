//! Where discovery reads from: a directory (the live `/` or an extracted
//! snapshot), or a `.tar.gz` snapshot held in memory.
//!
//! Reading a snapshot in memory avoids writing and deleting thousands of
//! small files in a temporary directory, which on a busy disk takes seconds.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Error, ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::relpath::{join_normalized, parent, walk_in_root};

pub use crate::relpath::LINK_HOPS_MAX;

/// Bytes read at once; larger than a sysfs attribute (one page at most).
pub const READ_CHUNK_BYTES: usize = 8192;

/// Most bytes one file of a snapshot may hold. A sysfs attribute is one
/// page; `/proc/interrupts` of a machine with a thousand CPUs a few MiB.
pub const FILE_BYTES_MAX: u64 = 16 << 20;

/// Most bytes a snapshot's tar stream may hold uncompressed (headers
/// included), so a gzip bomb stops here. A two-socket server's snapshot is
/// a few MiB.
pub const ARCHIVE_BYTES_MAX: u64 = 64 << 20;

/// Longest path of a snapshot entry or symlink target, bytes. sysfs
/// paths, even behind a deep tree of PCIe switches, are a few hundred.
pub const PATH_BYTES_MAX: usize = 1024;

/// Most components of a snapshot entry's path or symlink target.
pub const PATH_DEPTH_MAX: usize = 64;

/// Most entries of a snapshot archive; a two-socket server's snapshot has
/// a few thousand.
pub const ENTRIES_MAX: usize = 100_000;

/// Most bytes of paths (each directory counted once) and file contents a
/// snapshot may hold in memory.
pub const TREE_BYTES_MAX: u64 = 2 * ARCHIVE_BYTES_MAX;

/// A reader that fails once more than `left` bytes came through.
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self.left.checked_sub(n as u64).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidData,
                format!(
                    "more than {} MiB uncompressed, which no snapshot numio saves holds (a gzip bomb?)",
                    ARCHIVE_BYTES_MAX >> 20
                ),
            )
        })?;
        Ok(n)
    }
}

/// The contents of one archive entry, its claimed size checked against
/// [`FILE_BYTES_MAX`] before anything is allocated, and read no further
/// than it.
fn read_bounded<R: Read>(entry: &mut tar::Entry<R>, name: &str) -> std::io::Result<Vec<u8>> {
    let claimed = entry.size();
    if claimed > FILE_BYTES_MAX {
        return Err(too_big(name, Some(claimed)));
    }
    let mut bytes = Vec::with_capacity(claimed as usize);
    entry.take(FILE_BYTES_MAX + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > FILE_BYTES_MAX {
        return Err(too_big(name, None));
    }
    Ok(bytes)
}

fn too_big(name: &str, claimed: Option<u64>) -> Error {
    let claim = claimed.map_or(String::new(), |n| format!(" (its header claims {n} bytes)"));
    Error::new(
        ErrorKind::InvalidData,
        format!(
            "{name} is larger than {} MiB{claim}, which no snapshot file is; this is not a snapshot `numio topo --save` made",
            FILE_BYTES_MAX >> 20
        ),
    )
}

/// Where files come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A directory of the file system.
    Dir(PathBuf),
    /// A snapshot archive read into memory.
    Memory(Arc<MemTree>),
}

/// A tree of files, symlinks and directories held in memory.
#[derive(Debug, Default)]
pub struct MemTree {
    /// The archive it came from (for messages).
    pub origin: PathBuf,
    files: BTreeMap<String, Vec<u8>>,
    links: BTreeMap<String, String>,
    /// Directory → names of its entries.
    dirs: BTreeMap<String, BTreeSet<String>>,
    /// Bytes of names and contents held, against [`TREE_BYTES_MAX`].
    held_bytes: u64,
}

/// `path`, or its start when it is long, quoted for a message.
fn quoted(path: &str) -> String {
    match path.char_indices().nth(80) {
        Some((i, _)) => format!("`{}…`", &path[..i]),
        None => format!("`{path}`"),
    }
}

/// A snapshot past one of this module's limits: the limit, and the fix.
fn limit_error(what: String) -> Error {
    Error::new(
        ErrorKind::InvalidData,
        format!(
            "{what}, which no snapshot `numio topo --save` makes holds; save the snapshot again with `numio topo --save`"
        ),
    )
}

/// Refuses a path (an entry's, or a symlink's target) longer than
/// [`PATH_BYTES_MAX`] or deeper than [`PATH_DEPTH_MAX`].
fn check_path(what: &str, raw: &[u8]) -> std::io::Result<()> {
    let depth = raw.split(|&b| b == b'/').filter(|c| !c.is_empty()).count();
    if raw.len() > PATH_BYTES_MAX || depth > PATH_DEPTH_MAX {
        let shown = quoted(&String::from_utf8_lossy(&raw[..raw.len().min(160)]));
        return Err(limit_error(format!(
            "{what} {shown} has a path of {} bytes and {depth} components, over the limit of {PATH_BYTES_MAX} bytes and {PATH_DEPTH_MAX} components",
            raw.len()
        )));
    }
    Ok(())
}

/// `a/./b/` → `a/b`.
fn clean(path: &str) -> String {
    join_normalized("", path)
}

impl MemTree {
    /// Reads a gzip-compressed tar archive, within [`FILE_BYTES_MAX`] a
    /// file and [`ARCHIVE_BYTES_MAX`] in all: a hostile archive (a header
    /// claiming 2^45 bytes, a gzip bomb) is refused, never allocated for.
    pub fn from_tar_gz(path: &Path) -> std::io::Result<MemTree> {
        MemTree::from_tar_gz_reader(std::fs::File::open(path)?, path)
    }

    /// [`MemTree::from_tar_gz`] of the gzip stream `gz` (`origin` names
    /// it in messages). Besides the byte caps, each entry's path is held
    /// to [`PATH_BYTES_MAX`] and [`PATH_DEPTH_MAX`], the archive to
    /// [`ENTRIES_MAX`] entries and the tree to [`TREE_BYTES_MAX`] of
    /// names: one long, deep path would otherwise be stored once per
    /// ancestor (issue 38: 8 KB of archive, 6 GB of memory).
    pub fn from_tar_gz_reader<R: Read>(gz: R, origin: &Path) -> std::io::Result<MemTree> {
        let capped = Capped {
            inner: flate2::read::GzDecoder::new(gz),
            left: ARCHIVE_BYTES_MAX,
        };
        let mut archive = tar::Archive::new(capped);
        let mut tree = MemTree {
            origin: origin.to_path_buf(),
            ..MemTree::default()
        };
        tree.dirs.insert(String::new(), BTreeSet::new());
        for (n, entry) in archive.entries()?.enumerate() {
            if n == ENTRIES_MAX {
                return Err(limit_error(format!("more than {ENTRIES_MAX} entries")));
            }
            let mut entry = entry?;
            let raw = entry.path_bytes();
            check_path("an entry", &raw)?;
            let name = clean(&String::from_utf8_lossy(&raw));
            if name.is_empty() {
                continue;
            }
            match entry.header().entry_type() {
                tar::EntryType::Directory => {
                    tree.charge(name.len())?;
                    tree.dirs.entry(name.clone()).or_default();
                }
                tar::EntryType::Symlink => {
                    let target = entry.link_name_bytes();
                    let target = target
                        .ok_or_else(|| Error::other(format!("symlink {name} without target")))?;
                    check_path(&format!("the target of symlink {}", quoted(&name)), &target)?;
                    let target = String::from_utf8_lossy(&target).into_owned();
                    tree.charge(name.len() + target.len())?;
                    tree.links.insert(name.clone(), target);
                }
                tar::EntryType::Regular => {
                    let bytes = read_bounded(&mut entry, &name)?;
                    tree.charge(name.len() + bytes.len())?;
                    tree.files.insert(name.clone(), bytes);
                }
                _ => continue,
            }
            tree.add_to_parents(&name)?;
        }
        Ok(tree)
    }

    /// Counts `bytes` more of names and contents against
    /// [`TREE_BYTES_MAX`].
    fn charge(&mut self, bytes: usize) -> std::io::Result<()> {
        self.held_bytes += bytes as u64;
        if self.held_bytes > TREE_BYTES_MAX {
            return Err(limit_error(format!(
                "more than {} MiB of paths and contents",
                TREE_BYTES_MAX >> 20
            )));
        }
        Ok(())
    }

    fn add_to_parents(&mut self, path: &str) -> std::io::Result<()> {
        let mut child = path;
        loop {
            let dir = parent(child);
            let name = &child[if dir.is_empty() { 0 } else { dir.len() + 1 }..];
            if !self.dirs.contains_key(dir) {
                self.charge(dir.len())?;
            }
            let entries = self.dirs.entry(dir.to_string()).or_default();
            if !entries.insert(name.to_string()) || dir.is_empty() {
                return Ok(());
            }
            child = dir;
        }
    }

    /// The path `rel` leads to (see [`walk_in_root`]).
    fn walk(&self, rel: &str, follow_last: bool) -> std::io::Result<String> {
        walk_in_root(rel, follow_last, |p| Ok(self.links.get(p).cloned()))
    }

    fn exists(&self, path: &str) -> bool {
        self.files.contains_key(path)
            || self.links.contains_key(path)
            || self.dirs.contains_key(path)
    }

    /// Every path the tree holds: files, symlinks and directories.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files
            .keys()
            .chain(self.links.keys())
            .chain(self.dirs.keys())
            .map(String::as_str)
    }

    /// The contents of a file (the manifest).
    pub fn file(&self, rel: &str) -> Option<&[u8]> {
        self.files.get(rel).map(Vec::as_slice)
    }
}

fn not_found(rel: &str) -> Error {
    Error::new(ErrorKind::NotFound, format!("{rel} not in snapshot"))
}

impl Source {
    /// Where `rel` is, for messages.
    pub fn abs(&self, rel: &str) -> PathBuf {
        match self {
            Source::Dir(root) => root.join(rel),
            Source::Memory(tree) => tree.origin.join(rel),
        }
    }

    /// Reads a file into `buf`, returning its length (see [`read_file`]).
    pub fn read(&self, rel: &str, buf: &mut Vec<u8>) -> std::io::Result<usize> {
        match self {
            Source::Dir(root) => {
                read_file(&in_root(root, rel, true)?, !rel.starts_with("proc/"), buf)
            }
            Source::Memory(tree) => {
                let path = tree.walk(rel, true)?;
                if tree.dirs.contains_key(&path) {
                    return Err(Error::other("Is a directory"));
                }
                let bytes = tree.files.get(&path).ok_or_else(|| not_found(rel))?;
                if buf.len() < bytes.len() {
                    buf.resize(bytes.len(), 0);
                }
                buf[..bytes.len()].copy_from_slice(bytes);
                Ok(bytes.len())
            }
        }
    }

    /// The entry names of a directory, sorted.
    pub fn list(&self, rel: &str) -> std::io::Result<Vec<String>> {
        match self {
            Source::Dir(root) => {
                let mut names: Vec<String> = std::fs::read_dir(in_root(root, rel, true)?)?
                    .filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect();
                names.sort_unstable();
                Ok(names)
            }
            Source::Memory(tree) => {
                let path = tree.walk(rel, true)?;
                let entries = tree.dirs.get(&path).ok_or_else(|| not_found(rel))?;
                Ok(entries.iter().cloned().collect())
            }
        }
    }

    /// The target of the symlink `rel`; `InvalidInput` when it is not one.
    pub fn read_link(&self, rel: &str) -> std::io::Result<String> {
        match self {
            Source::Dir(root) => Ok(std::fs::read_link(in_root(root, rel, false)?)?
                .to_string_lossy()
                .into_owned()),
            Source::Memory(tree) => {
                let path = tree.walk(rel, false)?;
                match tree.links.get(&path) {
                    Some(target) => Ok(target.clone()),
                    None if tree.exists(&path) => {
                        Err(Error::new(ErrorKind::InvalidInput, "not a symlink"))
                    }
                    None => Err(not_found(rel)),
                }
            }
        }
    }

    /// Whether `rel` exists (as anything).
    pub fn exists(&self, rel: &str) -> bool {
        match self {
            Source::Dir(root) => {
                in_root(root, rel, false).is_ok_and(|p| std::fs::symlink_metadata(p).is_ok())
            }
            Source::Memory(tree) => tree.walk(rel, false).is_ok_and(|p| tree.exists(&p)),
        }
    }
}

/// The path of `rel` in the directory `root`, its symlinks resolved inside
/// the root (see [`walk_in_root`]) so that a hostile snapshot directory
/// cannot lead a read out of it (`/etc/shadow`, `../../..`; issue #16). The
/// live root `/` holds everything already and is joined as is.
pub(crate) fn in_root(root: &Path, rel: &str, follow_last: bool) -> std::io::Result<PathBuf> {
    if root == Path::new("/") {
        return Ok(root.join(rel));
    }
    let inside = walk_in_root(rel, follow_last, |p| {
        match std::fs::read_link(root.join(p)) {
            Ok(target) => Ok(Some(target.to_string_lossy().into_owned())),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::InvalidInput | ErrorKind::NotFound | ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    })?;
    Ok(root.join(inside))
}

/// Reads a whole file into `buf` (grown as needed; never shrunk) without the
/// size query of `std::fs::read`: sysfs files report a size of 4096 whatever
/// they hold, and discovery reads thousands of them. With
/// `short_read_is_eof` a read that returns less than asked ends the file
/// (true of sysfs attributes, which the kernel returns in one read, and of
/// regular files); procfs files are read to a 0-byte read.
///
/// As a snapshot's files, at most [`FILE_BYTES_MAX`] bytes, and regular
/// files only (sysfs and procfs attributes are): the open does not block
/// (a FIFO in a snapshot directory would hang discovery) and anything
/// else is refused before a byte is read (issue 38: an 8 GiB sparse
/// `model` was read whole).
pub fn read_file(
    path: &Path,
    short_read_is_eof: bool,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (sysfs and procfs attributes are); remove it from the root",
                path.display()
            ),
        ));
    }
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize((len * 2).max(READ_CHUNK_BYTES), 0);
        }
        let room = (buf.len() - len).min((FILE_BYTES_MAX + 1 - len as u64) as usize);
        let n = match file.read(&mut buf[len..len + room]) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let short = n < room;
        len += n;
        if len as u64 > FILE_BYTES_MAX {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!(
                    "{} holds more than {} MiB, which no sysfs or procfs file does; remove it from the root",
                    path.display(),
                    FILE_BYTES_MAX >> 20
                ),
            ));
        }
        if n == 0 || (short && short_read_is_eof) {
            break;
        }
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> MemTree {
        let mut t = MemTree::default();
        t.dirs.insert(String::new(), BTreeSet::new());
        let model = "sys/devices/pci0/nvme/nvme0/model";
        t.files.insert(model.to_string(), b"M\n".to_vec());
        t.add_to_parents(model).unwrap();
        t.links.insert(
            "sys/class/nvme/nvme0".into(),
            "../../devices/pci0/nvme/nvme0".into(),
        );
        t.add_to_parents("sys/class/nvme/nvme0").unwrap();
        t
    }

    #[test]
    fn memory_tree_follows_links_lists_and_reads() {
        let s = Source::Memory(Arc::new(tree()));
        let mut buf = Vec::new();
        let n = s
            .read("sys/class/nvme/nvme0/model", &mut buf)
            .expect("read through link");
        assert_eq!(&buf[..n], b"M\n");
        assert_eq!(s.list("sys/class/nvme").expect("list"), vec!["nvme0"]);
        assert_eq!(
            s.list("sys/class/nvme/nvme0").expect("list through link"),
            vec!["model"]
        );
        assert_eq!(
            s.read_link("sys/class/nvme/nvme0").expect("link"),
            "../../devices/pci0/nvme/nvme0"
        );
        assert_eq!(
            s.read_link("sys/class/nvme").expect_err("dir").kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            s.read("sys/none", &mut buf).expect_err("absent").kind(),
            ErrorKind::NotFound
        );
        assert!(
            s.read("sys/class", &mut buf).is_err(),
            "a directory is not readable"
        );
        assert!(s.exists("sys/class/nvme/nvme0") && !s.exists("sys/nope"));
    }
}

#[cfg(test)]
mod root_tests {
    use super::*;

    /// Issue #16: a directory `--root` followed symlinks out of the root
    /// (an absolute target read the live file, `..` climbed above it).
    #[test]
    fn a_directory_root_keeps_symlinks_inside_it() {
        let base = std::env::temp_dir().join(format!("numio-root-escape-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sys/class")).unwrap();
        let outside = base.join("secret");
        std::fs::write(&outside, "outside\n").unwrap();
        std::fs::write(root.join("secret"), "inside\n").unwrap();
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join("sys/class").join(name)).unwrap()
        };
        link(&outside, "abs");
        link(Path::new("../../../secret"), "up");
        link(Path::new("../../.."), "dir");
        link(Path::new("abs"), "chain");
        let s = Source::Dir(root.clone());
        let mut buf = Vec::new();
        for absent in ["sys/class/abs", "sys/class/chain"] {
            let e = s
                .read(absent, &mut buf)
                .expect_err("an absolute target means the root");
            assert_eq!(e.kind(), ErrorKind::NotFound, "{absent}");
        }
        let n = s
            .read("sys/class/up", &mut buf)
            .expect("`..` stops at the root");
        assert_eq!(&buf[..n], b"inside\n");
        let n = s
            .read("sys/class/dir/secret", &mut buf)
            .expect("through a dir link");
        assert_eq!(&buf[..n], b"inside\n");
        assert_eq!(s.list("sys/class/dir").unwrap(), vec!["secret", "sys"]);
        assert!(!s.exists("sys/class/dir/root") && s.exists("sys/class/abs"));
        assert_eq!(
            s.read_link("sys/class/abs").unwrap(),
            outside.to_str().unwrap()
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    fn tar_gz(entries: impl Iterator<Item = String>) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for path in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            h.set_mode(0o755);
            b.append_data(&mut h, path, std::io::empty()).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    fn refusal(gz: &[u8]) -> String {
        MemTree::from_tar_gz_reader(gz, Path::new("s.tar.gz"))
            .expect_err("refused")
            .to_string()
    }

    // Issue 38: one 200 KB path of 100 k components took >= 6 GB (each
    // ancestor stored as its own string).
    #[test]
    fn a_long_deep_path_is_refused_with_the_limit() {
        let e = refusal(&tar_gz(std::iter::once("a/".repeat(5000))));
        assert!(e.contains("10000 bytes and 5000 components"), "{e}");
        assert!(
            e.contains(&format!("limit of {PATH_BYTES_MAX} bytes")),
            "{e}"
        );
        assert!(e.contains("numio topo --save"), "{e}");
        let e = refusal(&tar_gz(std::iter::once("b/".repeat(PATH_DEPTH_MAX + 1))));
        assert!(
            e.contains(&format!("{} components", PATH_DEPTH_MAX + 1)),
            "{e}"
        );
        let ok = tar_gz(std::iter::once("sys/devices/x/".repeat(PATH_DEPTH_MAX / 3)));
        MemTree::from_tar_gz_reader(&ok[..], Path::new("s")).expect("deep but within limits");
    }

    // Issue 38: the number of entries had no limit of its own.
    #[test]
    fn too_many_entries_are_refused() {
        let e = refusal(&tar_gz((0..=ENTRIES_MAX).map(|i| format!("d{i}"))));
        assert!(
            e.contains(&format!("more than {ENTRIES_MAX} entries")),
            "{e}"
        );
    }

    fn dir_root(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numio-root-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sys")).unwrap();
        d
    }

    // Issue 38: `topo --root DIR` read an 8 GiB sparse `model` whole.
    #[test]
    fn a_directory_root_keeps_the_per_file_cap() {
        let d = dir_root("big");
        let f = std::fs::File::create(d.join("sys/model")).unwrap();
        f.set_len(FILE_BYTES_MAX + 4096).unwrap();
        let mut buf = Vec::new();
        let e = Source::Dir(d.clone())
            .read("sys/model", &mut buf)
            .expect_err("over the cap");
        assert!(e.to_string().contains("more than 16 MiB"), "{e}");
        assert!(buf.len() as u64 <= 2 * FILE_BYTES_MAX);
        let _ = std::fs::remove_dir_all(&d);
    }

    // Issue 38: `topo --root DIR` blocked for ever on a FIFO.
    #[test]
    fn a_directory_root_refuses_a_fifo_without_blocking() {
        let d = dir_root("fifo");
        let fifo = d.join("sys/vendor");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo {}", fifo.display());
        let mut buf = Vec::new();
        let e = Source::Dir(d.clone())
            .read("sys/vendor", &mut buf)
            .expect_err("a FIFO is no attribute");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}

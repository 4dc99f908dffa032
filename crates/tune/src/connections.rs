//! The kernel's NVMe over Fabrics connections numio makes (`numio
//! connect`), with one journal so that nothing is left connected after a
//! crash: a record of each connection (controller, cntlid, subsystem,
//! address, the owning process and its start time) is written to the state
//! directory as soon as the kernel names the controller, and removed after
//! the disconnect. Every `numio connect` first disconnects what a dead
//! numio left ([`ConnectionJournal::cleanup`]; the controller checked to
//! be the recorded one), and `numio connect --cleanup` does only that.
//!
//! A record is trusted only so far (issue 38): the directory and each
//! record must be this user's (root's) and private, the controller name
//! `nvmeN`, and the controller the very one numio made: its sysfs
//! directory's inode, which the kernel numbers once per boot, recorded at
//! the connect. A connection nvme-cli made after a target restart repeats
//! the name, cntlid, subsystem and address, but not that.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sysapi::fabrics;
use sysapi::file::effective_uid as euid;

/// The state directory's default (root's, cleared at boot like the
/// connections it records).
pub const STATE_DIR: &str = "/run/numio/fabric";
const SCHEMA_VERSION: u32 = 2;

/// One connection numio made and has not undone yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionRecord {
    schema_version: u32,
    /// `nvme3`.
    pub controller: String,
    /// The controller's id.
    pub cntlid: u32,
    /// The subsystem.
    pub subnqn: String,
    /// The target's address.
    pub traddr: String,
    /// The target's port.
    pub trsvcid: u16,
    /// The controller's sysfs directory's inode when numio made it
    /// (`topology::device::ControllerIdentity::instance_id`): only this
    /// connection has it.
    pub instance_id: u64,
    /// The numio that connected, and its start time (clock ticks after
    /// boot, /proc/PID/stat field 22): with the pid, who it is.
    pub pid: u32,
    /// Its start time.
    pub pid_start: u64,
    /// When it connected.
    pub since_unix_s: u64,
}

impl ConnectionRecord {
    /// The record of `controller` (cntlid `cntlid`, to `subnqn` at
    /// `traddr`:`trsvcid`) made now by this process, with its identity
    /// read under `root`.
    pub fn new(
        root: &Path,
        controller: &str,
        cntlid: u32,
        subnqn: &str,
        traddr: &str,
        trsvcid: u16,
    ) -> Self {
        let instance_id = topology::device::controller_identity(root, controller)
            .ok()
            .flatten()
            .and_then(|id| id.instance_id)
            .unwrap_or(0);
        Self {
            schema_version: SCHEMA_VERSION,
            controller: controller.to_string(),
            cntlid,
            subnqn: subnqn.to_string(),
            traddr: traddr.to_string(),
            trsvcid,
            instance_id,
            pid: std::process::id(),
            pid_start: topology::counters::process_start_ticks(root, std::process::id())
                .unwrap_or(0),
            since_unix_s: crate::journal::now_unix_s(),
        }
    }
}

/// What went wrong with the connection journal or a disconnect.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// A directory could not be made.
    #[error("creating {} (numio connect runs as root)", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file or directory could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// What was read.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The state directory is not this user's alone.
    #[error("the connection records' directory {} is not private to uid {uid} ({why}): its records are not trusted; remove it (or `chown root: && chmod 700` it) and retry", dir.display())]
    NotPrivate {
        /// The directory.
        dir: PathBuf,
        /// This user.
        uid: u32,
        /// Why not.
        why: String,
    },
    /// A record names something that is not a controller.
    #[error("controller name {name:?} is not nvmeN: not a record numio wrote; remove it by hand")]
    BadName {
        /// The name.
        name: String,
    },
    /// The controller's identity could not be read.
    #[error("reading the identity of {controller}")]
    Identity {
        /// The controller.
        controller: String,
        /// Why.
        #[source]
        source: topology::TopologyError,
    },
    /// The kernel did not delete the controller.
    #[error("deleting {controller} (nvme disconnect -d {controller})")]
    Delete {
        /// The controller.
        controller: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// No fabrics host: `/dev/nvme-fabrics` is missing, even after a
    /// `modprobe`.
    #[error("{} is missing: this kernel has no NVMe over Fabrics host loaded; load it with `modprobe nvme-{transport}` (as root; Debian's kernels ship the module) and retry", fabrics::FABRICS_DEV)]
    NoHost {
        /// `tcp` or `rdma`.
        transport: &'static str,
    },
    /// The kernel refused the connect.
    #[error("connecting the kernel's NVMe/TCP host to {addr} ({subnqn}) failed: {error}; {}", connect_hint(.error))]
    Connect {
        /// The target's address.
        addr: std::net::SocketAddr,
        /// The subsystem.
        subnqn: String,
        /// The kernel's error.
        error: std::io::Error,
    },
    /// The namespace's block device did not appear in time.
    #[error("namespace {nsid} of {controller} did not appear within {wait_s} s: the subsystem may not have that NSID (`numio topo` lists what it has), or give --wait more time")]
    NoNamespace {
        /// The namespace id.
        nsid: u32,
        /// The controller (`nvme3`).
        controller: String,
        /// How long numio waited, seconds.
        wait_s: u64,
    },
    /// A signal came while numio waited for the namespace.
    #[error("interrupted while waiting for namespace {nsid} of {controller}")]
    WaitInterrupted {
        /// The namespace id.
        nsid: u32,
        /// The controller.
        controller: String,
    },
    /// A record could not be written or removed.
    #[error("recording the connection in {}", path.display())]
    Write {
        /// The record.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What to do about a refused connect.
fn connect_hint(e: &std::io::Error) -> &'static str {
    if rustix::io::Errno::from_io_error(e) == Some(rustix::io::Errno::ALREADY) {
        "this host is already connected to that subsystem there (`numio topo` or `nvme list-subsys` shows it): bench its device, or disconnect it first"
    } else {
        "check that a target listens there and offers that subsystem to this host (dmesg names the kernel's reason)"
    }
}

/// The directory of connection records ([`STATE_DIR`] unless told).
#[derive(Debug, Clone)]
pub struct ConnectionJournal {
    dir: PathBuf,
}

impl ConnectionJournal {
    /// The records under `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory, made 0700 when `create`; an error when it is not this
    /// user's and private (anyone who can write there could have numio
    /// disconnect what it names); false when it is not there (and not made).
    pub fn open(&self, create: bool) -> Result<bool, ConnectionError> {
        private_dir(&self.dir, create)
    }

    /// Writes `r` whole or not at all (a temporary file, 0600, made anew
    /// and never through a symlink, then renamed); its path.
    pub fn record(&self, r: &ConnectionRecord) -> Result<PathBuf, ConnectionError> {
        let path = self.dir.join(format!("{}.json", r.controller));
        write_record(&path, r).map_err(|source| ConnectionError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// Disconnects what numio processes that no longer run (under `root`)
    /// left connected, removing their records; one line per thing done.
    pub fn cleanup(&self, root: &Path) -> Result<Vec<String>, ConnectionError> {
        cleanup(&self.dir, root)
    }
}

/// Deletes `r`'s controller under `root` if it is still the one recorded
/// (its name can have been reused by another connection since): the
/// controller's own `cntlid`, `subsysnqn`, `address` and instance must
/// match. False when it was gone (or is another connection now).
pub fn disconnect(root: &Path, r: &ConnectionRecord) -> Result<bool, ConnectionError> {
    if !is_controller_name(&r.controller) {
        return Err(ConnectionError::BadName {
            name: r.controller.clone(),
        });
    }
    let id = topology::device::controller_identity(root, &r.controller).map_err(|source| {
        ConnectionError::Identity {
            controller: r.controller.clone(),
            source,
        }
    })?;
    let Some(id) = id else {
        return Ok(false); // Gone already.
    };
    let same = id.cntlid == Some(r.cntlid)
        && id.subsysnqn == r.subnqn
        && address_matches(&id.address, &r.traddr, r.trsvcid)
        && r.instance_id != 0
        && id.instance_id == Some(r.instance_id);
    if !same {
        return Ok(false);
    }
    fabrics::delete_controller(&root.join("sys/class/nvme"), &r.controller).map_err(|source| {
        ConnectionError::Delete {
            controller: r.controller.clone(),
            source,
        }
    })?;
    Ok(true)
}

/// `nvme` and digits: a controller's name, and nothing that leads
/// elsewhere under `/sys` (`../../../x`).
fn is_controller_name(name: &str) -> bool {
    name.strip_prefix("nvme")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Why `m` (of a record or the state directory) is not this user's
/// alone; `None` when it is.
fn not_private(m: &std::fs::Metadata, dir: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let kind_ok = if dir {
        m.is_dir()
    } else {
        m.file_type().is_file()
    };
    if !kind_ok {
        return Some(format!(
            "it is not a {} (a symlink?)",
            if dir { "directory" } else { "regular file" }
        ));
    }
    if m.uid() != euid() {
        return Some(format!("it is owned by uid {}, not {}", m.uid(), euid()));
    }
    let open = if dir { 0o077 } else { 0o022 };
    if m.mode() & open != 0 {
        return Some(format!("its mode is {:o}", m.mode() & 0o7777));
    }
    None
}

fn private_dir(dir: &Path, create: bool) -> Result<bool, ConnectionError> {
    use std::os::unix::fs::DirBuilderExt;
    let made = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ConnectionError::Create { path, source }
    };
    if create {
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).map_err(made(parent))?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(made(dir)(e)),
        }
    }
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(false),
        Err(source) => {
            return Err(ConnectionError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    if let Some(why) = not_private(&m, true) {
        return Err(ConnectionError::NotPrivate {
            dir: dir.to_path_buf(),
            uid: euid(),
            why,
        });
    }
    Ok(true)
}

/// Whether a fabrics controller's `address` (`traddr=10.0.0.5,trsvcid=4420,src_addr=...`)
/// is `traddr`:`trsvcid`.
fn address_matches(address: &str, traddr: &str, trsvcid: u16) -> bool {
    let mut a = None;
    let mut p = None;
    for kv in address.split(',') {
        match kv.trim().split_once('=') {
            Some(("traddr", v)) => a = Some(v),
            Some(("trsvcid", v)) => p = v.parse::<u16>().ok(),
            _ => {}
        }
    }
    a == Some(traddr) && p == Some(trsvcid)
}

fn cleanup(dir: &Path, root: &Path) -> Result<Vec<String>, ConnectionError> {
    let mut done = Vec::new();
    if !private_dir(dir, false)? {
        return Ok(done);
    }
    let entries = std::fs::read_dir(dir).map_err(|source| ConnectionError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        if let Some(why) = std::fs::symlink_metadata(&path)
            .ok()
            .and_then(|m| not_private(&m, false))
        {
            done.push(format!(
                "{}: not trusted ({why}); numio writes its records 0600 as uid {}: remove it by hand",
                path.display(),
                euid()
            ));
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(r) = serde_json::from_str::<ConnectionRecord>(&text)
            .map_err(|_| ())
            .and_then(|r| {
                if is_controller_name(&r.controller) {
                    Ok(r)
                } else {
                    Err(())
                }
            })
        else {
            done.push(format!(
                "{}: not a connection record; remove it by hand",
                path.display()
            ));
            continue;
        };
        if topology::counters::process_start_ticks(root, r.pid) == Some(r.pid_start) {
            continue; // Its numio still holds it.
        }
        let deleted = disconnect(root, &r)?;
        std::fs::remove_file(&path).map_err(|source| ConnectionError::Write {
            path: path.clone(),
            source,
        })?;
        done.push(if deleted {
            format!(
                "disconnected {} ({} at {}:{}), left connected by numio pid {} which no longer runs",
                r.controller, r.subnqn, r.traddr, r.trsvcid, r.pid
            )
        } else {
            format!(
                "dropped the record of {} left by numio pid {}: that connection is gone",
                r.controller, r.pid
            )
        });
    }
    Ok(done)
}

fn write_record(path: &Path, r: &ConnectionRecord) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = sysapi::file::create_new_private(&tmp)?;
    f.write_all(&serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fabrics_address() {
        assert!(address_matches(
            "traddr=10.0.0.5,trsvcid=4420,src_addr=10.0.0.1",
            "10.0.0.5",
            4420
        ));
        assert!(!address_matches(
            "traddr=10.0.0.5,trsvcid=4421",
            "10.0.0.5",
            4420
        ));
        assert!(!address_matches("0000:01:00.0", "10.0.0.5", 4420));
    }

    fn ino(p: &Path) -> u64 {
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap())
    }

    #[test]
    fn cleanup_keeps_live_owners_and_undoes_dead_ones() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("numio-connect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("root");
        let sys = root.join("sys/class/nvme");
        // A live numio, pid 4242, started at tick 777.
        std::fs::create_dir_all(root.join("proc/4242")).unwrap();
        std::fs::write(
            root.join("proc/4242/stat"),
            format!("4242 (numio connect) S {}777 0 0\n", "0 ".repeat(18)),
        )
        .unwrap();
        // The kernel's attributes of a controller (delete_controller
        // records what is written to it).
        let controller = |name: &str, cntlid: u32, nqn: &str| {
            let d = sys.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cntlid"), format!("{cntlid}\n")).unwrap();
            std::fs::write(d.join("subsysnqn"), format!("{nqn}\n")).unwrap();
            std::fs::write(
                d.join("address"),
                "traddr=10.0.0.5,trsvcid=4420,src_addr=10.0.0.1\n",
            )
            .unwrap();
            std::fs::write(d.join("delete_controller"), "").unwrap();
        };
        let deleted = |name: &str| {
            std::fs::read_to_string(sys.join(name).join("delete_controller")).unwrap() == "1"
        };
        controller("nvme5", 1, "nqn.x");
        controller("nvme6", 2, "nqn.x");
        // nvme7's name was reused by another connection after the crash.
        controller("nvme7", 9, "nqn.other");
        // nvme9 was made again (nvme-cli after a target restart): the same
        // name, cntlid, subsystem and address, another instance.
        controller("nvme9", 5, "nqn.x");
        // What `../../../x` leads to from sys/class/nvme: root/x, made to
        // look like the recorded controller.
        controller("../../../x", 4, "nqn.x");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let live = ConnectionRecord {
            schema_version: SCHEMA_VERSION,
            controller: "nvme5".into(),
            cntlid: 1,
            subnqn: "nqn.x".into(),
            traddr: "10.0.0.5".into(),
            trsvcid: 4420,
            instance_id: ino(&sys.join("nvme5")),
            pid: 4242,
            pid_start: 777,
            since_unix_s: 0,
        };
        let dead = |c: &str, cntlid: u32| ConnectionRecord {
            controller: c.into(),
            cntlid,
            instance_id: std::fs::metadata(sys.join(c))
                .map_or(1, |m| std::os::unix::fs::MetadataExt::ino(&m)),
            pid_start: live.pid_start + 1,
            ..live.clone()
        };
        // Issue 38: a stale record matched nvme9 and disconnected it; a
        // name `../../../x` had numio write "1" outside sysfs.
        let stale = ConnectionRecord {
            instance_id: ino(&sys.join("nvme9")) + 1,
            ..dead("nvme9", 5)
        };
        let escape = dead("../../../x", 4);
        write_record(&dir.join("nvme5.json"), &live).unwrap();
        write_record(&dir.join("nvme6.json"), &dead("nvme6", 2)).unwrap();
        write_record(&dir.join("nvme7.json"), &dead("nvme7", 3)).unwrap();
        write_record(&dir.join("nvme8.json"), &dead("nvme8", 4)).unwrap();
        write_record(&dir.join("nvme9.json"), &stale).unwrap();
        write_record(&dir.join("x.json"), &escape).unwrap();
        std::fs::write(dir.join("junk.json"), "{").unwrap();
        let lines = cleanup(&dir, &root).unwrap();
        assert!(
            dir.join("nvme5.json").exists(),
            "a live owner's record stays"
        );
        assert!(!deleted("nvme5"), "a live owner's controller stays");
        assert!(deleted("nvme6"), "a dead owner's controller is deleted");
        assert!(!deleted("nvme7"), "a reused name is not ours: left alone");
        assert!(!deleted("nvme9"), "a controller made again is not ours");
        assert!(
            !deleted("../../../x"),
            "nothing written outside sys/class/nvme"
        );
        for n in ["nvme6", "nvme7", "nvme8"] {
            assert!(!dir.join(format!("{n}.json")).exists(), "{n}'s record goes");
        }
        assert!(
            lines.iter().any(|l| l.contains("disconnected nvme6")),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("not a connection record")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("x.json: not a connection record")),
            "{lines:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    // Issue 38: records anyone could write were trusted.
    #[test]
    fn records_in_a_directory_others_can_write_are_not_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("numio-connect-open-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = cleanup(&dir, Path::new("/nonexistent")).expect_err("refused");
        let e = format!("{e:#}");
        assert!(
            e.contains("is not private") && e.contains("mode is 777"),
            "{e}"
        );
        assert!(e.contains("chmod 700"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(dir.join("nvme1.json"), "{}").unwrap();
        std::fs::set_permissions(
            dir.join("nvme1.json"),
            std::fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        let lines = cleanup(&dir, Path::new("/nonexistent")).unwrap();
        assert!(
            lines[0].contains("nvme1.json: not trusted (its mode is 666)"),
            "{lines:?}"
        );
        assert!(private_dir(&dir.join("made"), true).unwrap());
        let m = std::fs::metadata(dir.join("made")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
        std::fs::remove_dir_all(dir).unwrap();
    }
}

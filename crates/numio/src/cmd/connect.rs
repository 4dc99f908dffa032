//! `numio connect`: the Linux host's NVMe/TCP initiator for as long as
//! numio needs it. It connects (as `nvme connect` does), prints the block
//! device the kernel made, holds the connection until its stdin closes or
//! it gets SIGINT/SIGTERM, then disconnects. `numio fabric --stack kernel`
//! runs one per initiator host (under that host's agent, which it dies
//! with), and a user can script one: `numio connect URL | (read _ dev; fio
//! --filename=$dev ...)`.
//!
//! Nothing is left connected after a crash: a record of each connection
//! (controller, cntlid, subsystem, address, the owning process and its
//! start time) is written to the state directory as soon as the kernel
//! names the controller, and removed after the disconnect. Every `numio
//! connect` first disconnects what a dead numio left (the controller
//! checked to be the recorded one), and `numio connect --cleanup` does
//! only that.
//!
//! A record is trusted only so far (issue 38): the directory and each
//! record must be this user's (root's) and private, the controller name
//! `nvmeN`, and the controller the very one numio made: its sysfs
//! directory's inode, which the kernel numbers once per boot, recorded at
//! the connect. A connection nvme-cli made after a target restart repeats
//! the name, cntlid, subsystem and address, but not that.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use session::interrupt;
use sysapi::fabrics;

/// The state directory's default (root's, cleared at boot like the
/// connections it records).
pub const STATE_DIR: &str = "/run/numio/fabric";
const SCHEMA_VERSION: u32 = 2;

/// Flags of `numio connect`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example: numio connect nvme-tcp://10.0.0.5/nqn.2026-11.io.numio:mem0/1\n\
                  prints `device /dev/nvme1n1`, holds the connection until stdin closes or Ctrl-C, then disconnects."
)]
pub struct Args {
    /// The namespace: `nvme-tcp://ADDR[:PORT]/SUBNQN[/NSID]`, or
    /// `nvme-rdma://...` (the kernel's nvme-rdma host).
    #[arg(value_name = "URL", required_unless_present = "cleanup")]
    pub url: Option<String>,
    /// Only disconnect what a numio that died left connected, then exit.
    #[arg(long, conflicts_with = "url")]
    pub cleanup: bool,
    /// How long to wait for the namespace's block device after the
    /// connect, in seconds.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub wait: u64,
    /// Where the connection records live.
    #[arg(long, value_name = "DIR", default_value = STATE_DIR, hide = true)]
    pub state_dir: PathBuf,
    // Last: its help heading would carry over to the flags after it.
    #[command(flatten)]
    pub host: super::host_args::HostArgs,
}

/// One connection numio made and has not undone yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    schema_version: u32,
    /// `nvme3`.
    controller: String,
    cntlid: u32,
    subnqn: String,
    traddr: String,
    trsvcid: u16,
    /// The controller's sysfs directory's inode when numio made it
    /// (`topology::device::ControllerIdentity::instance_id`): only this
    /// connection has it.
    instance_id: u64,
    /// The numio that connected, and its start time (clock ticks after
    /// boot, /proc/PID/stat field 22): with the pid, who it is.
    pid: u32,
    pid_start: u64,
    since_unix_s: u64,
}

/// Runs `numio connect`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(|_| {})?;
    // Every signal waits for the disconnect: a killed agent's
    // PR_SET_PDEATHSIG comes once per thread of it that this process is
    // handed to, so several SIGTERMs in a row are normal here.
    interrupt::second_signal_waits();
    let root = Path::new("/");
    for line in cleanup(&args.state_dir, root)? {
        eprintln!("numio connect: {line}");
    }
    let Some(url_text) = &args.url else {
        return Ok(0);
    };
    let rdma = engine::backend::rdma::is_rdma_target(url_text);
    let url = if rdma {
        engine::backend::rdma::parse_rdma_url(url_text)
    } else {
        engine::backend::tcp::parse_url(url_text)
    }
    .map_err(|e| anyhow::anyhow!("{url_text}: {e}"))?;
    let transport = if rdma { "rdma" } else { "tcp" };
    let addr = url
        .resolve()
        .map_err(|e| anyhow::anyhow!("{url_text}: {e}"))?;
    let host = args.host.resolve()?;
    // Without a flag or /etc/nvme/hostnqn, the kernel chooses (as nvme-cli
    // leaves it to the kernel).
    let (hostnqn, hostid) = match host.nqn_source {
        nvmf::host::identity::NqnSource::Fallback => {
            (None, args.host.hostid.as_ref().and(host.hostid_text()))
        }
        _ => (Some(host.hostnqn.clone()), host.hostid_text()),
    };
    let secret = |f: &Option<PathBuf>, what: &str| -> anyhow::Result<Option<String>> {
        f.as_ref()
            .map(|p| {
                std::fs::read_to_string(p)
                    .map(|s| s.trim().to_string())
                    .with_context(|| format!("reading the {what} from {}", p.display()))
            })
            .transpose()
    };
    let dhchap_secret = secret(&args.host.dhchap_secret_file, "DH-HMAC-CHAP secret")?;
    let dhchap_ctrl_secret = secret(
        &args.host.dhchap_ctrl_secret_file,
        "controller's DH-HMAC-CHAP secret",
    )?;
    let options = fabrics::TcpConnect {
        transport,
        subnqn: url.subnqn.clone(),
        traddr: addr.ip().to_string(),
        trsvcid: addr.port(),
        hostnqn,
        hostid,
        dhchap_secret,
        dhchap_ctrl_secret,
        header_digest: args.host.hdr_digest,
        data_digest: args.host.data_digest,
    }
    .options()
    .map_err(|e| anyhow::anyhow!("{url_text}: {e}"))?;
    let fabrics_dev = Path::new(fabrics::FABRICS_DEV);
    if !fabrics_dev.exists() {
        // The module is not loaded (the kernel loads nvme-tcp itself once
        // nvme-fabrics is there).
        let _ = std::process::Command::new("modprobe")
            .arg(if rdma { "nvme-rdma" } else { "nvme-tcp" })
            .stderr(std::process::Stdio::null())
            .status();
    }
    if !fabrics_dev.exists() {
        bail!(
            "{} is missing: this kernel has no NVMe over Fabrics host loaded; load it with `modprobe nvme-{transport}` (as root; Debian's kernels ship the module) and retry",
            fabrics::FABRICS_DEV
        );
    }
    private_dir(&args.state_dir, true)?;
    let c = fabrics::connect(fabrics_dev, &options).map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EALREADY) {
            "this host is already connected to that subsystem there (`numio topo` or `nvme list-subsys` shows it): bench its device, or disconnect it first"
        } else {
            "check that a target listens there and offers that subsystem to this host (dmesg names the kernel's reason)"
        };
        anyhow::anyhow!(
            "connecting the kernel's NVMe/TCP host to {addr} ({}) failed: {e}; {hint}",
            url.subnqn
        )
    })?;
    let controller = format!("nvme{}", c.instance);
    let instance_id = topology::device::controller_identity(root, &controller)
        .ok()
        .flatten()
        .and_then(|id| id.instance_id)
        .unwrap_or(0);
    let record = Record {
        schema_version: SCHEMA_VERSION,
        controller: controller.clone(),
        cntlid: c.cntlid,
        subnqn: url.subnqn.clone(),
        traddr: addr.ip().to_string(),
        trsvcid: addr.port(),
        instance_id,
        pid: std::process::id(),
        pid_start: topology::counters::process_start_ticks(root, std::process::id()).unwrap_or(0),
        since_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    let record_path = args.state_dir.join(format!("{controller}.json"));
    let held = write_record(&record_path, &record)
        .with_context(|| format!("recording the connection in {}", record_path.display()))
        .and_then(|()| {
            eprintln!(
                "numio connect: {controller} (cntlid {}) connected to {addr} {}",
                c.cntlid, url.subnqn
            );
            let dev = wait_namespace(&controller, url.nsid, Duration::from_secs(args.wait))?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "device /dev/{dev}")
                .and_then(|()| out.flush())
                .context("writing the device")?;
            hold();
            Ok(())
        });
    let undone = disconnect(root, &record);
    let _ = std::fs::remove_file(&record_path);
    // Whoever read stderr may be gone (a killed agent): no panic on EPIPE.
    let _ = match undone {
        Ok(true) => writeln!(
            std::io::stderr(),
            "numio connect: {controller} disconnected"
        ),
        Ok(false) => writeln!(
            std::io::stderr(),
            "numio connect: {controller} was gone already"
        ),
        Err(e) => writeln!(std::io::stderr(), "numio connect: {controller}: {e:#}"),
    };
    held?;
    Ok(interrupt::exit_code().unwrap_or(0))
}

/// Waits for stdin to close or a signal.
fn hold() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        let mut line = String::new();
        while lock.read_line(&mut line).is_ok_and(|n| n > 0) {
            line.clear();
        }
        let _ = tx.send(());
    });
    while !interrupt::interrupted() {
        if rx.recv_timeout(Duration::from_millis(100)).is_ok() {
            return;
        }
    }
}

/// The head block device of namespace `nsid` reached through
/// `controller`, once the kernel has made it.
fn wait_namespace(controller: &str, nsid: u32, wait: Duration) -> anyhow::Result<String> {
    let deadline = Instant::now() + wait;
    loop {
        if let Ok(t) = topology::Topology::discover(Path::new("/")) {
            let found = t.subsystems.iter().flat_map(|s| &s.namespaces).find(|n| {
                n.nsid == nsid
                    && (n.controller.as_deref() == Some(controller)
                        || n.paths.iter().any(|p| p.controller == controller))
            });
            if let Some(n) = found {
                return Ok(n.block_device.clone());
            }
        }
        if interrupt::interrupted() {
            bail!("interrupted while waiting for namespace {nsid} of {controller}");
        }
        if Instant::now() >= deadline {
            bail!(
                "namespace {nsid} of {controller} did not appear within {} s: the subsystem may not have that NSID (`numio topo` lists what it has), or give --wait more time",
                wait.as_secs()
            );
        }
        // The kernel scans namespaces after the connect returns; its
        // block device appears as a sysfs entry, looked for every 100 ms.
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Deletes `r`'s controller under `root` if it is still the one recorded
/// (its name can have been reused by another connection since): the
/// controller's own `cntlid`, `subsysnqn` and `address` must match.
fn disconnect(root: &Path, r: &Record) -> anyhow::Result<bool> {
    if !is_controller_name(&r.controller) {
        bail!(
            "controller name {:?} is not nvmeN: not a record numio wrote; remove it by hand",
            r.controller
        );
    }
    let Some(id) = topology::device::controller_identity(root, &r.controller)? else {
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
    fabrics::delete_controller(&root.join("sys/class/nvme"), &r.controller)
        .with_context(|| format!("deleting {} (nvme disconnect -d {0})", r.controller))?;
    Ok(true)
}

/// `nvme` and digits: a controller's name, and nothing that leads
/// elsewhere under `/sys` (`../../../x`).
fn is_controller_name(name: &str) -> bool {
    name.strip_prefix("nvme")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// This process's effective user.
fn euid() -> u32 {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() }
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

/// The state directory, made 0700 when `create`; an error when it is
/// not this user's and private (anyone who can write there could have
/// numio disconnect what it names).
fn private_dir(dir: &Path, create: bool) -> anyhow::Result<bool> {
    use std::os::unix::fs::DirBuilderExt;
    if create {
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).with_context(|| {
                format!("creating {} (numio connect runs as root)", parent.display())
            })?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "creating the state directory {} (numio connect runs as root)",
                        dir.display()
                    )
                })
            }
        }
    }
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    if let Some(why) = not_private(&m, true) {
        bail!(
            "the connection records' directory {} is not private to uid {} ({why}): its records are not trusted; remove it (or `chown root: && chmod 700` it) and retry",
            dir.display(),
            euid()
        );
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

/// Disconnects what numio processes that no longer run (under `root`)
/// left connected, removing their records; one line per thing done.
fn cleanup(dir: &Path, root: &Path) -> anyhow::Result<Vec<String>> {
    let mut done = Vec::new();
    if !private_dir(dir, false)? {
        return Ok(done);
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
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
        let Ok(r) = serde_json::from_str::<Record>(&text)
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
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
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

/// Writes `r` whole or not at all (a temporary file, 0600, made anew
/// and never through a symlink, then renamed).
fn write_record(path: &Path, r: &Record) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    f.write_all(&serde_json::to_vec_pretty(r)?)?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    Ok(())
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
        let live = Record {
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
        let dead = |c: &str, cntlid: u32| Record {
            controller: c.into(),
            cntlid,
            instance_id: std::fs::metadata(sys.join(c))
                .map_or(1, |m| std::os::unix::fs::MetadataExt::ino(&m)),
            pid_start: live.pid_start + 1,
            ..live.clone()
        };
        // Issue 38: a stale record matched nvme9 and disconnected it; a
        // name `../../../x` had numio write "1" outside sysfs.
        let stale = Record {
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

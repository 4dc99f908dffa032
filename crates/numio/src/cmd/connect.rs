//! `numio connect`: the Linux host's NVMe/TCP initiator for as long as
//! numio needs it. It connects (as `nvme connect` does), prints the block
//! device the kernel made, holds the connection until its stdin closes or
//! it gets SIGINT/SIGTERM, then disconnects. `numio sweep --hosts --stack kernel`
//! runs one per initiator host (under that host's agent, which it dies
//! with), and a user can script one: `numio connect URL | (read _ dev; fio
//! --filename=$dev ...)`.
//!
//! Nothing is left connected after a crash: each connection is recorded
//! in `tune::connections`' journal as soon as the kernel names the
//! controller, and every `numio connect` (`--cleanup` alone too) first
//! disconnects what a dead numio left.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use session::interrupt;
use sysapi::fabrics;
use tune::connections::{self, ConnectionJournal, ConnectionRecord, STATE_DIR};

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

/// Runs `numio connect`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(|_| {})?;
    // Every signal waits for the disconnect: a killed agent's
    // PR_SET_PDEATHSIG comes once per thread of it that this process is
    // handed to, so several SIGTERMs in a row are normal here.
    interrupt::second_signal_waits();
    let root = Path::new("/");
    let journal = ConnectionJournal::at(&args.state_dir);
    for line in journal.cleanup(root)? {
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
    journal.open(true)?;
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
    let record = ConnectionRecord::new(
        root,
        &controller,
        c.cntlid,
        &url.subnqn,
        &addr.ip().to_string(),
        addr.port(),
    );
    let mut record_path = None;
    let held = journal
        .record(&record)
        .map_err(anyhow::Error::from)
        .and_then(|p| {
            record_path = Some(p);
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
    let undone = connections::disconnect(root, &record);
    if let Some(p) = &record_path {
        let _ = std::fs::remove_file(p);
    }
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
        Err(e) => writeln!(
            std::io::stderr(),
            "numio connect: {controller}: {:#}",
            anyhow::Error::from(e)
        ),
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

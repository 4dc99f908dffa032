//! `numio connect`: the Linux host's NVMe/TCP initiator for as long as
//! numio needs it (`session::connect`; `numio sweep --hosts --stack
//! kernel` runs one per initiator host). Every `numio connect` first
//! disconnects what a dead numio left (`tune::connections`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use session::connect::{Host, Say, Target};
use session::interrupt;
use tune::connections::{ConnectionJournal, STATE_DIR};

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
    let Some(url) = &args.url else {
        return Ok(0);
    };
    let target = Target::parse(url)?;
    let h = &args.host;
    let host = h.resolve()?;
    // Without a flag or /etc/nvme/hostnqn, the kernel chooses (as nvme-cli
    // leaves it to the kernel).
    let (hostnqn, hostid) = match host.nqn_source {
        nvmf::host::identity::NqnSource::Fallback => {
            (None, h.hostid.as_ref().and(host.hostid_text()))
        }
        _ => (Some(host.hostnqn.clone()), host.hostid_text()),
    };
    let host = Host {
        hostnqn,
        hostid,
        dhchap_secret_file: h.dhchap_secret_file.clone(),
        dhchap_ctrl_secret_file: h.dhchap_ctrl_secret_file.clone(),
        header_digest: h.hdr_digest,
        data_digest: h.data_digest,
    };
    let wait = Duration::from_secs(args.wait);
    session::connect::hold(root, &journal, &target, &host, wait, &mut |say| match say {
        // Whoever reads stderr may be gone (a killed agent): no panic on EPIPE.
        Say::Note(line) => writeln!(std::io::stderr(), "numio connect: {line}").or(Ok(())),
        Say::Device(dev) => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "device /dev/{dev}").and_then(|()| out.flush())
        }
    })?;
    Ok(interrupt::exit_code().unwrap_or(0))
}

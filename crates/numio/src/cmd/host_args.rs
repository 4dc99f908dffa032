//! Who this host is to an NVMe-oF target, in nvme-cli's words: one set of
//! flags for `numio bench`, `compare`, `sweep` (numio's own initiator) and
//! `numio connect` (the kernel's). The NQN defaults to
//! `/etc/nvme/hostnqn`, as nvme-cli's, so a target that allows
//! `$(cat /etc/nvme/hostnqn)` admits both.

use std::path::PathBuf;

use nvmf::host::identity::{self, ResolvedHost};

/// The help section of these flags.
pub const HEADING: &str = "Host (NVMe/TCP and NVMe/RDMA targets)";

/// Host identity and connection flags shared by every command that
/// connects to an NVMe/TCP or NVMe/RDMA target. The `--tcp-…` spellings of
/// earlier releases are accepted as hidden aliases.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = HEADING)]
pub struct HostArgs {
    /// This host's NQN [default: /etc/nvme/hostnqn as nvme-cli reads it,
    /// else nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001].
    #[arg(long, value_name = "NQN", alias = "tcp-hostnqn")]
    pub hostnqn: Option<String>,
    /// This host's id, a UUID [default: the UUID in a `…:uuid:UUID` host
    /// NQN, else /etc/nvme/hostid beside /etc/nvme/hostnqn].
    #[arg(long, value_name = "UUID")]
    pub hostid: Option<String>,
    /// This host's DH-HMAC-CHAP secret, from FILE (a `DHHC-1:` line, mode
    /// 600, as `nvme gen-dhchap-key` prints it), for a subsystem that
    /// authenticates its hosts; never on the command line.
    #[arg(long, value_name = "FILE", alias = "tcp-dhchap-secret")]
    pub dhchap_secret_file: Option<PathBuf>,
    /// The controller's DH-HMAC-CHAP secret from FILE: the host then
    /// authenticates the controller too, and refuses one that fails.
    #[arg(
        long,
        value_name = "FILE",
        requires = "dhchap_secret_file",
        alias = "tcp-dhchap-ctrl-secret"
    )]
    pub dhchap_ctrl_secret_file: Option<PathBuf>,
    /// Ask for header digests (CRC32C of every PDU header).
    #[arg(long, alias = "tcp-hdgst")]
    pub hdr_digest: bool,
    /// Ask for data digests (CRC32C of every PDU's data).
    #[arg(long, alias = "tcp-ddgst")]
    pub data_digest: bool,
}

impl HostArgs {
    /// The host to connect as: the flags, else nvme-cli's files under
    /// `$NUMIO_SYSCONFDIR` (default `/etc`).
    pub fn resolve(&self) -> anyhow::Result<ResolvedHost> {
        Ok(identity::resolve(
            &identity::sysconfdir(),
            self.hostnqn.as_deref(),
            self.hostid.as_deref(),
        )?)
    }

    /// The DH-HMAC-CHAP secrets the flags name, read and checked.
    pub fn dhchap_secrets(&self) -> anyhow::Result<Option<std::sync::Arc<nvmf::HostSecrets>>> {
        let Some(host) = &self.dhchap_secret_file else {
            return Ok(None);
        };
        let s = nvmf::HostSecrets::from_files(host, self.dhchap_ctrl_secret_file.as_deref())
            .map_err(|e| anyhow::anyhow!("--dhchap-secret-file: {e}"))?;
        Ok(Some(std::sync::Arc::new(s)))
    }
}

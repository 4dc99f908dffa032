//! `numio serve`: serve RAM, file or block device namespaces over NVMe/TCP.
//! The flags and their help; serving is `session::serve`'s.

use std::net::SocketAddr;
use std::path::PathBuf;

use nvmf::config::DEFAULT_NQN;
use nvmf::log;
use session::serve::options::{DEFAULT_MODEL, DEFAULT_SERIAL};
use session::serve::{self, LimitFlags, ServeOptions, Transports};
use session::serve::{parse_listen, parse_transports};

const LIMITS_HELP: &str = "\
Limits (defaults; set with the flags above or [limits] in --config):
  connections 1024 (272 per source address) | controllers 64 | I/O queues per controller 16 |
  I/O queue depth 128 | admin queue depth 32 | in-capsule data: admin 8 KiB, I/O 16 KiB |
  MAXH2CDATA 128 KiB | max transfer (MDTS) 1 MiB | C2HData PDU 128 KiB |
  R2Ts of at most MAXH2CDATA, up to the host's MAXR2T+1 (at most 16) outstanding per command |
  command buffers 1 GiB over all connections (past it, a command waits for buffer space)
Namespaces: files and block devices use O_DIRECT on the reactors' io_uring (the page
cache where the filesystem refuses it, or with ,buffered); logical blocks are 512 bytes
(a block device's own size) unless ,block=4096 or block_size in the TOML says otherwise.
Without --allow-host or --allow-any-host, any host is admitted (and a warning says so).
DH-HMAC-CHAP: --allow-host NQN,dhchap-secret=FILE (or [[subsystem.host]] in --config):
that host authenticates every queue; a host without or with a wrong secret is refused.
  nvme connect ... --dhchap-secret \"$(cat host.key)\" [--dhchap-ctrl-secret \"$(cat ctrl.key)\"]
TLS 1.3 (PSK): --tls --allow-host NQN,tls-key=FILE (the host's `nvme gen-tls-key` key,
mode 600): every connection must be TLS; plain text and other keys are refused, and a
Connect must name the host and subsystem of its PSK identity. The Linux host needs tlshd
(ktls-utils) and the key's TLS PSK in its .nvme keyring (docs/readme/serve.md shows how).
SIGINT/SIGTERM: stop accepting, let in-flight writes finish (5 s at most), close,
fdatasync every namespace. SIGHUP: re-read --config: ANA states, namespaces added or
removed (matched by backing; hosts are told), allowed hosts; connected hosts stay.
Under systemd (Type=notify, numio-serve@NAME.service): READY=1 once
serving, RELOADING=1 then READY=1 around a reload, STOPPING=1 on the way out.

Example:
  numio serve --ns mem:1G --allow-host \"$(cat /etc/nvme/hostnqn)\"
  nvme discover -t tcp -a 127.0.0.1 -s 8009
  nvme connect -t tcp -a 127.0.0.1 -s 4420 -n nqn.2026-01.io.numio:subsys0";

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `numio serve: TEXT`.
    Text,
    /// `ts=... level=... event=... msg="..." key=value ...`.
    Logfmt,
    /// One JSON object per line.
    Json,
}

/// `--log-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    /// Failures only.
    Error,
    /// And warnings (refused and closed connections, refused reloads).
    Warn,
    /// And notes.
    Notice,
    /// And state lines: listening, connected, reloaded, ready.
    Info,
    /// And every ordinary disconnect.
    Debug,
}

/// Flags of `numio serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_long_help = LIMITS_HELP, after_help = "Run with --help for limits and an example.")]
pub struct Args {
    /// Namespace: `mem:SIZE` (RAM, e.g. mem:1G) or a file / block device path (O_DIRECT), then
    /// options: `,block=4096` (logical block size, 512 to 4096), `,buffered` (page cache); repeat.
    #[arg(long = "ns", value_name = "mem:SIZE|PATH[,block=N][,buffered]")]
    pub namespaces: Vec<String>,
    /// Subsystem NQN of the --ns namespaces.
    #[arg(long, default_value = DEFAULT_NQN)]
    pub nqn: String,
    /// Serial number reported by Identify (20 ASCII characters at most).
    #[arg(long, default_value = DEFAULT_SERIAL)]
    pub serial: String,
    /// Model number reported by Identify (40 ASCII characters at most).
    #[arg(long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Listener address, ADDR[:PORT] (port 4420, NVMe-oF's, when left
    /// out; IPv6 as [ADDR]:PORT); repeat for more [default: 127.0.0.1:4420].
    #[arg(long, value_name = "ADDR[:PORT]", value_parser = parse_listen)]
    pub listen: Vec<SocketAddr>,
    /// Transport of the --listen addresses: tcp, rdma (NVMe/RDMA through the
    /// system's rdma-core: an RDMA NIC, or soft-RoCE's rdma_rxe) or tcp,rdma (both
    /// on every address, one subsystem reached either way).
    #[arg(long, value_name = "tcp|rdma|tcp,rdma", default_value = "tcp", value_parser = parse_transports)]
    pub transport: Transports,
    /// ANA state of each --listen port, in order: optimized, non-optimized, inaccessible,
    /// persistent-loss or change; ports not named are optimized. To change states while
    /// serving, put `ana = [...]` in --config instead and send SIGHUP.
    #[arg(long, value_name = "STATE", conflicts_with = "config")]
    pub ana: Vec<String>,
    /// Discovery service port on each listener address; 0 turns it off [default: 8009].
    #[arg(long, value_name = "PORT")]
    pub discovery_port: Option<u16>,
    /// Host NQN allowed to connect; repeat for more. With
    /// `,dhchap-secret=FILE` the host must authenticate with DH-HMAC-CHAP using
    /// the `DHHC-1:` secret in FILE (mode 600; `nvme gen-dhchap-key` makes one);
    /// `,dhchap-ctrl-secret=FILE` lets it authenticate the target too;
    /// `,dhchap-hash=sha256:sha384` and `,dhchap-dhgroup=ffdhe2048:null` limit the
    /// choices (default: every hash; ffdhe2048 to ffdhe8192, then null).
    /// With `,tls-key=FILE` (and --tls) the host connects over TLS 1.3 with the
    /// configured PSK in FILE (`NVMeTLSkey-1:`, mode 600; `nvme gen-tls-key`).
    #[arg(
        long,
        value_name = "NQN[,dhchap-secret=FILE][,dhchap-ctrl-secret=FILE][,tls-key=FILE]"
    )]
    pub allow_host: Vec<String>,
    /// Busy-poll: each reactor checks its ring without sleeping, saving a
    /// wake-up per I/O at low queue depth and burning its whole CPU (as SPDK's
    /// target does); for latency studies. Sleeping stays the default.
    #[arg(long)]
    pub poll: bool,
    /// Require TLS 1.3 with a pre-shared key on every listener (NVMe/TCP TP
    /// 8011): each host needs `,tls-key=FILE`; plain-text connections are refused.
    #[arg(long)]
    pub tls: bool,
    /// Let any host connect.
    #[arg(long, conflicts_with = "allow_host")]
    pub allow_any_host: bool,
    /// TOML configuration (subsystems, namespaces, listeners, limits); flags add to it.
    #[arg(long, value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// CPUs to run one reactor each on, e.g. 0-3,8 [default: the backing devices' NUMA node's CPUs, else any this process may use; at most 4].
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// CPUs of the reactors serving one --listen port, e.g. 0-1; repeat once per --listen, in order [default: the CPUs of the NUMA node of the listener's network interface, where it has one].
    #[arg(long, value_name = "LIST")]
    pub port_cpus: Vec<String>,
    /// Export block devices that hold a partition table, filesystem, other
    /// signature, mount or holder (hosts may write to them), and RAM
    /// namespaces larger together than the memory available.
    #[arg(long = "force-export", alias = "force")]
    pub force: bool,
    /// Print a line for every queue a host connects (controller, qid, digests).
    #[arg(long)]
    pub log_connections: bool,
    /// How log lines are written: text (`numio serve: ...`), logfmt (`ts=... level=...
    /// event=... msg="..." key=value ...`) or json (one object per line). State lines go to
    /// stdout, warnings and closed connections to stderr, in every format; under systemd each
    /// line carries its syslog priority for the journal.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Least severe lines written: error, warn, notice, info, or debug (adds every closed
    /// connection, also the ordinary ones).
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Most open connections (queues) over all hosts [default: 256].
    #[arg(long)]
    pub max_connections: Option<u32>,
    /// Most I/O queues per controller [default: 16].
    #[arg(long)]
    pub max_io_queues: Option<u16>,
    /// Deepest I/O queue, entries [default: 128].
    #[arg(long)]
    pub queue_depth: Option<u16>,
    /// In-capsule data accepted on I/O queues, bytes [default: 16384].
    #[arg(long, value_name = "BYTES")]
    pub in_capsule: Option<u32>,
    /// MAXH2CDATA, bytes [default: 131072].
    #[arg(long, value_name = "BYTES")]
    pub max_h2c_data: Option<u32>,
    /// Largest transfer of one command (MDTS), bytes, a power of two [default: 1048576].
    #[arg(long, value_name = "BYTES")]
    pub max_transfer: Option<u32>,
    /// Command data buffers over all connections, bytes; past it commands wait for
    /// others to finish rather than allocate [default: 1073741824].
    #[arg(long, value_name = "BYTES")]
    pub max_buffer_bytes: Option<u64>,
    /// Serve Prometheus metrics (commands, bytes, errors, digest failures per subsystem,
    /// host, queue and namespace; connections; namespaces; ANA states) over HTTP on this
    /// local address, e.g. 127.0.0.1:9464 (GET /metrics). Off unless given.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// Print the counters of a numio serve running with `--metrics ADDR` and exit.
    #[arg(long, value_name = "ADDR:PORT", exclusive = true)]
    pub stats: Option<SocketAddr>,
}

impl From<Args> for ServeOptions {
    /// The flags as `session::serve`'s options.
    fn from(a: Args) -> Self {
        let log_format = match a.log_format {
            LogFormat::Text => log::Format::Text,
            LogFormat::Logfmt => log::Format::Logfmt,
            LogFormat::Json => log::Format::Json,
        };
        let log_level = match a.log_level {
            LogLevel::Error => log::Level::Error,
            LogLevel::Warn => log::Level::Warn,
            LogLevel::Notice => log::Level::Notice,
            LogLevel::Info => log::Level::Info,
            LogLevel::Debug => log::Level::Debug,
        };
        let limits = LimitFlags {
            max_connections: a.max_connections,
            max_io_queues: a.max_io_queues,
            queue_depth: a.queue_depth,
            in_capsule: a.in_capsule,
            max_h2c_data: a.max_h2c_data,
            max_transfer: a.max_transfer,
            max_buffer_bytes: a.max_buffer_bytes,
        };
        ServeOptions {
            namespaces: a.namespaces,
            nqn: a.nqn,
            serial: a.serial,
            model: a.model,
            listen: a.listen,
            transport: a.transport,
            ana: a.ana,
            discovery_port: a.discovery_port,
            allow_host: a.allow_host,
            allow_any_host: a.allow_any_host,
            poll: a.poll,
            tls: a.tls,
            config: a.config,
            cpus: a.cpus,
            port_cpus: a.port_cpus,
            force_export: a.force,
            log_connections: a.log_connections,
            log_format,
            log_level,
            limits,
            metrics: a.metrics,
        }
    }
}

/// Runs `numio serve` (or `--stats`: prints a running serve's counters).
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(addr) = args.stats {
        print!("{}", serve::stats::render(&serve::stats::fetch(addr)?));
        return Ok(0);
    }
    serve::run(&ServeOptions::from(args))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvmf::config::Limits;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Args {
        use clap::Parser;
        Cli::parse_from(std::iter::once("serve").chain(argv.iter().copied())).args
    }

    /// Issue 39: `--listen 127.0.0.1` was refused where nvme-cli defaults
    /// the port to 4420 (`mem:1.5G` is `session::serve::config`'s test).
    #[test]
    fn listen_defaults_the_port() {
        let a = parse(&[
            "--listen",
            "127.0.0.1",
            "--listen",
            "[::1]",
            "--listen",
            "10.0.0.5:4421",
        ]);
        let want: Vec<SocketAddr> = ["127.0.0.1:4420", "[::1]:4420", "10.0.0.5:4421"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(a.listen, want);
    }

    /// The flags' defaults are the options' (which the library's tests use).
    #[test]
    fn no_flags_are_the_default_options() {
        assert_eq!(ServeOptions::from(parse(&[])), ServeOptions::default());
        let o = ServeOptions::from(parse(&["--transport", "tcp,rdma", "--force"]));
        assert!(o.transport.rdma && o.transport.tcp && o.force_export);
    }

    #[test]
    fn help_states_the_default_limits() {
        let d = Limits::default();
        for (label, v) in [
            ("connections", d.max_connections as u64),
            ("controllers", d.max_controllers as u64),
            ("I/O queues per controller", d.max_io_queues as u64),
            ("I/O queue depth", d.max_queue_depth as u64),
            ("admin queue depth", d.admin_queue_depth as u64),
        ] {
            assert!(
                LIMITS_HELP.contains(&format!("{label} {v}")),
                "{label} {v} missing from --help"
            );
        }
        assert!(LIMITS_HELP.contains(&format!("I/O {} KiB", d.io_in_capsule_bytes / 1024)));
        assert!(LIMITS_HELP.contains(&format!("MAXH2CDATA {} KiB", d.max_h2c_data_bytes / 1024)));
        assert!(LIMITS_HELP.contains(&format!("(MDTS) {} MiB", d.max_transfer_bytes >> 20)));
        assert!(LIMITS_HELP.contains(&format!("command buffers {} GiB", d.max_buffer_bytes >> 30)));
    }
}

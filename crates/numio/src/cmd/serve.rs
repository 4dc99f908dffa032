//! `numio serve`: serve RAM, file or block device namespaces over NVMe/TCP.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use nvmf::config::{
    HostConfig, Limits, NamespaceConfig, SubsystemConfig, TargetConfig, DEFAULT_NQN,
};
use nvmf::log;
use nvmf::reactor::DEFAULT_REACTORS;
use nvmf::Server;
use topology::{CpuList, NodeId};

use super::{serve_config, serve_ports, serve_reload, serve_stats};
use nvmf::sd_notify::Notifier;

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

/// Sets the log up as the flags say.
fn init_log(args: &Args) {
    let format = match args.log_format {
        LogFormat::Text => log::Format::Text,
        LogFormat::Logfmt => log::Format::Logfmt,
        LogFormat::Json => log::Format::Json,
    };
    let level = match args.log_level {
        LogLevel::Error => log::Level::Error,
        LogLevel::Warn => log::Level::Warn,
        LogLevel::Notice => log::Level::Notice,
        LogLevel::Info => log::Level::Info,
        LogLevel::Debug => log::Level::Debug,
    };
    log::init(format, level);
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
    #[arg(long, default_value = "NUMIO0001")]
    pub serial: String,
    /// Model number reported by Identify (40 ASCII characters at most).
    #[arg(long, default_value = "numio NVMe/TCP target")]
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

/// Parses `--cpus` ("0-3,8", the kernel's CPU list format) into CPU numbers.
fn parse_cpus(s: &str) -> anyhow::Result<Vec<usize>> {
    let list = CpuList::parse(s).map_err(|e| anyhow::anyhow!("--cpus {s:?}: {e}"))?;
    anyhow::ensure!(!list.is_empty(), "--cpus {s:?} names no CPU");
    Ok(list.ids().iter().map(|&c| c as usize).collect())
}

/// Refuses reactor CPUs (`named_by` says where they were given) this
/// process may not run on.
fn check_cpus(cpus: &[usize], allowed: &[u32], named_by: &str) -> anyhow::Result<()> {
    planner::reactors::check_allowed(cpus, allowed).with_context(|| named_by.to_string())
}

/// Reactor CPUs for a configuration that names none
/// ([`planner::reactors::for_backings`] on this machine): the backing
/// devices' shared node, at most [`DEFAULT_REACTORS`], among the CPUs
/// this process may use (`allowed`); RAM has no node.
fn local_cpus(cfg: &TargetConfig, allowed: &[u32]) -> (Vec<usize>, Option<NodeId>) {
    let backings: Vec<&Path> = cfg
        .subsystems
        .iter()
        .flat_map(|s| &s.namespaces)
        .filter(|n| !n.backing.starts_with("mem:"))
        .map(|n| Path::new(&n.backing))
        .collect();
    planner::reactors::for_backings(Path::new("/"), &backings, allowed, DEFAULT_REACTORS)
}

fn build_config(args: &Args) -> anyhow::Result<(TargetConfig, bool)> {
    build_config_at(args, None)
}

/// The transports `numio serve --transport` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transports {
    /// NVMe/TCP.
    pub tcp: bool,
    /// NVMe/RDMA.
    pub rdma: bool,
}

/// Parses `tcp`, `rdma` or `tcp,rdma`.
pub fn parse_transports(s: &str) -> Result<Transports, String> {
    let mut t = Transports {
        tcp: false,
        rdma: false,
    };
    for part in s.split(',').map(str::trim) {
        match part {
            "tcp" => t.tcp = true,
            "rdma" => t.rdma = true,
            other => {
                return Err(format!(
                    "unknown transport '{other}': give tcp, rdma or tcp,rdma"
                ))
            }
        }
    }
    Ok(t)
}

/// [`build_config`]; with `bound`, the listeners are those (a reload: the
/// ones bound at start, which messages about ports then name).
fn build_config_at(
    args: &Args,
    bound: Option<&[SocketAddr]>,
) -> anyhow::Result<(TargetConfig, bool)> {
    let mut cfg = match &args.config {
        Some(p) => {
            let text =
                serve_config::read(p, serve_config::READ_TIMEOUT, nvmf::reactor::stop_requested)?;
            TargetConfig::from_toml(&text, &p.display().to_string())?
        }
        None => TargetConfig::default(),
    };
    if !args.listen.is_empty() {
        cfg.listen = args.listen.clone();
    }
    if args.transport.rdma {
        cfg.rdma_listen.extend(cfg.listen.iter().copied());
        if !args.transport.tcp {
            cfg.listen.clear();
        }
    }
    if let Some(bound) = bound {
        cfg.listen = bound.to_vec();
    }
    if !args.ana.is_empty() {
        cfg.ana = args.ana.clone();
    }
    if let Some(p) = args.discovery_port {
        cfg.discovery_port = p;
    }
    cfg.log_connections |= args.log_connections;
    cfg.tls |= args.tls;
    cfg.poll |= args.poll;
    if let Some(c) = &args.cpus {
        cfg.cpus = parse_cpus(c)?;
    }
    let l: &mut Limits = &mut cfg.limits;
    l.max_connections = args.max_connections.unwrap_or(l.max_connections);
    l.max_io_queues = args.max_io_queues.unwrap_or(l.max_io_queues);
    l.max_queue_depth = args.queue_depth.unwrap_or(l.max_queue_depth);
    l.io_in_capsule_bytes = args.in_capsule.unwrap_or(l.io_in_capsule_bytes);
    l.max_h2c_data_bytes = args.max_h2c_data.unwrap_or(l.max_h2c_data_bytes);
    l.max_transfer_bytes = args.max_transfer.unwrap_or(l.max_transfer_bytes);
    l.max_buffer_bytes = args.max_buffer_bytes.unwrap_or(l.max_buffer_bytes);
    let mut open_by_default = false;
    // `NQN` or `NQN,dhchap-secret=FILE,...`: plain NQNs and hosts that
    // must authenticate.
    let (mut plain_hosts, mut auth_hosts) = (Vec::new(), Vec::new());
    for h in &args.allow_host {
        match HostConfig::parse_flag(h)? {
            Some(c) => auth_hosts.push(c),
            None => plain_hosts.push(h.clone()),
        }
    }
    if !args.namespaces.is_empty() {
        open_by_default = args.allow_host.is_empty() && !args.allow_any_host;
        cfg.subsystems.push(SubsystemConfig {
            nqn: args.nqn.clone(),
            serial: args.serial.clone(),
            model: args.model.clone(),
            allowed_hosts: plain_hosts,
            allow_any_host: args.allow_any_host || open_by_default,
            hosts: auth_hosts,
            namespaces: args
                .namespaces
                .iter()
                .map(|b| NamespaceConfig::from_spec(b))
                .collect::<Result<_, _>>()?,
        });
    } else if !args.allow_host.is_empty() || args.allow_any_host {
        anyhow::ensure!(
            args.config.is_some(),
            "--allow-host/--allow-any-host apply to --ns namespaces: give at least one --ns mem:SIZE or PATH"
        );
        for s in &mut cfg.subsystems {
            s.allowed_hosts.extend(plain_hosts.iter().cloned());
            s.hosts.extend(auth_hosts.iter().cloned());
            s.allow_any_host |= args.allow_any_host;
        }
    }
    anyhow::ensure!(
        !cfg.subsystems.is_empty(),
        "nothing to serve: give --ns mem:1G (RAM) or --ns /path/to/file-or-device, or --config FILE.toml"
    );
    cfg.validate()?;
    Ok((cfg, open_by_default))
}

/// `--listen ADDR[:PORT]`: nvme-cli's default port (4420) when none is given.
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => Ok(SocketAddr::new(ip, engine::backend::tcp::DEFAULT_PORT)),
        Err(_) => Err(format!(
            "{text:?} is not ADDR[:PORT] (e.g. 0.0.0.0, 10.0.0.5:4420, [::1]:4420); give an IP address, not a host name"
        )),
    }
}

/// Runs `numio serve`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(addr) = args.stats {
        return serve_stats::run(addr);
    }
    init_log(&args);
    let notifier = Arc::new(Notifier::from_env()?);
    let (mut cfg, open_by_default) = build_config(&args)?;
    for w in engine::export::check_namespaces(&cfg, args.force)? {
        log::warn("export_forced", format_args!("{w}"), &[]);
    }
    let mut node = None;
    let allowed =
        sysapi::affinity::allowed_cpus().context("reading the CPUs this process may run on")?;
    if !args.port_cpus.is_empty() {
        cfg.port_cpus = serve_ports::parse_flags(&args.port_cpus, cfg.listen.len())?;
    }
    let mut placed = Vec::new();
    if cfg.cpus.is_empty() && cfg.port_cpus.is_empty() {
        (cfg.port_cpus, placed) =
            planner::reactors::by_interface(Path::new("/"), &cfg.listen, &allowed, |ip| {
                sysapi::net::interface_of(ip).ok().flatten()
            });
    }
    if cfg.cpus.is_empty() && cfg.port_cpus.is_empty() {
        (cfg.cpus, node) = local_cpus(&cfg, &allowed);
    } else {
        let named_by = match (args.cpus.is_some(), args.port_cpus.is_empty()) {
            (true, _) => "--cpus",
            (false, false) => "--port-cpus",
            _ if !cfg.cpus.is_empty() => "cpus in --config",
            _ => "port_cpus",
        };
        check_cpus(&cfg.reactor_cpus(), &allowed, named_by)?;
    }
    nvmf::reactor::install_signal_handlers()?;
    let server = Server::start(&cfg)?;
    let port_words: Vec<String> = (0..server.target.ports.len())
        .map(|i| {
            let cpus = server.port_cpus.get(i).map_or(&[][..], Vec::as_slice);
            serve_ports::describe(cpus, placed.get(i))
        })
        .collect();
    nvmf::tgt::startup::log(&server, open_by_default, node.map(|n| n.0), &port_words);
    if let Some(addr) = args.metrics {
        let bound = nvmf::metrics_http::start(addr, server.target.clone()).context("--metrics")?;
        log::info(
            "metrics",
            format_args!("metrics on http://{bound}/metrics (numio serve --stats {bound})"),
            &[("addr", bound.to_string().into())],
        );
    }
    use std::io::Write;
    std::io::stdout().flush().ok();
    let status = status_line(&server);
    notifier.ready(&status);
    watch_for_stop(&server, &notifier)?;
    server.wait_with(|target| {
        if args.config.is_none() {
            log::warn(
                "reload_refused",
                format_args!(
                    "SIGHUP: no --config to reload; ANA states, namespaces and hosts change through a --config file"
                ),
                &[],
            );
            return;
        }
        let rebuild = || build_config_at(&args, Some(&target.listeners)).map(|(cfg, _)| cfg);
        serve_reload::reload(target, rebuild, args.force, &notifier, &status)
    })?;
    log::info(
        "stopped",
        format_args!("stopped; every namespace flushed"),
        &[],
    );
    Ok(0)
}

/// The STATUS systemd shows while serving.
fn status_line(server: &Server) -> String {
    let addrs: Vec<String> = server.listen_addrs.iter().map(|a| a.to_string()).collect();
    format!(
        "serving {} subsystem(s) on {}",
        server.target.subsystems.len(),
        addrs.join(", ")
    )
}

/// How often the sd_notify thread looks whether the shutdown began.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Sends STOPPING=1 once SIGINT/SIGTERM starts the shutdown (the drain
/// may take seconds), from a thread that looks every [`STOP_POLL`].
fn watch_for_stop(server: &Server, notifier: &Arc<Notifier>) -> anyhow::Result<()> {
    if !notifier.is_active() {
        return Ok(());
    }
    let (target, notifier) = (server.target.clone(), notifier.clone());
    std::thread::Builder::new()
        .name("numio-sd-notify".into())
        .spawn(move || {
            while !target.shutting_down.load(Ordering::Acquire) {
                std::thread::sleep(STOP_POLL);
            }
            notifier.stopping("draining in-flight writes, flushing namespaces");
        })
        .context("spawning the sd_notify thread")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    /// the port to 4420; `mem:1.5G` was refused where `--size 1.5G` works.
    #[test]
    fn listen_defaults_the_port_and_namespaces_take_fio_sizes() {
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
        let e = parse_listen("target.example").unwrap_err();
        assert!(e.contains("not ADDR[:PORT]"), "{e}");
        let (cfg, _) = build_config(&parse(&["--ns", "mem:1.5G"])).unwrap();
        assert_eq!(cfg.subsystems[0].namespaces[0].backing, "mem:1.5G");
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

    #[test]
    fn flags_build_a_config() {
        let (cfg, open) =
            build_config(&parse(&["--ns", "mem:16M", "--queue-depth", "64"])).unwrap();
        assert!(open, "no --allow-host: any host, with a warning");
        assert_eq!(cfg.limits.max_queue_depth, 64);
        assert_eq!(cfg.subsystems[0].nqn, DEFAULT_NQN);
        let (cfg, open) =
            build_config(&parse(&["--ns", "mem:16M", "--allow-host", "nqn.h"])).unwrap();
        assert!(!open && !cfg.subsystems[0].allow_any_host);
        assert_eq!(cfg.subsystems[0].allowed_hosts, vec!["nqn.h".to_string()]);
        let (cfg, _) = build_config(&parse(&["--ns", "mem:16M,block=4096,buffered"])).unwrap();
        let ns = &cfg.subsystems[0].namespaces[0];
        assert_eq!(
            (ns.backing.as_str(), ns.block_size, ns.buffered),
            ("mem:16M", Some(4096), true)
        );
        assert!(build_config(&parse(&["--ns", "mem:16M,block=12"])).is_err());
        let e = build_config(&parse(&[])).unwrap_err().to_string();
        assert!(e.contains("--ns mem:1G"), "{e}");
        let e = build_config(&parse(&["--ns", "mem:16M", "--max-transfer", "5000"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_transfer_bytes"), "{e}");
    }

    #[test]
    fn the_packaged_sample_config_serves() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../packaging/config/example.toml"
        );
        let (cfg, open) = build_config(&parse(&["--config", path])).unwrap();
        assert!(!open);
        assert_eq!(cfg.subsystems.len(), 1);
        assert_eq!(cfg.subsystems[0].namespaces[0].backing, "mem:1G");
        assert_eq!(cfg.ana_states().unwrap().len(), 1);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(check_cpus(&[0, 2], &[0, 1, 2, 3], "--cpus").is_ok());
        assert_eq!(
            format!(
                "{:#}",
                check_cpus(&[1, 9], &[0, 1, 2, 3], "cpus in --config").unwrap_err()
            ),
            "cpus in --config: CPU 9 is not one this process may run on (allowed: 0-3); pick CPUs from `numio topo`"
        );
        let err = |s: &str| parse_cpus(s).unwrap_err().to_string();
        assert!(err("3-1").contains("runs backwards"), "{}", err("3-1"));
        assert_eq!(
            err("x"),
            "--cpus \"x\": `x` in CPU list `x` is not a CPU number"
        );
        assert_eq!(err(""), "--cpus \"\" names no CPU");
    }
}

//! `numio serve`'s runner: from the flags, as [`ServeOptions`], to a
//! serving target and back, in the order it takes them ([`run`]):
//!
//! 1. [`config`]: the configuration, a `--config` file with the flags over
//!    it (read with `nvmf::tgt::config_file`'s timeout);
//! 2. `engine::export`: namespaces that hold something are refused (or
//!    exported with a warning under `--force-export`);
//! 3. [`reactors`]: where the reactors run (the CPUs named, checked; else
//!    each port on its NIC's node; else the backings' node);
//! 4. the server starts (`nvmf::Server`), says what it serves
//!    (`nvmf::tgt::startup`), serves `--metrics`, tells systemd READY=1
//!    and, once SIGINT/SIGTERM starts the drain, STOPPING=1;
//! 5. each SIGHUP builds the configuration again and reloads it
//!    (`nvmf::tgt::sighup`), each added namespace checked by
//!    `engine::export::admit`.
//!
//! [`stats`] is `numio serve --stats`: the counters of a running serve.
//! [`options`] holds the plain options and the grammar of `--listen` and
//! `--transport`; the binary keeps the flags (clap), their help, and
//! prints nothing of its own: serve's lines are `nvmf::log`'s events.
//! This module depends on `nvmf`, never the other way round.

pub mod config;
pub mod error;
pub mod options;
pub mod reactors;
pub mod stats;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use nvmf::log;
use nvmf::sd_notify::Notifier;
use nvmf::Server;

pub use error::{FlagError, ServeError};
pub use options::{parse_listen, parse_transports, LimitFlags, ServeOptions, Transports};

/// Serves as `opts` says until SIGINT or SIGTERM, then drains and flushes
/// (see the module doc for the steps).
pub fn run(opts: &ServeOptions) -> Result<(), ServeError> {
    log::init(opts.log_format, opts.log_level);
    let notifier = Arc::new(Notifier::from_env()?);
    let (mut cfg, open_by_default) = config::build(opts, None)?;
    for w in engine::export::check_namespaces(&cfg, opts.force_export)? {
        log::warn("export_forced", format_args!("{w}"), &[]);
    }
    let placement = reactors::place(&mut cfg, opts)?;
    nvmf::reactor::install_signal_handlers()?;
    let server = Server::start(&cfg)?;
    let port_words: Vec<String> = (0..server.target.ports.len())
        .map(|i| {
            let cpus = server.port_cpus.get(i).map_or(&[][..], Vec::as_slice);
            reactors::describe(cpus, placement.ports.get(i))
        })
        .collect();
    let node = placement.node.map(|n| n.0);
    nvmf::tgt::startup::log(&server, open_by_default, node, &port_words);
    if let Some(addr) = opts.metrics {
        let bound = nvmf::metrics_http::start(addr, server.target.clone())
            .map_err(|source| ServeError::Metrics { source })?;
        log::info(
            "metrics",
            format_args!("metrics on http://{bound}/metrics (numio serve --stats {bound})"),
            &[("addr", bound.to_string().into())],
        );
    }
    std::io::stdout().flush().ok();
    let status = status_line(&server);
    notifier.ready(&status);
    watch_for_stop(&server, &notifier)?;
    server.wait_with(|target| on_sighup(opts, target, &notifier, &status))?;
    log::info(
        "stopped",
        format_args!("stopped; every namespace flushed"),
        &[],
    );
    Ok(())
}

/// A SIGHUP: `--config` read again with the flags over it, on the
/// listeners bound at start; without `--config`, refused.
fn on_sighup(
    opts: &ServeOptions,
    target: &nvmf::tgt::subsystem::Target,
    notifier: &Notifier,
    status: &str,
) {
    if opts.config.is_none() {
        log::warn(
            "reload_refused",
            format_args!(
                "SIGHUP: no --config to reload; ANA states, namespaces and hosts change through a --config file"
            ),
            &[],
        );
        return;
    }
    let rebuild = || config::build(opts, Some(&target.listeners)).map(|(cfg, _)| cfg);
    let admit = |ns: &nvmf::config::NamespaceConfig| engine::export::admit(ns, opts.force_export);
    nvmf::tgt::sighup::reload(target, rebuild, &admit, notifier, status);
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
fn watch_for_stop(server: &Server, notifier: &Arc<Notifier>) -> Result<(), ServeError> {
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
        .map_err(|source| ServeError::NotifyThread { source })?;
    Ok(())
}

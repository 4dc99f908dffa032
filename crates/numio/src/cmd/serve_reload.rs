//! `numio serve` on SIGHUP: re-reads `--config` (with the command line's
//! flags applied again, as at start), then puts each port in its ANA state
//! and each subsystem's namespaces and allowed hosts where the file now
//! says, without dropping connected hosts; says what changed and whom it
//! told, on stdout, and to systemd (RELOADING=1 ... READY=1).

use std::io::Write;

use nvmf::config::TargetConfig;
use nvmf::target::reload::ReloadReport;
use nvmf::target::subsystem::Target;

use super::sd_notify::Notifier;

/// The end of a refused reload's message.
const UNCHANGED: &str = "namespaces, hosts and ANA states unchanged";

/// One reload: `config` builds the configuration as at start (an error
/// leaves everything as it was); `status` is the STATUS line READY=1
/// carries afterwards.
pub fn reload(
    target: &Target,
    config: impl FnOnce() -> anyhow::Result<TargetConfig>,
    notifier: &Notifier,
    status: &str,
) {
    notifier.reloading();
    match config() {
        Ok(cfg) => apply(target, cfg),
        Err(e) => eprintln!(
            "numio serve: SIGHUP: {}; {UNCHANGED}",
            one_line(&format!("{e:#}"))
        ),
    }
    std::io::stdout().flush().ok();
    notifier.ready(status);
}

fn apply(target: &Target, mut cfg: TargetConfig) {
    // The listeners stay those bound at start.
    cfg.listen = target.listeners.clone();
    let states = match cfg.ana_states() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("numio serve: SIGHUP: {e}; {UNCHANGED}");
            return;
        }
    };
    let changes = target.apply_ana_states(&states);
    for c in &changes {
        println!(
            "numio serve: port {} ({}) ANA {} -> {}; ANA Change notice sent to {} controller(s)",
            c.port, c.addr, c.from, c.to, c.notified
        );
    }
    let report = target.reload(&cfg);
    print_report(&report);
    println!(
        "numio serve: reloaded: {} namespace(s) added, {} removed, allowed hosts changed in {} subsystem(s), {} ANA state change(s)",
        report.added.len(),
        report.removed.len(),
        report.hosts_changed.len(),
        changes.len()
    );
}

/// `text` on one line (a TOML error shows the line and a caret below it),
/// so that journald keeps the message whole.
fn one_line(text: &str) -> String {
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    parts.join(" ")
}

fn print_report(r: &ReloadReport) {
    for (nqn, nsid, backing) in &r.added {
        println!("numio serve: {nqn}: nsid {nsid} {backing} added");
    }
    for (nqn, nsid, backing) in &r.removed {
        println!("numio serve: {nqn}: nsid {nsid} {backing} removed");
    }
    for nqn in &r.hosts_changed {
        println!("numio serve: {nqn}: allowed hosts changed (connected hosts stay)");
    }
    if !r.added.is_empty() || !r.removed.is_empty() {
        println!(
            "numio serve: Namespace Attribute Changed notice sent to {} controller(s)",
            r.notices
        );
    }
    for why in &r.refused {
        eprintln!("numio serve: SIGHUP: {why}");
    }
}

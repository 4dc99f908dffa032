//! `numio serve` on SIGHUP: the configuration is built again (the caller
//! re-reads `--config` and applies the command line's flags again, as at
//! start), then each port is put in its ANA state and each subsystem's
//! namespaces and allowed hosts where the file now says, without dropping
//! connected hosts ([`Target::reload_checked`]); says what changed and
//! whom it told, in the log, and to systemd (RELOADING=1 ... READY=1).
//!
//! Each namespace the reload adds passes the caller's `admit` check
//! (`numio serve`: the write-safety check start-up runs, under the same
//! `--force-export`); a refused one is left out and named, and the rest of
//! the reload applies (the "reloaded" line counts the refused).

use std::io::Write;

use crate::log;
use crate::sd_notify::Notifier;
use crate::tgt::config::TargetConfig;
use crate::tgt::reload::{Admit, ReloadReport};
use crate::tgt::subsystem::Target;

/// The end of a refused reload's message.
const UNCHANGED: &str = "namespaces, hosts and ANA states unchanged";

/// One reload: `config` builds the configuration as at start (an error
/// leaves everything as it was, and is logged with its causes on one
/// line); `admit` checks each namespace the reload would add; `status` is
/// the STATUS line READY=1 carries afterwards.
pub fn reload<E: std::error::Error, A: std::fmt::Display>(
    target: &Target,
    config: impl FnOnce() -> Result<TargetConfig, E>,
    admit: Admit<'_, A>,
    notifier: &Notifier,
    status: &str,
) {
    notifier.reloading();
    match config() {
        Ok(cfg) => apply(target, cfg, admit),
        Err(e) => refused(&one_line(&with_causes(&e))),
    }
    std::io::stdout().flush().ok();
    notifier.ready(status);
}

fn apply<A: std::fmt::Display>(target: &Target, mut cfg: TargetConfig, admit: Admit<'_, A>) {
    // The listeners stay those bound at start.
    cfg.listen = target.listeners.clone();
    let states = match cfg.ana_states() {
        Ok(s) => s,
        Err(e) => {
            refused(&e.to_string());
            return;
        }
    };
    let changes = target.apply_ana_states(&states);
    for c in &changes {
        log::info(
            "ana_changed",
            format_args!(
                "port {} ({}) ANA {} -> {}; ANA Change notice sent to {} controller(s)",
                c.port, c.addr, c.from, c.to, c.notified
            ),
            &[
                ("port", c.port.into()),
                ("from", c.from.to_string().into()),
                ("to", c.to.to_string().into()),
                ("controllers_notified", c.notified.into()),
            ],
        );
    }
    let report = target.reload_checked(&cfg, admit);
    print_report(&report);
    let refused = match report.not_added.len() {
        0 => String::new(),
        n => format!(", {n} namespace(s) refused (the rest applied)"),
    };
    log::info(
        "reloaded",
        format_args!(
            "reloaded: {} namespace(s) added, {} removed, allowed hosts changed in {} subsystem(s), {} ANA state change(s){refused}",
            report.added.len(),
            report.removed.len(),
            report.hosts_changed.len(),
            changes.len()
        ),
        &[
            ("namespaces_added", report.added.len().into()),
            ("namespaces_removed", report.removed.len().into()),
            ("namespaces_refused", report.not_added.len().into()),
            ("subsystems_hosts_changed", report.hosts_changed.len().into()),
            ("ana_changes", changes.len().into()),
        ],
    );
}

/// `e` and its causes, joined with ": " (as the binary's `{e:#}` did).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
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
    for (what, list) in [("added", &r.added), ("removed", &r.removed)] {
        for (nqn, nsid, backing) in list {
            log::info(
                &format!("namespace_{what}"),
                format_args!("{nqn}: nsid {nsid} {backing} {what}"),
                &[
                    ("subsystem", nqn.into()),
                    ("nsid", (*nsid).into()),
                    ("backing", backing.into()),
                ],
            );
        }
    }
    for nqn in &r.hosts_changed {
        log::info(
            "hosts_changed",
            format_args!("{nqn}: allowed hosts changed (connected hosts stay)"),
            &[("subsystem", nqn.into())],
        );
    }
    if !r.added.is_empty() || !r.removed.is_empty() {
        log::info(
            "namespaces_changed_notice",
            format_args!(
                "Namespace Attribute Changed notice sent to {} controller(s)",
                r.notices
            ),
            &[("controllers_notified", r.notices.into())],
        );
    }
    for why in &r.refused {
        log::warn(
            "reload_refused",
            format_args!("SIGHUP: {why}"),
            &[("reason", why.into())],
        );
    }
}

/// A reload that changed nothing, and why.
fn refused(why: &str) {
    log::warn(
        "reload_refused",
        format_args!("SIGHUP: {why}; {UNCHANGED}"),
        &[("reason", why.into())],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_refusal_names_every_cause_on_one_line() {
        let e = Outer(std::io::Error::other("line 1\n  ^ here"));
        assert_eq!(one_line(&with_causes(&e)), "outer: line 1 ^ here");
    }
}

//! numactl command lines: one per target, binding a standalone fio run of
//! that target to the target's CPUs and memory node.

use std::fmt::Write as _;

use crate::fio::emit_command_line_options;
use crate::placement::{MemPolicy, Placement, TargetPlacement};
use topology::CpuList;

/// One shell line per target: `numactl --physcpubind=… --localalloc -- fio …`.
/// numactl binds the whole process, so per-job CPUs within the target are
/// not expressed (the fio format does that).
pub fn to_numactl(placement: &Placement) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# numio plan, policy {}: one command per target; numactl binds the whole fio process to the target's CPUs (per-job pinning: --format fio)",
        placement.policy
    );
    for w in &placement.warnings {
        let _ = writeln!(out, "# warning: {}", w.replace('\n', " "));
    }
    for t in &placement.targets {
        let _ = writeln!(out, "{}", command(t));
    }
    out
}

/// The numactl prefix of a target (empty when nothing is bound).
pub fn numactl_args(t: &TargetPlacement) -> Vec<String> {
    let mut args = Vec::new();
    let cpus = if t.cpus.is_empty() {
        crate::placement::union(&t.jobs)
    } else {
        t.cpus.clone()
    };
    if !cpus.is_empty() {
        args.push(format!("--physcpubind={}", CpuList::of(&cpus)));
    }
    let mem = t
        .jobs
        .first()
        .map(|j| j.mem.clone())
        .unwrap_or(MemPolicy::Default);
    if t.jobs.iter().all(|j| j.mem == mem) {
        match mem {
            MemPolicy::Default => {}
            MemPolicy::Local => args.push("--localalloc".into()),
            MemPolicy::Bind(nodes) => {
                args.push(format!("--membind={}", CpuList::of_nodes(&nodes)));
            }
        }
    }
    args
}

fn command(t: &TargetPlacement) -> String {
    let prefix = numactl_args(t);
    let mut words = Vec::new();
    if !prefix.is_empty() {
        words.push("numactl".to_string());
        words.extend(prefix);
        words.push("--".into());
    }
    words.push("fio".into());
    words.extend(emit_command_line_options(t));
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_quote(w: &str) -> String {
    let plain = w
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_=./,:%+@".contains(c));
    if plain && !w.is_empty() {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

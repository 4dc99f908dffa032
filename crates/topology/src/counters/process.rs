//! One process's CPU time (`/proc/PID/stat`) and context switches (the
//! sum over its threads' `/proc/PID/task/TID/status`).

use serde::{Deserialize, Serialize};

use crate::error::ParseError;
use crate::reader::Reader;

/// What one reading of a process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessSample {
    /// Process id.
    pub pid: u32,
    /// User time of every thread, live and exited, in clock ticks.
    pub user_ticks: u64,
    /// System time, likewise.
    pub system_ticks: u64,
    /// Voluntary context switches of its live threads.
    pub voluntary_switches: u64,
    /// Involuntary context switches of its live threads.
    pub involuntary_switches: u64,
}

/// Fields `numbers` (numbered as proc(5) does: utime is 14) of a
/// `/proc/PID/stat` text, each with its name for errors. The command name
/// in parentheses may hold spaces and parentheses itself, so the fields
/// are counted from the last `)`.
fn pid_stat_fields<const N: usize>(
    text: &str,
    numbers: [(usize, &'static str); N],
) -> Result<[u64; N], ParseError> {
    let (_, rest) = text.rsplit_once(')').ok_or(ParseError::NoComm)?;
    // After the name comes field 3 (state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let mut out = [0; N];
    for (o, (number, name)) in out.iter_mut().zip(numbers) {
        let w = fields.get(number - 3).ok_or(ParseError::NoPidStatField {
            name,
            found: fields.len(),
        })?;
        *o = w.parse().map_err(|_| ParseError::PidStatTicks {
            name,
            word: w.to_string(),
        })?;
    }
    Ok(out)
}

/// `(utime, stime)` in ticks from a `/proc/PID/stat` text.
pub fn parse_pid_stat(text: &str) -> Result<(u64, u64), ParseError> {
    let [utime, stime] = pid_stat_fields(text, [(14, "utime"), (15, "stime")])?;
    Ok((utime, stime))
}

/// When process `pid` under `root` started, in clock ticks after boot
/// (`/proc/PID/stat` field 22): with the pid, which process it is (a pid
/// is reused, its start time with it is not). `None` when it does not run.
pub fn process_start_ticks(root: &std::path::Path, pid: u32) -> Option<u64> {
    let mut r = crate::device::reader(root).ok()?;
    let text = r.read(&format!("proc/{pid}/stat"))?;
    pid_stat_fields(&text, [(22, "starttime")])
        .ok()
        .map(|[t]| t)
}

/// `(voluntary, nonvoluntary)` context switches from a
/// `/proc/PID/status` text; 0 where a line is missing (kernels before
/// 2.6.23).
pub fn parse_status_switches(text: &str) -> (u64, u64) {
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        value("voluntary_ctxt_switches:"),
        value("nonvoluntary_ctxt_switches:"),
    )
}

/// Reads process `pid` under `r`; `None` when it has ended (or its stat
/// cannot be parsed).
pub(super) fn read(r: &mut Reader, pid: u32) -> Option<ProcessSample> {
    let (user_ticks, system_ticks) = parse_pid_stat(&r.read(&format!("proc/{pid}/stat"))?).ok()?;
    let task_dir = format!("proc/{pid}/task");
    let (mut voluntary, mut involuntary) = (0, 0);
    for tid in r.list(&task_dir).unwrap_or_default() {
        if let Some(text) = r.read(&format!("{task_dir}/{tid}/status")) {
            let (v, i) = parse_status_switches(&text);
            voluntary += v;
            involuntary += i;
        }
    }
    Some(ProcessSample {
        pid,
        user_ticks,
        system_ticks,
        voluntary_switches: voluntary,
        involuntary_switches: involuntary,
    })
}

//! The human view and the JSON of `numio coalesce show`: each
//! controller's coalescing decoded as nvme-cli decodes it, whether it can
//! change and be saved, each I/O vector's Coalescing Disable bit; and the
//! warnings while a state file holds values numio has not put back
//! ([`notes`]).

use std::fmt::Write;
use std::path::PathBuf;

use serde_json::{json, Value};
use tune::show::{Reading, Shown};
use tune::state::CoalesceState;
use tune::{Controller, Record};

/// What `show` says on stderr after the table, in order: a warning per
/// state file it could not read, the warning while one holds records, an
/// error per controller it could not read (`show` then exits 2).
pub fn notes(shown: &Shown) -> Vec<String> {
    let mut lines: Vec<String> = shown
        .journal_errors
        .iter()
        .map(|e| format!("warning: {e}"))
        .collect();
    if !shown.pending.is_empty() {
        lines.push(format!("warning: {}", pending_warning(&shown.pending)));
    }
    lines.extend(shown.failed().iter().map(|f| format!("error: {f}")));
    lines
}

/// The warning while a state file holds records.
pub fn pending_warning(pending: &[(PathBuf, Record)]) -> String {
    let mut files: Vec<String> = pending
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    files.dedup();
    let list: Vec<String> = pending
        .iter()
        .map(|(_, r)| {
            format!(
                "{} (original {:#06x}, changed by `{}`, pid {})",
                r.name, r.original_raw, r.command, r.pid
            )
        })
        .collect();
    format!(
        "{} records coalescing values numio changed and has not put back: {}; `numio coalesce restore` puts the originals back",
        files.join(" and "),
        list.join(", ")
    )
}

/// `1-4,6`.
fn ranges(values: &[u16]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < values.len() {
        let start = values[i];
        let mut end = start;
        while i + 1 < values.len() && values[i + 1] == end + 1 {
            i += 1;
            end = values[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

fn header(c: &Controller) -> String {
    let node = c.node.map_or("unknown".to_string(), |n| n.to_string());
    format!(
        "{} [node {node}] {} {} \"{}\" serial {}",
        c.name,
        c.transport.name(),
        c.address,
        c.model,
        c.serial
    )
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn render_state(out: &mut String, s: &CoalesceState) {
    let _ = writeln!(out, "  coalescing: {}", tune::setting::describe(s.value));
    match s.capabilities {
        Some(c) => {
            let _ = writeln!(
                out,
                "  changeable: {}, saveable: {}",
                yes_no(c.changeable),
                yes_no(c.saveable)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  changeable: unknown (the controller does not answer Get Features with Select = 3)"
            );
        }
    }
    let all: Vec<u16> = s.vectors.iter().map(|v| v.vector).collect();
    let disabled: Vec<u16> = s
        .vectors
        .iter()
        .filter(|v| v.coalescing_disabled)
        .map(|v| v.vector)
        .collect();
    if !all.is_empty() {
        let cd = if disabled.is_empty() {
            "none".to_string()
        } else {
            format!(
                "{} ({} of {})",
                ranges(&disabled),
                disabled.len(),
                all.len()
            )
        };
        let _ = writeln!(
            out,
            "  I/O vectors: {} ({}); coalescing disabled (CD) on: {cd}",
            all.len(),
            ranges(&all)
        );
    }
    if let Some(note) = &s.vectors_note {
        let _ = writeln!(out, "  I/O vectors: {note}");
    }
}

/// The text form.
pub fn render(rows: &[(Controller, Reading)]) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str("no NVMe controller\n");
    }
    for (c, reading) in rows {
        let _ = writeln!(out, "{}", header(c));
        match reading {
            Reading::Fabrics => {
                let _ = writeln!(
                    out,
                    "  a fabrics controller has no interrupts: nothing to coalesce"
                );
            }
            Reading::NotRead(why) => {
                let _ = writeln!(out, "  coalescing: {why}");
            }
            Reading::Failed(e) => {
                let _ = writeln!(out, "  coalescing: cannot read: {e}");
            }
            Reading::Read(s) => render_state(&mut out, s),
        }
    }
    out
}

fn row_json(c: &Controller, reading: &Reading) -> Value {
    let mut v = json!({
        "name": c.name,
        "address": c.address,
        "serial": c.serial,
        "model": c.model,
        "transport": c.transport.name(),
        "node": c.node,
    });
    let m = v.as_object_mut().expect("an object");
    match reading {
        Reading::Fabrics => {
            m.insert(
                "note".into(),
                "a fabrics controller has no interrupts".into(),
            );
        }
        Reading::NotRead(why) => {
            m.insert("note".into(), why.as_str().into());
        }
        Reading::Failed(e) => {
            m.insert("error".into(), e.as_str().into());
        }
        Reading::Read(s) => {
            m.insert("threshold".into(), s.value.thr_zero_based.into());
            m.insert(
                "completions_per_interrupt".into(),
                s.value.threshold().into(),
            );
            m.insert("time_us".into(), s.value.time_us().into());
            m.insert("raw".into(), s.raw.into());
            m.insert(
                "coalescing".into(),
                tune::setting::coalesces(s.value).into(),
            );
            let caps = |f: fn(&nvme_spec::features::FeatureCapabilities) -> bool| {
                s.capabilities.as_ref().map(f)
            };
            m.insert("changeable".into(), json!(caps(|c| c.changeable)));
            m.insert("saveable".into(), json!(caps(|c| c.saveable)));
            m.insert("vectors".into(), json!(s.vectors));
            if let Some(note) = &s.vectors_note {
                m.insert("vectors_note".into(), note.as_str().into());
            }
        }
    }
    v
}

/// The `--json` document.
pub fn to_json(rows: &[(Controller, Reading)], pending: &[(PathBuf, Record)]) -> Value {
    json!({
        "controllers": rows.iter().map(|(c, r)| row_json(c, r)).collect::<Vec<_>>(),
        "pending_restore": pending.iter().map(|(path, r)| {
            let mut v = json!(r);
            v["state_file"] = json!(path.display().to_string());
            v
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_ranges() {
        assert_eq!(ranges(&[1, 2, 3, 4, 6]), "1-4,6");
        assert_eq!(ranges(&[7]), "7");
        assert_eq!(ranges(&[]), "");
    }

    #[test]
    fn a_read_controller_renders_as_nvme_cli_decodes() {
        let c = tune::memory::controller("nvme0", 4);
        let s = CoalesceState {
            raw: 0x0109,
            value: nvme_spec::features::IrqCoalescing::decode(0x0109),
            capabilities: Some(nvme_spec::features::FeatureCapabilities::decode(0b100)),
            vectors: (1..=4)
                .map(|v| tune::state::VectorState {
                    vector: v,
                    coalescing_disabled: v == 2,
                })
                .collect(),
            vectors_note: None,
        };
        let text = render(&[(c.clone(), Reading::Read(s.clone()))]);
        assert!(
            text.contains("an interrupt per 10 completions (THR 9) or after 100 µs (TIME 1)"),
            "{text}"
        );
        assert!(text.contains("changeable: yes, saveable: no"), "{text}");
        assert!(
            text.contains("I/O vectors: 4 (1-4); coalescing disabled (CD) on: 2 (1 of 4)"),
            "{text}"
        );
        let j = to_json(&[(c, Reading::Read(s))], &[]);
        let row = &j["controllers"][0];
        assert_eq!(row["threshold"], 9);
        assert_eq!(row["time_us"], 100);
        assert_eq!(row["raw"], 0x0109);
        assert_eq!(row["changeable"], true);
        assert_eq!(row["saveable"], false);
        assert_eq!(row["vectors"][1]["coalescing_disabled"], true);
        assert_eq!(j["pending_restore"], json!([]));
    }
}

//! Plan files: a [`Placement`] saved as versioned JSON that `numio bench
//! --plan FILE` runs unchanged.
//!
//! ```json
//! { "format": "numio-plan", "version": 1, "placement": { "policy": "local", "targets": [...], "warnings": [] } }
//! ```
//! [`Placement::load`] also accepts the bare placement that `numio plan
//! --format json` prints.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{PlanFileError, StructureError};
use crate::placement::Placement;

/// The `format` field of a plan file.
pub const PLAN_FORMAT: &str = "numio-plan";
/// Version of the plan file format this build writes and the newest it reads.
pub const PLAN_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct PlanFile {
    format: String,
    version: u32,
    placement: Placement,
}

impl Placement {
    /// The plan file text of this placement (pretty JSON, newline-terminated).
    pub fn to_plan_file(&self) -> String {
        // Written by hand at the top so `format` and `version` come first.
        let value = serde_json::to_value(self).expect("a placement always serializes");
        let mut text = format!(
            "{{\n  \"format\": \"{PLAN_FORMAT}\",\n  \"version\": {PLAN_VERSION},\n  \"placement\": "
        );
        write_json(&mut text, &value, 1);
        text.push_str("\n}\n");
        text
    }

    /// Parses plan file text; `origin` names the file in errors.
    pub fn from_plan_file(text: &str, origin: &Path) -> Result<Placement, PlanFileError> {
        let parse = |e: serde_json::Error| PlanFileError::Parse {
            path: origin.to_path_buf(),
            message: format!(
                "line {}, column {}: {e}; fix the file or re-run `numio plan --format numio`",
                e.line(),
                e.column()
            ),
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(parse)?;
        let Some(format) = value.get("format") else {
            let placement: Placement =
                serde_json::from_value(value).map_err(|e| PlanFileError::Parse {
                    path: origin.to_path_buf(),
                    message: format!("not a plan file nor a placement: {e}"),
                })?;
            placement
                .check_structure()
                .map_err(|source| PlanFileError::Structure {
                    path: origin.to_path_buf(),
                    source,
                })?;
            return Ok(placement);
        };
        if format.as_str() != Some(PLAN_FORMAT) {
            return Err(PlanFileError::Parse {
                path: origin.to_path_buf(),
                message: format!("`format` is {format}, expected \"{PLAN_FORMAT}\""),
            });
        }
        let Some(found) = value.get("version").and_then(serde_json::Value::as_u64) else {
            return Err(PlanFileError::Parse {
                path: origin.to_path_buf(),
                message: format!(
                    "no numeric `version`; a plan file says `\"version\": {PLAN_VERSION}`"
                ),
            });
        };
        if found > u64::from(PLAN_VERSION) {
            return Err(PlanFileError::Version {
                path: origin.to_path_buf(),
                found: u32::try_from(found).unwrap_or(u32::MAX),
                supported: PLAN_VERSION,
            });
        }
        let doc: PlanFile = serde_json::from_str(text).map_err(parse)?;
        doc.placement
            .check_structure()
            .map_err(|source| PlanFileError::Structure {
                path: origin.to_path_buf(),
                source,
            })?;
        Ok(doc.placement)
    }

    /// Checks what a hand-edited plan can get wrong without a machine: every
    /// target has jobs, `numjobs` equals the number of jobs, the block size
    /// range and the queue depth make sense, and job CPUs lie in the target's
    /// `cpus` when it lists any.
    pub fn check_structure(&self) -> Result<(), StructureError> {
        if self.targets.is_empty() {
            return Err(StructureError::NoTargets);
        }
        for t in &self.targets {
            let w = &t.workload;
            let target = t.path.clone();
            if t.jobs.is_empty() || t.jobs.len() != w.numjobs as usize {
                return Err(StructureError::JobCount {
                    target,
                    numjobs: w.numjobs,
                    listed: t.jobs.len(),
                });
            }
            if w.bs_min_bytes == 0 || w.bs_min_bytes > w.bs_max_bytes {
                return Err(StructureError::BlockSizes {
                    target,
                    bs_min_bytes: w.bs_min_bytes,
                    bs_max_bytes: w.bs_max_bytes,
                });
            }
            if w.iodepth == 0 || w.rwmixread > 100 {
                return Err(StructureError::DepthOrMix {
                    target,
                    iodepth: w.iodepth,
                    rwmixread: w.rwmixread,
                });
            }
            if !t.cpus.is_empty() {
                let stray = t
                    .jobs
                    .iter()
                    .flat_map(|j| &j.cpus)
                    .find(|c| !t.cpus.contains(c));
                if let Some(&cpu) = stray {
                    return Err(StructureError::StrayCpu { target, cpu });
                }
            }
        }
        Ok(())
    }

    /// Checks that this placement can run on `topo`: every pinned CPU is
    /// online and every bound memory node exists (a plan made on another
    /// machine usually fails here).
    pub fn check_on(&self, topo: &topology::Topology) -> Result<(), crate::PlacementMismatch> {
        for t in &self.targets {
            let fail = |message: String| {
                Err(crate::PlacementMismatch {
                    target: t.path.clone(),
                    message,
                })
            };
            for job in &t.jobs {
                if let Some(c) = job
                    .cpus
                    .iter()
                    .find(|&&c| !crate::cpuset::is_online(topo, c))
                {
                    return fail(format!(
                        "CPU {c} is not online on this machine; re-run `numio plan` here or edit the plan"
                    ));
                }
                if let crate::MemPolicy::Bind(nodes) = &job.mem {
                    if let Some(n) = nodes
                        .iter()
                        .find(|n| !topo.nodes.iter().any(|x| x.id == **n))
                    {
                        return fail(format!(
                            "memory node {n} does not exist on this machine; re-run `numio plan` here or edit the plan"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads a plan file.
    pub fn load(path: impl AsRef<Path>) -> Result<Placement, PlanFileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PlanFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Placement::from_plan_file(&text, path)
    }

    /// Writes this placement as a plan file.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), PlanFileError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_plan_file()).map_err(|source| PlanFileError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// One-line JSON with spaces after `,` and `:`.
fn inline(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), inline(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

/// Pretty JSON where arrays of plain values and small flat objects sit on
/// one line (`{"cpus": [4], "mem": "local"}`), so plan files stay short
/// enough to read and edit by hand.
fn write_json(out: &mut String, v: &serde_json::Value, indent: usize) {
    use serde_json::Value;
    let pad = |n: usize| "  ".repeat(n);
    let flat_object = |m: &serde_json::Map<String, Value>| {
        m.values().all(|x| {
            !x.is_object()
                && !x
                    .as_array()
                    .is_some_and(|a| a.iter().any(|i| i.is_object() || i.is_array()))
        })
    };
    match v {
        Value::Array(items) if items.iter().all(|i| !i.is_array() && !i.is_object()) => {
            out.push_str(&inline(v));
        }
        Value::Object(map) if flat_object(map) && inline(v).len() <= 72 => {
            out.push_str(&inline(v));
        }
        Value::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                write_json(out, item, indent + 1);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push_str("{\n");
            for (i, (k, item)) in map.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_json(out, item, indent + 1);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{JobPlacement, MemPolicy, TargetPlacement};
    use topology::{CpuId, NodeId};

    fn sample() -> Placement {
        Placement {
            policy: "local".into(),
            targets: vec![TargetPlacement {
                path: "/dev/nvme0n1".into(),
                node: Some(NodeId(1)),
                jobs: vec![JobPlacement {
                    cpus: vec![CpuId(4)],
                    mem: MemPolicy::Bind(vec![NodeId(1)]),
                }],
                cpus: vec![CpuId(4), CpuId(116)],
                ..TargetPlacement::default()
            }],
            warnings: vec!["w".into()],
        }
    }

    #[test]
    fn round_trips_through_text_and_disk() {
        let p = sample();
        let back = Placement::from_plan_file(&p.to_plan_file(), Path::new("x")).unwrap();
        assert_eq!(back, p);
        let dir = std::env::temp_dir().join(format!("planner-planfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.json");
        p.save(&file).unwrap();
        assert_eq!(Placement::load(&file).unwrap(), p);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hand_edits_that_break_the_plan_are_caught() {
        let mut p = sample();
        p.targets[0].workload.numjobs = 2;
        let err = Placement::from_plan_file(&p.to_plan_file(), Path::new("p.json")).unwrap_err();
        assert!(err.to_string().contains("numjobs is 2 but 1 jobs"), "{err}");
        let mut p = sample();
        p.targets[0].jobs[0].cpus = vec![CpuId(7)];
        let err = Placement::from_plan_file(&p.to_plan_file(), Path::new("p.json")).unwrap_err();
        assert!(
            err.to_string()
                .contains("job CPU 7 is not in the target's cpus"),
            "{err}"
        );
    }

    #[test]
    fn accepts_a_bare_placement() {
        let text = serde_json::to_string(&sample()).unwrap();
        assert_eq!(
            Placement::from_plan_file(&text, Path::new("x")).unwrap(),
            sample()
        );
    }

    #[test]
    fn rejects_newer_versions_and_bad_json_with_the_line() {
        let text = sample()
            .to_plan_file()
            .replace("\"version\": 1", "\"version\": 9");
        let err = Placement::from_plan_file(&text, Path::new("plan.json")).unwrap_err();
        assert!(err.to_string().contains("version 9"), "{err}");
        let err = Placement::from_plan_file(
            "{\n\"format\": \"numio-plan\",\n oops",
            Path::new("plan.json"),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("plan.json: line 3"), "{err}");
        let text = sample().to_plan_file().replace("\"version\": 1,", "");
        let err = Placement::from_plan_file(&text, Path::new("plan.json")).unwrap_err();
        assert!(err.to_string().contains("no numeric `version`"), "{err}");
        let err = Placement::load("/nonexistent/plan.json").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/plan.json"), "{err}");
    }
}

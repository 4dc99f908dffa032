//! Reading and writing result files, with the schema checked on read.

use std::path::Path;

use crate::error::ReportError;
use crate::export::Exporter;
use crate::model::{ResultSet, SetKind, SCHEMA, SCHEMA_VERSION};

/// Reads and checks a result file written by [`save`]; the JSON of one
/// engine run (`numio bench --json`) reads as a single-run set.
pub fn load(path: &Path) -> Result<ResultSet, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    refuse_fio_json(&text, path)?;
    if crate::precondition::parse(&text).is_some() {
        return Err(ReportError::Invalid {
            what: path.display().to_string(),
            reason: "a numio precondition file: `numio report FILE` prints it as text, and the file itself is its JSON".into(),
        });
    }
    if let Some(arm) = engine_run_arm(&text, path)? {
        let created = arm.runs[0].started_unix_s;
        let command = format!("numio bench --json (read from {})", path.display());
        return Ok(ResultSet::new(SetKind::Single, command, created, vec![arm]));
    }
    from_json(&text, path)
}

/// fio's JSON (`numio bench --output-format fio-json`, or fio's own) is for
/// fio's tools; say so plainly instead of calling it an old numio file.
fn refuse_fio_json(text: &str, path: &Path) -> Result<(), ReportError> {
    let fio = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| {
            v.get("fio version")
                .and_then(|f| f.as_str())
                .map(str::to_string)
        });
    match fio {
        Some(version) => Err(ReportError::Invalid {
            what: path.display().to_string(),
            reason: format!(
                "this is fio's JSON output ({version} layout, as `numio bench --output-format fio-json` \
                 or fio writes it), for fio's tools such as fio-plot; numio report reads numio's \
                 results: `numio bench --json` or `--save FILE`"
            ),
        }),
        None => Ok(()),
    }
}

/// The one-run arm of an engine result (`numio bench --json`), if `text`
/// is one; an engine result of a schema version this build does not read
/// (0, or newer than [`results::RESULT_SCHEMA_VERSION`]) is refused.
fn engine_run_arm(text: &str, path: &Path) -> Result<Option<crate::model::Arm>, ReportError> {
    let Ok(run) = serde_json::from_str::<results::RunResult>(text) else {
        return Ok(None);
    };
    let newest = results::RESULT_SCHEMA_VERSION;
    if run.schema_version == 0 || run.schema_version > newest {
        return Err(ReportError::Schema {
            path: path.to_path_buf(),
            found: format!("numio bench --json version {}", run.schema_version),
            expected: format!("numio bench --json versions 1 to {newest}"),
        });
    }
    Ok(Some(crate::model::Arm {
        label: run.policy.clone(),
        spec: format!("result={}", path.display()),
        runs: vec![crate::from_engine::record(1, &run)],
    }))
}

/// Parses and checks result-file JSON; `path` names it in errors.
pub fn from_json(text: &str, path: &Path) -> Result<ResultSet, ReportError> {
    #[derive(serde::Deserialize)]
    struct Header {
        schema: Option<String>,
        schema_version: Option<u32>,
    }
    let parse = |source| ReportError::Parse {
        path: path.to_path_buf(),
        source,
    };
    let header: Header = serde_json::from_str(text).map_err(parse)?;
    let schema = header.schema.unwrap_or_default();
    let version = header.schema_version.unwrap_or(0);
    if schema != SCHEMA || version == 0 || version > SCHEMA_VERSION {
        return Err(ReportError::Schema {
            path: path.to_path_buf(),
            found: format!("{schema:?} version {version}"),
            expected: format!("{SCHEMA:?} versions 1 to {SCHEMA_VERSION}"),
        });
    }
    let set: ResultSet = serde_json::from_str(text).map_err(parse)?;
    if set.arms.is_empty() || set.arms.iter().all(|a| a.runs.is_empty()) {
        return Err(ReportError::Invalid {
            what: path.display().to_string(),
            reason: "the file holds no runs; run the benchmark again with --save".into(),
        });
    }
    Ok(set)
}

/// Writes `set` as pretty JSON (with its computed analysis) to `path`.
pub fn save(set: &ResultSet, path: &Path) -> Result<(), ReportError> {
    let mut bytes = Vec::new();
    crate::export::JsonExporter
        .export(set, &mut bytes)
        .map_err(|e| match e {
            ReportError::Write { source, .. } => ReportError::Write {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        })?;
    std::fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The runs of one arm of a saved file, for `result=FILE[,arm=LABEL]`.
///
/// Reads numio result files and also the JSON of one engine run
/// (`numio bench --json`), which gives an arm of one run.
pub fn load_arm(path: &Path, arm: Option<&str>) -> Result<crate::model::Arm, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(arm) = engine_run_arm(&text, path)? {
        return Ok(arm);
    }
    let set = from_json(&text, path)?;
    let labels: Vec<&str> = set.arms.iter().map(|a| a.label.as_str()).collect();
    let found = match arm {
        Some(label) => set.arms.iter().find(|a| a.label == label),
        None if set.arms.len() == 1 => set.arms.first(),
        None => None,
    };
    found.cloned().ok_or_else(|| ReportError::Invalid {
        what: path.display().to_string(),
        reason: format!(
            "pick one of its arms {labels:?} with result={},arm=LABEL",
            path.display()
        ),
    })
}

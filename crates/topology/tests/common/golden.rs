//! Checking a fixture's whole model against its reviewed golden JSON
//! (`tests/golden/<machine>.json`; rewrite with `UPDATE_GOLDEN=1 cargo test
//! -p topology` and review the diff), and short forms of doctor's findings.
#![allow(dead_code)]

use std::path::PathBuf;

use topology::doctor::{diagnose, Severity};
use topology::{CpuId, Topology};

use super::fixtures_dir;

pub fn discover(name: &str) -> Topology {
    Topology::discover(&fixtures_dir().join(name))
        .unwrap_or_else(|e| panic!("discover {name}: {e}"))
}

pub fn check_golden(name: &str, topo: &Topology) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    let actual =
        collapse_scalar_arrays(&serde_json::to_string_pretty(topo).expect("serializable")) + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir golden");
        std::fs::write(&path, &actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1", path.display()));
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{name}: model differs from {} at line {}: expected `{}`, got `{}` (UPDATE_GOLDEN=1 rewrites it; review the diff)",
            path.display(),
            line + 1,
            expected.lines().nth(line).unwrap_or(""),
            actual.lines().nth(line).unwrap_or("")
        );
    }
    let back: Topology = serde_json::from_str(&expected).expect("golden parses back");
    assert_eq!(
        &back, topo,
        "{name}: golden JSON deserializes to the same model"
    );
}

/// Pretty JSON with every array of scalars on one line (`[0, 48]`), so the
/// goldens stay small enough to review.
fn collapse_scalar_arrays(pretty: &str) -> String {
    let lines: Vec<&str> = pretty.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.ends_with('[') {
            let scalars: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| !l.trim_start().starts_with(']'))
                .map(|l| l.trim().trim_end_matches(','))
                .collect();
            let end = i + 1 + scalars.len();
            let flat = scalars
                .iter()
                .all(|v| !v.ends_with('[') && !v.ends_with('{') && !v.starts_with('}'));
            if flat && end < lines.len() {
                let close = lines[end].trim_start().trim_start_matches(']');
                out.push(format!("{line}{}]{close}", scalars.join(", ")));
                i = end + 1;
                continue;
            }
        }
        out.push(line.to_string());
        i += 1;
    }
    out.join("\n")
}

pub fn findings(topo: &Topology) -> Vec<(Severity, String, String)> {
    diagnose(topo)
        .into_iter()
        .map(|f| (f.severity, f.code, f.subject))
        .collect()
}

pub fn cpus(ids: impl IntoIterator<Item = u32>) -> Vec<CpuId> {
    ids.into_iter().map(CpuId).collect()
}

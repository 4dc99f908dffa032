//! ARCHITECTURE.md stays true: every workspace member is in its crate
//! table, with exactly the workspace crates its Cargo.toml depends on.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The workspace's member crates, by folder name.
fn members() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let start = text.find("members = [").expect("a members list");
    let end = start + text[start..].find(']').unwrap();
    text[start..end]
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').strip_prefix("\"crates/"))
        .map(|l| l.trim_end_matches('"').to_string())
        .collect()
}

/// The workspace crates `name`'s `[dependencies]` names.
fn dependencies(name: &str, all: &[String]) -> BTreeSet<String> {
    let text =
        std::fs::read_to_string(root().join("crates").join(name).join("Cargo.toml")).unwrap();
    let deps = text
        .split("\n[")
        .find(|s| s.starts_with("dependencies]"))
        .unwrap_or_default();
    deps.lines()
        .filter_map(|l| l.split(['.', ' ', '=']).next())
        .filter(|d| all.iter().any(|m| m == d))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_workspace_crate_is_in_the_map_with_its_dependencies() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let all = members();
    assert!(all.len() >= 12, "{all:?}");
    for m in &all {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{m}` |")))
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no row for the crate {m}"));
        let cells: Vec<&str> = row.split(" | ").collect();
        let listed: BTreeSet<String> = cells
            .last()
            .unwrap()
            .split(',')
            .map(|d| {
                d.trim()
                    .trim_end_matches(" |")
                    .trim_matches('`')
                    .to_string()
            })
            .filter(|d| all.contains(d))
            .collect();
        assert_eq!(
            listed,
            dependencies(m, &all),
            "ARCHITECTURE.md's row for {m} lists other workspace dependencies than its Cargo.toml"
        );
    }
}

/// No source folder is named `target`: tools that skip cargo's build
/// directory (`target/`) would skip it too. nvmf's target side is
/// `nvmf::tgt`; engine's description of a target is `engine::targets`.
#[test]
fn no_source_folder_is_named_target() {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if e.file_name() == "target" {
                    found.push(p.display().to_string());
                }
                walk(&p, found);
            }
        }
    }
    let mut found = Vec::new();
    for c in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let src = c.path().join("src");
        if src.is_dir() {
            walk(&src, &mut found);
        }
    }
    walk(&root().join("fuzz").join("src"), &mut found);
    assert!(found.is_empty(), "source folders named target: {found:?}");
}

//! The `numio topo` / `numio doctor` examples of README.md and
//! docs/readme/topology.md that name a fixture (`--root
//! tests/fixtures/sysfs/NAME`) print what discovery, render and doctor
//! print today. An example may elide lines (`…` alone on a line) or parts
//! of one (`...`, `(as above)`): the lines it keeps must appear, in order.

mod common;

use std::path::PathBuf;

use common::fixtures_dir;
use topology::doctor::{render, Report};
use topology::Topology;

/// (command, fixture, example lines) of every example in `text`.
fn examples(text: &str) -> Vec<(String, String, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(at) = line.find("numio ") else {
            continue;
        };
        let command = line[at..].split('`').next().unwrap_or("");
        let words: Vec<&str> = command.split_whitespace().collect();
        let (Some(&cmd), Some(&"--root"), Some(root)) = (words.get(1), words.get(2), words.get(3))
        else {
            continue;
        };
        let Some(name) = root.strip_prefix("tests/fixtures/sysfs/") else {
            continue;
        };
        if !matches!(cmd, "topo" | "doctor") || words.len() > 4 {
            continue;
        }
        // The example: the rest of this code block for a `$ numio ...`
        // line, else the next code block.
        let start = if line.starts_with("$ ") {
            i + 1
        } else {
            match lines[i..].iter().position(|l| l.starts_with("```")) {
                Some(open) => i + open + 1,
                None => continue,
            }
        };
        let body: Vec<String> = lines[start..]
            .iter()
            .take_while(|l| !l.starts_with("```") && !l.starts_with("$ "))
            .map(|l| l.to_string())
            .collect();
        out.push((cmd.to_string(), name.to_string(), body));
    }
    out
}

fn elided(line: &str) -> bool {
    line.trim() == "…" || line.contains("...") || line.contains("(as above)")
}

fn check(file: &str) -> usize {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("readable");
    let found = examples(&text);
    for (cmd, name, body) in &found {
        let t = Topology::discover(&fixtures_dir().join(name))
            .unwrap_or_else(|e| panic!("{file}: {name}: {e}"));
        let actual = match cmd.as_str() {
            "topo" => topology::render::tree(&t),
            _ => render(&Report::new(&t)),
        };
        if body.iter().all(|l| !elided(l)) {
            assert_eq!(
                body.join("\n") + "\n",
                actual,
                "{file}: `numio {cmd} --root .../{name}` prints otherwise today; update the example"
            );
            continue;
        }
        let mut rest = actual.lines();
        for line in body.iter().filter(|l| !elided(l)) {
            assert!(
                rest.any(|a| a == line),
                "{file}: `numio {cmd} --root .../{name}`: the example's line `{line}` is not (or not in this order) in today's output:\n{actual}"
            );
        }
    }
    found.len()
}

#[test]
fn fixture_examples_in_the_docs_are_what_numio_prints() {
    let n = check("docs/readme/topology.md") + check("README.md");
    assert!(n >= 6, "found {n} examples; the parser lost some");
}

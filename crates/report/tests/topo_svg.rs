//! The machine picture (`numio topo --svg`) of every sysfs fixture:
//! golden SVGs under `tests/fixtures/topo-svg/` (regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p report --test topo_svg`, then look at
//! the pictures before committing), and structural checks that every
//! controller, namespace and finding is on the picture.

use std::path::{Path, PathBuf};

use topology::doctor::Report;
use topology::Topology;

/// Fixtures drawn and kept as goldens.
const GOLDEN: [&str; 9] = [
    "2s-448cpu-16nvme",
    "2node-multipath-tcp",
    "r740xd-2s-12nvme",
    "vm-mp-memoryless",
    "numa-unknown",
    "power-3node",
    "vm-eight-node",
    "vm-four-node",
    "inconsistent-nodes",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn picture(name: &str) -> (Topology, Report, String) {
    let root = repo().join("tests/fixtures/sysfs").join(name);
    let t = Topology::discover(&root).unwrap_or_else(|e| panic!("fixture {name}: {e}"));
    let report = Report::new(&t);
    let svg = report::topo::render_svg(&t, &report.findings, &format!("fixture {name}"));
    (t, report, svg)
}

/// Line endings and trailing blanks do not count.
fn normalize(svg: &str) -> String {
    svg.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn pictures_match_their_goldens() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for name in GOLDEN {
        let (_, _, svg) = picture(name);
        let actual = normalize(&svg);
        let golden = repo()
            .join("tests/fixtures/topo-svg")
            .join(format!("{name}.svg"));
        match std::fs::read_to_string(&golden) {
            Ok(want) if !update => {
                if normalize(&want) != actual {
                    stale.push(golden.display().to_string());
                }
            }
            _ => {
                assert!(
                    update,
                    "{} is missing: run with UPDATE_GOLDEN=1, look at it, commit it",
                    golden.display()
                );
                std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
                std::fs::write(&golden, &actual).unwrap();
            }
        }
    }
    assert!(
        stale.is_empty(),
        "pictures differ from their goldens (UPDATE_GOLDEN=1 cargo test -p report --test topo_svg rewrites them; look at them first): {stale:?}"
    );
}

#[test]
fn every_controller_namespace_and_finding_is_drawn() {
    for entry in std::fs::read_dir(repo().join("tests/fixtures/sysfs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let (t, report, svg) = picture(&name);
        for c in &t.controllers {
            let comment = format!("<!-- controller {} serial {} -->", c.name, c.serial);
            assert!(svg.contains(&comment), "{name}: {comment} missing");
            assert!(
                svg.contains(&format!(">{}  ", c.name)),
                "{name}: title of {} missing",
                c.name
            );
        }
        for ns in t.subsystems.iter().flat_map(|s| &s.namespaces) {
            assert!(
                svg.contains(&ns.block_device),
                "{name}: {} missing",
                ns.block_device
            );
        }
        for (i, f) in report.findings.iter().enumerate() {
            assert!(svg.contains(&f.code), "{name}: finding {} missing", f.code);
            // Once in the list under the legend, at least once on a part.
            let marker = format!("font-weight=\"bold\">{}</text>", i + 1);
            let seen = svg.matches(&marker).count();
            assert!(
                seen >= 2,
                "{name}: finding {} ({}) is not marked on any part",
                i + 1,
                f.code
            );
        }
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{name}"
        );
        assert!(svg.contains("Legend"), "{name}: no legend");
    }
}

#[test]
fn findings_are_marked_on_the_parts_they_concern() {
    let (_, report, svg) = picture("2node-multipath-tcp");
    let codes: Vec<&str> = report.findings.iter().map(|f| f.code.as_str()).collect();
    assert!(codes.contains(&"controller-node-unknown"), "{codes:?}");
    // nvme2 (numa_node -1) sits in the box of no node, in its own colour.
    let unknown = svg
        .find("no NUMA node (numa_node -1)")
        .expect("box of no node");
    let nvme2 = svg.find("<!-- controller nvme2 ").expect("nvme2 drawn");
    assert!(nvme2 > unknown, "nvme2 is drawn inside the box of no node");
    assert!(
        svg[nvme2..].contains("fill=\"#f8d4cf\""),
        "nvme2 in the node -1 colour"
    );
    // The remote IRQs on nvme1's box, the non-nearest path on the head's.
    let nvme1 = &svg[svg.find("<!-- controller nvme1 ").unwrap()..nvme2];
    assert!(
        nvme1.contains(">irq-remote-node</text>"),
        "irq marker on nvme1"
    );
    let head = &svg[svg.find("<!-- multipath head nvme0n1 -->").unwrap()..];
    assert!(head.contains(">multipath-path-not-nearest</text>") || head.contains("not nearest"));
    // Paths of the head drawn from both controllers.
    assert!(svg.contains("<!-- path nvme0c0n1 -->") && svg.contains("<!-- path nvme0c1n1 -->"));
}

#[test]
fn long_cpu_runs_collapse_with_smt_siblings_grouped() {
    let (_, _, svg) = picture("2s-448cpu-16nvme");
    assert!(
        svg.contains("CPU 0–111 (+SMT 112–223)"),
        "node 0's CPUs collapsed"
    );
    assert!(
        svg.contains("CPU 224–335 (+SMT 336–447)"),
        "node 1's CPUs collapsed"
    );
    assert!(!svg.contains("0+112"), "no per-core sibling list");
}

#[test]
fn png_rasterizes_the_picture() {
    if !report::chart::png::system_fonts_available() {
        eprintln!("skipped: no system fonts for the labels (install fonts-dejavu-core)");
        return;
    }
    let (t, report, _) = picture("2node-multipath-tcp");
    let path = std::env::temp_dir().join(format!("numio-topo-{}.png", std::process::id()));
    report::topo::write(&t, &report.findings, "fixture", &path, true).expect("png written");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 10_000, "a real picture, not an empty raster");
}

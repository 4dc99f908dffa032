//! What the input-reading targets (`snapshot`, `fio_job`, `histogram`,
//! `fleet_lines`) do with one input, shared by the targets and the seed
//! tests so a seed is checked through the same code the fuzzer runs.
//!
//! Input layouts: `snapshot`: a knobs byte (bit 0: the rest is a tar
//! stream the harness gzips; else a gzip stream), then the archive.
//! `fio_job`: job files separated by NUL bytes, the first the job file
//! `/j/job.fio`, the others `/j/1.fio`, `/j/2.fio`, ... for its includes.
//! `histogram`: the bytes of a histogram (the harness hex-encodes them as
//! results store them). `fleet_lines`: a byte for the line limit (its
//! value × 16 + 1), then an agent's stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::budget::Budget;

/// What the `snapshot` target reads: the number of paths in the tree,
/// or why it was refused.
pub fn snapshot(data: &[u8]) -> Result<usize, String> {
    let Some((&knobs, rest)) = data.split_first() else {
        return Err("empty".into());
    };
    let gz;
    let archive = if knobs & 1 != 0 {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
        e.write_all(rest).expect("in memory");
        gz = e.finish().expect("in memory");
        &gz[..]
    } else {
        rest
    };
    // The caps hold whatever the input: the uncompressed stream, the
    // tree's names and contents (topology::source's limits), and the
    // reader's own buffers.
    let budget = Budget::start(
        "snapshot",
        (topology::source::TREE_BYTES_MAX + topology::source::ARCHIVE_BYTES_MAX) as usize
            + (64 << 20),
        Duration::from_secs(20),
    );
    let tree = topology::source::MemTree::from_tar_gz_reader(archive, Path::new("fuzz.tar.gz"))
        .map(std::sync::Arc::new);
    let paths = tree.as_ref().map_err(|e| e.to_string()).map(|tree| {
        // Read back through `Source` as discovery reads it.
        let source = topology::source::Source::Memory(std::sync::Arc::clone(tree));
        let mut buf = Vec::new();
        let mut n = 0;
        for p in tree.paths() {
            n += 1;
            if n > 10_000 {
                continue;
            }
            let _ = source.read(p, &mut buf);
            let _ = source.list(p);
            let _ = source.read_link(p);
            let _ = source.exists(p);
            assert!(buf.len() as u64 <= topology::source::FILE_BYTES_MAX);
        }
        n
    });
    drop(tree);
    budget.check(data.len());
    paths
}

/// The job files of a `fio_job` input: the job file's text and the
/// includes it may name.
pub fn fio_files(data: &[u8]) -> (String, planner::fio::include::MemResolver) {
    let mut parts = data.split(|&b| b == 0);
    let top = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let mut r = planner::fio::include::MemResolver::default();
    for (i, p) in parts.enumerate() {
        r.files
            .insert(PathBuf::from(format!("/j/{}.fio", i + 1)), p.to_vec());
    }
    (top, r)
}

/// What the `fio_job` target reads: the jobs, or the error's text.
pub fn fio_job(data: &[u8]) -> Result<planner::fio::JobFile, String> {
    let (top, resolver) = fio_files(data);
    let budget = Budget::start("fio_job", 256 << 20, Duration::from_secs(10));
    let r = planner::fio::parse_job_text_with(
        &top,
        Path::new("/j/job.fio"),
        &planner::fio::ParseOptions::default(),
        &resolver,
    );
    if let Ok(j) = &r {
        assert!(j.jobs.len() <= planner::fio::include::SECTIONS_MAX);
    }
    budget.check(data.len());
    r.map_err(|e| e.to_string())
}

/// What the `histogram` target reads: the decoded histogram, re-encoded
/// and decoded again to the same counts.
pub fn histogram(data: &[u8]) -> Option<hdrhistogram::Histogram<u64>> {
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    let budget = Budget::start("histogram", 64 << 20, Duration::from_secs(5));
    let h = results::histogram::decode_histogram(&hex);
    let _ = results::histogram::decode_histogram(&String::from_utf8_lossy(data));
    if let Some(h) = &h {
        let again = results::histogram::decode_histogram(&results::histogram::encode_histogram(h))
            .expect("a decoded histogram re-encodes to one that decodes");
        assert_eq!(again.len(), h.len());
        assert_eq!(again.max(), h.max());
    }
    budget.check(data.len());
    h
}

/// What the `fleet_lines` target reads: the messages and the tail kept.
pub fn fleet_lines(data: &[u8]) -> (Vec<String>, Vec<String>) {
    let Some((&knob, out)) = data.split_first() else {
        return (Vec::new(), Vec::new());
    };
    let max = usize::from(knob) * 16 + 1;
    let budget = Budget::start("fleet_lines", 16 * max + (1 << 20), Duration::from_secs(5));
    let tail = Mutex::new(fleet::lines::Tail::default());
    let mut got = Vec::new();
    fleet::ssh::forward_stdout(out, max, &tail, |m| {
        if let fleet::ssh::Incoming::Message(m) = &m {
            assert!(!m.line().contains('\n'));
        }
        got.push(format!("{m:?}"));
        true
    });
    assert_eq!(got.last().map(String::as_str), Some("Closed"));
    let tail: Vec<String> = tail.lock().unwrap().lines().map(str::to_string).collect();
    assert!(tail.len() <= fleet::lines::TAIL_LINES);
    for l in &tail {
        assert!(
            l.len() <= 3 * fleet::lines::TAIL_LINE_MAX_BYTES + 40,
            "{}",
            l.len()
        );
    }
    // The agent's side: the controller's lines within their limit.
    let mut r = out;
    let mut buf = Vec::new();
    while let Ok(Some(_)) = fleet::lines::read_line_bounded(&mut r, &mut buf, max) {
        assert!(buf.len() <= max);
        let _ = serde_json::from_slice::<fleet::ToAgent>(&buf);
    }
    budget.check(data.len());
    (got, tail)
}

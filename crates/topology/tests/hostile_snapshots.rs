//! Snapshots nobody saved with numio: a `.tar.gz` whose header lies about
//! a size, and a gzip bomb. Both are refused with an error naming the file,
//! never allocated for (issue #16: the first aborted `topo` and `doctor`
//! with exit 134, the second took RSS to 2.1 GB).

mod common;

use std::io::Write;
use std::path::Path;

use common::TempDir;
use topology::{snapshot, TopologyError};

/// One tar header claiming `size_bytes` for `name`, and no data: 89 bytes
/// gzipped.
fn lying_header(path: &Path, name: &str, size_bytes: u64) {
    let mut h = tar::Header::new_gnu();
    h.set_path(name).unwrap();
    h.set_size(size_bytes);
    h.set_mode(0o444);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::best(),
    );
    gz.write_all(h.as_bytes()).unwrap();
    gz.finish().unwrap();
}

fn refusal(path: &Path) -> String {
    match snapshot::open(path) {
        Err(e @ TopologyError::Io { .. }) => e.to_string(),
        Err(e) => panic!("another error: {e:?}"),
        Ok(_) => panic!("{} opened", path.display()),
    }
}

#[test]
fn a_header_claiming_2_pow_45_bytes_is_refused_before_any_allocation() {
    let tmp = TempDir::new("lying-header");
    let file = tmp.0.join("lie.tar.gz");
    lying_header(&file, snapshot::MANIFEST_NAME, 1 << 45);
    assert!(std::fs::metadata(&file).unwrap().len() < 200);
    let e = refusal(&file);
    assert!(
        e.contains("lie.tar.gz")
            && e.contains("its header claims 35184372088832 bytes")
            && e.contains("not a snapshot `numio topo --save` made"),
        "{e}"
    );
}

#[test]
fn a_gzip_bomb_stops_at_the_archive_cap() {
    let tmp = TempDir::new("bomb");
    let file = tmp.0.join("bomb.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&file).unwrap(),
        flate2::Compression::best(),
    );
    let mut tar = tar::Builder::new(gz);
    let zeros = vec![0u8; 8 << 20];
    // 96 MiB of files each under the per-file cap; the manifest never comes.
    for i in 0..12 {
        let mut h = tar::Header::new_gnu();
        h.set_size(zeros.len() as u64);
        h.set_mode(0o444);
        tar.append_data(&mut h, format!("sys/zeros{i}"), &zeros[..])
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
    let compressed = std::fs::metadata(&file).unwrap().len();
    assert!(compressed < 1 << 20, "a bomb: {compressed} bytes");
    let e = refusal(&file);
    assert!(
        e.contains("bomb.tar.gz") && e.contains("more than 64 MiB uncompressed"),
        "{e}"
    );
}

#[test]
fn one_file_past_the_per_file_cap_is_refused() {
    let tmp = TempDir::new("big-file");
    let file = tmp.0.join("big.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&file).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    let big = vec![b'x'; (16 << 20) + 1];
    h.set_size(big.len() as u64);
    h.set_mode(0o444);
    tar.append_data(&mut h, "proc/interrupts", &big[..])
        .unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let e = refusal(&file);
    assert!(e.contains("proc/interrupts is larger than 16 MiB"), "{e}");
}

//! Seeds of the input-reading targets (layouts in [`crate::inputs`]):
//! a small snapshot (as tar and as gzip), job files with includes,
//! an encoded histogram, and an agent's session on stdout.

use crate::seeds::Seed;

fn seed(target: &'static str, name: &'static str, bytes: Vec<u8>) -> Seed {
    Seed {
        target,
        name,
        bytes,
    }
}

/// A snapshot's tar stream: a manifest, a file, a directory, a symlink.
fn small_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |kind: tar::EntryType, path: &str, body: &[u8], link: Option<&str>| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        if let Some(l) = link {
            h.set_link_name(l).expect("a short link");
        }
        h.set_path(path).expect("a short path");
        h.set_cksum();
        b.append(&h, body).expect("in memory");
    };
    add(tar::EntryType::Regular, "numio-snapshot.json", b"{}", None);
    add(tar::EntryType::Directory, "sys/class/nvme", b"", None);
    add(
        tar::EntryType::Regular,
        "sys/devices/pci0/nvme/nvme0/model",
        b"M\n",
        None,
    );
    add(
        tar::EntryType::Symlink,
        "sys/class/nvme/nvme0",
        b"",
        Some("../../devices/pci0/nvme/nvme0"),
    );
    b.into_inner().expect("in memory")
}

fn with_head(head: u8, rest: &[u8]) -> Vec<u8> {
    let mut v = vec![head];
    v.extend_from_slice(rest);
    v
}

/// Seeds of `snapshot`, `fio_job`, `histogram` and `fleet_lines`.
pub fn all() -> Vec<Seed> {
    use std::io::Write;
    let tar = small_tar();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).expect("in memory");
    let gz = gz.finish().expect("in memory");
    let mut h = results::histogram::new_histogram();
    for v in [1_000, 20_000, 3_000_000] {
        h.record(v).expect("within range");
    }
    let hex = results::histogram::encode_histogram(&h);
    let hist: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    let session = concat!(
        r#"{"type":"hello","version":"T","protocol":1,"hostname":"a"}"#,
        "\nWelcome to the login banner\n",
        r#"{"type":"pong","sent_ns":1,"agent_ns":2}"#,
        "\n",
        r#"{"type":"ready","targets":["/dev/nvme0n1"],"jobs":4}"#,
        "\n",
        r#"{"type":"progress","elapsed_s":0.2,"iops":1000.0,"bandwidth_bytes_per_s":4096000.0}"#,
        "\n",
        r#"{"type":"error","message":"cannot open /x"}"#,
        "\n",
    );
    vec![
        seed("snapshot", "small-tree-tar", with_head(1, &tar)),
        seed("snapshot", "small-tree-gz", with_head(0, &gz)),
        seed(
            "fio_job",
            "includes",
            b"[global]\nioengine=io_uring\nbs=4k\ninclude 1.fio\n[a]\nfilename=/dev/null\nrw=randread\n\0[b]\nfilename=/dev/null\ninclude 2.fio\n\0iodepth=8\n".to_vec(),
        ),
        seed(
            "fio_job",
            "fan-out",
            b"[global]\nfilename=/dev/null\ninclude 1.fio\ninclude 1.fio\n\0include 2.fio\ninclude 2.fio\ninclude 2.fio\n\0[j]\nrw=read\n".to_vec(),
        ),
        seed("histogram", "three-values", hist),
        seed("fleet_lines", "session", with_head(255, session.as_bytes())),
        seed("fleet_lines", "over-limit", with_head(1, session.as_bytes())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs;

    fn bytes(name: &str) -> Vec<u8> {
        all().into_iter().find(|s| s.name == name).unwrap().bytes
    }

    #[test]
    fn snapshot_seeds_read_every_entry() {
        for name in ["small-tree-tar", "small-tree-gz"] {
            // The manifest, the file, the link and the directories above.
            assert_eq!(inputs::snapshot(&bytes(name)), Ok(11), "{name}");
        }
    }

    #[test]
    fn fio_job_seeds_read_their_includes() {
        let j = inputs::fio_job(&bytes("includes")).unwrap();
        let names: Vec<&str> = j.jobs.iter().map(|j| j.name.as_str()).collect();
        // 1.fio, included from [global], defines `b` before `a`; 2.fio
        // gives `b` its queue depth.
        assert_eq!(names, ["b", "a"]);
        assert_eq!(j.jobs[0].workload.iodepth, 8);
        assert_eq!(inputs::fio_job(&bytes("fan-out")).unwrap().jobs.len(), 6);
    }

    #[test]
    fn histogram_seed_decodes() {
        let h = inputs::histogram(&bytes("three-values")).unwrap();
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn fleet_lines_seeds_reach_each_message_or_the_limit() {
        let (got, tail) = inputs::fleet_lines(&bytes("session"));
        assert_eq!(got.len(), 6, "{got:?}");
        assert!(got[0].starts_with("Message(Hello"), "{got:?}");
        assert_eq!(tail, ["(stdout) Welcome to the login banner"]);
        let (got, _) = inputs::fleet_lines(&bytes("over-limit"));
        assert!(got[0].starts_with("TooLong"), "{got:?}");
        assert_eq!(got.len(), 2, "{got:?}");
    }
}

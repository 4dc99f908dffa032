//! The limits of reading job files and their includes (issue 38).

use std::path::{Path, PathBuf};

use super::include::{MemResolver, ENTRIES_MAX, SECTIONS_MAX};
use super::{parse_job_text_with, FioError, ParseOptions};

fn mem(files: &[(&str, String)]) -> MemResolver {
    MemResolver {
        files: files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.clone().into_bytes()))
            .collect(),
    }
}

fn refusal(text: &str, r: &MemResolver) -> String {
    match parse_job_text_with(text, Path::new("/j/top.fio"), &ParseOptions::default(), r) {
        Ok(j) => panic!("accepted {} jobs", j.jobs.len()),
        Err(e) => e.to_string(),
    }
}

// Issue 38: includes fanned out exponentially (seven 150-byte files, each
// including the next ten times: 10^6 sections, 1.7 GB).
#[test]
fn includes_that_fan_out_stop_at_the_section_limit() {
    let mut files = vec![("/j/f4.fio", "[job]\nfilename=/dev/null\n".to_string())];
    for level in (0..4).rev() {
        let next = format!("include f{}.fio\n", level + 1).repeat(10);
        files.push((
            ["/j/f0.fio", "/j/f1.fio", "/j/f2.fio", "/j/f3.fio"][level],
            next,
        ));
    }
    let e = refusal("include f0.fio\n", &mem(&files));
    assert!(
        e.contains(&format!("more than {SECTIONS_MAX} job sections")),
        "{e}"
    );
    assert!(e.starts_with("/j/f4.fio:1:"), "{e}");
}

// Issue 38: each section copies [global]: few sections of a large global
// section still held a great many options.
#[test]
fn global_options_copied_into_sections_are_counted() {
    let global = format!("[global]\n{}", "size=1m\n".repeat(ENTRIES_MAX / 1000));
    let jobs = "[j]\nfilename=/dev/null\n".repeat(1001);
    let e = refusal(&format!("{global}{jobs}"), &mem(&[]));
    assert!(
        e.contains(&format!("more than {ENTRIES_MAX} options")),
        "{e}"
    );
}

// Issue 38: the bytes read through includes had no limit (/dev/zero).
#[test]
fn included_bytes_have_one_budget() {
    let big = format!("[global]\n{}", "size=1m\n".repeat(100_000));
    let e = refusal("include a.fio\ninclude a.fio\n", &mem(&[("/j/a.fio", big)]));
    assert!(e.contains("bytes left of the 1024 KiB"), "{e}");
    assert!(e.contains("(included from /j/top.fio:2)"), "{e}");
}

// Issue 38: an error quoted the first line of any included file
// (`include /etc/shadow` printed a password field).
#[test]
fn a_file_that_is_no_job_file_is_not_quoted() {
    let shadow = "root:$6$s3cr3tHash:19000:0:99999:7:::\n".to_string();
    let e = refusal(
        "[j]\nfilename=/dev/null\ninclude /etc/shadow\n",
        &mem(&[("/etc/shadow", shadow)]),
    );
    assert!(e.starts_with("/etc/shadow:1: not a job-file line"), "{e}");
    assert!(!e.contains("s3cr3t") && !e.contains("root"), "{e}");
    let plain = "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n".to_string();
    let e = refusal("include /etc/passwd\n", &mem(&[("/etc/passwd", plain)]));
    assert!(!e.contains("daemon"), "{e}");
    // Once a file reads as a job file, its errors quote it as before.
    let e = refusal("[j]\nfilename=/dev/null\nbad line here\n", &mem(&[]));
    assert!(e.contains("`bad line here`"), "{e}");
}

fn fs_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numio-fio-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// Issue 38: an include of a FIFO hung; of /dev/zero read until memory
// failed.
#[test]
fn includes_are_regular_files_opened_without_blocking() {
    let d = fs_dir("fifo");
    let fifo = d.join("pipe.fio");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for target in [fifo.to_str().unwrap(), "/dev/zero"] {
        let job = d.join("job.fio");
        std::fs::write(&job, format!("include {target}\n")).unwrap();
        let e = super::load_job_file(&job, &ParseOptions::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(e.contains(target), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_limit_error_is_a_limit() {
    let r = parse_job_text_with(
        &"[j]\nfilename=/dev/null\n".repeat(SECTIONS_MAX + 1),
        Path::new("t.fio"),
        &ParseOptions::default(),
        &MemResolver::default(),
    );
    assert!(matches!(r, Err(FioError::Limit { .. })), "{r:?}");
}

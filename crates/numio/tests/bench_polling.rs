//! `numio bench` with io_uring polling through the binary: IOPOLL asked for
//! where the device has no poll queues is a clear error before any I/O
//! (it used to run and count every I/O as EOPNOTSUPP), and fio job files set
//! SQPOLL / IOPOLL / fixed buffers per job instead of refusing jobs that
//! disagree.

mod common;

use common::{numio, Temp};

/// `queue/io_poll` of the disk under the temp dir (None: no block device).
fn temp_dir_io_poll() -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(std::env::temp_dir()).ok()?.dev();
    let sys = std::fs::canonicalize(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ))
    .ok()?;
    let disk = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(
        std::fs::read_to_string(disk.join("queue/io_poll"))
            .ok()?
            .trim()
            == "1",
    )
}

#[test]
fn iopoll_on_without_poll_queues_is_an_error_before_the_run() {
    if temp_dir_io_poll() != Some(false) {
        eprintln!("skipped: the temp dir's disk has poll queues or none is known");
        return;
    }
    let t = Temp::filled("on", 8 << 20, 0x33);
    let (code, out, err) = numio(&[
        "bench",
        t.path(),
        "--iopoll",
        "on",
        "--runtime",
        "1s",
        "--json",
    ]);
    assert_eq!(code, 2, "refused before the run: {err}");
    assert!(out.is_empty(), "no report: {out}");
    assert!(
        err.contains(t.path())
            && err.contains("has no poll queues")
            && err.contains("--iopoll auto or off"),
        "{err}"
    );
}

#[test]
fn job_file_sets_ring_options_per_job() {
    let (a, b) = (
        Temp::filled("ja", 8 << 20, 0x33),
        Temp::filled("jb", 8 << 20, 0x33),
    );
    let job = std::env::temp_dir().join(format!("numio-poll-{}.fio", std::process::id()));
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=io_uring\nrw=randread\nbs=4k\niodepth=8\ndirect=1\nruntime=1\ntime_based=1\n\
             [a]\nfilename={}\nsqthread_poll=1\nfixedbufs=0\n\
             [b]\nfilename={}\nfixedbufs=1\n",
            a.path(),
            b.path()
        ),
    )
    .unwrap();
    let (code, out, err) = numio(&["bench", job.to_str().unwrap(), "--numa", "none", "--json"]);
    assert_eq!(code, 0, "jobs that differ run together: {err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let features: Vec<&str> = j["environment"]["uring_features"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(features.contains(&"SQPOLL"), "job a: {features:?}");
    // Job b keeps the default `auto` ring: the mode its task-run trial kept.
    let b_mode = j["targets"][1]["workers"][0]["taskrun_trial"]["chosen"]
        .as_str()
        .unwrap_or("defer_taskrun")
        .to_ascii_uppercase();
    let b_mode = b_mode.as_str();
    assert!(features.contains(&b_mode), "job b ({b_mode}): {features:?}");
    assert!(
        j["targets"][0]["workers"][0]["taskrun_trial"].is_null(),
        "job a (SQPOLL) has no trial"
    );
    assert!(features.contains(&"fixed buffers"), "job b: {features:?}");
    assert!(
        !features.contains(&"IOPOLL"),
        "no hipri, no IOPOLL (as fio)"
    );
    if temp_dir_io_poll() == Some(false) {
        let text = std::fs::read_to_string(&job).unwrap() + "hipri=1\n";
        std::fs::write(&job, text).unwrap();
        let (code, _, err) = numio(&["bench", job.to_str().unwrap(), "--numa", "none"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(b.path()) && err.contains("hipri=1") && err.contains("no poll queues"),
            "the job with hipri is named: {err}"
        );
    }
    let _ = std::fs::remove_file(&job);
}

//! The guard's promise on in-memory controllers: records before changes,
//! all-or-none, restore on every way out, first record wins.

use std::sync::atomic::AtomicBool;

use nvme_spec::Status;

use crate::error::TuneError;
use crate::guard::CoalesceGuard;
use crate::journal::Journal;
use crate::memory::{controller, MemoryAccess, MemoryController};
use crate::restore::{restore_recorded, RestoreError};
use crate::setting::{setting, OFF};
use crate::target::Controller;

const SET: u32 = 0x0109;

/// A journal in a directory of its own, removed when the test ends (it
/// is declared before the guard, so it drops after it).
struct TestJournal {
    journal: Journal,
    dir: std::path::PathBuf,
}

impl std::ops::Deref for TestJournal {
    type Target = Journal;
    fn deref(&self) -> &Journal {
        &self.journal
    }
}

impl Drop for TestJournal {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn journal(tag: &str) -> TestJournal {
    let dir = std::env::temp_dir().join(format!("tune-guard-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    TestJournal {
        journal: Journal::at(dir.clone()),
        dir,
    }
}

/// `n` changeable controllers nvme0.. with value `raw`.
fn machine(n: usize, raw: u32) -> (Vec<Controller>, Vec<MemoryController>, MemoryAccess) {
    let mut access = MemoryAccess::default();
    let (mut ctrls, mut devs) = (Vec::new(), Vec::new());
    for i in 0..n {
        let name = format!("nvme{i}");
        let dev = MemoryController::new(raw, 2);
        access = access.with(&name, dev.clone());
        ctrls.push(controller(&name, 2));
        devs.push(dev);
    }
    (ctrls, devs, access)
}

fn values(devs: &[MemoryController]) -> Vec<u32> {
    devs.iter().map(MemoryController::coalescing).collect()
}

fn v(thr: u8, time_us: u32) -> nvme_spec::features::IrqCoalescing {
    setting(thr, time_us).unwrap()
}

#[test]
fn originals_are_recorded_before_anything_changes_and_restore_removes_them() {
    let j = journal("basic");
    let (ctrls, devs, access) = machine(2, 0);
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
    let recs = j.records().unwrap();
    assert_eq!(recs.len(), 2, "recorded at begin");
    assert!(devs.iter().all(|d| d.sets().is_empty()), "nothing set yet");
    assert_eq!(recs[0].original_raw, 0);
    assert_eq!(recs[0].serial, "SN-nvme0");
    g.apply(v(9, 100)).unwrap();
    assert_eq!(values(&devs), [SET, SET]);
    assert_eq!(g.read_back().unwrap(), [SET, SET]);
    g.apply(v(3, 100)).unwrap();
    g.restore().unwrap();
    assert_eq!(values(&devs), [0, 0]);
    assert!(!j.path().exists(), "restored: no state file");
}

#[test]
fn one_refusal_puts_back_the_others_and_names_the_controller_and_status() {
    let j = journal("refuse");
    let (mut ctrls, mut devs, mut access) = machine(2, 0x0003);
    let stock = MemoryController::new(0, 2).refuse(Status::FEATURE_NOT_CHANGEABLE);
    access = access.with("nvme2", stock.clone());
    ctrls.push(controller("nvme2", 2));
    devs.push(stock);
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
    let e = g.apply(v(9, 100)).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with("nvme2 refused Set Features 0x08 (interrupt coalescing) = 0x0109: feature not changeable"), "{text}");
    assert!(
        text.ends_with("put back as they were: nvme0, nvme1"),
        "{text}"
    );
    assert_eq!(e.nvme_status(), Some(Status::FEATURE_NOT_CHANGEABLE));
    assert_eq!(values(&devs), [0x0003, 0x0003, 0]);
    assert_eq!(devs[0].sets(), [SET, 0x0003]);
    drop(g);
    assert_eq!(values(&devs), [0x0003, 0x0003, 0]);
    assert!(!j.path().exists());
}

#[test]
fn a_refusal_of_the_first_changes_nothing() {
    let j = journal("first");
    let (ctrls, devs, access) = machine(2, 0);
    devs[0].on_set(|_| {});
    let access = access.with(
        "nvme0",
        MemoryController::new(0, 1).refuse(Status::INVALID_FIELD),
    );
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
    let text = g.apply(v(1, 100)).unwrap_err().to_string();
    assert!(
        text.contains("nvme0 refused") && text.contains("invalid field in command"),
        "{text}"
    );
    assert!(text.ends_with("no other controller was changed"), "{text}");
    assert!(devs[1].sets().is_empty(), "nvme1 never tried");
}

#[test]
fn drop_restores_a_guard_that_was_never_closed() {
    let j = journal("drop");
    let (ctrls, devs, access) = machine(3, 0x0002);
    {
        let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
        g.apply(OFF).unwrap();
        assert_eq!(values(&devs), [0, 0, 0]);
    }
    assert_eq!(values(&devs), [2, 2, 2]);
    assert!(!j.path().exists());
}

#[test]
fn the_restorer_puts_back_from_another_thread_and_closes_the_guard() {
    let j = journal("restorer");
    let (ctrls, devs, access) = machine(2, 0);
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
    g.apply(v(9, 100)).unwrap();
    let r = g.restorer();
    std::thread::spawn(move || r.restore().unwrap())
        .join()
        .unwrap();
    assert_eq!(values(&devs), [0, 0]);
    assert!(matches!(g.apply(v(9, 100)), Err(TuneError::Closed)));
    drop(g);
    assert_eq!(devs[0].sets(), [SET, 0], "nothing after the restorer");
    // The lock went with the close: another guard can begin.
    CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
}

#[test]
fn a_signal_in_the_middle_of_a_change_puts_back_what_changed() {
    static STOP: AtomicBool = AtomicBool::new(false);
    let j = journal("signal");
    let (ctrls, devs, access) = machine(3, 0);
    // The signal arrives while nvme1 is being set.
    devs[1].on_set(|_| STOP.store(true, std::sync::atomic::Ordering::Relaxed));
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
    g.watch(&STOP);
    let e = g.apply(v(9, 100)).unwrap_err().to_string();
    assert!(e.starts_with("interrupted while changing nvme2"), "{e}");
    assert!(e.ends_with("put back as they were: nvme0, nvme1"), "{e}");
    assert_eq!(values(&devs), [0, 0, 0]);
    assert!(devs[2].sets().is_empty(), "nvme2 never set");
}

#[test]
fn set_keeps_its_record_and_the_first_record_wins_across_runs() {
    let j = journal("keep");
    let (ctrls, devs, access) = machine(2, 0);
    // `numio coalesce set`: the value stays, the record too.
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "numio coalesce set").unwrap();
    g.apply(v(9, 100)).unwrap();
    let kept = g.keep().unwrap();
    assert_eq!(kept[0].original_raw, 0);
    assert_eq!(kept[0].value_raw, Some(SET));
    assert_eq!(values(&devs), [SET, SET]);
    // A later run (a sweep) starts from the set value and puts it back;
    // the record of the true original stays.
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "numio coalesce sweep").unwrap();
    assert_eq!(g.before(), [SET, SET]);
    g.apply(v(3, 200)).unwrap();
    g.restore().unwrap();
    assert_eq!(values(&devs), [SET, SET]);
    let recs = j.records().unwrap();
    assert_eq!(recs.len(), 2);
    assert!(recs
        .iter()
        .all(|r| r.original_raw == 0 && r.command == "numio coalesce set"));
}

#[test]
fn keep_drops_the_record_of_a_controller_back_at_its_original() {
    let j = journal("unchanged");
    let (ctrls, _devs, access) = machine(1, 0);
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "numio coalesce off").unwrap();
    g.apply(OFF).unwrap();
    g.keep().unwrap();
    assert!(
        !j.path().exists(),
        "off on an off controller leaves nothing to restore"
    );
}

#[test]
fn persist_drops_every_record_and_says_what_the_original_was() {
    let j = journal("persist");
    let (ctrls, devs, access) = machine(2, 0x0001);
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "numio coalesce set").unwrap();
    g.apply(v(9, 100)).unwrap();
    g.keep().unwrap();
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "numio coalesce set --persist").unwrap();
    g.apply(v(5, 100)).unwrap();
    let kept = g.persist().unwrap();
    assert_eq!(kept[1].original_raw, 0x0001, "the first record's original");
    assert_eq!(values(&devs), [0x0105, 0x0105]);
    assert!(!j.path().exists());
}

#[test]
fn a_second_guard_is_refused_while_one_runs() {
    let j = journal("busy");
    let (ctrls, _devs, access) = machine(1, 0);
    let _g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
    let e = CoalesceGuard::begin(&ctrls, &access, &j, "test")
        .err()
        .expect("busy");
    assert!(matches!(e, TuneError::Busy { .. }), "{e}");
}

#[test]
fn begin_without_permission_leaves_no_record() {
    let j = journal("denied");
    let (ctrls, devs, access) = machine(2, 0);
    devs[1].deny();
    let e = CoalesceGuard::begin(&ctrls, &access, &j, "test")
        .err()
        .expect("denied");
    let text = e.to_string();
    assert!(
        text.contains("/dev/nvme1") && text.contains("run as root"),
        "{text}"
    );
    assert!(!j.path().exists());
    assert!(
        CoalesceGuard::begin(&[], &access, &j, "t").is_err(),
        "no targets"
    );
}

#[test]
fn after_a_crash_restore_finds_each_controller_by_address_and_serial() {
    let j = journal("crash");
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/sysfs/vm-two-socket");
    let topo = topology::Topology::discover(&root).unwrap();
    let ctrls: Vec<Controller> = topo.controllers[..2]
        .iter()
        .map(Controller::from_topology)
        .collect();
    let devs = [
        MemoryController::new(0, 6),
        MemoryController::new(0x0001, 6),
    ];
    let mut access = MemoryAccess::default();
    for (c, d) in ctrls.iter().zip(&devs) {
        access = access.with(&c.name, d.clone());
    }
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "numio coalesce sweep").unwrap();
    g.apply(v(9, 100)).unwrap();
    // As after kill -9: the values stay changed, the records stay.
    g.keep().unwrap();
    devs[1].vanish();
    let report = restore_recorded(&j, &topo, &access).unwrap();
    assert_eq!(report.restored.len(), 1);
    assert_eq!(report.failed.len(), 1);
    let why = &report.failed[0].1;
    assert!(
        matches!(why, RestoreError::Admin(TuneError::Gone { name, .. }) if *name == ctrls[1].name),
        "{why:?}"
    );
    assert!(why.to_string().contains("vanished"), "{why}");
    // Not in the topology at all: the record names what was looked for.
    let mut without = topo.clone();
    without.controllers.retain(|c| c.name != ctrls[1].name);
    let report = restore_recorded(&j, &without, &access).unwrap();
    match &report.failed[..] {
        [(_, RestoreError::NoController { address, serial })] => {
            assert_eq!((address, serial), (&ctrls[1].address, &ctrls[1].serial));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(devs[0].coalescing(), 0);
    assert_eq!(
        j.records().unwrap().len(),
        1,
        "the vanished one's record stays"
    );
    devs[1].reappear();
    let report = restore_recorded(&j, &topo, &access).unwrap();
    assert_eq!(report.restored[0].name_now, ctrls[1].name);
    assert_eq!(devs[1].coalescing(), 0x0001);
    assert!(!j.path().exists());
}

#[test]
fn a_failed_restore_keeps_the_record_and_says_how_to_retry() {
    let j = journal("norestore");
    let (ctrls, devs, access) = machine(2, 0);
    let mut g = CoalesceGuard::begin(&ctrls, &access, &j, "test").unwrap();
    g.apply(v(9, 100)).unwrap();
    devs[1].vanish();
    let e = g.restore().unwrap_err().to_string();
    assert!(
        e.contains("could not put back nvme1") && e.contains("numio coalesce restore"),
        "{e}"
    );
    assert_eq!(values(&devs)[0], 0);
    let recs = j.records().unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].name, "nvme1");
}

//! Fuzzes the target's connection state machine (framing, ICReq, Connect,
//! command parsing, R2T flow) with arbitrary byte streams split at arbitrary
//! points. Invariants: no panic; once closing, the connection stays closed;
//! release always returns the target to no controllers.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use nvmf::target::queue::{Connection, Phase};
use nvmf::target::subsystem::Target;

fn target() -> &'static Arc<Target> {
    static T: OnceLock<Arc<Target>> = OnceLock::new();
    T.get_or_init(|| {
        let cfg = nvmf::TargetConfig::from_toml(
            r#"
            [[subsystem]]
            nqn = "nqn.2026-01.io.numio:fuzz"
            allow_any_host = true
            [[subsystem.namespace]]
            backing = "mem:1M"
            "#,
            "fuzz",
        )
        .expect("fuzz config");
        Target::new(&cfg).expect("fuzz target")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let mut conn = Connection::new(target().clone());
    let mut closed = false;
    for chunk in rest.chunks(split as usize + 1) {
        conn.on_bytes(chunk);
        let _ = conn.take_tx();
        if closed {
            assert_eq!(conn.phase(), Phase::Closing);
        }
        closed = conn.phase() == Phase::Closing;
    }
    conn.tick(std::time::Instant::now());
    conn.release();
    assert_eq!(target().controller_count(), 0);
});

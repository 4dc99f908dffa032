//! `numio serve --config` on SIGHUP reads the file off the thread that
//! answers SIGTERM, regular files only and at most 1 MiB: a config swapped
//! for `/dev/zero` or a FIFO is refused by name, and SIGTERM still stops
//! serve. Every wait is for a line, never a clock.

mod common;

use common::serve::Serve;

const TOML: &str = "listen = [\"127.0.0.1:0\"]\ndiscovery_port = 0\n[[subsystem]]\n\
                    nqn = \"nqn.2026-01.io.numio:config-read\"\nallow_any_host = true\n\
                    [[subsystem.namespace]]\nbacking = \"mem:16M\"\n";

// Regression (issue 38): SIGHUP read --config on the thread that handles
// SIGTERM: a FIFO there made serve ignore SIGTERM, /dev/zero read until
// memory failed.
#[test]
fn a_config_swapped_for_dev_zero_or_a_fifo_is_refused_and_sigterm_still_stops() {
    let cfg = common::Temp::new("serve-config-read.toml", 0);
    std::fs::write(cfg.path(), TOML).unwrap();
    let s = Serve::start(&["--config", cfg.path(), "--cpus", "0"]);
    s.line("ready");

    std::fs::remove_file(cfg.path()).unwrap();
    std::os::unix::fs::symlink("/dev/zero", cfg.path()).unwrap();
    s.signal(libc::SIGHUP);
    let said = s.line("SIGHUP:");
    assert!(
        said.contains(&format!("reading --config {}", cfg.path()))
            && said.contains("not a regular file (a character device)")
            && said.contains("unchanged"),
        "{said}"
    );

    std::fs::remove_file(cfg.path()).unwrap();
    let c = std::ffi::CString::new(cfg.path()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    s.signal(libc::SIGHUP);
    let said = s.line("SIGHUP:");
    assert!(said.contains("not a regular file (a FIFO)"), "{said}");

    s.signal(libc::SIGTERM);
    s.line("stopped; every namespace flushed");
}

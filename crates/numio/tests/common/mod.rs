//! Shared helpers of the binary's end-to-end tests: running numio and temp
//! files that clean up after themselves.
#![allow(dead_code)]

use std::process::Command;

pub mod keys;
pub mod lines;
pub mod running;
pub mod serve;
pub mod sshlab;

/// Runs the numio binary with `args`; returns exit code, stdout, stderr.
pub fn numio(args: &[&str]) -> (i32, String, String) {
    numio_env(&[], args)
}

/// [`numio`] with these environment variables set.
pub fn numio_env(env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_numio"))
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("numio runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A temp file removed on drop; `tag` keeps concurrent tests apart.
pub struct Temp(pub std::path::PathBuf);

impl Temp {
    fn at(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("numio-test-{tag}-{}", std::process::id()))
    }
    /// A sparse file of `len` bytes.
    pub fn new(tag: &str, len: u64) -> Temp {
        let p = Self::at(tag);
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(len).unwrap();
        Temp(p)
    }
    /// A file of `len` bytes, every one `byte` (allocated, not sparse).
    pub fn filled(tag: &str, len: u64, byte: u8) -> Temp {
        let p = Self::at(tag);
        std::fs::write(&p, vec![byte; len as usize]).unwrap();
        Temp(p)
    }
    /// The path as a string.
    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        // The lock numio keeps beside a verify state file (its path with
        // the extension "lock", session::verify_state).
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}

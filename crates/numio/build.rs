//! Puts the git commit numio is built from into `numio --version`:
//! `NUMIO_VERSION` is "0.1.0 (commit 1a2b3c4d5e6f)" (the HEAD commit, not
//! whether the work tree differs from it), or "0.1.0 (commit unknown)" outside a
//! git checkout (a source tarball, `cargo install` from a registry copy,
//! no `git` on PATH). `NUMIO_GIT_COMMIT` in the environment overrides what
//! git says (packagers building from an exported tree).

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Rebuilds when HEAD moves or the branch it names gets a new commit.
fn watch(dir: &Path) {
    let mut paths = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        paths.push(branch);
    }
    for p in paths {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", &p]) {
            let path = dir.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}

fn commit(dir: &Path) -> Option<String> {
    git(dir, &["rev-parse", "--git-dir"])?;
    watch(dir);
    // Only numio's own repository: a tarball unpacked inside some other
    // checkout must not take that checkout's commit.
    git(dir, &["ls-files", "--full-name", "build.rs"])?;
    git(dir, &["rev-parse", "--short=12", "HEAD"])
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=NUMIO_GIT_COMMIT");
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).to_path_buf();
    let commit = std::env::var("NUMIO_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| commit(&dir))
        .unwrap_or_else(|| "unknown".to_string());
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets it");
    println!("cargo:rustc-env=NUMIO_VERSION={version} (commit {commit})");
}

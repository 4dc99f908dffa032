//! A private directory of key files for a test (DH-HMAC-CHAP secrets, TLS
//! PSKs), removed on drop.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// The directory; `tag` keeps concurrent tests apart.
pub struct KeyDir(pub PathBuf);

impl KeyDir {
    pub fn new(tag: &str) -> KeyDir {
        let d = std::env::temp_dir().join(format!("numio-keys-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        KeyDir(d)
    }

    /// Writes `text` and a newline to file `name` with `mode`; its path.
    pub fn file(&self, name: &str, text: &str, mode: u32) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, format!("{text}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p.display().to_string()
    }
}

impl Drop for KeyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

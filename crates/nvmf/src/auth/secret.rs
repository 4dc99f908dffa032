//! DH-HMAC-CHAP secrets in the `DHHC-1:` form nvme-cli and the kernel use:
//! `DHHC-1:XX:<base64 of the key and its CRC-32, little-endian>:`, where
//! `XX` is `00` (use the key as it is) or the HashID (`01` SHA-256, `02`
//! SHA-384, `03` SHA-512) that transforms it for an NQN first:
//! `HMAC(key, NQN || "NVMe-over-Fabrics")`. Keys are 32, 48 or 64 bytes.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine;
use zeroize::Zeroizing;

use super::HashFn;

/// A secret that does not parse, or a file that cannot hold one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// Not of the form `DHHC-1:XX:BASE64:`.
    #[error("not a DH-HMAC-CHAP secret ({0}): expected DHHC-1:00|01|02|03:BASE64: as `nvme gen-dhchap-key` prints")]
    Format(String),
    /// The CRC-32 after the key does not match it.
    #[error("the secret's CRC-32 does not match its key (a character was changed or lost)")]
    Crc,
    /// A file that cannot be read, or that others may read.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What is wrong and the fix.
        reason: String,
    },
}

/// A host or controller secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    key: Zeroizing<Vec<u8>>,
    transform: Option<HashFn>,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Secret({} bytes, transform {})",
            self.key.len(),
            self.transform.map_or("none", HashFn::name)
        )
    }
}

impl Secret {
    /// Parses `DHHC-1:XX:BASE64:` (the last colon may be missing;
    /// surrounding white space is ignored).
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let t = text.trim();
        let rest = t
            .strip_prefix("DHHC-1:")
            .ok_or_else(|| SecretError::Format("it does not start with DHHC-1:".into()))?;
        let (xx, b64) = rest
            .split_once(':')
            .ok_or_else(|| SecretError::Format("no colon after the hash id".into()))?;
        let transform = match xx {
            "00" => None,
            "01" | "02" | "03" => HashFn::from_id(xx.as_bytes()[1] - b'0'),
            _ => {
                return Err(SecretError::Format(format!(
                    "hash id {xx:?} is not 00, 01, 02 or 03"
                )))
            }
        };
        let b64 = b64.strip_suffix(':').unwrap_or(b64);
        let raw = Zeroizing::new(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| SecretError::Format(format!("its base64 does not decode: {e}")))?,
        );
        if ![36, 52, 68].contains(&raw.len()) {
            return Err(SecretError::Format(format!(
                "it holds {} bytes; a key is 32, 48 or 64 bytes and its 4-byte CRC",
                raw.len()
            )));
        }
        let (key, crc) = raw.split_at(raw.len() - 4);
        if crc32fast::hash(key).to_le_bytes() != crc {
            return Err(SecretError::Crc);
        }
        Ok(Self {
            key: Zeroizing::new(key.to_vec()),
            transform,
        })
    }

    /// Reads a secret from a file that only its owner may read (as ssh
    /// insists for private keys).
    pub fn from_file(path: &Path) -> Result<Self, SecretError> {
        let err = |reason: String| SecretError::File {
            path: path.display().to_string(),
            reason,
        };
        let text = read_private(path).map_err(|e| err(e.to_string()))?;
        Self::parse(&text).map_err(|e| err(e.to_string()))
    }

    /// A new random secret of `len` bytes (32, 48 or 64).
    pub fn generate(len: usize, transform: Option<HashFn>) -> Self {
        assert!([32, 48, 64].contains(&len), "key length {len}");
        Self {
            key: super::random_bytes(len),
            transform,
        }
    }

    /// Key length in bytes.
    pub fn len(&self) -> usize {
        self.key.len()
    }

    /// Always false: a secret has 32 bytes or more.
    pub fn is_empty(&self) -> bool {
        self.key.is_empty()
    }

    /// The hash that transforms it (`None`: used as it is).
    pub fn transform(&self) -> Option<HashFn> {
        self.transform
    }

    /// The secret as `DHHC-1:XX:BASE64:`.
    pub fn encode(&self) -> Zeroizing<String> {
        let mut raw = Zeroizing::new(self.key.to_vec());
        raw.extend_from_slice(&crc32fast::hash(&self.key).to_le_bytes());
        Zeroizing::new(format!(
            "DHHC-1:{:02}:{}:",
            self.transform.map_or(0, HashFn::id),
            base64::engine::general_purpose::STANDARD.encode(&*raw)
        ))
    }

    /// The key an HMAC response is keyed with for `nqn`.
    pub fn transformed(&self, nqn: &str) -> Zeroizing<Vec<u8>> {
        match self.transform {
            None => self.key.clone(),
            Some(h) => h.hmac(&self.key, &[nqn.as_bytes(), b"NVMe-over-Fabrics"]),
        }
    }
}

/// A private file (a secret, a key) that cannot be read, or that others
/// may read or change.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PrivateFileError {
    /// Its metadata or text cannot be read.
    #[error("cannot read it: {source}")]
    Read {
        /// The OS error.
        source: std::io::Error,
    },
    /// Its mode lets others read or change it.
    #[error("others may read or change this secret (mode {mode:o}): chmod 600 {}", path.display())]
    Exposed {
        /// The file.
        path: std::path::PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// The text of a file that only its owner may read or change (as ssh
/// insists for private keys); the error says what is wrong and the fix.
pub(crate) fn read_private(path: &Path) -> Result<Zeroizing<String>, PrivateFileError> {
    let read = |source| PrivateFileError::Read { source };
    let meta = std::fs::metadata(path).map_err(read)?;
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(PrivateFileError::Exposed {
            path: path.to_path_buf(),
            mode: mode & 0o777,
        });
    }
    std::fs::read_to_string(path)
        .map(Zeroizing::new)
        .map_err(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_kind() {
        for (len, t) in [
            (32, None),
            (32, Some(HashFn::Sha256)),
            (48, Some(HashFn::Sha384)),
            (64, Some(HashFn::Sha512)),
        ] {
            let s = Secret::generate(len, t);
            let text = s.encode();
            assert!(text.starts_with(&format!("DHHC-1:{:02}:", t.map_or(0, |h| h.id()))));
            assert!(text.ends_with(':'));
            assert_eq!(Secret::parse(&text).unwrap(), s);
            assert_eq!(Secret::parse(&text[..text.len() - 1]).unwrap(), s);
            assert_eq!(
                s.transformed("nqn.x").len(),
                t.map_or(len, |h| h.digest_len())
            );
        }
    }

    #[test]
    fn secrets_nvme_cli_generated_parse() {
        // `nvme gen-dhchap-key -m 1 -n nqn.test` and `-m 0 -l 48` (nvme-cli 2.3).
        let a =
            Secret::parse("DHHC-1:01:UluVrMBv0Ud1uJRflitWQLE3EBFI8cRNZWFD4wiqlU9A63AM:").unwrap();
        assert_eq!((a.len(), a.transform()), (32, Some(HashFn::Sha256)));
        let b = Secret::parse(
            "DHHC-1:00:pWJ8gJI2yc2icW8OJ97a1oUWDC1pYwid7iqO+VJCwjwdGmE9CgAgPmEexID0EbvqgLkpGg==:",
        )
        .unwrap();
        assert_eq!((b.len(), b.transform()), (48, None));
    }

    #[test]
    fn the_transform_is_hmac_of_nqn_and_label() {
        let s = Secret::parse(&Secret::generate(32, Some(HashFn::Sha256)).encode()).unwrap();
        let want = HashFn::Sha256.hmac(&s.key, &[b"nqn.h", b"NVMe-over-Fabrics"]);
        assert_eq!(*s.transformed("nqn.h"), *want);
        let plain = Secret::generate(48, None);
        assert_eq!(*plain.transformed("nqn.h"), *plain.key);
    }

    #[test]
    fn bad_secrets_say_why() {
        let good = Secret::generate(32, Some(HashFn::Sha256)).encode();
        assert!(matches!(
            Secret::parse("hello"),
            Err(SecretError::Format(_))
        ));
        assert!(Secret::parse(&good.replace(":01:", ":04:"))
            .unwrap_err()
            .to_string()
            .contains("04"));
        // One base64 character changed: the CRC catches it.
        let mut b = good.to_string().into_bytes();
        let i = 12;
        b[i] = if b[i] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            Secret::parse(std::str::from_utf8(&b).unwrap()),
            Err(SecretError::Crc)
        );
        let short = format!(
            "DHHC-1:00:{}:",
            base64::engine::general_purpose::STANDARD.encode([0u8; 20])
        );
        assert!(Secret::parse(&short)
            .unwrap_err()
            .to_string()
            .contains("20 bytes"));
        assert!(!format!("{:?}", Secret::parse(&good).unwrap()).contains(&good[10..20]));
    }

    #[test]
    fn files_others_can_read_are_refused() {
        let dir = std::env::temp_dir().join(format!("numio-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("key");
        let s = Secret::generate(32, None);
        std::fs::write(&p, format!("{}\n", &*s.encode())).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Secret::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        // The variant carries the file and its mode.
        match read_private(&p) {
            Err(PrivateFileError::Exposed { path, mode }) => {
                assert_eq!((path, mode), (p.clone(), 0o644));
            }
            other => panic!("{other:?}"),
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Secret::from_file(&p).unwrap(), s);
        let missing = Secret::from_file(&dir.join("nope"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("nope") && missing.contains("cannot read"),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

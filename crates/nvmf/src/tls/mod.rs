//! NVMe/TCP over TLS 1.3 with a pre-shared key (TP 8011, the NVMe/TCP
//! transport specification §3.6): the keys, the PSK identities and the
//! derivations both ends compute; the handshakes themselves are OpenSSL's
//! ([`ossl`]: libssl 3, opened at run time when TLS is first asked for).
//!
//! A host and a controller share a *configured PSK*, given to each in the
//! PSK interchange format `NVMeTLSkey-1:HH:<base64 of the key and its
//! CRC-32>:` (what `nvme gen-tls-key` prints; HH `00` uses the key as it
//! is, `01`/`02` transform it with SHA-256/384). From it each side derives,
//! with HKDF (RFC 5869) and TLS 1.3's HKDF-Expand-Label (RFC 8446):
//! ```text
//! retained PSK = HKDF-Expand-Label(HKDF-Extract(0, configured), "HostNQN", NQNh, L)
//! TLS PSK      = HKDF-Expand-Label(HKDF-Extract(0, retained), "nvme-tls-psk", context, L)
//! ```
//! where the context is the whole identity for a version 0 identity
//! (`NVMe0Rhh NQNh NQNs`) and `hh digest` for version 1 (`NVMe1Rhh NQNh
//! NQNs digest`, digest = base64 HMAC(retained, NQNh " " NQNs " "
//! "NVMe-over-Fabrics")). `hh` names the hash of the TLS cipher suite: `01`
//! TLS_AES_128_GCM_SHA256, `02` TLS_AES_256_GCM_SHA384. This is what
//! libnvme computes when `nvme connect --tls` inserts a key into the
//! kernel's `.nvme` keyring, and the Linux host (6.12) looks version 1
//! identities up first. HKDF, HMAC and SHA-2 are RustCrypto's.

pub mod ossl;

use std::fmt;
use std::path::Path;

use base64::Engine;
use hkdf::Hkdf;
use sha2::{Sha256, Sha384};
use zeroize::Zeroizing;

use crate::auth::HashFn;

/// A key or identity that does not parse, or a file that cannot hold one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsKeyError {
    /// Not of the form `NVMeTLSkey-1:HH:BASE64:`.
    #[error("not an NVMe TLS PSK ({0}): expected NVMeTLSkey-1:00|01|02:BASE64: as `nvme gen-tls-key` prints")]
    Format(String),
    /// The CRC-32 after the key does not match it.
    #[error("the key's CRC-32 does not match it (a character was changed or lost)")]
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

/// A PSK identity a host sent that does not parse ([`Identity::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// No `NVMe` header of 8 bytes.
    #[error("{text:?} is not an NVMe PSK identity (NVMe1R01 HOSTNQN SUBNQN DIGEST)")]
    NotIdentity {
        /// The identity as sent.
        text: String,
    },
    /// A version other than 0 or 1.
    #[error("identity version {version} is not 0 or 1")]
    Version {
        /// The version character.
        version: String,
    },
    /// A generated PSK (`G`), which numio does not derive.
    #[error(
        "a generated PSK (secure concatenation with DH-HMAC-CHAP) is not supported: use a configured PSK"
    )]
    Generated,
    /// A PSK type other than `R` or `G`.
    #[error("PSK type {kind:?} is not R (retained)")]
    PskType {
        /// The type character.
        kind: String,
    },
    /// A hash number that names no [`PskHash`].
    #[error("hash {hash:?} is not {}", crate::one_of(PskHash::ALL.map(|h| format!("{:02} ({})", h.id(), h.name()))))]
    Hash {
        /// The two characters.
        hash: String,
    },
    /// The header not followed by a space.
    #[error("no space after the identity's header")]
    NoSpace,
    /// Not the fields its version holds.
    #[error(
        "a version {version} identity holds the host NQN, the subsystem NQN{}, separated by spaces",
        if *version == 1 { " and the PSK digest" } else { "" }
    )]
    Fields {
        /// The identity's version.
        version: u8,
    },
    /// An NQN field that is empty.
    #[error("an empty NQN in the identity")]
    EmptyNqn,
}

/// The hash of a PSK's cipher suite (the identity's `hh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PskHash {
    /// `01`: TLS_AES_128_GCM_SHA256, 32-byte PSKs.
    Sha256,
    /// `02`: TLS_AES_256_GCM_SHA384, 48-byte PSKs.
    Sha384,
}

impl PskHash {
    /// Every hash, by number.
    pub const ALL: [PskHash; 2] = [PskHash::Sha256, PskHash::Sha384];

    /// Its name: `SHA-256`, `SHA-384`.
    pub fn name(self) -> &'static str {
        match self {
            PskHash::Sha256 => "SHA-256",
            PskHash::Sha384 => "SHA-384",
        }
    }

    /// The identity's number for it.
    pub fn id(self) -> u8 {
        match self {
            PskHash::Sha256 => 1,
            PskHash::Sha384 => 2,
        }
    }

    fn from_id(id: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.id() == id)
    }

    /// Output length in bytes (the PSK's length).
    pub fn key_len(self) -> usize {
        match self {
            PskHash::Sha256 => 32,
            PskHash::Sha384 => 48,
        }
    }

    /// The TLS 1.3 cipher suite it goes with.
    pub fn cipher_suite(self) -> &'static str {
        match self {
            PskHash::Sha256 => "TLS_AES_128_GCM_SHA256",
            PskHash::Sha384 => "TLS_AES_256_GCM_SHA384",
        }
    }

    fn hash_fn(self) -> HashFn {
        match self {
            PskHash::Sha256 => HashFn::Sha256,
            PskHash::Sha384 => HashFn::Sha384,
        }
    }
}

/// A configured PSK (NVMe/TCP §3.6.1.3: the interchange format).
#[derive(Clone, PartialEq, Eq)]
pub struct ConfiguredPsk {
    key: Zeroizing<Vec<u8>>,
    /// The hash that turns it into a retained PSK (`None`: used as it is).
    transform: Option<PskHash>,
}

impl fmt::Debug for ConfiguredPsk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ConfiguredPsk({} bytes, transform {:02})",
            self.key.len(),
            self.transform.map_or(0, PskHash::id)
        )
    }
}

impl ConfiguredPsk {
    /// Parses `NVMeTLSkey-1:HH:BASE64:` (surrounding white space ignored).
    pub fn parse(text: &str) -> Result<Self, TlsKeyError> {
        let t = text.trim();
        let rest = t
            .strip_prefix("NVMeTLSkey-1:")
            .ok_or_else(|| TlsKeyError::Format("it does not start with NVMeTLSkey-1:".into()))?;
        let (hh, b64) = rest
            .split_once(':')
            .ok_or_else(|| TlsKeyError::Format("no colon after the hash id".into()))?;
        let transform = match hh {
            "00" => None,
            "01" => Some(PskHash::Sha256),
            "02" => Some(PskHash::Sha384),
            _ => {
                return Err(TlsKeyError::Format(format!(
                    "hash id {hh:?} is not 00, 01 or 02"
                )))
            }
        };
        let b64 = b64
            .strip_suffix(':')
            .ok_or_else(|| TlsKeyError::Format("it does not end with a colon".into()))?;
        let raw = Zeroizing::new(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| TlsKeyError::Format(format!("its base64 does not decode: {e}")))?,
        );
        if raw.len() != 36 && raw.len() != 52 {
            return Err(TlsKeyError::Format(format!(
                "it holds {} bytes; a key is 32 or 48 bytes and its 4-byte CRC",
                raw.len()
            )));
        }
        let (key, crc) = raw.split_at(raw.len() - 4);
        if crc32fast::hash(key).to_le_bytes() != crc {
            return Err(TlsKeyError::Crc);
        }
        if let Some(h) = transform {
            if h.key_len() != key.len() {
                return Err(TlsKeyError::Format(format!(
                    "hash id {hh} needs a {}-byte key, it holds {}",
                    h.key_len(),
                    key.len()
                )));
            }
        }
        Ok(Self {
            key: Zeroizing::new(key.to_vec()),
            transform,
        })
    }

    /// Reads a key from a file only its owner may read.
    pub fn from_file(path: &Path) -> Result<Self, TlsKeyError> {
        let err = |reason: String| TlsKeyError::File {
            path: path.display().to_string(),
            reason,
        };
        let text = crate::auth::read_private(path).map_err(|e| err(e.to_string()))?;
        Self::parse(&text).map_err(|e| err(e.to_string()))
    }

    /// A new random key of 32 or 48 bytes, transformed with the hash of
    /// its length.
    pub fn generate(len: usize) -> Self {
        let transform = match len {
            32 => PskHash::Sha256,
            48 => PskHash::Sha384,
            _ => panic!("TLS PSK length {len}"),
        };
        Self {
            key: crate::auth::random_bytes(len),
            transform: Some(transform),
        }
    }

    /// The key as `NVMeTLSkey-1:HH:BASE64:`.
    pub fn encode(&self) -> Zeroizing<String> {
        let mut raw = Zeroizing::new(self.key.to_vec());
        raw.extend_from_slice(&crc32fast::hash(&self.key).to_le_bytes());
        Zeroizing::new(format!(
            "NVMeTLSkey-1:{:02}:{}:",
            self.transform.map_or(0, PskHash::id),
            base64::engine::general_purpose::STANDARD.encode(&*raw)
        ))
    }

    /// The hash of the cipher suite this key is used with: its transform's,
    /// else the one of its length.
    pub fn hash(&self) -> PskHash {
        self.transform.unwrap_or(if self.key.len() == 48 {
            PskHash::Sha384
        } else {
            PskHash::Sha256
        })
    }

    /// The retained PSK for host `hostnqn`.
    pub fn retained(&self, hostnqn: &str) -> Zeroizing<Vec<u8>> {
        match self.transform {
            None => self.key.clone(),
            Some(h) => expand_label(h, &self.key, "HostNQN", hostnqn.as_bytes(), self.key.len()),
        }
    }

    /// The identity and TLS PSK a host presents to subsystem `subnqn`
    /// (identity `version` 0 or 1).
    pub fn for_host(
        &self,
        version: u8,
        hostnqn: &str,
        subnqn: &str,
    ) -> (Identity, Zeroizing<Vec<u8>>) {
        let hash = self.hash();
        let retained = self.retained(hostnqn);
        let digest = (version >= 1).then(|| psk_digest(hash, &retained, hostnqn, subnqn));
        let id = Identity {
            version: version.min(1),
            hash,
            hostnqn: hostnqn.to_string(),
            subnqn: subnqn.to_string(),
            digest,
        };
        let psk = id.tls_psk(&retained);
        (id, psk)
    }

    /// The TLS PSK for an identity a host presented, once it is checked
    /// against this key: `None` when its hash or digest is not this key's
    /// (the host holds another key).
    pub fn psk_for(&self, id: &Identity) -> Option<Zeroizing<Vec<u8>>> {
        if id.hash != self.hash() {
            return None;
        }
        let retained = self.retained(&id.hostnqn);
        if let Some(d) = &id.digest {
            let want = psk_digest(id.hash, &retained, &id.hostnqn, &id.subnqn);
            if !crate::auth::responses_equal(want.as_bytes(), d.as_bytes()) {
                return None;
            }
        }
        Some(id.tls_psk(&retained))
    }
}

/// A PSK identity: `NVMe<v>R<hh> <hostnqn> <subnqn>[ <digest>]` (`R`: a
/// retained PSK; generated ones, `G`, come from a DH-HMAC-CHAP secure
/// concatenation, which numio does not do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// 0 or 1.
    pub version: u8,
    /// The cipher suite's hash.
    pub hash: PskHash,
    /// The host's NQN.
    pub hostnqn: String,
    /// The subsystem's NQN.
    pub subnqn: String,
    /// Version 1's PSK digest (base64).
    pub digest: Option<String>,
}

impl Identity {
    /// Parses an identity a host sent; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Self, IdentityError> {
        let head = text
            .get(..8)
            .filter(|h| h.starts_with("NVMe"))
            .ok_or_else(|| IdentityError::NotIdentity {
                text: text.to_string(),
            })?;
        let version = match &head[4..5] {
            "0" => 0,
            "1" => 1,
            v => {
                return Err(IdentityError::Version {
                    version: v.to_string(),
                })
            }
        };
        match &head[5..6] {
            "R" => {}
            "G" => return Err(IdentityError::Generated),
            t => {
                return Err(IdentityError::PskType {
                    kind: t.to_string(),
                })
            }
        }
        let hash = head[6..8]
            .parse::<u8>()
            .ok()
            .and_then(PskHash::from_id)
            .ok_or_else(|| IdentityError::Hash {
                hash: head[6..8].to_string(),
            })?;
        let rest = text[8..].strip_prefix(' ').ok_or(IdentityError::NoSpace)?;
        let parts: Vec<&str> = rest.split(' ').collect();
        let (hostnqn, subnqn, digest) = match (version, parts.as_slice()) {
            (0, [h, s]) => (h, s, None),
            (1, [h, s, d]) => (h, s, Some(d.to_string())),
            _ => return Err(IdentityError::Fields { version }),
        };
        if hostnqn.is_empty() || subnqn.is_empty() {
            return Err(IdentityError::EmptyNqn);
        }
        Ok(Self {
            version,
            hash,
            hostnqn: hostnqn.to_string(),
            subnqn: subnqn.to_string(),
            digest,
        })
    }

    /// The TLS PSK derived from the retained PSK for this identity.
    fn tls_psk(&self, retained: &[u8]) -> Zeroizing<Vec<u8>> {
        let context = match &self.digest {
            Some(d) if self.version == 1 => format!("{:02} {d}", self.hash.id()),
            _ => self.to_string(),
        };
        expand_label(
            self.hash,
            retained,
            "nvme-tls-psk",
            context.as_bytes(),
            retained.len(),
        )
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NVMe{}R{:02} {} {}",
            self.version,
            self.hash.id(),
            self.hostnqn,
            self.subnqn
        )?;
        match &self.digest {
            Some(d) => write!(f, " {d}"),
            None => Ok(()),
        }
    }
}

/// Version 1's PSK digest: base64 of HMAC(retained, NQNh " " NQNs " "
/// "NVMe-over-Fabrics").
fn psk_digest(hash: PskHash, retained: &[u8], hostnqn: &str, subnqn: &str) -> String {
    let mac = hash.hash_fn().hmac(
        retained,
        &[
            hostnqn.as_bytes(),
            b" ",
            subnqn.as_bytes(),
            b" ",
            b"NVMe-over-Fabrics",
        ],
    );
    base64::engine::general_purpose::STANDARD.encode(&*mac)
}

/// HKDF-Expand-Label(HKDF-Extract(0, ikm), label, context, len) with TLS
/// 1.3's label prefix "tls13 ".
fn expand_label(
    hash: PskHash,
    ikm: &[u8],
    label: &str,
    context: &[u8],
    len: usize,
) -> Zeroizing<Vec<u8>> {
    let label = format!("tls13 {label}");
    let mut info = Vec::with_capacity(4 + label.len() + context.len());
    info.extend_from_slice(&(len as u16).to_be_bytes());
    info.push(label.len() as u8);
    info.extend_from_slice(label.as_bytes());
    info.push(context.len() as u8);
    info.extend_from_slice(context);
    let mut out = Zeroizing::new(vec![0u8; len]);
    let r = match hash {
        PskHash::Sha256 => Hkdf::<Sha256>::new(None, ikm).expand(&info, &mut out),
        PskHash::Sha384 => Hkdf::<Sha384>::new(None, ikm).expand(&info, &mut out),
    };
    r.expect("an output of at most 255 hash lengths");
    out
}

#[cfg(test)]
mod tests;

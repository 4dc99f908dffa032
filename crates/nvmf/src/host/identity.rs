//! Which host numio connects as: the NQN and Host ID a user names, else the
//! ones nvme-cli and the kernel's tools read from `/etc/nvme/hostnqn` and
//! `/etc/nvme/hostid`, so a target that allows `$(cat /etc/nvme/hostnqn)`
//! admits numio's own initiator and `numio connect` alike.

use std::fmt;
use std::path::{Path, PathBuf};

use super::command::HostIdentity;

/// The host NQN used when neither a flag nor `/etc/nvme/hostnqn` names one.
pub const FALLBACK_HOSTNQN: &str =
    "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";
/// The environment variable that moves `/etc` (tests, and hosts that keep
/// nvme-cli's files elsewhere): `$NUMIO_SYSCONFDIR/nvme/hostnqn`.
pub const SYSCONFDIR_VAR: &str = "NUMIO_SYSCONFDIR";

/// Where the host NQN came from, for the report and for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NqnSource {
    /// A command-line flag or a configuration value.
    Given,
    /// nvme-cli's file.
    File(PathBuf),
    /// Neither: [`FALLBACK_HOSTNQN`].
    Fallback,
}

impl fmt::Display for NqnSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NqnSource::Given => f.write_str("--hostnqn"),
            NqnSource::File(p) => write!(f, "{}", p.display()),
            NqnSource::Fallback => f.write_str("numio's default; no /etc/nvme/hostnqn"),
        }
    }
}

/// A host identity and where its parts came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedHost {
    /// Host NQN.
    pub hostnqn: String,
    /// Where [`ResolvedHost::hostnqn`] came from.
    pub nqn_source: NqnSource,
    /// Host ID: given, the UUID of a `…:uuid:UUID` NQN, or `/etc/nvme/hostid`
    /// beside the NQN read from `/etc/nvme/hostnqn`; `None` when nothing
    /// names one (the kernel then makes its own).
    pub hostid: Option<[u8; 16]>,
}

impl ResolvedHost {
    /// The identity an in-process initiator connects with; without a Host
    /// ID, one derived from the NQN (the same NQN always gives the same
    /// ID, so every queue of a controller agrees).
    pub fn identity(&self) -> HostIdentity {
        HostIdentity {
            hostnqn: self.hostnqn.clone(),
            hostid: self.hostid.unwrap_or_else(|| derived_hostid(&self.hostnqn)),
        }
    }

    /// The Host ID in UUID text, as the kernel's `hostid=` takes it.
    pub fn hostid_text(&self) -> Option<String> {
        self.hostid.map(|b| uuid_text(&b))
    }
}

/// A Host ID that is not a UUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadHostId {
    /// What was given.
    pub text: String,
    /// Where it came from (a flag name or a file).
    pub from: String,
}

impl fmt::Display for BadHostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {:?} is not a Host ID; give a UUID such as 5a4c6a35-0d2b-4c7e-9b1e-2f0a3c1d9e88 \
             (`uuidgen` makes one)",
            self.from, self.text
        )
    }
}

impl std::error::Error for BadHostId {}

/// The directory nvme-cli's files live in: `$NUMIO_SYSCONFDIR` else `/etc`.
pub fn sysconfdir() -> PathBuf {
    std::env::var_os(SYSCONFDIR_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc"))
}

/// The host to connect as: `hostnqn` and `hostid` when given, else
/// `ETC/nvme/hostnqn` and `ETC/nvme/hostid`, else [`FALLBACK_HOSTNQN`].
pub fn resolve(
    etc: &Path,
    hostnqn: Option<&str>,
    hostid: Option<&str>,
) -> Result<ResolvedHost, BadHostId> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let nqn_file = etc.join("nvme/hostnqn");
    let (hostnqn, nqn_source) = match hostnqn {
        Some(h) => (h.to_string(), NqnSource::Given),
        None => match read(&nqn_file) {
            Some(h) => (h, NqnSource::File(nqn_file)),
            None => (FALLBACK_HOSTNQN.to_string(), NqnSource::Fallback),
        },
    };
    let hostid = match hostid {
        Some(t) => Some(parse_uuid(t).ok_or_else(|| BadHostId {
            text: t.into(),
            from: "--hostid".into(),
        })?),
        None => match hostnqn
            .rsplit_once(":uuid:")
            .and_then(|(_, u)| parse_uuid(u))
        {
            Some(id) => Some(id),
            None if matches!(nqn_source, NqnSource::File(_)) => {
                let id_file = etc.join("nvme/hostid");
                match read(&id_file) {
                    Some(t) => Some(parse_uuid(&t).ok_or_else(|| BadHostId {
                        text: t,
                        from: id_file.display().to_string(),
                    })?),
                    None => None,
                }
            }
            None => None,
        },
    };
    Ok(ResolvedHost {
        hostnqn,
        nqn_source,
        hostid,
    })
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (any case) as 16 bytes.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let t = text.trim();
    let groups: Vec<&str> = t.split('-').collect();
    if groups.iter().map(|g| g.len()).collect::<Vec<_>>() != [8, 4, 4, 4, 12] {
        return None;
    }
    let hex: String = groups.concat();
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// 16 bytes as UUID text (`5a4c6a35-0d2b-4c7e-9b1e-2f0a3c1d9e88`).
pub fn uuid_text(b: &[u8; 16]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// 16 bytes that depend only on `nqn` (FNV-1a, twice).
fn derived_hostid(nqn: &str) -> [u8; 16] {
    let fnv = |seed: u64| {
        nqn.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let (a, b) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4));
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&a.to_be_bytes());
    out[8..].copy_from_slice(&b.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of its own per call, removed when dropped.
    struct Etc(PathBuf);
    impl Etc {
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Etc {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn etc(files: &[(&str, &str)]) -> Etc {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "numio-identity-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(d.join("nvme")).unwrap();
        for (name, text) in files {
            std::fs::write(d.join("nvme").join(name), text).unwrap();
        }
        Etc(d)
    }

    #[test]
    fn the_nqn_comes_from_the_flag_then_nvme_clis_file_then_the_fallback() {
        let nqn = "nqn.2014-08.org.nvmexpress:uuid:5a4c6a35-0d2b-4c7e-9b1e-2f0a3c1d9e88";
        let d = etc(&[("hostnqn", &format!("{nqn}\n"))]);
        let r = resolve(d.path(), None, None).unwrap();
        assert_eq!(r.hostnqn, nqn);
        assert_eq!(r.nqn_source, NqnSource::File(d.path().join("nvme/hostnqn")));
        assert_eq!(
            r.hostid_text().as_deref(),
            Some("5a4c6a35-0d2b-4c7e-9b1e-2f0a3c1d9e88")
        );
        let r = resolve(d.path(), Some("nqn.2026-11.io.numio:h"), None).unwrap();
        assert_eq!(
            (r.hostnqn.as_str(), r.hostid),
            ("nqn.2026-11.io.numio:h", None)
        );
        assert_eq!(r.nqn_source, NqnSource::Given);
        let empty = etc(&[]);
        let r = resolve(empty.path(), None, None).unwrap();
        assert_eq!(r.hostnqn, FALLBACK_HOSTNQN);
        assert_eq!(r.nqn_source, NqnSource::Fallback);
    }

    #[test]
    fn the_hostid_file_counts_only_beside_the_hostnqn_file() {
        let d = etc(&[
            ("hostnqn", "nqn.2026-11.io.numio:box7"),
            ("hostid", "0A4C6A35-0D2B-4C7E-9B1E-2F0A3C1D9E88\n"),
        ]);
        let r = resolve(d.path(), None, None).unwrap();
        assert_eq!(
            r.hostid_text().as_deref(),
            Some("0a4c6a35-0d2b-4c7e-9b1e-2f0a3c1d9e88")
        );
        let given = resolve(d.path(), Some("nqn.2026-11.io.numio:other"), None).unwrap();
        assert_eq!(given.hostid, None);
        assert_eq!(given.identity().hostid, given.identity().hostid);
        assert_ne!(
            given.identity().hostid,
            resolve(d.path(), Some("nqn.2026-11.io.numio:third"), None)
                .unwrap()
                .identity()
                .hostid
        );
    }

    #[test]
    fn a_hostid_that_is_not_a_uuid_is_refused_naming_where_it_came_from() {
        let e = resolve(Path::new("/nonexistent"), None, Some("42")).unwrap_err();
        assert_eq!(e.from, "--hostid");
        assert!(e.to_string().contains("\"42\" is not a Host ID"), "{e}");
        let d = etc(&[("hostnqn", "nqn.2026-11.io.numio:box7"), ("hostid", "junk")]);
        let e = resolve(d.path(), None, None).unwrap_err();
        assert!(e.from.ends_with("nvme/hostid"), "{e}");
    }
}

//! The Linux NVMe over Fabrics host: connecting a controller (what
//! `nvme connect` does: one options line written to `/dev/nvme-fabrics`,
//! the kernel's `instance=N,cntlid=M` read back) and deleting one (what
//! `nvme disconnect` does: `1` into the controller's `delete_controller`).

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::Path;

/// The kernel's fabrics control file.
pub const FABRICS_DEV: &str = "/dev/nvme-fabrics";

/// What the kernel made of a connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connected {
    /// The controller's instance: it is `nvme{instance}`.
    pub instance: u32,
    /// Its controller id in the subsystem.
    pub cntlid: u32,
}

/// Why a connect's options line cannot be written: the kernel splits the
/// line at commas, so no value may hold one (nor a newline), and none may
/// be empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// A plain value (`nqn`, `traddr`, `hostnqn`, ...) the kernel cannot take.
    #[error("{key} {value:?} is empty or holds ',' or a newline: the kernel cannot take it")]
    BadValue {
        /// The option.
        key: &'static str,
        /// Its value.
        value: String,
    },
    /// A DH-HMAC-CHAP secret the kernel cannot take (the secret itself is
    /// kept out of the error).
    #[error("the {key} is empty or holds ',' or a newline: give a DHHC-1 secret as `nvme gen-dhchap-key` prints it")]
    BadSecret {
        /// The option (`dhchap_secret`, `dhchap_ctrl_secret`).
        key: &'static str,
    },
}

/// One NVMe/TCP (or NVMe/RDMA) connect's options, as `/dev/nvme-fabrics`
/// takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpConnect {
    /// The transport: `tcp`, or `rdma` (the kernel's nvme-rdma).
    pub transport: &'static str,
    /// Subsystem NQN.
    pub subnqn: String,
    /// Target address (IPv4 or IPv6, no brackets).
    pub traddr: String,
    /// Target port.
    pub trsvcid: u16,
    /// This host's NQN (`None`: the kernel's default).
    pub hostnqn: Option<String>,
    /// This host's id, a UUID (`None`: the kernel's default). Newer
    /// kernels refuse one id under two host NQNs, so a host NQN comes with
    /// its own id.
    pub hostid: Option<String>,
    /// This host's DH-HMAC-CHAP secret (`DHHC-1:…`), for a subsystem that
    /// authenticates its hosts.
    pub dhchap_secret: Option<String>,
    /// The controller's secret, for bidirectional authentication.
    pub dhchap_ctrl_secret: Option<String>,
    /// Ask for header digests (`hdr_digest`, nvme-cli's `--hdr-digest`).
    pub header_digest: bool,
    /// Ask for data digests (`data_digest`, nvme-cli's `--data-digest`).
    pub data_digest: bool,
}

impl TcpConnect {
    /// The options line (`nqn=...,transport=tcp,traddr=...,trsvcid=...`);
    /// an error names a value the kernel's comma-separated parser would
    /// split.
    pub fn options(&self) -> Result<String, OptionsError> {
        let mut fields = vec![
            ("nqn", self.subnqn.clone()),
            ("transport", self.transport.to_string()),
            ("traddr", self.traddr.clone()),
            ("trsvcid", self.trsvcid.to_string()),
        ];
        for (k, v) in [("hostnqn", &self.hostnqn), ("hostid", &self.hostid)] {
            if let Some(v) = v {
                fields.push((k, v.clone()));
            }
        }
        let secrets = [
            ("dhchap_secret", &self.dhchap_secret),
            ("dhchap_ctrl_secret", &self.dhchap_ctrl_secret),
        ];
        for (key, v) in &fields {
            // The kernel splits the line at commas (a value may hold '=').
            if v.is_empty() || v.contains([',', '\n']) {
                return Err(OptionsError::BadValue {
                    key,
                    value: v.clone(),
                });
            }
        }
        for (k, v) in secrets {
            if let Some(v) = v {
                if v.is_empty() || v.contains([',', '\n']) {
                    // Never the secret itself in a message.
                    return Err(OptionsError::BadSecret { key: k });
                }
                fields.push((k, v.clone()));
            }
        }
        let mut line: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for (flag, on) in [
            ("hdr_digest", self.header_digest),
            ("data_digest", self.data_digest),
        ] {
            if on {
                line.push(flag.to_string());
            }
        }
        Ok(line.join(","))
    }
}

/// Parses the kernel's answer to a connect (`instance=3,cntlid=1`).
pub fn parse_connected(reply: &str) -> Option<Connected> {
    let (mut instance, mut cntlid) = (None, None);
    for part in reply.trim().split(',') {
        match part.split_once('=') {
            Some(("instance", v)) => instance = v.parse().ok(),
            Some(("cntlid", v)) => cntlid = v.parse().ok(),
            _ => {}
        }
    }
    Some(Connected {
        instance: instance?,
        cntlid: cntlid?,
    })
}

/// Connects through `fabrics` (normally [`FABRICS_DEV`]) with `options`;
/// the kernel's error (e.g. `ECONNREFUSED` as "Connection refused",
/// `EINVAL` for options it does not take) comes back as it is.
pub fn connect(fabrics: &Path, options: &str) -> io::Result<Connected> {
    let mut f = OpenOptions::new().read(true).write(true).open(fabrics)?;
    // One write: the kernel parses the whole line and connects before it
    // returns.
    f.write_all(options.as_bytes())?;
    let mut reply = String::new();
    f.read_to_string(&mut reply)?;
    parse_connected(&reply).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: unexpected answer {reply:?}", fabrics.display()),
        )
    })
}

/// Deletes controller `name` (`nvme3`) under `sys_class_nvme`
/// (normally `/sys/class/nvme`): the kernel tears its queues and
/// namespaces down before the write returns.
pub fn delete_controller(sys_class_nvme: &Path, name: &str) -> io::Result<()> {
    let p = sys_class_nvme.join(name).join("delete_controller");
    OpenOptions::new().write(true).open(p)?.write_all(b"1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_line() {
        let c = TcpConnect {
            transport: "tcp",
            subnqn: "nqn.2026-11.io.numio:mem0".into(),
            traddr: "10.0.0.5".into(),
            trsvcid: 4420,
            hostnqn: None,
            hostid: None,
            dhchap_secret: None,
            dhchap_ctrl_secret: None,
            header_digest: false,
            data_digest: false,
        };
        assert_eq!(
            c.options().unwrap(),
            "nqn=nqn.2026-11.io.numio:mem0,transport=tcp,traddr=10.0.0.5,trsvcid=4420"
        );
        let r = TcpConnect {
            transport: "rdma",
            ..c.clone()
        };
        assert_eq!(
            r.options().unwrap(),
            "nqn=nqn.2026-11.io.numio:mem0,transport=rdma,traddr=10.0.0.5,trsvcid=4420"
        );
        let h = TcpConnect {
            transport: "tcp",
            hostnqn: Some("nqn.2014-08.org.nvmexpress:uuid:1".into()),
            hostid: Some("1".into()),
            ..c.clone()
        };
        assert!(h
            .options()
            .unwrap()
            .ends_with(",hostnqn=nqn.2014-08.org.nvmexpress:uuid:1,hostid=1"));
        let bad = TcpConnect {
            transport: "tcp",
            subnqn: "nqn.a,b".into(),
            ..c.clone()
        };
        let e = bad.options().unwrap_err();
        assert_eq!(
            e,
            OptionsError::BadValue {
                key: "nqn",
                value: "nqn.a,b".into()
            }
        );
        assert!(e.to_string().contains("nqn \"nqn.a,b\""), "{e}");
        let auth = TcpConnect {
            transport: "tcp",
            dhchap_secret: Some("DHHC-1:01:c2VjcmV0PQ==:".into()),
            dhchap_ctrl_secret: Some("DHHC-1:03:Y3RybA==:".into()),
            ..h.clone()
        };
        assert!(auth.options().unwrap().ends_with(
            ",dhchap_secret=DHHC-1:01:c2VjcmV0PQ==:,dhchap_ctrl_secret=DHHC-1:03:Y3RybA==:"
        ));
        let leaky = TcpConnect {
            transport: "tcp",
            dhchap_secret: Some("DHHC-1:01:abc,def:".into()),
            ..h
        };
        let e = leaky.options().unwrap_err();
        assert_eq!(
            e,
            OptionsError::BadSecret {
                key: "dhchap_secret"
            }
        );
        assert!(!format!("{e:?}").contains("abc"), "nor out of Debug");
        let e = e.to_string();
        assert!(e.starts_with("the dhchap_secret is empty"), "{e}");
        assert!(!e.contains("abc"), "the secret stays out of messages: {e}");
        let digests = TcpConnect {
            header_digest: true,
            data_digest: true,
            ..c
        };
        assert!(digests
            .options()
            .unwrap()
            .ends_with(",trsvcid=4420,hdr_digest,data_digest"));
    }

    #[test]
    fn kernel_answer() {
        assert_eq!(
            parse_connected("instance=3,cntlid=17\n"),
            Some(Connected {
                instance: 3,
                cntlid: 17
            })
        );
        assert_eq!(parse_connected("instance=3\n"), None);
        assert_eq!(parse_connected(""), None);
    }

    #[test]
    fn connect_errors_come_back() {
        let e = connect(Path::new("/nonexistent/nvme-fabrics"), "x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let dir = std::env::temp_dir().join(format!("fabrics-del-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("nvme7")).unwrap();
        std::fs::write(dir.join("nvme7/delete_controller"), "").unwrap();
        delete_controller(&dir, "nvme7").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("nvme7/delete_controller")).unwrap(),
            "1"
        );
        assert!(delete_controller(&dir, "nvme8").is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}

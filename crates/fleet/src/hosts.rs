//! Which hosts a fleet run uses: `--hosts A,B` entries or a hosts file,
//! each `[user@]host[:port]` (IPv6 as `[addr]:port`), a hosts-file line
//! followed by ssh options for that host; and which targets each host
//! benches (`host:/dev/nvme0n1` for one host, a plain target for all).

use std::fmt;

/// One host of the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The entry as written (`root@db1:2222`): how reports name the host.
    pub label: String,
    /// Login name, when given.
    pub user: Option<String>,
    /// Host name or address, as ssh takes it (no brackets).
    pub addr: String,
    /// Port, when given.
    pub port: Option<u16>,
    /// ssh arguments for this host only (from its hosts-file line).
    pub ssh_args: Vec<String>,
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// What is wrong with one `[user@]host[:port]` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EntryProblem {
    /// Nothing but blanks.
    #[error("empty")]
    Empty,
    /// `@host`.
    #[error("empty user name")]
    EmptyUser,
    /// `[fd00::2`.
    #[error("no closing ] after the IPv6 address")]
    UnclosedBracket,
    /// `[fd00::2]x`.
    #[error("junk after ]")]
    JunkAfterBracket,
    /// `fd00::2`.
    #[error("an IPv6 address needs brackets")]
    UnbracketedIpv6,
    /// Empty, starting with `-` (an ssh option) or holding blanks.
    #[error("not a host name or address")]
    NotAHost,
    /// A port that is not 1..=65535.
    #[error("the port is not a number from 1 to 65535")]
    BadPort,
}

/// Why a host list or hosts file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostsError {
    /// One entry does not parse.
    #[error("host {entry:?}: {problem}; write [user@]host[:port], an IPv6 address as [addr]:port")]
    BadEntry {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        problem: EntryProblem,
    },
    /// A line of a hosts file is wrong.
    #[error("{path}:{line}: {source}")]
    InFile {
        /// The hosts file.
        path: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong on it.
        #[source]
        source: Box<HostsError>,
    },
    /// A hosts file without a host.
    #[error("{path}: no hosts (one [user@]host[:port] per line)")]
    NoHosts {
        /// The hosts file.
        path: String,
    },
    /// A host given twice.
    #[error("{list}: host {host} is named twice")]
    NamedTwice {
        /// Where (`--hosts`, or the hosts file).
        list: String,
        /// The host's label.
        host: String,
    },
}

/// Parses one `[user@]host[:port]` entry.
pub fn parse_host(entry: &str) -> Result<Host, HostsError> {
    let bad = |problem| HostsError::BadEntry {
        entry: entry.to_string(),
        problem,
    };
    let e = entry.trim();
    if e.is_empty() {
        return Err(bad(EntryProblem::Empty));
    }
    let (user, rest) = match e.rsplit_once('@') {
        Some((u, r)) if !u.is_empty() => (Some(u.to_string()), r),
        Some(_) => return Err(bad(EntryProblem::EmptyUser)),
        None => (None, e),
    };
    let (addr, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (a, tail) = v6
            .split_once(']')
            .ok_or_else(|| bad(EntryProblem::UnclosedBracket))?;
        match tail {
            "" => (a, None),
            t => (
                a,
                Some(
                    t.strip_prefix(':')
                        .ok_or_else(|| bad(EntryProblem::JunkAfterBracket))?,
                ),
            ),
        }
    } else {
        match rest.split_once(':') {
            Some((a, p)) if !p.contains(':') => (a, Some(p)),
            Some(_) => return Err(bad(EntryProblem::UnbracketedIpv6)),
            None => (rest, None),
        }
    };
    if addr.is_empty() || addr.starts_with('-') || addr.chars().any(char::is_whitespace) {
        return Err(bad(EntryProblem::NotAHost));
    }
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad(EntryProblem::BadPort))?,
        ),
    };
    Ok(Host {
        label: e.to_string(),
        user,
        addr: addr.to_string(),
        port,
        ssh_args: Vec::new(),
    })
}

/// Parses `--hosts A,B,...`.
pub fn parse_host_list(list: &str) -> Result<Vec<Host>, HostsError> {
    let hosts = list
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(parse_host)
        .collect::<Result<Vec<_>, _>>()?;
    check_distinct(hosts, "--hosts")
}

/// Parses a hosts file: one host per line, `[user@]host[:port]` then ssh
/// arguments for that host (`-i KEY`, `-o Option=value`); `#` starts a
/// comment.
pub fn parse_hosts_file(text: &str, path: &str) -> Result<Vec<Host>, HostsError> {
    let mut hosts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(entry) = words.next() else {
            continue;
        };
        let mut h = parse_host(entry).map_err(|e| HostsError::InFile {
            path: path.to_string(),
            line: n + 1,
            source: Box::new(e),
        })?;
        h.ssh_args = words.map(str::to_string).collect();
        hosts.push(h);
    }
    if hosts.is_empty() {
        return Err(HostsError::NoHosts {
            path: path.to_string(),
        });
    }
    check_distinct(hosts, path)
}

fn check_distinct(hosts: Vec<Host>, what: &str) -> Result<Vec<Host>, HostsError> {
    for (i, h) in hosts.iter().enumerate() {
        if hosts[..i].iter().any(|o| o.label == h.label) {
            return Err(HostsError::NamedTwice {
                list: what.to_string(),
                host: h.label.clone(),
            });
        }
    }
    Ok(hosts)
}

/// The targets of each host: a target `X:PATH` whose `X` is a host's label
/// or address belongs to that host alone, any other target to every host.
/// An empty list lets the host choose (every NVMe namespace, read-only).
pub fn targets_per_host(targets: &[String], hosts: &[Host]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new(); hosts.len()];
    for t in targets {
        // The longest matching name wins: `b:2222:/dev/x` is host
        // `b:2222`'s, not host `b`'s.
        let owner = hosts
            .iter()
            .enumerate()
            .flat_map(|(i, h)| [(i, h.label.as_str()), (i, h.addr.as_str())])
            .filter_map(|(i, name)| {
                let rest = t.strip_prefix(name)?.strip_prefix(':')?;
                (!rest.starts_with("//")).then_some((i, name.len(), rest))
            })
            .max_by_key(|&(_, len, _)| len)
            .map(|(i, _, rest)| (i, rest));
        match owner {
            Some((i, rest)) => out[i].push(rest.to_string()),
            None => out.iter_mut().for_each(|v| v.push(t.clone())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_with_user_port_and_ipv6() {
        let h = parse_host("root@db1:2222").unwrap();
        assert_eq!(
            (h.user.as_deref(), h.addr.as_str(), h.port),
            (Some("root"), "db1", Some(2222))
        );
        let h = parse_host("[fd00::2]:22").unwrap();
        assert_eq!((h.addr.as_str(), h.port), ("fd00::2", Some(22)));
        let h = parse_host("10.0.0.2").unwrap();
        assert_eq!((h.user, h.port), (None, None));
        for bad in [
            "",
            "@x",
            "x:0",
            "x:99999",
            "fd00::2",
            "-oProxyCommand=x",
            "[::1",
        ] {
            let e = parse_host(bad).unwrap_err().to_string();
            assert!(e.contains("[user@]host[:port]"), "{bad}: {e}");
        }
        assert_eq!(
            parse_host("x:99999"),
            Err(HostsError::BadEntry {
                entry: "x:99999".into(),
                problem: EntryProblem::BadPort
            })
        );
    }

    #[test]
    fn hosts_files_take_ssh_arguments_and_comments() {
        let text = "# lab\nroot@a -i /k/id -o Port=2200\n\n b:23 # second\n";
        let hs = parse_hosts_file(text, "hosts.txt").unwrap();
        assert_eq!(hs.len(), 2);
        assert_eq!(hs[0].ssh_args, ["-i", "/k/id", "-o", "Port=2200"]);
        assert_eq!(hs[1].port, Some(23));
        let e = parse_hosts_file("a\nb:x\n", "hosts.txt").unwrap_err();
        let HostsError::InFile { path, line, source } = &e else {
            panic!("{e:?}");
        };
        assert_eq!((path.as_str(), *line), ("hosts.txt", 2));
        assert!(
            matches!(**source, HostsError::BadEntry { ref entry, problem: EntryProblem::BadPort } if entry == "b:x")
        );
        assert!(
            e.to_string()
                .starts_with("hosts.txt:2: host \"b:x\": the port"),
            "{e}"
        );
        assert!(parse_hosts_file("# none\n", "h")
            .unwrap_err()
            .to_string()
            .contains("no hosts"));
        assert_eq!(
            parse_host_list("a,b,a"),
            Err(HostsError::NamedTwice {
                list: "--hosts".into(),
                host: "a".into()
            })
        );
        assert_eq!(
            parse_host_list("a,b,a").unwrap_err().to_string(),
            "--hosts: host a is named twice"
        );
    }

    #[test]
    fn prefixed_targets_go_to_their_host_and_others_to_all() {
        let hs = parse_host_list("root@a,b:2222").unwrap();
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let per = targets_per_host(
            &t(&[
                "a:/dev/nvme0n1",
                "b:2222:/dev/nvme1n1",
                "/srv/f",
                "nvme-tcp://x/nqn",
            ]),
            &hs,
        );
        assert_eq!(per[0], t(&["/dev/nvme0n1", "/srv/f", "nvme-tcp://x/nqn"]));
        assert_eq!(per[1], t(&["/dev/nvme1n1", "/srv/f", "nvme-tcp://x/nqn"]));
    }
}

//! Hosts for fleet tests: network namespaces on one bridge with this one
//! (a veth pair each), so every host reaches every other; each running its own OpenSSH server (Debian's openssh-server)
//! with a throwaway host key, a client key made for the test, and a PATH
//! of the test's choosing (so one host can lack numio or have another
//! version). Root only; everything is removed on drop.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::lines::{lines_of, next_line};

/// What a host has on its PATH as `numio`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numio {
    /// The numio under test.
    This,
    /// Nothing.
    Missing,
    /// A numio whose agent says it is another version.
    OtherVersion,
}

/// One namespace with its sshd.
pub struct SshHost {
    /// The namespace.
    pub ns: String,
    /// Its address (the sshd listens there, port 22).
    pub addr: String,
    sshd: Option<Child>,
}

/// The hosts, the client key and the known_hosts file.
pub struct SshLab {
    /// The hosts.
    pub hosts: Vec<SshHost>,
    dir: PathBuf,
    bridge: String,
    veths: Vec<String>,
}

fn run(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Why the lab cannot run here (not root, no sshd, no ip), if it cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    // NUMIO_TEST_UNPRIVILEGED: scripts/test --quick runs as if not root.
    if unsafe { libc::geteuid() } != 0 || std::env::var_os("NUMIO_TEST_UNPRIVILEGED").is_some() {
        return Some("needs root (network namespaces)".into());
    }
    for bin in ["/usr/sbin/sshd", "/usr/bin/ssh-keygen", "/usr/bin/ssh"] {
        if !Path::new(bin).exists() {
            return Some(format!(
                "{bin} is missing (apt-get install openssh-server openssh-client)"
            ));
        }
    }
    None
}

impl SshLab {
    /// Host `i`'s state directory (its XDG_STATE_HOME: a host of its own
    /// keeps its own numio state, e.g. the verify state).
    pub fn state_dir(&self, i: usize) -> PathBuf {
        self.dir.join(format!("state{i}"))
    }

    /// `kinds.len()` hosts; `id` (0..40) keeps concurrent tests' names and
    /// subnets apart.
    pub fn new(id: u32, kinds: &[Numio]) -> SshLab {
        let dir = std::env::temp_dir().join(format!("numio-sshlab-{}-{id}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let d = |f: &str| dir.join(f).display().to_string();
        run(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", &d("id")],
        );
        run(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", &d("hostkey")],
        );
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
        let hostkey_pub = std::fs::read_to_string(dir.join("hostkey.pub")).unwrap();
        let bridge = format!("nfb{id}p{}", std::process::id() % 100_000);
        let subnet = format!("10.181.{id}");
        run("ip", &["link", "add", &bridge, "type", "bridge"]);
        let mut lab = SshLab {
            hosts: Vec::new(),
            dir: dir.clone(),
            bridge: bridge.clone(),
            veths: Vec::new(),
        };
        run(
            "ip",
            &["addr", "add", &format!("{subnet}.1/24"), "dev", &bridge],
        );
        run("ip", &["link", "set", &bridge, "up"]);
        let mut known = String::new();
        for (i, kind) in kinds.iter().enumerate() {
            let ns = format!("numio-fl{id}-{i}-{}", std::process::id());
            let addr = format!("{subnet}.{}", 10 + i);
            // Unique per process too: a pair whose namespace lingers (its
            // sockets closing) must not collide with the next run's.
            let tag = std::process::id() % 100_000;
            let (outer, inner) = (format!("n{tag}o{id}x{i}"), format!("n{tag}i{id}x{i}"));
            run("ip", &["netns", "add", &ns]);
            lab.hosts.push(SshHost {
                ns: ns.clone(),
                addr: addr.clone(),
                sshd: None,
            });
            run(
                "ip",
                &[
                    "link", "add", &outer, "type", "veth", "peer", "name", &inner,
                ],
            );
            lab.veths.push(outer.clone());
            run("ip", &["link", "set", &outer, "master", &bridge]);
            run("ip", &["link", "set", &inner, "netns", &ns]);
            run("ip", &["link", "set", &outer, "up"]);
            let exec = |args: &[&str]| {
                let mut a = vec!["netns", "exec", &ns];
                a.extend_from_slice(args);
                run("ip", &a);
            };
            exec(&["ip", "addr", "add", &format!("{addr}/24"), "dev", &inner]);
            exec(&["ip", "link", "set", &inner, "up"]);
            exec(&["ip", "link", "set", "lo", "up"]);
            let bin = dir.join(format!("bin{i}"));
            std::fs::create_dir_all(&bin).unwrap();
            match kind {
                Numio::This => {
                    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_numio"), bin.join("numio"))
                        .unwrap();
                }
                Numio::Missing => {}
                Numio::OtherVersion => {
                    let script = "#!/bin/sh\necho '{\"type\":\"hello\",\"version\":\"0.0.1-other\",\"protocol\":1,\"hostname\":\"old\"}'\nread line\n";
                    let p = bin.join("numio");
                    std::fs::write(&p, script).unwrap();
                    run("chmod", &["755", &p.display().to_string()]);
                }
            }
            let cfg = dir.join(format!("sshd{i}.conf"));
            std::fs::write(
                &cfg,
                format!(
                    "Port 22\nListenAddress {addr}\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nSetEnv PATH={}:/usr/local/bin:/usr/bin:/bin XDG_STATE_HOME={}\n",
                    d("hostkey"),
                    d(&format!("sshd{i}.pid")),
                    d("authorized_keys"),
                    bin.display(),
                    lab.state_dir(i).display()
                ),
            )
            .unwrap();
            let mut child = Command::new("ip")
                .args(["netns", "exec", &ns, "/usr/sbin/sshd", "-D", "-e", "-f"])
                .arg(&cfg)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let lines = lines_of(child.stderr.take().unwrap());
            next_line(&lines, "Server listening on");
            // Keep draining its log so sshd never blocks on the pipe.
            std::thread::spawn(move || for _ in lines {});
            lab.hosts.last_mut().unwrap().sshd = Some(child);
            known.push_str(&format!("{addr} {hostkey_pub}"));
        }
        std::fs::File::create(dir.join("known_hosts"))
            .unwrap()
            .write_all(known.as_bytes())
            .unwrap();
        lab
    }

    /// The fleet flags that reach the hosts as a user would: the test's
    /// key and known_hosts, strict host key checking on.
    pub fn ssh_flags(&self) -> Vec<String> {
        [
            format!("IdentityFile={}", self.dir.join("id").display()),
            format!(
                "UserKnownHostsFile={}",
                self.dir.join("known_hosts").display()
            ),
            "StrictHostKeyChecking=yes".into(),
            "ConnectTimeout=10".into(),
        ]
        .into_iter()
        .flat_map(|o| ["--ssh-opt".to_string(), o])
        .collect()
    }

    /// `root@ADDR` of host `i`.
    pub fn login(&self, i: usize) -> String {
        format!("root@{}", self.hosts[i].addr)
    }

    /// Asserts that no numio agent and no numio serve runs on any host
    /// still up.
    pub fn assert_no_numio_left(&self) {
        for i in 0..self.hosts.len() {
            for what in ["agent", "serve"] {
                let left = self.processes(i, what);
                assert!(left.is_empty(), "numio {what} left on host {i}: {left:?}");
            }
        }
    }

    /// `root@ADDR` of every host, comma-separated.
    pub fn host_list(&self) -> String {
        self.hosts
            .iter()
            .map(|h| format!("root@{}", h.addr))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A scratch directory of the lab's.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Processes in host `i`'s namespace whose command line has `what`.
    pub fn processes(&self, i: usize, what: &str) -> Vec<u32> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.hosts[i].ns])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .map(|c| String::from_utf8_lossy(&c).contains(what))
                    .unwrap_or(false)
            })
            .collect()
    }

    /// Kills every process in host `i`'s namespace: the host dies.
    pub fn kill_host(&mut self, i: usize) {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.hosts[i].ns])
            .output()
            .unwrap();
        for p in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("kill").args(["-9", p]).status();
        }
        if let Some(mut c) = self.hosts[i].sshd.take() {
            let _ = c.wait();
        }
    }
}

impl Drop for SshLab {
    fn drop(&mut self) {
        for i in 0..self.hosts.len() {
            self.kill_host(i);
            let _ = Command::new("ip")
                .args(["netns", "del", &self.hosts[i].ns])
                .status();
        }
        // Deleting our end removes each pair at once, even while a
        // namespace lingers on its closing sockets.
        for v in self.veths.iter().chain([&self.bridge]) {
            let _ = Command::new("ip")
                .args(["link", "del", v])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

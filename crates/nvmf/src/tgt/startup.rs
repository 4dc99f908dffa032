//! What `numio serve` says once it serves, as structured log events
//! (`crate::log`; `--log-format json` makes them lines that
//! `crate::serve_child` reads back): each listener, port and discovery
//! service, each subsystem with its namespaces and the hosts that use TLS
//! or DH-HMAC-CHAP, the reactors and their rings, the limits, and last
//! `ready`.

use crate::log;
use crate::tgt::namespace::Namespace;
use crate::Server;

/// Logs what the target serves, then `ready`: `open_by_default` when any
/// host may connect for want of an allow list, `node` the NUMA node the
/// reactors were placed on (the backing devices'), `port_words` each
/// NVMe/TCP port's placement in words (`reactors on CPUs [2, 3] (NUMA node 1
/// of ens1)`).
pub fn log(server: &Server, open_by_default: bool, node: Option<u32>, port_words: &[String]) {
    let t = &server.target;
    let tls = if t.tls.is_some() {
        " (TLS 1.3 required)"
    } else {
        ""
    };
    for a in &server.listen_addrs {
        log::info(
            "listening",
            format_args!("NVMe/TCP listening on {a}{tls}"),
            &[
                ("addr", a.to_string().into()),
                (
                    "tls",
                    if t.tls.is_some() { "required" } else { "off" }.into(),
                ),
            ],
        );
    }
    for a in &server.rdma_addrs {
        log::info(
            "listening",
            format_args!("NVMe/RDMA listening on {a}"),
            &[("addr", a.to_string().into()), ("transport", "rdma".into())],
        );
    }
    for (i, p) in t.ports.iter().enumerate() {
        let placement = if p.transport == crate::tgt::port::Transport::Rdma {
            "rdma: one thread per queue, buffers on its node"
        } else {
            port_words.get(i).map_or("", String::as_str)
        };
        log::info(
            "port",
            format_args!(
                "port {} {} ANA group 1 {}, {}",
                p.id,
                p.addr,
                p.state(),
                placement
            ),
            &[
                ("port", p.id.into()),
                ("addr", p.addr.to_string().into()),
                ("ana_state", p.state().to_string().into()),
            ],
        );
    }
    for a in &server.discovery_addrs {
        log::info(
            "discovery_listening",
            format_args!("discovery service on {a}"),
            &[("addr", a.to_string().into())],
        );
    }
    for s in &t.subsystems {
        log::info(
            "subsystem",
            format_args!(
                "subsystem {} (serial {}, model {:?})",
                s.nqn, s.serial, s.model
            ),
            &[("subsystem", s.nqn.as_str().into())],
        );
        for ns in &s.namespaces {
            namespace(&s.nqn, ns);
        }
        for (host, k) in s.tls_hosts() {
            let hash = k.hash();
            log::info(
                "host_tls",
                format_args!(
                    "  host {host} connects over TLS 1.3 ({}, PSK identity NVMe1R{:02} or NVMe0R{:02})",
                    hash.cipher_suite(),
                    hash.id(),
                    hash.id()
                ),
                &[
                    ("subsystem", s.nqn.as_str().into()),
                    ("host", host.as_str().into()),
                    ("cipher", hash.cipher_suite().into()),
                ],
            );
        }
        for (host, k) in s.authenticating_hosts() {
            let join = |v: Vec<&str>| v.join(",");
            let hashes = join(k.hashes.iter().map(|h| h.name()).collect());
            let groups = join(k.dhgroups.iter().map(|g| g.name()).collect());
            let bidi = if k.ctrl_secret.is_some() { "yes" } else { "no" };
            log::info(
                "host_auth",
                format_args!(
                    "  host {host} authenticates with DH-HMAC-CHAP (hashes {hashes}; DH groups {groups}; controller secret {bidi})"
                ),
                &[
                    ("subsystem", s.nqn.as_str().into()),
                    ("host", host.as_str().into()),
                    ("hashes", hashes.as_str().into()),
                    ("dhgroups", groups.as_str().into()),
                    ("controller_secret", bidi.into()),
                ],
            );
        }
    }
    if open_by_default {
        log::warn(
            "open_to_any_host",
            format_args!("any host may connect (restrict with --allow-host NQN)"),
            &[],
        );
    }
    let cpus = format!("{:?}", server.cpus);
    match node {
        Some(n) => log::info(
            "reactors",
            format_args!("reactors on CPUs {cpus} (NUMA node {n} of the backing devices)"),
            &[("cpus", cpus.as_str().into()), ("node", n.into())],
        ),
        None => log::info(
            "reactors",
            format_args!("reactors on CPUs {cpus}"),
            &[("cpus", cpus.as_str().into())],
        ),
    }
    if t.poll {
        log::info(
            "polling",
            format_args!(
                "reactors busy-poll (--poll): each keeps its CPU busy whether or not hosts send"
            ),
            &[],
        );
    }
    log::info(
        "rings",
        format_args!(
            "one io_uring per reactor ({}): socket receives and sends, wake-ups, storage",
            server.ring_setup
        ),
        &[],
    );
    for n in &server.ring_notes {
        log::note("ring_note", format_args!("{n}"), &[]);
    }
    log::info(
        "limits",
        format_args!("limits: {}", t.limits.describe()),
        &[],
    );
    log::info(
        "ready",
        format_args!(
            "ready (SIGINT or SIGTERM stops; SIGHUP reloads --config: ANA states, namespaces, hosts)"
        ),
        &[],
    );
}

/// A namespace's start-up line (and a note where it is buffered).
fn namespace(nqn: &str, ns: &Namespace) {
    log::info(
        "namespace",
        format_args!(
            "  nsid {} {} {} bytes ({} blocks of {}) nguid {} uuid {} ({})",
            ns.nsid,
            ns.spec,
            ns.size_bytes(),
            ns.blocks(),
            ns.lba_bytes(),
            hex(&ns.nguid),
            crate::host::identity::uuid_text(&ns.uuid),
            ns.describe_access()
        ),
        &[
            ("subsystem", nqn.into()),
            ("nsid", ns.nsid.into()),
            ("backing", ns.spec.as_str().into()),
            ("size_bytes", ns.size_bytes().into()),
        ],
    );
    if let crate::tgt::namespace::Access::Buffered { why } = &ns.access {
        log::note(
            "namespace_buffered",
            format_args!(
                "nsid {} {} goes through the page cache: {why}",
                ns.nsid, ns.spec
            ),
            &[
                ("nsid", ns.nsid.into()),
                ("backing", ns.spec.as_str().into()),
            ],
        );
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

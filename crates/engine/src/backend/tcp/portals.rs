//! Multipath targets: several portals of one namespace,
//! `nvme-tcp://A[:P]/NQN[/NSID],nvme-tcp://B[:P]/NQN[/NSID]`, checked at
//! connect to be one namespace: the same subsystem NQN and NSID in the
//! text, and through each portal the same subsystem (Identify Controller
//! SUBNQN), size, LBA size and identifiers (NGUID, and the namespace
//! identification descriptors: EUI-64, NGUID, UUID).

use nvme_spec::identify::cns;

use super::setup::{inspect_portal, parse_url, NvmeTcp, Portal, PortalFacts, TcpOptions, TcpUrl};
use super::SCHEME;

/// Most portals of one target.
pub const MAX_PORTALS: usize = 8;

/// Whether `text` names several portals.
pub fn is_multipath(text: &str) -> bool {
    text.contains(&format!(",{SCHEME}"))
}

/// The portals of `text`, each parsed, all naming one subsystem NQN and
/// NSID; the error names the portals that differ.
pub fn parse_portals(text: &str) -> Result<Vec<TcpUrl>, String> {
    let parts: Vec<&str> = text.split(&format!(",{SCHEME}")).collect();
    if parts.len() > MAX_PORTALS {
        return Err(format!(
            "{} portals given; numio drives at most {MAX_PORTALS} paths of one namespace",
            parts.len()
        ));
    }
    let mut urls = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let full = if i == 0 {
            p.to_string()
        } else {
            format!("{SCHEME}{p}")
        };
        urls.push(parse_url(&full).map_err(|e| format!("portal {} ({full}): {e}", i + 1))?);
    }
    let first = &urls[0];
    for u in &urls[1..] {
        if u.subnqn != first.subnqn || u.nsid != first.nsid {
            return Err(format!(
                "portals {} and {} name different namespaces ({}/{} and {}/{}); every portal of a multipath target names the same SUBNQN/NSID",
                portal_name(first),
                portal_name(u),
                first.subnqn,
                first.nsid,
                u.subnqn,
                u.nsid
            ));
        }
        if u.host == first.host && u.port == first.port {
            return Err(format!(
                "portal {} is given twice; give each path's HOST:PORT once",
                portal_name(u)
            ));
        }
    }
    Ok(urls)
}

/// `HOST:PORT` of a portal.
pub fn portal_name(u: &TcpUrl) -> String {
    if u.host.contains(':') {
        format!("[{}]:{}", u.host, u.port)
    } else {
        format!("{}:{}", u.host, u.port)
    }
}

/// What must agree through every portal of one namespace.
#[derive(Debug, PartialEq, Eq)]
struct NamespaceId {
    subnqn: String,
    nsze: u64,
    lbads: u8,
    nguid: [u8; 16],
    /// The identification descriptor list (CNS 03h), empty where refused.
    descriptors: Vec<u8>,
}

fn namespace_id(f: &mut PortalFacts) -> NamespaceId {
    let descriptors = f
        .admin
        .identify(cns::NS_DESC_LIST, f.target.url.nsid)
        .unwrap_or_default();
    NamespaceId {
        subnqn: f.ctrl.subnqn.clone(),
        nsze: f.ns.nsze,
        lbads: f.ns.lbads,
        nguid: f.ns.nguid,
        descriptors,
    }
}

/// Inspects every portal of a multipath target and checks that they reach
/// one namespace. The target's limits are the smallest of all.
pub fn inspect(text: &str, o: &TcpOptions) -> Result<(NvmeTcp, u64, u32), String> {
    let urls = parse_portals(text)?;
    let mut facts = Vec::with_capacity(urls.len());
    for u in urls {
        let name = portal_name(&u);
        facts.push(inspect_portal(u, o).map_err(|e| format!("portal {name}: {e}"))?);
    }
    let ids: Vec<NamespaceId> = facts.iter_mut().map(namespace_id).collect();
    let first = &facts[0].target;
    for (f, id) in facts.iter().zip(&ids).skip(1) {
        if *id != ids[0] {
            let what = if id.subnqn != ids[0].subnqn {
                format!("subsystems {:?} and {:?}", ids[0].subnqn, id.subnqn)
            } else if (id.nsze, id.lbads) != (ids[0].nsze, ids[0].lbads) {
                format!(
                    "sizes {} and {} blocks of 2^{} and 2^{} bytes",
                    ids[0].nsze, id.nsze, ids[0].lbads, id.lbads
                )
            } else {
                "namespace identifiers (NGUID, EUI-64, UUID)".to_string()
            };
            return Err(format!(
                "portals {} and {} do not reach one namespace: different {what}; give the portals of one namespace",
                portal_name(&first.url),
                portal_name(&f.target.url)
            ));
        }
    }
    let mut t = first.clone();
    for f in &facts[1..] {
        t.max_transfer_bytes = t.max_transfer_bytes.min(f.target.max_transfer_bytes);
        t.in_capsule_max_bytes = t.in_capsule_max_bytes.min(f.target.in_capsule_max_bytes);
        t.max_queue_entries = t.max_queue_entries.min(f.target.max_queue_entries);
    }
    t.portals = facts
        .iter()
        .map(|f| Portal {
            url: f.target.url.clone(),
            addr: f.target.addr,
        })
        .collect();
    Ok((t, facts[0].size_bytes, facts[0].lba_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_separated_portals_parse_and_must_name_one_namespace() {
        let t = "nvme-tcp://127.0.0.1:4420/nqn.x:y/2,nvme-tcp://10.0.0.2/nqn.x:y/2";
        assert!(is_multipath(t));
        assert!(!is_multipath("nvme-tcp://127.0.0.1/nqn.x:y"));
        let u = parse_portals(t).unwrap();
        assert_eq!(u.len(), 2);
        assert_eq!(
            (portal_name(&u[0]), u[0].nsid),
            ("127.0.0.1:4420".into(), 2)
        );
        assert_eq!((portal_name(&u[1]), u[1].nsid), ("10.0.0.2:4420".into(), 2));

        let e = parse_portals("nvme-tcp://a/nqn.x:y,nvme-tcp://b/nqn.x:z").unwrap_err();
        assert!(
            e.contains("portals a:4420 and b:4420 name different"),
            "{e}"
        );
        let e = parse_portals("nvme-tcp://a/nqn.x:y/1,nvme-tcp://b/nqn.x:y/2").unwrap_err();
        assert!(e.contains("nqn.x:y/1 and nqn.x:y/2"), "{e}");
        let e = parse_portals("nvme-tcp://a/nqn.x:y,nvme-tcp://a:4420/nqn.x:y").unwrap_err();
        assert!(e.contains("given twice"), "{e}");
        let e = parse_portals("nvme-tcp://a/nqn.x:y,nvme-tcp://b:0/nqn.x:y").unwrap_err();
        assert!(e.starts_with("portal 2 (nvme-tcp://b:0/nqn.x:y)"), "{e}");
        let many = ["nvme-tcp://a/n"; MAX_PORTALS + 1].join(",");
        assert!(parse_portals(&many).unwrap_err().contains("at most 8"));
    }
}

//! Multipath targets: several portals of one namespace,
//! `nvme-tcp://A[:P]/NQN[/NSID],nvme-tcp://B[:P]/NQN[/NSID]`, checked at
//! connect to be one namespace: the same subsystem NQN and NSID in the
//! text, and through each portal the same subsystem (Identify Controller
//! SUBNQN), size, LBA size and identifiers (NGUID, and the namespace
//! identification descriptors: EUI-64, NGUID, UUID).

use nvme_spec::identify::cns;

use super::error::{Difference, PortalsError, SetupError};
use super::setup::{inspect_portal, parse_url, NvmeTcp, Portal, PortalFacts, TcpOptions, TcpUrl};
pub use super::url::{portal_name, MAX_PORTALS};
use super::SCHEME;

/// Whether `text` names several portals.
pub fn is_multipath(text: &str) -> bool {
    text.contains(&format!(",{SCHEME}"))
}

/// The portals of `text`, each parsed, all naming one subsystem NQN and
/// NSID; the error names the portals that differ.
pub fn parse_portals(text: &str) -> Result<Vec<TcpUrl>, PortalsError> {
    let parts: Vec<&str> = text.split(&format!(",{SCHEME}")).collect();
    if parts.len() > MAX_PORTALS {
        return Err(PortalsError::TooMany { count: parts.len() });
    }
    let mut urls = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let full = if i == 0 {
            p.to_string()
        } else {
            format!("{SCHEME}{p}")
        };
        match parse_url(&full) {
            Ok(u) => urls.push(u),
            Err(source) => {
                return Err(PortalsError::Url {
                    index: i + 1,
                    text: full,
                    source,
                })
            }
        }
    }
    let first = &urls[0];
    for u in &urls[1..] {
        if u.subnqn != first.subnqn || u.nsid != first.nsid {
            return Err(PortalsError::Namespaces {
                first: Box::new(first.clone()),
                other: Box::new(u.clone()),
            });
        }
        if u.host == first.host && u.port == first.port {
            return Err(PortalsError::Twice {
                portal: portal_name(u),
            });
        }
    }
    Ok(urls)
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
pub fn inspect(text: &str, o: &TcpOptions) -> Result<(NvmeTcp, u64, u32), SetupError> {
    let urls = parse_portals(text)?;
    let mut facts = Vec::with_capacity(urls.len());
    for u in urls {
        let name = portal_name(&u);
        facts.push(inspect_portal(u, o).map_err(|e| SetupError::Portal {
            portal: name,
            source: Box::new(e),
        })?);
    }
    let ids: Vec<NamespaceId> = facts.iter_mut().map(namespace_id).collect();
    let first = &facts[0].target;
    for (f, id) in facts.iter().zip(&ids).skip(1) {
        if *id != ids[0] {
            let difference = if id.subnqn != ids[0].subnqn {
                Difference::Subsystems {
                    first: ids[0].subnqn.clone(),
                    other: id.subnqn.clone(),
                }
            } else if (id.nsze, id.lbads) != (ids[0].nsze, ids[0].lbads) {
                Difference::Sizes {
                    first_blocks: ids[0].nsze,
                    other_blocks: id.nsze,
                    first_lbads: ids[0].lbads,
                    other_lbads: id.lbads,
                }
            } else {
                Difference::Identifiers
            };
            return Err(SetupError::NotOneNamespace {
                first: portal_name(&first.url),
                other: portal_name(&f.target.url),
                difference,
            });
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

        let text = |t: &str| parse_portals(t).unwrap_err().to_string();
        let e = text("nvme-tcp://a/nqn.x:y,nvme-tcp://b/nqn.x:z");
        assert!(
            e.contains("portals a:4420 and b:4420 name different"),
            "{e}"
        );
        let e = text("nvme-tcp://a/nqn.x:y/1,nvme-tcp://b/nqn.x:y/2");
        assert!(e.contains("nqn.x:y/1 and nqn.x:y/2"), "{e}");
        let e = parse_portals("nvme-tcp://a/nqn.x:y,nvme-tcp://a:4420/nqn.x:y").unwrap_err();
        assert_eq!(
            e,
            PortalsError::Twice {
                portal: "a:4420".into()
            }
        );
        assert!(e.to_string().contains("given twice"), "{e}");
        let e = parse_portals("nvme-tcp://a/nqn.x:y,nvme-tcp://b:0/nqn.x:y").unwrap_err();
        assert!(
            matches!(&e, PortalsError::Url { index: 2, text, .. } if text == "nvme-tcp://b:0/nqn.x:y"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("portal 2 (nvme-tcp://b:0/nqn.x:y)"),
            "{e}"
        );
        let many = ["nvme-tcp://a/n"; MAX_PORTALS + 1].join(",");
        assert_eq!(
            parse_portals(&many),
            Err(PortalsError::TooMany {
                count: MAX_PORTALS + 1
            })
        );
        assert!(text(&many).contains("at most 8"));
    }
}

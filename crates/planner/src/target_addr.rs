//! What a target string names, decided once: an NVMe-oF namespace
//! (`nvme-tcp://` or `nvme-rdma://`, portals joined by commas), a PCI
//! controller for numio's own driver (`pci:ADDR[/NSID]`), or a path or bare
//! device name. Every crate asks here instead of matching prefixes itself.

/// An NVMe-oF transport numio's initiators and target speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fabric {
    /// NVMe/TCP.
    Tcp,
    /// NVMe/RDMA.
    Rdma,
}

impl Fabric {
    /// Both, in the order the help lists them.
    pub const ALL: [Fabric; 2] = [Fabric::Tcp, Fabric::Rdma];

    /// The URL scheme with its `://`.
    pub const fn scheme(self) -> &'static str {
        match self {
            Fabric::Tcp => "nvme-tcp://",
            Fabric::Rdma => "nvme-rdma://",
        }
    }

    /// The transport's name as nvme-cli writes it (`tcp`, `rdma`).
    pub fn name(self) -> &'static str {
        match self {
            Fabric::Tcp => "tcp",
            Fabric::Rdma => "rdma",
        }
    }

    /// The protocol's name in prose (`NVMe/TCP`).
    pub fn prose(self) -> &'static str {
        match self {
            Fabric::Tcp => "NVMe/TCP",
            Fabric::Rdma => "NVMe/RDMA",
        }
    }
}

/// The prefix of the explicit PCI form.
pub const PCI_PREFIX: &str = "pci:";

/// What a target string names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetAddr<'a> {
    /// An NVMe-oF namespace: `scheme://HOST[:PORT]/SUBNQN[/NSID]`, several
    /// portals joined by commas; the text is kept whole.
    Fabric(Fabric, &'a str),
    /// `pci:ADDR[/NSID]`: the text after `pci:`.
    Pci(&'a str),
    /// A path, or a bare device name such as `nvme0n1`.
    Path(&'a str),
}

impl<'a> TargetAddr<'a> {
    /// Classifies `text`.
    pub fn parse(text: &'a str) -> TargetAddr<'a> {
        if let Some((f, _)) = strip_scheme(text) {
            return TargetAddr::Fabric(f, text);
        }
        match text.strip_prefix(PCI_PREFIX) {
            Some(rest) => TargetAddr::Pci(rest),
            None => TargetAddr::Path(text),
        }
    }

    /// The transport of an NVMe-oF target.
    pub fn fabric(self) -> Option<Fabric> {
        match self {
            TargetAddr::Fabric(f, _) => Some(f),
            _ => None,
        }
    }

    /// Whether this is a path or a device name (not a URL or `pci:`).
    pub fn is_path(self) -> bool {
        matches!(self, TargetAddr::Path(_))
    }
}

/// A portal's transport and the text after its scheme.
pub fn strip_scheme(portal: &str) -> Option<(Fabric, &str)> {
    Fabric::ALL
        .iter()
        .find_map(|&f| portal.strip_prefix(f.scheme()).map(|rest| (f, rest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_is_classified_once() {
        assert_eq!(
            TargetAddr::parse("nvme-tcp://10.0.0.1/nqn.x:a/1").fabric(),
            Some(Fabric::Tcp)
        );
        assert_eq!(
            TargetAddr::parse("nvme-rdma://10.0.0.1/nqn.x:a/1,nvme-rdma://10.0.0.2/nqn.x:a/1")
                .fabric(),
            Some(Fabric::Rdma)
        );
        assert_eq!(
            TargetAddr::parse("pci:0000:01:00.0/1"),
            TargetAddr::Pci("0000:01:00.0/1")
        );
        for p in ["/dev/nvme0n1", "nvme0n1", "data.img", "nvme-tcp:/x"] {
            assert!(TargetAddr::parse(p).is_path(), "{p}");
        }
        assert_eq!(
            strip_scheme("nvme-rdma://h:4420/n"),
            Some((Fabric::Rdma, "h:4420/n"))
        );
        assert_eq!(Fabric::Rdma.name(), "rdma");
    }
}

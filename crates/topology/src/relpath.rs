//! Paths relative to a root (`sys/class/nvme/nvme0`): `/`-separated,
//! without a leading slash. Shared by the sources and the reader.

/// The parent of a relative path (`a/b/c` → `a/b`).
pub fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(p, _)| p)
}

/// Joins `target` (relative to `base`, or absolute meaning the root) onto
/// `base` and removes `.` and `..`, never climbing above the root.
pub fn join_normalized(base: &str, target: &str) -> String {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        base.split('/').filter(|p| !p.is_empty()).collect()
    };
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// `base/name`.
pub fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_relative_and_absolute_targets() {
        assert_eq!(
            join_normalized(
                "sys/class/nvme",
                "../../devices/pci0000:00/0000:00:01.0/nvme/nvme0"
            ),
            "sys/devices/pci0000:00/0000:00:01.0/nvme/nvme0"
        );
        assert_eq!(join_normalized("sys/a", "/sys/b/./c"), "sys/b/c");
        assert_eq!(join_normalized("a", "../../../x"), "x");
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(parent("a"), "");
    }
}

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

/// Most symlink hops followed inside one path, against loops.
pub const LINK_HOPS_MAX: u32 = 8;

/// The path `rel` leads to inside a root, following symlinks in every
/// component but the last, and in the last too when `follow_last`.
/// `link_of(path)` gives a path's symlink target, `None` when it is not a
/// symlink (or absent). A target never leads out of the root: an absolute
/// one means the root, and `..` stops at it (as a chroot would). Errors
/// after [`LINK_HOPS_MAX`] hops, against loops.
pub fn walk_in_root(
    rel: &str,
    follow_last: bool,
    mut link_of: impl FnMut(&str) -> std::io::Result<Option<String>>,
) -> std::io::Result<String> {
    let hops_max = LINK_HOPS_MAX;
    let parts: Vec<&str> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut current = String::new();
    let mut hops = 0;
    for (i, part) in parts.iter().enumerate() {
        current = if *part == ".." {
            parent(&current).to_string()
        } else {
            join(&current, part)
        };
        if i + 1 == parts.len() && !follow_last {
            break;
        }
        while let Some(target) = link_of(&current)? {
            hops += 1;
            if hops > hops_max {
                return Err(std::io::Error::other(format!(
                    "more than {hops_max} symlink hops"
                )));
            }
            current = join_normalized(parent(&current), &target);
        }
    }
    Ok(current)
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

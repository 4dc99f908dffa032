//! The job-file layer: lines into sections, `include` expanded, `[global]`
//! options snapshotted into each job that follows them; also fio's
//! command-line form (`--name=a --filename=… --name=b …`).

use std::path::{Path, PathBuf};

use super::error::{FioError, Location};

/// Longest include chain accepted.
const MAX_INCLUDE_DEPTH: usize = 16;

/// One `key=value` or bare `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Option name, lower case.
    pub key: String,
    /// Value, trimmed; `None` for a bare key.
    pub value: Option<String>,
    /// Where it was written.
    pub at: Location,
}

/// One job section with the `[global]` options in force where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Section name.
    pub name: String,
    /// The `[name]` line.
    pub at: Location,
    /// `[global]` options in force, in order.
    pub inherited: Vec<Entry>,
    /// The section's own options, in order.
    pub entries: Vec<Entry>,
}

struct Reader {
    global: Vec<Entry>,
    sections: Vec<Section>,
    in_global: bool,
    stack: Vec<PathBuf>,
}

/// Reads a job file and everything it includes.
pub fn read_job_file(path: &Path) -> Result<Vec<Section>, FioError> {
    let mut r = Reader {
        global: Vec::new(),
        sections: Vec::new(),
        in_global: false,
        stack: Vec::new(),
    };
    r.file(path, None)?;
    Ok(r.sections)
}

/// Reads job-file text; `origin` names it in errors and includes are
/// resolved relative to `origin`'s directory.
pub fn read_job_text(text: &str, origin: &Path) -> Result<Vec<Section>, FioError> {
    let mut r = Reader {
        global: Vec::new(),
        sections: Vec::new(),
        in_global: false,
        stack: vec![origin.to_path_buf()],
    };
    r.text(text, origin)?;
    Ok(r.sections)
}

impl Reader {
    fn file(&mut self, path: &Path, from: Option<Location>) -> Result<(), FioError> {
        let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if self.stack.contains(&canon) {
            let chain: Vec<String> = self
                .stack
                .iter()
                .chain(std::iter::once(&canon))
                .map(|p| p.display().to_string())
                .collect();
            return Err(FioError::IncludeCycle {
                at: from.expect("the first file cannot be a repeat"),
                file: path.to_path_buf(),
                chain: chain.join(" → "),
            });
        }
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            return Err(FioError::Syntax {
                at: from.expect("depth exceeded only by an include"),
                message: format!("includes nest deeper than {MAX_INCLUDE_DEPTH} files"),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|source| FioError::Io {
            path: path.to_path_buf(),
            included_from: from,
            source,
        })?;
        self.stack.push(canon);
        self.text(&text, path)?;
        self.stack.pop();
        Ok(())
    }

    fn text(&mut self, text: &str, path: &Path) -> Result<(), FioError> {
        let file = path.display().to_string();
        for (idx, raw) in text.lines().enumerate() {
            let at = Location {
                file: file.clone(),
                line: idx + 1,
            };
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                self.header(rest, at)?;
            } else if let Some(inc) = include_target(line) {
                let base = path.parent().unwrap_or(Path::new("."));
                let target = base.join(inc);
                self.file(&target, Some(at))?;
            } else {
                let entry = parse_entry(line, at)?;
                self.push(entry)?;
            }
        }
        Ok(())
    }

    fn header(&mut self, rest: &str, at: Location) -> Result<(), FioError> {
        let Some(name) = rest.strip_suffix(']').map(str::trim) else {
            return Err(FioError::Syntax {
                at,
                message: "section header without `]`; write `[name]`".into(),
            });
        };
        if name.is_empty() {
            return Err(FioError::Syntax {
                at,
                message: "empty section name; write `[name]`".into(),
            });
        }
        self.in_global = name == "global";
        if !self.in_global {
            self.sections.push(Section {
                name: name.to_string(),
                at,
                inherited: self.global.clone(),
                entries: Vec::new(),
            });
        }
        Ok(())
    }

    fn push(&mut self, entry: Entry) -> Result<(), FioError> {
        if self.in_global {
            self.global.push(entry);
            return Ok(());
        }
        match self.sections.last_mut() {
            Some(s) => {
                s.entries.push(entry);
                Ok(())
            }
            None => Err(FioError::Syntax {
                message: format!(
                    "option `{}` outside any section; put it under [global] or a job section",
                    entry.key
                ),
                at: entry.at,
            }),
        }
    }
}

fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let t = rest.trim();
    (!t.is_empty() && !t.contains('=')).then_some(t)
}

/// Parses `key=value` or a bare `key`.
pub fn parse_entry(line: &str, at: Location) -> Result<Entry, FioError> {
    if line.contains('$') {
        return Err(FioError::Syntax {
            at,
            message: format!(
                "`{line}`: numio does not expand `$` variables or expressions; write the value itself"
            ),
        });
    }
    let (key, value) = match line.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
        None => (line.trim(), None),
    };
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(FioError::Syntax {
            at,
            message: format!("`{line}` is not `key=value` or a bare option name"),
        });
    }
    Ok(Entry {
        key: key.to_ascii_lowercase(),
        value,
        at,
    })
}

/// fio program options (not job options) accepted and dropped from a
/// command line, with a warning: numio reports through its own exporters.
pub const PROGRAM_OPTIONS: &[&str] = &[
    "output",
    "output-format",
    "eta",
    "eta-newline",
    "minimal",
    "status-interval",
    "terse-version",
    "append-terse",
    "bandwidth-log",
];

/// Reads fio's command-line form: options before the first `--name` are
/// global; each `--name=NAME` (`--name NAME`) starts a job (`--name=global`
/// goes back to the global section). `needs_value` tells whether `--key`
/// takes the next argument as its value. Returns the sections and the
/// warnings for dropped program options.
pub fn read_command_line(
    args: &[String],
    needs_value: impl Fn(&str) -> bool,
) -> Result<(Vec<Section>, Vec<String>), FioError> {
    let mut r = Reader {
        global: Vec::new(),
        sections: Vec::new(),
        in_global: true,
        stack: Vec::new(),
    };
    let mut warnings = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let at = Location {
            file: "<command line>".into(),
            line: i + 1,
        };
        let arg = args[i].as_str();
        i += 1;
        if arg == "fio" && i == 1 {
            continue;
        }
        let Some(opt) = arg.strip_prefix("--") else {
            return Err(FioError::Syntax {
                at,
                message: format!("`{arg}`: numio reads job files as `numio bench FILE`, not inside a command line; pass options as --key=value"),
            });
        };
        let (key, mut value) = match opt.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (opt.to_string(), None),
        };
        if value.is_none()
            && (key == "name" || needs_value(&key))
            && i < args.len()
            && !args[i].starts_with("--")
        {
            value = Some(args[i].clone());
            i += 1;
        }
        if PROGRAM_OPTIONS.contains(&key.as_str()) {
            warnings.push(format!("{at}: fio program option --{key} ignored (numio reports through its own exporters)"));
            continue;
        }
        if key == "name" {
            let name = value.clone().unwrap_or_default();
            r.header(&format!("{name}]"), at)?;
            continue;
        }
        let line = match &value {
            Some(v) => format!("{key}={v}"),
            None => key.clone(),
        };
        let entry = parse_entry(&line, at)?;
        r.push(entry)?;
    }
    Ok((r.sections, warnings))
}

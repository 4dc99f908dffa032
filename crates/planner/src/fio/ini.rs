//! The job-file layer: lines into sections, `include` expanded (through an
//! [`IncludeResolver`], within the limits of `include.rs`), `[global]`
//! options snapshotted into each job that follows them; also fio's
//! command-line form (`--name=a --filename=… --name=b …`).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::{FioError, Location};
use super::include::{
    check_size, FsResolver, IncludeResolver, ENTRIES_MAX, JOB_TEXT_BYTES_MAX, SECTIONS_MAX,
};

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

struct Reader<'a> {
    global: Vec<Entry>,
    sections: Vec<Section>,
    in_global: bool,
    stack: Vec<PathBuf>,
    resolver: &'a dyn IncludeResolver,
    /// Bytes of text still allowed ([`JOB_TEXT_BYTES_MAX`] in all).
    bytes_left: u64,
    /// Options held over all sections ([`ENTRIES_MAX`] at most).
    entries_held: usize,
}

impl<'a> Reader<'a> {
    fn new(resolver: &'a dyn IncludeResolver, in_global: bool) -> Reader<'a> {
        Reader {
            global: Vec::new(),
            sections: Vec::new(),
            in_global,
            stack: Vec::new(),
            resolver,
            bytes_left: JOB_TEXT_BYTES_MAX,
            entries_held: 0,
        }
    }
}

/// Reads a job file and everything it includes. The file itself may be
/// anything readable (`numio bench <(…)` gives a pipe), within
/// [`JOB_TEXT_BYTES_MAX`]; its includes are regular files only.
pub fn read_job_file(path: &Path) -> Result<Vec<Section>, FioError> {
    let io = |source| FioError::Io {
        path: path.to_path_buf(),
        included_from: None,
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(JOB_TEXT_BYTES_MAX + 1).read_to_end(&mut bytes))
        .and_then(|_| check_size(bytes.len(), JOB_TEXT_BYTES_MAX))
        .map_err(io)?;
    let text = super::include::text(bytes).map_err(io)?;
    let mut r = Reader::new(&FsResolver, false);
    r.stack.push(FsResolver.canonical(path));
    r.bytes_left -= text.len() as u64;
    r.text(&text, path)?;
    Ok(r.sections)
}

/// Reads job-file text; `origin` names it in errors and includes are
/// resolved relative to `origin`'s directory, through `resolver`.
pub fn read_job_text(
    text: &str,
    origin: &Path,
    resolver: &dyn IncludeResolver,
) -> Result<Vec<Section>, FioError> {
    let mut r = Reader::new(resolver, false);
    r.stack.push(origin.to_path_buf());
    check_size(text.len(), JOB_TEXT_BYTES_MAX).map_err(|source| FioError::Io {
        path: origin.to_path_buf(),
        included_from: None,
        source,
    })?;
    r.bytes_left -= text.len() as u64;
    r.text(text, origin)?;
    Ok(r.sections)
}

impl Reader<'_> {
    fn file(&mut self, path: &Path, from: Option<Location>) -> Result<(), FioError> {
        let canon = self.resolver.canonical(path);
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
        let text = self
            .resolver
            .read(path, self.bytes_left)
            .map_err(|source| FioError::Io {
                path: path.to_path_buf(),
                included_from: from,
                source,
            })?;
        self.bytes_left -= text.len() as u64;
        self.stack.push(canon);
        self.text(&text, path)?;
        self.stack.pop();
        Ok(())
    }

    /// Reads the lines of one file. Until one line of it reads as a job
    /// file's, its errors quote none of its text: an `include
    /// /etc/shadow` must not print a password field.
    fn text(&mut self, text: &str, path: &Path) -> Result<(), FioError> {
        let file = path.display().to_string();
        let mut job_file = false;
        for (idx, raw) in text.lines().enumerate() {
            let at = Location {
                file: file.clone(),
                line: idx + 1,
            };
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            self.line(line, at, path, job_file)?;
            job_file = true;
        }
        Ok(())
    }

    /// One line; `quote` when its file read as a job file before it.
    fn line(&mut self, line: &str, at: Location, path: &Path, quote: bool) -> Result<(), FioError> {
        if let Some(rest) = line.strip_prefix('[') {
            self.header(rest, at)
        } else if let Some(inc) = include_target(line) {
            let base = path.parent().unwrap_or(Path::new("."));
            let target = base.join(inc);
            self.file(&target, Some(at))
        } else {
            let entry = match parse_entry(line, at.clone()) {
                Err(FioError::Syntax { .. }) if !quote => return Err(FioError::Syntax {
                    at,
                    message: "not a job-file line (not shown: this may not be a job file); give or include a fio job file".into(),
                }),
                r => r?,
            };
            self.push(entry)
        }
    }

    /// Counts `n` more options held, against [`ENTRIES_MAX`].
    fn hold(&mut self, n: usize, at: &Location) -> Result<(), FioError> {
        self.entries_held += n;
        if self.entries_held > ENTRIES_MAX {
            return Err(FioError::Limit {
                at: at.clone(),
                message: format!(
                    "more than {ENTRIES_MAX} options over all sections ([global] options counted once per section); fewer sections or options"
                ),
            });
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
            if self.sections.len() == SECTIONS_MAX {
                return Err(FioError::Limit {
                    at,
                    message: format!(
                        "more than {SECTIONS_MAX} job sections (includes counted each time they are included); one run takes at most {SECTIONS_MAX} jobs"
                    ),
                });
            }
            self.hold(self.global.len() + 1, &at)?;
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
        self.hold(1, &entry.at)?;
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
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if key.is_empty() || !key.chars().all(name_char) {
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
    let mut r = Reader::new(&FsResolver, true);
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

//! numio serve's log: every line the target and `numio serve` write goes
//! through [`emit`], in the format and above the level the operator chose
//! (`--log-format text|logfmt|json`, `--log-level`), and with journald's
//! priority prefix (`<4>` for a warning, sd-daemon(3)) where the stream is
//! the journal (systemd sets `JOURNAL_STREAM` to its device and inode).
//!
//! - `text` is the lines people read (and the lab's checks wait for):
//!   `numio serve: connected …`, a warning as `numio serve: warning: …`.
//! - `logfmt` and `json` add a timestamp (RFC 3339, UTC, milliseconds), the
//!   level, an event name that does not change with the wording, the text
//!   as `msg`, and each line's own fields (peer, subsystem, host, qid, …),
//!   numbers as numbers in JSON.
//!
//! Each line keeps its stream in every format: state lines (listening,
//! ready, connected, reloaded) on stdout, warnings, refusals and closed
//! connections on stderr. A line is written with one `write` of the locked
//! stream, so lines of several reactors never interleave.

use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// How lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// `numio serve: TEXT`.
    #[default]
    Text,
    /// `ts=… level=… event=… msg="…" key=value …`.
    Logfmt,
    /// One JSON object per line.
    Json,
}

/// A line's severity, as syslog numbers them (lower is more severe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Something failed.
    Error = 3,
    /// Something the operator should look at.
    Warn = 4,
    /// Worth knowing, not wrong (`note:` in text).
    Notice = 5,
    /// What the target is doing.
    Info = 6,
    /// Every closed connection, also the ordinary ones.
    Debug = 7,
}

impl Level {
    /// Its name in logfmt and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Notice => "notice",
            Self::Info => "info",
            Self::Debug => "debug",
        }
    }

    /// The level named `name` in logfmt and JSON.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Error,
            Self::Warn,
            Self::Notice,
            Self::Info,
            Self::Debug,
        ]
        .into_iter()
        .find(|l| l.name() == name)
    }

    /// What text lines of this level start with after `numio serve: `.
    pub fn text_prefix(self) -> &'static str {
        match self {
            Self::Error => "error: ",
            Self::Warn => "warning: ",
            Self::Notice => "note: ",
            Self::Info | Self::Debug => "",
        }
    }
}

/// Which standard stream a line goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// State lines.
    Out,
    /// Warnings, refusals, closed connections.
    Err,
}

/// A field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (quoted in logfmt where it needs it, always in JSON).
    Str(String),
    /// A number.
    Int(i64),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Self::Str(s.to_owned())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Self::Str(s)
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Self {
        Self::Str(s.clone())
    }
}
macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self {
                Self::Int(v as i64)
            }
        }
    )*};
}
int_value!(u8, u16, u32, u64, usize, i32, i64);

/// The log's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logger {
    /// The format.
    pub format: Format,
    /// Lines less severe than this are dropped.
    pub level: Level,
    /// stdout is the journal (prefix `<N>`).
    pub journal_out: bool,
    /// stderr is the journal.
    pub journal_err: bool,
}

impl Logger {
    /// `format` and `level`, with the journal found from `JOURNAL_STREAM`.
    pub fn new(format: Format, level: Level) -> Self {
        let journal = std::env::var("JOURNAL_STREAM").ok();
        let j = journal.as_deref();
        Self {
            format,
            level,
            journal_out: j.is_some_and(|j| fd_is(std::io::stdout(), j)),
            journal_err: j.is_some_and(|j| fd_is(std::io::stderr(), j)),
        }
    }

    /// Whether lines of `level` are written.
    pub fn enabled(&self, level: Level) -> bool {
        level <= self.level
    }

    /// The line (with its newline) for `now_ms` milliseconds since the epoch.
    pub fn render(
        &self,
        stream: Stream,
        level: Level,
        event: &str,
        text: &str,
        fields: &[(&str, Value)],
        now_ms: u64,
    ) -> String {
        let mut line = String::new();
        let journal = match stream {
            Stream::Out => self.journal_out,
            Stream::Err => self.journal_err,
        };
        if journal {
            let _ = write!(line, "<{}>", level as u8);
        }
        match self.format {
            Format::Text => {
                let _ = write!(line, "numio serve: {}{text}", level.text_prefix());
            }
            Format::Logfmt => {
                let _ = write!(
                    line,
                    "ts={} level={} event={}",
                    rfc3339_ms(now_ms),
                    level.name(),
                    logfmt_str(event)
                );
                let _ = write!(line, " msg={}", logfmt_str(text));
                for (k, v) in fields {
                    let _ = match v {
                        Value::Str(s) => write!(line, " {k}={}", logfmt_str(s)),
                        Value::Int(n) => write!(line, " {k}={n}"),
                    };
                }
            }
            Format::Json => {
                let mut obj = serde_json::Map::new();
                obj.insert("ts".into(), rfc3339_ms(now_ms).into());
                obj.insert("level".into(), level.name().into());
                obj.insert("event".into(), event.into());
                obj.insert("msg".into(), text.into());
                for (k, v) in fields {
                    let v = match v {
                        Value::Str(s) => serde_json::Value::from(s.as_str()),
                        Value::Int(n) => serde_json::Value::from(*n),
                    };
                    obj.insert((*k).to_owned(), v);
                }
                line.push_str(&serde_json::Value::Object(obj).to_string());
            }
        }
        line.push('\n');
        line
    }
}

static LOGGER: OnceLock<Logger> = OnceLock::new();

/// Sets the log's format and level once, before the target starts; later
/// calls change nothing and return false.
pub fn init(format: Format, level: Level) -> bool {
    LOGGER.set(Logger::new(format, level)).is_ok()
}

/// The settings in force (text, info, where [`init`] was not called).
pub fn logger() -> &'static Logger {
    LOGGER.get_or_init(|| Logger::new(Format::Text, Level::Info))
}

/// Whether lines of `level` are written (skip building one that is not).
pub fn enabled(level: Level) -> bool {
    logger().enabled(level)
}

/// Writes one line: `text` is what a person reads (without `numio serve: `
/// or a `warning: `, which text format adds), `event` a stable name,
/// `fields` what logfmt and JSON carry besides.
pub fn emit(
    stream: Stream,
    level: Level,
    event: &str,
    text: fmt::Arguments<'_>,
    fields: &[(&str, Value)],
) {
    let l = logger();
    if !l.enabled(level) {
        return;
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let line = l.render(stream, level, event, &text.to_string(), fields, now_ms);
    // A closed stdout or stderr (the operator's pipe went away) must not
    // stop the target.
    let _ = match stream {
        Stream::Out => std::io::stdout().lock().write_all(line.as_bytes()),
        Stream::Err => std::io::stderr().lock().write_all(line.as_bytes()),
    };
}

/// A state line: stdout, [`Level::Info`].
pub fn info(event: &str, text: fmt::Arguments<'_>, fields: &[(&str, Value)]) {
    emit(Stream::Out, Level::Info, event, text, fields);
}

/// A warning: stderr, [`Level::Warn`].
pub fn warn(event: &str, text: fmt::Arguments<'_>, fields: &[(&str, Value)]) {
    emit(Stream::Err, Level::Warn, event, text, fields);
}

/// A note: stderr, [`Level::Notice`].
pub fn note(event: &str, text: fmt::Arguments<'_>, fields: &[(&str, Value)]) {
    emit(Stream::Err, Level::Notice, event, text, fields);
}

/// Whether `fd` is the `DEV:INO` that `JOURNAL_STREAM` names.
fn fd_is(fd: impl rustix::fd::AsFd, journal_stream: &str) -> bool {
    let Some((dev, ino)) = journal_stream.split_once(':') else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    rustix::fs::fstat(fd).is_ok_and(|st| st.st_dev == dev && st.st_ino == ino)
}

/// A logfmt value: bare where it is one token, else quoted with `"` and `\`
/// escaped and control characters as `\n`, `\t` or `\u{..}`.
fn logfmt_str(s: &str) -> String {
    let bare = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '=' && c != '\\');
    if bare {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `ms` milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, sod) = ((secs / 86_400) as i64, secs % 86_400);
    // Days to the civil date (H. Hinnant's days_from_civil, inverted).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logger(format: Format, level: Level) -> Logger {
        Logger {
            format,
            level,
            journal_out: false,
            journal_err: false,
        }
    }

    const T: u64 = 1_795_000_000_123; // 2026-11-18T11:06:40.123Z

    #[test]
    fn dates() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(T), "2026-11-18T11:06:40.123Z");
        // 2024-02-29T23:59:59.999Z: a leap day.
        assert_eq!(rfc3339_ms(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339_ms(951_868_800_000), "2000-03-01T00:00:00.000Z");
    }

    #[test]
    fn text_is_the_lines_people_read() {
        let l = logger(Format::Text, Level::Info);
        let f = [("peer", Value::from("127.0.0.1:5000"))];
        assert_eq!(
            l.render(
                Stream::Err,
                Level::Warn,
                "refused",
                "refusing x: full",
                &f,
                T
            ),
            "numio serve: warning: refusing x: full\n"
        );
        assert_eq!(
            l.render(Stream::Out, Level::Info, "ready", "ready", &[], T),
            "numio serve: ready\n"
        );
        assert_eq!(
            l.render(Stream::Err, Level::Notice, "n", "buffered", &[], T),
            "numio serve: note: buffered\n"
        );
    }

    #[test]
    fn logfmt_quotes_what_needs_it() {
        let l = logger(Format::Logfmt, Level::Info);
        let f = [
            ("host", Value::from("nqn.x:uuid")),
            ("qid", Value::from(3u16)),
            ("why", Value::from("a \"b\"\nc")),
            ("empty", Value::from("")),
        ];
        assert_eq!(
            l.render(Stream::Out, Level::Info, "connected", "connected x", &f, T),
            "ts=2026-11-18T11:06:40.123Z level=info event=connected msg=\"connected x\" \
             host=nqn.x:uuid qid=3 why=\"a \\\"b\\\"\\nc\" empty=\"\"\n"
        );
        assert_eq!(logfmt_str("a=b"), "\"a=b\"");
        assert_eq!(logfmt_str("é"), "\"é\"");
        assert_eq!(logfmt_str("\u{1}"), "\"\\u{1}\"");
    }

    #[test]
    fn json_is_one_object_with_typed_fields() {
        let l = logger(Format::Json, Level::Debug);
        let f = [("qid", Value::from(1u16)), ("peer", Value::from("[::1]:9"))];
        let line = l.render(Stream::Err, Level::Debug, "closed", "closing \"x\"", &f, T);
        assert!(line.ends_with('\n') && !line.trim_end().contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["ts"], "2026-11-18T11:06:40.123Z");
        assert_eq!(v["level"], "debug");
        assert_eq!(v["event"], "closed");
        assert_eq!(v["msg"], "closing \"x\"");
        assert_eq!(v["qid"], 1);
        assert_eq!(v["peer"], "[::1]:9");
    }

    #[test]
    fn levels_filter_and_the_journal_gets_priorities() {
        let l = logger(Format::Text, Level::Warn);
        assert!(l.enabled(Level::Error) && l.enabled(Level::Warn));
        assert!(!l.enabled(Level::Notice) && !l.enabled(Level::Info));
        let j = Logger {
            journal_err: true,
            ..logger(Format::Text, Level::Info)
        };
        assert_eq!(
            j.render(Stream::Err, Level::Warn, "w", "x", &[], T),
            "<4>numio serve: warning: x\n"
        );
        assert_eq!(
            j.render(Stream::Out, Level::Info, "i", "x", &[], T),
            "numio serve: x\n",
            "stdout is not the journal here"
        );
    }

    #[test]
    fn journal_stream_names_a_device_and_inode() {
        let f = std::fs::File::open("/proc/self/exe")
            .or_else(|_| std::fs::File::open("/"))
            .expect("open");
        let st = rustix::fs::fstat(&f).expect("fstat");
        assert!(fd_is(&f, &format!("{}:{}", st.st_dev, st.st_ino)));
        assert!(!fd_is(&f, &format!("{}:{}", st.st_dev, st.st_ino + 1)));
        assert!(!fd_is(&f, "garbage"));
    }
}

//! Bounded reading of the channel between controller and agent: lines
//! of at most a given length (the rest of a longer one is skipped, never
//! held), and one ring of a host's last non-protocol lines (stderr, and a
//! login script's output on stdout) capped in lines and in bytes per
//! line. A host that prints without end, or one line of a gigabyte,
//! costs the controller (and the agent) a fixed amount of memory.

use std::collections::VecDeque;
use std::io::{self, BufRead};

/// Longest line the controller reads from an agent: a `result` carries
/// the run's histograms and intervals, which stay far below this.
pub const AGENT_LINE_MAX_BYTES: usize = 64 << 20;

/// Longest line an agent reads from the controller: `prepare` carries
/// bench arguments and target names.
pub const CONTROLLER_LINE_MAX_BYTES: usize = 1 << 20;

/// Lines of a host's stderr and stray stdout kept for its error message.
pub const TAIL_LINES: usize = 20;

/// Bytes of each such line kept (the rest is counted, not kept).
pub const TAIL_LINE_MAX_BYTES: usize = 512;

/// What one bounded read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// A whole line (without its newline) is in the buffer.
    Whole,
    /// A line longer than the limit: its first `max_bytes` bytes are in
    /// the buffer, the rest was read and dropped.
    TooLong {
        /// The whole line's length, newline excluded.
        len_bytes: u64,
    },
}

/// Reads one line of `r` into `buf` (cleared first, newline dropped),
/// keeping at most `max_bytes` bytes of it; `None` at the end of input.
/// A last line without a newline counts as a line.
pub fn read_line_bounded<R: BufRead + ?Sized>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max_bytes: usize,
) -> io::Result<Option<Line>> {
    buf.clear();
    let mut len_bytes: u64 = 0;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if len_bytes == 0 {
                return Ok(None);
            }
            break;
        }
        let (part, used, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        let room = max_bytes.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        len_bytes += part.len() as u64;
        r.consume(used);
        if end {
            break;
        }
    }
    debug_assert!(buf.len() <= max_bytes);
    if len_bytes > max_bytes as u64 {
        Ok(Some(Line::TooLong { len_bytes }))
    } else {
        Ok(Some(Line::Whole))
    }
}

/// A host's last lines outside the protocol, for its error message.
#[derive(Debug, Default)]
pub struct Tail {
    lines: VecDeque<String>,
}

impl Tail {
    /// Keeps `line` (its first [`TAIL_LINE_MAX_BYTES`] bytes, with the
    /// length it had), dropping the oldest past [`TAIL_LINES`].
    pub fn push(&mut self, line: &[u8], len_bytes: u64) {
        let kept = &line[..line.len().min(TAIL_LINE_MAX_BYTES)];
        let mut s = String::from_utf8_lossy(kept).into_owned();
        if len_bytes > kept.len() as u64 {
            s.push_str(&format!("… ({len_bytes} bytes)"));
        }
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(s);
        debug_assert!(self.lines.len() <= TAIL_LINES);
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<(Vec<u8>, Line)> {
        let mut r = io::BufReader::with_capacity(7, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(l) = read_line_bounded(&mut r, &mut buf, max).unwrap() {
            out.push((buf.clone(), l));
        }
        out
    }

    #[test]
    fn lines_past_the_limit_are_cut_and_the_next_line_is_whole() {
        let long = vec![b'x'; 100];
        let mut input = b"ab\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\n\ncd");
        let got = all(&input, 10);
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], (b"ab".to_vec(), Line::Whole));
        assert_eq!(got[1], (vec![b'x'; 10], Line::TooLong { len_bytes: 100 }));
        assert_eq!(got[2], (Vec::new(), Line::Whole));
        assert_eq!(got[3], (b"cd".to_vec(), Line::Whole));
        assert_eq!(all(b"0123456789\n", 10)[0].1, Line::Whole);
        assert!(all(b"", 10).is_empty());
    }

    #[test]
    fn the_tail_keeps_its_last_lines_and_a_head_of_each() {
        let mut t = Tail::default();
        for i in 0..1000 {
            let l = format!("line {i}");
            t.push(l.as_bytes(), l.len() as u64);
        }
        t.push(&[b'y'; 4096], 1 << 30);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines[0], "line 981");
        let last = lines[TAIL_LINES - 1];
        assert!(
            last.ends_with(&format!("… ({} bytes)", 1u64 << 30)),
            "{last}"
        );
        assert!(last.len() < TAIL_LINE_MAX_BYTES + 40);
    }
}

//! Lines about connections (closed, refused) at a bounded rate: a flood of
//! sockets must not become a flood of log lines. At most `max` lines per
//! window; the lines held back are counted and said in one line when the
//! window ends.

use std::time::{Duration, Instant};

/// Lines per window the target prints about connections.
pub const LINES_PER_WINDOW: u32 = 20;
/// The window.
pub const WINDOW: Duration = Duration::from_secs(10);

/// One rate-limited stream of log lines.
#[derive(Debug)]
pub struct LogLimit {
    max: u32,
    window: Duration,
    start: Instant,
    printed: u32,
    held_back: u64,
}

impl LogLimit {
    /// At most `max` lines per `window`, from `now`.
    pub fn new(max: u32, window: Duration, now: Instant) -> Self {
        Self {
            max,
            window,
            start: now,
            printed: 0,
            held_back: 0,
        }
    }

    /// The default: [`LINES_PER_WINDOW`] per [`WINDOW`].
    pub fn standard() -> Self {
        Self::new(LINES_PER_WINDOW, WINDOW, Instant::now())
    }

    /// Ends the window when it is over: the line saying how many lines it
    /// held back, if any.
    pub fn roll(&mut self, now: Instant) -> Option<String> {
        if now.saturating_duration_since(self.start) < self.window {
            return None;
        }
        self.start = now;
        self.printed = 0;
        let n = std::mem::take(&mut self.held_back);
        (n > 0).then(|| {
            format!(
                "{n} more connection line(s) held back in the last {} s (at most {} per window)",
                self.window.as_secs(),
                self.max
            )
        })
    }

    /// Whether a line may be printed now (counted either way).
    pub fn admit(&mut self) -> bool {
        if self.printed < self.max {
            self.printed += 1;
            true
        } else {
            self.held_back += 1;
            false
        }
    }
}

/// Says how many connection lines the rate limit held back (a reactor's
/// or the acceptor's [`LogLimit`]).
pub(crate) fn said_held_back(said: &str) {
    crate::log::emit(
        crate::log::Stream::Err,
        crate::log::Level::Notice,
        "log_lines_held_back",
        format_args!("{said}"),
        &[],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_prints_max_lines_then_one_summary() {
        let t0 = Instant::now();
        let mut l = LogLimit::new(3, Duration::from_secs(10), t0);
        let admitted = (0..100).filter(|_| l.admit()).count();
        assert_eq!(admitted, 3);
        assert_eq!(l.roll(t0 + Duration::from_secs(5)), None, "window not over");
        let said = l.roll(t0 + Duration::from_secs(10)).expect("summary");
        assert!(said.starts_with("97 more connection line(s)"), "{said}");
        assert!(l.admit(), "a new window");
        assert_eq!(
            l.roll(t0 + Duration::from_secs(30)),
            None,
            "nothing held back"
        );
    }
}

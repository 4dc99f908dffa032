//! Lines about connections (closed, refused) at a bounded rate: a flood of
//! sockets must not become a flood of log lines. At most `max` lines per
//! window; the lines held back are counted and said in one line when the
//! window ends.
//!
//! Each reactor and the acceptor hold a [`LogLimit`] of their own for
//! their connection lines; authentication failures (DH-HMAC-CHAP, TLS
//! handshakes), which a host can cause on any reactor, share one
//! [`SharedLogLimit`] over the whole target, so their rate is bounded
//! however many reactors see them.

use std::sync::Mutex;
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
    /// What a line is about, for the held-back line.
    what: &'static str,
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
            what: "connection",
        }
    }

    /// Says the lines are about `what` ("connection" unless told).
    pub fn about(mut self, what: &'static str) -> Self {
        self.what = what;
        self
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
                "{n} more {} line(s) held back in the last {} s (at most {} per window)",
                self.what,
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

/// One [`LogLimit`] for lines any reactor may print: taken under a lock,
/// which only such a line (a refusal, never a command) and a reactor's
/// tick take.
#[derive(Debug)]
pub struct SharedLogLimit {
    limit: Mutex<LogLimit>,
    printed: std::sync::atomic::AtomicU64,
    held_back: std::sync::atomic::AtomicU64,
}

impl SharedLogLimit {
    /// [`LINES_PER_WINDOW`] per [`WINDOW`] of lines about `what`.
    pub fn standard(what: &'static str) -> Self {
        Self {
            limit: Mutex::new(LogLimit::standard().about(what)),
            printed: Default::default(),
            held_back: Default::default(),
        }
    }

    /// Whether a line may be printed now (counted either way); a window
    /// that ended first says what it held back.
    pub fn admit(&self, now: Instant) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let mut l = self.limit.lock().expect("log limit lock");
        if let Some(said) = l.roll(now) {
            said_held_back(&said);
        }
        let admitted = l.admit();
        let n = if admitted {
            &self.printed
        } else {
            &self.held_back
        };
        n.fetch_add(1, Relaxed);
        admitted
    }

    /// Ends the window when it is over (a reactor's tick), saying what it
    /// held back.
    pub fn roll(&self, now: Instant) {
        if let Some(said) = self.limit.lock().expect("log limit lock").roll(now) {
            said_held_back(&said);
        }
    }

    /// Lines printed since the start.
    pub fn printed(&self) -> u64 {
        self.printed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Lines held back since the start.
    pub fn held_back(&self) -> u64 {
        self.held_back.load(std::sync::atomic::Ordering::Relaxed)
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

    #[test]
    fn a_shared_limit_counts_what_it_prints_and_holds_back() {
        let l = SharedLogLimit::standard("authentication failure");
        let t0 = Instant::now();
        let admitted = (0..LINES_PER_WINDOW + 7).filter(|_| l.admit(t0)).count();
        assert_eq!(admitted, LINES_PER_WINDOW as usize);
        assert_eq!((l.printed(), l.held_back()), (LINES_PER_WINDOW as u64, 7));
        let said = l.limit.lock().unwrap().roll(t0 + WINDOW).expect("summary");
        assert!(
            said.starts_with("7 more authentication failure line(s)"),
            "{said}"
        );
        assert!(l.admit(t0 + WINDOW), "a new window");
    }
}

//! What `numio bench`, `compare` and `sweep` show on stderr while a
//! session runs (`session::view` says what, this writes it), and the
//! signal notices.

use std::io::Write;

use session::interrupt::Notice;
use session::view::Out;
pub use session::view::{ProgressMode, Runs};
use session::Event;

/// Writes a session's live view to stderr.
#[derive(Debug)]
pub struct Display(session::view::Display);

impl Display {
    /// A display of `runs` with progress shown as `progress` says.
    pub fn new(progress: ProgressMode, runs: Runs) -> Display {
        Display(session::view::Display::new(progress, runs))
    }

    /// Shows one event.
    pub fn event(&mut self, e: &Event<'_>) {
        match self.0.event(e) {
            Some(Out::Line(l)) => eprintln!("{l}"),
            Some(Out::Redraw(l)) => {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K{l}");
                let _ = err.flush();
            }
            Some(Out::Clear) => eprint!("\r\x1b[2K"),
            None => {}
        }
    }
}

/// Prints the signal thread's notices (installed with
/// `session::interrupt::install`).
pub fn on_signal(notice: Notice) {
    match notice {
        Notice::Stopping { signal } => {
            let name = if signal == libc::SIGTERM {
                "SIGTERM"
            } else {
                "Ctrl-C"
            };
            eprint!(
                "\r\x1b[2Knumio: {name}: stopping; in-flight I/O drains and the report covers the time measured (again to exit at once)\n"
            );
        }
        // Clear a progress line, then go.
        Notice::Exiting { .. } => {
            eprint!("\r\x1b[2Knumio: interrupted again: exiting without a report\n")
        }
    }
}

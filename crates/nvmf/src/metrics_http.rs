//! A metrics endpoint: a minimal HTTP/1.1 responder serving a
//! [`MetricsSource`]'s text (Prometheus' text format) on an address the
//! operator opts into (e.g. `numio serve --metrics 127.0.0.1:9464`):
//! `GET /metrics` (or `/`), one request per connection; anything else gets
//! 404 or 405. [`get`] is the client `numio serve --stats` uses.
//!
//! One thread serves every client without blocking on any: it polls the
//! listener and up to [`CLIENTS_MAX`] clients, reads each request as its
//! bytes come and writes each answer as the client takes it. A client has
//! [`FIRST_BYTE_DEADLINE`] to start its request and [`REQUEST_DEADLINE`]
//! from its accept to the end of its answer, however slowly it trickles
//! (issue 38: a client sending a byte every 4 s held the old one-at-a-time
//! responder for 40 s and more, and 20 idle sockets delayed a scrape by
//! 102 s); past [`CLIENTS_MAX`] the oldest client is closed.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};

/// What a metrics endpoint serves: the text of one scrape, and whether to
/// stop serving.
pub trait MetricsSource: Send + Sync + 'static {
    /// The metrics in Prometheus' text format, as of now.
    fn metrics_text(&self) -> String;
    /// True once the endpoint's thread should end.
    fn stopped(&self) -> bool;
}

/// What went wrong serving or reading a metrics endpoint.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The address could not be bound.
    #[error("cannot listen on {addr} (is the port taken? pick another, e.g. 127.0.0.1:9465)")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The listener could not be set up or its thread started.
    #[error("{step}")]
    Setup {
        /// The step that failed.
        step: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Nothing answered at the address.
    #[error("connecting to {addr} (is numio serve running with --metrics {addr}?)")]
    Connect {
        /// The endpoint.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The request could not be sent or the answer read.
    #[error("reading the answer of {addr}")]
    Read {
        /// The endpoint.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The answer was not HTTP.
    #[error("{addr} did not answer in HTTP")]
    NotHttp {
        /// The endpoint.
        addr: SocketAddr,
    },
    /// The answer's status line had no status code.
    #[error("{addr}: no status code in {line:?}")]
    NoStatus {
        /// The endpoint.
        addr: SocketAddr,
        /// The status line as received.
        line: String,
    },
}

/// Binds `addr` and serves `source`'s metrics from a thread until
/// [`MetricsSource::stopped`]; returns the bound address.
pub fn start(addr: SocketAddr, source: Arc<dyn MetricsSource>) -> Result<SocketAddr, HttpError> {
    let listener = TcpListener::bind(addr).map_err(|source| HttpError::Listen { addr, source })?;
    let setup = |step| move |source| HttpError::Setup { step, source };
    listener
        .set_nonblocking(true)
        .map_err(setup("a non-blocking listener"))?;
    let bound = listener
        .local_addr()
        .map_err(setup("the listener's address"))?;
    std::thread::Builder::new()
        .name("numio-metrics".into())
        .spawn(move || serve(listener, &*source))
        .map_err(setup("spawning the metrics thread"))?;
    Ok(bound)
}

/// Longest request head read.
const REQUEST_MAX_BYTES: usize = 8192;
/// How long a client may take to send the first byte of its request.
const FIRST_BYTE_DEADLINE: Duration = Duration::from_secs(1);
/// How long a client may take, from its accept, to send its request and
/// read the answer.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Clients served at once; a newer one closes the oldest.
const CLIENTS_MAX: usize = 64;
/// Longest poll: how soon the thread notices a shutdown.
const POLL_MAX: Duration = Duration::from_millis(200);
/// How long a client may take to read an answer in [`get`].
const CLIENT_DEADLINE: Duration = Duration::from_secs(5);

/// One client: its request as read so far, then its answer as sent so far.
struct Client {
    conn: TcpStream,
    accepted: Instant,
    head: Vec<u8>,
    answer: Vec<u8>,
    sent: usize,
}

impl Client {
    /// Whether it has run out of time at `now`.
    fn expired(&self, now: Instant) -> bool {
        let age = now.saturating_duration_since(self.accepted);
        age > REQUEST_DEADLINE || (self.head.is_empty() && age > FIRST_BYTE_DEADLINE)
    }

    /// When it runs out of time.
    fn deadline(&self) -> Instant {
        match self.head.is_empty() {
            true => self.accepted + FIRST_BYTE_DEADLINE,
            false => self.accepted + REQUEST_DEADLINE,
        }
    }

    /// Takes in what arrived or sends what it can; false when done (the
    /// answer sent, or the client closed or failed).
    fn progress(&mut self, source: &dyn MetricsSource) -> bool {
        if self.answer.is_empty() {
            let mut buf = [0u8; 1024];
            match self.conn.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => self.head.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
            if self.head.len() > REQUEST_MAX_BYTES {
                self.answer = respond(
                    "431 Request Header Fields Too Large",
                    "text/plain",
                    b"",
                    true,
                );
            } else if self.head.windows(4).any(|w| w == b"\r\n\r\n") {
                self.answer = answer(&self.head, source);
            } else {
                return true;
            }
        }
        while self.sent < self.answer.len() {
            match self.conn.write(&self.answer[self.sent..]) {
                Ok(0) => return false,
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
        false
    }
}

fn serve(listener: TcpListener, source: &dyn MetricsSource) {
    let mut clients: Vec<Client> = Vec::new();
    while !source.stopped() {
        let now = Instant::now();
        let wait = clients
            .iter()
            .map(|c| c.deadline().saturating_duration_since(now))
            .fold(POLL_MAX, Duration::min);
        let ready = {
            let mut fds = Vec::with_capacity(clients.len() + 1);
            fds.push(PollFd::new(&listener, PollFlags::IN));
            for c in &clients {
                let want = match c.answer.is_empty() {
                    true => PollFlags::IN,
                    false => PollFlags::OUT,
                };
                fds.push(PollFd::from_borrowed_fd(c.conn.as_fd(), want));
            }
            let timeout = Timespec::try_from(wait).unwrap_or(Timespec {
                tv_sec: 0,
                tv_nsec: 200_000_000,
            });
            if poll(&mut fds, Some(&timeout)).is_err() {
                continue; // EINTR
            }
            fds.iter()
                .map(|f| !f.revents().is_empty())
                .collect::<Vec<_>>()
        };
        // Clients first (the indexes are the poll's), then newcomers.
        let mut i = clients.len();
        while i > 0 {
            i -= 1;
            let keep = match ready[i + 1] {
                true => clients[i].progress(source),
                false => true,
            };
            if !keep || clients[i].expired(Instant::now()) {
                clients.swap_remove(i);
            }
        }
        if ready[0] {
            accept_all(&listener, &mut clients);
        }
    }
}

fn accept_all(listener: &TcpListener, clients: &mut Vec<Client>) {
    while let Ok((conn, _)) = listener.accept() {
        if conn.set_nonblocking(true).is_err() {
            continue;
        }
        if clients.len() >= CLIENTS_MAX {
            // swap_remove reorders: the oldest is the earliest accepted.
            if let Some(oldest) = (0..clients.len()).min_by_key(|&i| clients[i].accepted) {
                clients.swap_remove(oldest);
            }
        }
        clients.push(Client {
            conn,
            accepted: Instant::now(),
            head: Vec::new(),
            answer: Vec::new(),
            sent: 0,
        });
    }
}

/// The whole answer (head and body) to a request head.
fn answer(head: &[u8], source: &dyn MetricsSource) -> Vec<u8> {
    let line = String::from_utf8_lossy(head);
    let mut words = line.lines().next().unwrap_or("").split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            let body = source.metrics_text();
            let ctype = "text/plain; version=0.0.4; charset=utf-8";
            respond("200 OK", ctype, body.as_bytes(), method == "GET")
        }
        ("GET" | "HEAD", _) => {
            let body = b"numio: metrics are at /metrics\n";
            respond("404 Not Found", "text/plain", body, method == "GET")
        }
        _ => respond("405 Method Not Allowed", "text/plain", b"use GET\n", true),
    }
}

fn respond(status: &str, content_type: &str, body: &[u8], with_body: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if with_body {
        out.extend_from_slice(body);
    }
    out
}

/// GET `path` from `addr` (HTTP/1.1, one request); the status code and body.
pub fn get(addr: SocketAddr, path: &str) -> Result<(u16, String), HttpError> {
    let mut conn = TcpStream::connect_timeout(&addr, CLIENT_DEADLINE)
        .map_err(|source| HttpError::Connect { addr, source })?;
    let read = |source| HttpError::Read { addr, source };
    conn.set_read_timeout(Some(CLIENT_DEADLINE)).map_err(read)?;
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(read)?;
    let mut text = String::new();
    conn.read_to_string(&mut text).map_err(read)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or(HttpError::NotHttp { addr })?;
    let line = head.lines().next().unwrap_or("");
    let code = line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| HttpError::NoStatus {
            addr,
            line: line.to_string(),
        })?;
    Ok((code, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NamespaceConfig, SubsystemConfig, TargetConfig};
    use crate::tgt::subsystem::Target;

    fn target() -> Arc<dyn MetricsSource> {
        let cfg = TargetConfig {
            subsystems: vec![SubsystemConfig {
                nqn: "nqn.2026-01.io.numio:m".into(),
                serial: "S".into(),
                model: "M".into(),
                allowed_hosts: Vec::new(),
                allow_any_host: true,
                hosts: Vec::new(),
                namespaces: vec![NamespaceConfig::new("mem:1M")],
            }],
            ..Default::default()
        };
        Target::new(&cfg).unwrap()
    }

    #[test]
    fn serves_metrics_and_refuses_the_rest() {
        let addr = start("127.0.0.1:0".parse().unwrap(), target()).unwrap();
        let (code, body) = get(addr, "/metrics").unwrap();
        assert_eq!(code, 200);
        assert!(body.contains("numio_connections 0\n"), "{body}");
        assert!(
            body.contains(
                "numio_namespace_size_bytes{subsystem=\"nqn.2026-01.io.numio:m\",nsid=\"1\",backing=\"mem:1M\"} 1048576"
            ),
            "{body}"
        );
        assert_eq!(get(addr, "/nope").unwrap().0, 404);
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"POST /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 405 "), "{text}");
    }

    /// Regression: 20 idle sockets delayed a scrape by 102 s, served one
    /// at a time (issue 38). The scrape is answered while every partial
    /// request is still open: no client waited for another's deadline.
    #[test]
    fn idle_and_slow_clients_do_not_delay_a_scrape() {
        let addr = start("127.0.0.1:0".parse().unwrap(), target()).unwrap();
        let _silent: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let partial: Vec<TcpStream> = (0..10)
            .map(|_| {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(b"GET /met").unwrap();
                c
            })
            .collect();
        let (code, body) = get(addr, "/metrics").unwrap();
        assert_eq!(code, 200);
        assert!(body.contains("numio_connections 0\n"), "{body}");
        for (i, mut c) in partial.into_iter().enumerate() {
            c.set_nonblocking(true).unwrap();
            let r = c.read(&mut [0u8; 16]);
            assert!(
                matches!(&r, Err(e) if e.kind() == ErrorKind::WouldBlock),
                "partial request {i} was ended before the scrape was answered: {r:?}"
            );
        }
    }

    /// A client's time runs from its accept, however it trickles: one
    /// deadline per request, a shorter one for its first byte.
    #[test]
    fn one_deadline_per_request_and_a_short_one_for_the_first_byte() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t0 = Instant::now();
        let mut c = Client {
            conn: l.accept().unwrap().0,
            accepted: t0,
            head: Vec::new(),
            answer: Vec::new(),
            sent: 0,
        };
        assert!(!c.expired(t0 + FIRST_BYTE_DEADLINE));
        assert!(c.expired(t0 + FIRST_BYTE_DEADLINE + Duration::from_millis(1)));
        c.head.extend_from_slice(b"G"); // a byte, then one every 4 s
        assert!(!c.expired(t0 + Duration::from_secs(4)));
        assert!(c.expired(t0 + REQUEST_DEADLINE + Duration::from_millis(1)));
        assert_eq!(c.deadline(), t0 + REQUEST_DEADLINE);
    }
}

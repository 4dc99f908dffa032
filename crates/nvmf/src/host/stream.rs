//! A host queue's transport: the TCP socket, or TLS 1.3 over it
//! (`crate::tls::ossl::connect` ran the handshake). The blocking initiator
//! and the engine's non-blocking loop read and write it alike.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

use openssl::ssl::SslStream;

/// A connected queue's byte stream.
#[derive(Debug)]
pub enum Stream {
    /// Plain NVMe/TCP.
    Plain(TcpStream),
    /// NVMe/TCP in TLS 1.3 records.
    Tls(Box<SslStream<TcpStream>>),
}

impl Stream {
    /// The socket below.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
        }
    }

    /// Makes the socket (non-)blocking; TLS then reports `WouldBlock` as
    /// the socket does.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        self.tcp().set_nonblocking(on)
    }

    /// Plain text already decrypted and waiting: read it before polling
    /// the socket, which has nothing more to say about it.
    pub fn buffered(&self) -> bool {
        match self {
            Stream::Plain(_) => false,
            Stream::Tls(s) => s.ssl().pending() > 0,
        }
    }

    /// The TLS cipher suite, when the queue runs over TLS.
    pub fn tls_cipher(&self) -> Option<String> {
        match self {
            Stream::Plain(_) => None,
            Stream::Tls(s) => s
                .ssl()
                .current_cipher()
                .map(|c| c.standard_name().unwrap_or(c.name()).to_string()),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        self.tcp().as_raw_fd()
    }
}

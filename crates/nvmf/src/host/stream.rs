//! A host queue's transport: the TCP socket, or TLS 1.3 over it
//! (`crate::tls::ossl::connect` ran the handshake, with libssl opened at
//! run time). The blocking initiator
//! and the engine's non-blocking loop read and write it alike.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

use crate::tls::ossl::TlsStream;

/// A connected queue's byte stream.
#[derive(Debug)]
pub enum Stream {
    /// Plain NVMe/TCP.
    Plain(TcpStream),
    /// NVMe/TCP in TLS 1.3 records.
    Tls(TlsStream),
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
            Stream::Tls(s) => s.pending() > 0,
        }
    }

    /// Sets the socket up for a loop that mostly does not wait but sleeps
    /// in `recv` when it has nothing else to do ([`Stream::read_wait`]):
    /// plain TCP stays blocking, with `timeout` as its receive timeout, and
    /// the other calls pass `MSG_DONTWAIT`; TLS goes non-blocking (its
    /// loop waits in poll(2)). One `recv` that sleeps replaces the
    /// `read` (EAGAIN), `poll` and `read` of a loop on a non-blocking
    /// socket.
    pub fn set_wait_in_read(&self, timeout: std::time::Duration) -> io::Result<()> {
        match self {
            Stream::Plain(s) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(timeout))
            }
            Stream::Tls(s) => s.get_ref().set_nonblocking(true),
        }
    }

    /// Whether [`Stream::read_wait`] can sleep in the read (plain TCP after
    /// [`Stream::set_wait_in_read`]).
    pub fn can_wait_in_read(&self) -> bool {
        matches!(self, Stream::Plain(_))
    }

    /// Reads what is there now; `WouldBlock` when nothing is.
    pub fn read_nowait(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => recv(s.as_raw_fd(), buf, libc::MSG_DONTWAIT),
            Stream::Tls(s) => s.read(buf),
        }
    }

    /// Reads, sleeping until bytes arrive or the receive timeout passes
    /// (`WouldBlock` then). TLS does not wait: it reads as
    /// [`Stream::read_nowait`] does.
    pub fn read_wait(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => recv(s.as_raw_fd(), buf, 0),
            Stream::Tls(s) => s.read(buf),
        }
    }

    /// Writes what the socket takes now; `WouldBlock` when it takes
    /// nothing.
    pub fn write_nowait(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored_nowait(&[io::IoSlice::new(buf)])
    }

    /// Writes what the socket takes now of `iov`, in order, in one
    /// sendmsg(2) over plain TCP (TLS writes the first non-empty slice);
    /// `WouldBlock` when it takes nothing.
    pub fn write_vectored_nowait(&mut self, iov: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => {
                // SAFETY: a zeroed msghdr is valid (no name, no control).
                let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
                // IoSlice is ABI-compatible with iovec on Unix; sendmsg only
                // reads the slices.
                msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
                msg.msg_iovlen = iov.len() as _;
                // SAFETY: `msg` points at `iov.len()` valid iovecs for the
                // duration of the call.
                byte_count(unsafe {
                    libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
                })
            }
            Stream::Tls(s) => {
                let b = iov
                    .iter()
                    .find(|b| !b.is_empty())
                    .map_or(&[][..], |b| &b[..]);
                s.write(b)
            }
        }
    }

    /// The TLS cipher suite, when the queue runs over TLS.
    pub fn tls_cipher(&self) -> Option<String> {
        match self {
            Stream::Plain(_) => None,
            Stream::Tls(s) => s.cipher(),
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

/// recv(2) into `buf` with `flags`.
fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the
    // duration of the call.
    byte_count(unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) })
}

/// A byte count a system call returned, or its error (-1 and errno).
fn byte_count(n: isize) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

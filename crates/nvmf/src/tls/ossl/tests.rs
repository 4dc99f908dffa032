//! Both ends of the handshake in one process: numio's client
//! ([`connect`]) over a socket to a [`ServerSession`] fed from the other
//! end of it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use super::*;

const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-000000000001";
const SUB: &str = "nqn.2026-01.io.numio:tls";

struct OneKey(ConfiguredPsk);

impl PskLookup for OneKey {
    fn tls_psk(&self, id: &Identity) -> Result<Zeroizing<Vec<u8>>, PskRefusal> {
        if id.hostnqn != HOST {
            return Err(PskRefusal::NoKey {
                hostnqn: id.hostnqn.clone(),
                subnqn: id.subnqn.clone(),
            });
        }
        self.0.psk_for(id).ok_or_else(|| PskRefusal::OtherKey {
            hostnqn: id.hostnqn.clone(),
            subnqn: id.subnqn.clone(),
        })
    }
}

/// How a served connection ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The host sent close_notify.
    Notify,
    /// The socket closed.
    Eof,
}

/// Why a served connection failed.
#[derive(Debug)]
enum Failed {
    /// The session's error.
    Session(SessionError),
    /// The socket closed before the handshake finished.
    Closed,
}

impl From<SessionError> for Failed {
    fn from(e: SessionError) -> Self {
        Failed::Session(e)
    }
}

/// The serving thread: the peer and how it ended, or why not.
type Served = std::thread::JoinHandle<Result<(TlsPeer, End), Failed>>;

/// Serves one connection: echoes each plain-text chunk back upper-cased.
fn serve(l: TcpListener, ctx: ServerContext) -> Served {
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut session = ctx.session()?;
        let mut peer = None;
        let mut buf = vec![0u8; 64 * 1024];
        let mut out = Vec::new();
        loop {
            let n = match s.read(&mut buf) {
                Ok(0) | Err(_) => return peer.map(|p| (p, End::Eof)).ok_or(Failed::Closed),
                Ok(n) => n,
            };
            let mut echo = Vec::new();
            match session.receive(&buf[..n], |p| echo.extend(p.to_ascii_uppercase()))? {
                Received::Established(p) => peer = Some(p),
                Received::Closed => return peer.map(|p| (p, End::Notify)).ok_or(Failed::Closed),
                Received::More => {}
            }
            if !echo.is_empty() {
                session.send(&echo)?;
            }
            if session.has_output() {
                session.take_output(&mut out);
                s.write_all(&out).unwrap();
                out.clear();
            }
        }
    })
}

fn pair(server_key: ConfiguredPsk) -> (TcpStream, Served) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = serve(l, ServerContext::new(Arc::new(OneKey(server_key))).unwrap());
    let c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    (c, h)
}

#[test]
fn both_cipher_suites_carry_data_and_name_the_host() {
    for len in [32, 48] {
        let key = ConfiguredPsk::generate(len);
        let (c, h) = pair(key.clone());
        let mut tls = connect(c, &key, HOST, SUB).unwrap();
        assert_eq!(tls.cipher().as_deref(), Some(key.hash().cipher_suite()));
        let big: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        tls.write_all(&big).unwrap();
        let mut back = vec![0u8; big.len()];
        tls.read_exact(&mut back).unwrap();
        assert_eq!(back, big.to_ascii_uppercase());
        // Plain text left in a record is pending; a non-blocking read with
        // nothing to read would block.
        tls.write_all(b"hello").unwrap();
        let mut one = [0u8; 1];
        tls.read_exact(&mut one).unwrap();
        assert_eq!(&one, b"H");
        assert_eq!(tls.pending(), 4);
        let mut rest = [0u8; 4];
        tls.read_exact(&mut rest).unwrap();
        assert_eq!(&rest, b"ELLO");
        assert_eq!(tls.pending(), 0);
        tls.get_ref().set_nonblocking(true).unwrap();
        let e = tls.read(&mut one).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}");
        tls.get_ref().set_nonblocking(false).unwrap();
        tls.shutdown().unwrap();
        let (peer, end) = h.join().unwrap().unwrap();
        assert_eq!(end, End::Notify);
        assert_eq!(peer.identity.hostnqn, HOST);
        assert_eq!(peer.identity.subnqn, SUB);
        assert_eq!(peer.identity.version, 1);
        assert_eq!(peer.cipher, key.hash().cipher_suite());
    }
}

#[test]
fn another_key_is_refused_and_both_sides_say_why() {
    let (c, h) = pair(ConfiguredPsk::generate(32));
    let e = connect(c, &ConfiguredPsk::generate(32), HOST, SUB)
        .unwrap_err()
        .to_string();
    assert!(e.contains("TLS handshake failed"), "{e}");
    match h.join().unwrap().unwrap_err() {
        Failed::Session(SessionError::Refused {
            source: PskRefusal::OtherKey { hostnqn, subnqn },
        }) => assert_eq!((hostnqn.as_str(), subnqn.as_str()), (HOST, SUB)),
        e => panic!("{e:?}"),
    }
}

#[test]
fn plain_text_nvme_tcp_is_refused_by_name() {
    let (mut c, h) = pair(ConfiguredPsk::generate(32));
    // An ICReq's common header: type 0, flags 0, hlen 128, pdo 0, plen 128.
    let mut icreq = [0u8; 128];
    icreq[2] = 128;
    icreq[4] = 128;
    c.write_all(&icreq).unwrap();
    match h.join().unwrap().unwrap_err() {
        Failed::Session(e @ SessionError::PlainText) => {
            assert!(e.to_string().contains("plain-text NVMe/TCP"), "{e}")
        }
        e => panic!("{e:?}"),
    }
}

/// Key exchange is X25519 or P-256 only: a client offering only
/// ffdhe8192 (whose key share cost the target's reactor 117–187 ms per
/// handshake) or only P-384 is refused; one that offers P-384 first and
/// P-256 too gets a HelloRetryRequest for P-256 and succeeds.
#[test]
fn key_exchange_is_x25519_or_p256() {
    for (groups, ok) in [
        (c"X25519", true),
        (c"P-256", true),
        (c"P-384:P-256", true),
        (c"ffdhe8192", false),
        (c"P-384", false),
    ] {
        let key = ConfiguredPsk::generate(32);
        let (c, h) = pair(key.clone());
        let r = connect_with(sys::libssl(), groups, c, &key, HOST, SUB);
        let g = groups.to_string_lossy();
        if ok {
            let mut tls = r.unwrap_or_else(|e| panic!("{g}: {e}"));
            tls.write_all(b"x").unwrap();
            let mut one = [0u8; 1];
            tls.read_exact(&mut one).unwrap();
            drop(tls);
            assert_eq!(h.join().unwrap().unwrap().1, End::Eof, "{g}");
        } else {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("TLS handshake failed"), "{g}: {e}");
            match h.join().unwrap().unwrap_err() {
                Failed::Session(e @ SessionError::Handshake { .. }) => {
                    assert!(
                        e.to_string().starts_with("TLS handshake failed: "),
                        "{g}: {e}"
                    )
                }
                e => panic!("{g}: {e:?}"),
            }
        }
    }
}

/// A target that never answers: the handshake gives up at the socket's
/// receive timeout and says so.
#[test]
fn a_silent_target_times_the_handshake_out() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let _held = l.accept().unwrap();
    c.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let key = ConfiguredPsk::generate(32);
    let e = connect(c, &key, HOST, SUB).unwrap_err().to_string();
    assert_eq!(e, "TLS handshake timed out (no answer from the target)");
}

/// Without libssl both ends refuse with the library's text, which names
/// the packages (only TLS opens it: a nonexistent soname stands in for a
/// machine without it).
#[test]
fn without_libssl_both_ends_name_the_package() {
    let absent = sysapi::dylib::Spec {
        sonames: &[c"libssl-numio-absent.so.3"],
        ..sys::LIBSSL
    };
    let missing = || Err(sys::load(&absent).unwrap_err());
    let e = ServerContext::with_library(missing(), Arc::new(OneKey(ConfiguredPsk::generate(32))))
        .unwrap_err();
    assert!(matches!(e, TlsError::Library(_)), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("NVMe/TCP TLS needs libssl-numio-absent.so.3, which cannot be loaded"),
        "{text}"
    );
    assert!(text.contains("apt install libssl3 (libssl3t64"), "{text}");
    assert!(text.contains("dnf install openssl-libs"), "{text}");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let key = ConfiguredPsk::generate(32);
    let e = connect_with(missing(), GROUPS, c, &key, HOST, SUB).unwrap_err();
    assert_eq!(e.to_string(), text);
}

/// A set-up step OpenSSL refuses is named by its variant, with the call
/// and what it was asked.
#[test]
fn a_refused_setup_step_names_its_call_and_input() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let key = ConfiguredPsk::generate(32);
    let e = connect_with(sys::libssl(), c"numio-no-such-group", c, &key, HOST, SUB).unwrap_err();
    match &e {
        TlsError::Setup(SetupError::Groups {
            call,
            groups,
            queue,
        }) => {
            assert_eq!(*call, "SSL_CTX_set1_groups_list");
            assert_eq!(groups, "numio-no-such-group");
            assert!(!queue.is_empty());
        }
        e => panic!("{e:?}"),
    }
    assert!(
        e.to_string()
            .starts_with("setting up OpenSSL (key-exchange groups numio-no-such-group): "),
        "{e}"
    );
}

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
    fn tls_psk(&self, id: &Identity) -> Result<Zeroizing<Vec<u8>>, String> {
        if id.hostnqn != HOST {
            return Err(format!("no key for host {}", id.hostnqn));
        }
        self.0
            .psk_for(id)
            .ok_or_else(|| "the host holds another key".to_string())
    }
}

/// Serves one connection: echoes each plain-text chunk back upper-cased;
/// returns the peer or the session's error.
fn serve(l: TcpListener, ctx: ServerContext) -> std::thread::JoinHandle<Result<TlsPeer, String>> {
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut session = ctx.session()?;
        let mut peer = None;
        let mut buf = vec![0u8; 64 * 1024];
        let mut out = Vec::new();
        loop {
            let n = match s.read(&mut buf) {
                Ok(0) | Err(_) => return peer.ok_or_else(|| "closed before the handshake".into()),
                Ok(n) => n,
            };
            let mut echo = Vec::new();
            match session.receive(&buf[..n], |p| echo.extend(p.to_ascii_uppercase()))? {
                Received::Established(p) => peer = Some(p),
                Received::Closed => return peer.ok_or_else(|| "closed".into()),
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

fn pair(
    server_key: ConfiguredPsk,
) -> (TcpStream, std::thread::JoinHandle<Result<TlsPeer, String>>) {
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
        let big: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        tls.write_all(&big).unwrap();
        let mut back = vec![0u8; big.len()];
        tls.read_exact(&mut back).unwrap();
        assert_eq!(back, big.to_ascii_uppercase());
        drop(tls);
        let peer = h.join().unwrap().unwrap();
        assert_eq!(peer.identity.hostnqn, HOST);
        assert_eq!(peer.identity.subnqn, SUB);
        assert_eq!(peer.identity.version, 1);
        assert_eq!(peer.cipher, key.hash().cipher_suite());
    }
}

#[test]
fn another_key_is_refused_and_both_sides_say_why() {
    let (c, h) = pair(ConfiguredPsk::generate(32));
    let e = connect(c, &ConfiguredPsk::generate(32), HOST, SUB).unwrap_err();
    assert!(e.contains("TLS handshake failed"), "{e}");
    let e = h.join().unwrap().unwrap_err();
    assert!(e.contains("the host holds another key"), "{e}");
}

#[test]
fn plain_text_nvme_tcp_is_refused_by_name() {
    let (mut c, h) = pair(ConfiguredPsk::generate(32));
    // An ICReq's common header: type 0, flags 0, hlen 128, pdo 0, plen 128.
    let mut icreq = [0u8; 128];
    icreq[2] = 128;
    icreq[4] = 128;
    c.write_all(&icreq).unwrap();
    let e = h.join().unwrap().unwrap_err();
    assert!(e.contains("plain-text NVMe/TCP"), "{e}");
}

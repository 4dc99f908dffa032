//! `numio serve --metrics ADDR`: the target's counters in Prometheus' text
//! format over a minimal HTTP/1.1 responder on an address the operator
//! opts into (e.g. 127.0.0.1:9464): `GET /metrics` (or `/`), one request
//! per connection, served in turn by one thread; anything else gets 404 or
//! 405. Requests are read with a deadline and a size limit.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use nvmf::target::subsystem::Target;

/// Longest request head read.
const REQUEST_MAX_BYTES: usize = 8192;
/// How long a client may take to send its request or read the answer.
const CLIENT_DEADLINE: Duration = Duration::from_secs(5);

/// Binds `addr` and serves `target`'s metrics from a thread; returns the
/// bound address.
pub fn start(addr: SocketAddr, target: Arc<Target>) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).with_context(|| {
        format!("--metrics {addr}: cannot listen (is the port taken? pick another, e.g. 127.0.0.1:9465)")
    })?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("numio-metrics".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if target
                    .shutting_down
                    .load(std::sync::atomic::Ordering::Acquire)
                {
                    return;
                }
                if let Ok(conn) = conn {
                    // A client that misbehaves only loses its own answer.
                    let _ = answer(conn, &target);
                }
            }
        })
        .context("spawning the metrics thread")?;
    Ok(bound)
}

fn answer(mut conn: TcpStream, target: &Target) -> std::io::Result<()> {
    conn.set_read_timeout(Some(CLIENT_DEADLINE))?;
    conn.set_write_timeout(Some(CLIENT_DEADLINE))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > REQUEST_MAX_BYTES {
            return respond(
                &mut conn,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
                true,
            );
        }
    }
    let line = String::from_utf8_lossy(&head);
    let mut words = line.lines().next().unwrap_or("").split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            let body = target.metrics().to_prometheus();
            let ctype = "text/plain; version=0.0.4; charset=utf-8";
            respond(&mut conn, "200 OK", ctype, body.as_bytes(), method == "GET")
        }
        ("GET" | "HEAD", _) => {
            let body = b"numio serve: metrics are at /metrics\n";
            respond(
                &mut conn,
                "404 Not Found",
                "text/plain",
                body,
                method == "GET",
            )
        }
        _ => respond(
            &mut conn,
            "405 Method Not Allowed",
            "text/plain",
            b"use GET\n",
            true,
        ),
    }
}

fn respond(
    conn: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    if with_body {
        conn.write_all(body)?;
    }
    conn.flush()
}

/// GET `path` from `addr` (HTTP/1.1, one request); the status code and body.
pub fn get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let mut conn = TcpStream::connect_timeout(&addr, CLIENT_DEADLINE).with_context(|| {
        format!("connecting to {addr} (is numio serve running with --metrics {addr}?)")
    })?;
    conn.set_read_timeout(Some(CLIENT_DEADLINE))?;
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    conn.read_to_string(&mut text)
        .with_context(|| format!("reading the answer of {addr}"))?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .with_context(|| format!("{addr} did not answer in HTTP"))?;
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("{addr}: no status code in {:?}", head.lines().next()))?;
    Ok((code, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvmf::config::{NamespaceConfig, SubsystemConfig, TargetConfig};

    #[test]
    fn serves_metrics_and_refuses_the_rest() {
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
        let target = Target::new(&cfg).unwrap();
        let addr = start("127.0.0.1:0".parse().unwrap(), target).unwrap();
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
}

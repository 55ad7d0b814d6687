//! Plain HTTP against the local processes the tests start (metrics, probes): a free port to
//! give them and a GET without a client library.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// A port of 127.0.0.1 free right now (the OS picks it; the listener is closed at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends the raw HTTP `request` to `addr` (`host:port`) and reads the whole answer (the request
/// must ask the server to close the connection), waiting at most `timeout` for each read.
pub fn exchange(addr: &str, request: &str, timeout: Duration) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(request.as_bytes())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The status code of an HTTP `answer` (0: no status line).
pub fn status(answer: &str) -> u16 {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// `GET path` of 127.0.0.1:`port` over plain HTTP/1.0: (status, body). Status 0: no status line.
pub fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let text = exchange(
        &format!("127.0.0.1:{port}"),
        &request,
        Duration::from_secs(10),
    )?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    Ok((status(&text), body.to_string()))
}

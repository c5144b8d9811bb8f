//! Opening a TCP connection to a server: the first of its addresses that accepts within the
//! timeout, with Nagle's algorithm off (requests are written whole, and a delayed ACK must not
//! hold their last segment back). Every connection of the run starts here: HTTP/1.1, HTTP/2,
//! the TLS handshake on top of either, and the control calls.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::backend::outcome::ErrorKind;

/// A TCP connection (Nagle off) to the first address that accepts within `timeout`.
pub async fn connect_tcp(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, ErrorKind> {
    for addr in addrs {
        let attempt = tokio::time::timeout(timeout, TcpStream::connect(addr)).await;
        if let Ok(Ok(stream)) = attempt {
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
    }
    Err(ErrorKind::Connection)
}

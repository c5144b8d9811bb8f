//! How bytes reach a server, whatever the API: TCP ([`tcp`]), TLS ([`tls`]), the
//! hand-written HTTP/1.1 client of the hot path ([`http1`]), HTTP/2 and gRPC ([`h2`], with
//! the hand-written unary client [`h2_unary`] and its calls [`grpc_unary`]; gRPC's framing
//! and compression are the wire crate's), and the one control client for everything off the hot
//! path — discovery, statistics, trace settings, shared-memory control, management APIs and
//! metrics pages ([`control`], [`page_client`]). Each takes the server as a [`Peer`]: where
//! it is and what every connection to it carries. Nothing here names an API: the adapters in
//! `backend::api` build on this floor, and it knows none of them.

pub mod control;
pub mod grpc_unary;
pub mod h2;
pub mod h2_unary;
pub mod http1;
pub mod page_client;
pub mod tcp;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::config::GrpcCompression;

/// The server as the transport reaches it, whatever its API: where it is, what every
/// connection to it carries (headers, TLS, the timeout, the largest answer taken) and the
/// gRPC connections the run's slots share.
#[derive(Debug, Clone)]
pub struct Peer {
    /// `host:port` as the user gave it.
    pub authority: String,
    /// The addresses `authority` resolves to, IPv4 first.
    pub addrs: Vec<SocketAddr>,
    /// `-H` headers (lower-case names).
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    /// `--max-response-bytes`: the largest answer body or message taken.
    pub max_response_bytes: usize,
    /// TLS to the server, when the run asks for it.
    pub tls: Option<Arc<tls::TlsClient>>,
    /// The gRPC connections the run's slots share.
    pub grpc: Arc<h2::SharedConnections>,
    /// `--grpc-compression-algorithm`: request messages compressed with it, and the one
    /// encoding advertised for answers.
    pub grpc_compression: Option<GrpcCompression>,
}

//! The control client: every call off the hot path — discovery, server statistics, trace
//! settings, shared-memory registration, management APIs and metrics pages — over HTTP/1.1
//! ([`HttpControl`], on the same hand-written client and TLS as the inference requests) or
//! gRPC (a tonic [`Channel`] made by our own TCP connect and TLS handshake, with the `-H`
//! headers as metadata). The adapters say which paths and messages; this says how they get
//! there, with the run's timeout and headers.

use std::io;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use hyper_util::rt::TokioIo;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use super::http1::{frame_request, user_headers, Http1Stream, Response};
use super::tcp::connect_tcp;
use super::tls::{Alpn, TlsClient};
use super::Peer;
use crate::backend::outcome::ErrorKind;

/// One HTTP/1.1 connection for control calls: GETs and JSON POSTs with the `-H` headers,
/// each bounded by the request timeout, reconnecting when the server closed it meanwhile.
pub struct HttpControl {
    io: Http1Stream,
    /// Where to reconnect when a call finds the connection closed.
    addrs: Vec<SocketAddr>,
    timeout: Duration,
    tls: Option<Arc<TlsClient>>,
    host: String,
    headers: Vec<(String, String)>,
}

impl HttpControl {
    pub async fn open(peer: &Peer) -> Result<HttpControl, ErrorKind> {
        Ok(HttpControl {
            io: Http1Stream::open(peer).await?,
            addrs: peer.addrs.clone(),
            timeout: peer.timeout,
            tls: peer.tls.clone(),
            host: peer.authority.clone(),
            headers: peer.headers.clone(),
        })
    }

    /// GETs a resource; `Ok((status, body))` for any answer from the server. A connection
    /// the server closed meanwhile is opened anew first.
    pub async fn get(&mut self, path: &str) -> Result<(StatusCode, Bytes), ErrorKind> {
        self.exchange("GET", path, b"").await
    }

    /// POSTs a JSON body; `Ok((status, body))` for any answer, as [`HttpControl::get`].
    pub async fn post_json(
        &mut self,
        path: &str,
        json: &[u8],
    ) -> Result<(StatusCode, Bytes), ErrorKind> {
        self.exchange("POST", path, json).await
    }

    async fn exchange(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(StatusCode, Bytes), ErrorKind> {
        if !self.io.is_usable() {
            let tls = self.tls.as_deref();
            self.io = Http1Stream::connect_with(&self.addrs, self.timeout, tls).await?;
        }
        let mut headers: Vec<(&str, &str)> = user_headers(&self.headers).collect();
        if method == "POST" {
            headers.push(("content-type", "application/json"));
        }
        let request = frame_request(method, path, &self.host, &headers, body);
        let exchange = async {
            self.io.send(&request).await?;
            self.io.receive().await
        };
        let response: Response = tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or(Err(ErrorKind::Timeout))?;
        let status =
            StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Ok((status, response.body))
    }
}

/// The error kind for a failed RPC: transport failures are connection errors.
pub fn status_kind(status: &Status) -> ErrorKind {
    let transport = std::error::Error::source(status)
        .is_some_and(|s| s.downcast_ref::<tonic::transport::Error>().is_some());
    if transport || (status.code() == Code::Unavailable && status.message().contains("connect")) {
        ErrorKind::Connection
    } else {
        ErrorKind::GrpcCode(status.code() as i32)
    }
}

/// A gRPC channel to the server for control calls (over TLS when the run asks for it).
pub async fn connect_channel(peer: &Peer) -> Result<Channel, ErrorKind> {
    if let Some(tls) = &peer.tls {
        return connect_tls_channel(peer, tls.clone()).await;
    }
    for addr in &peer.addrs {
        let Ok(endpoint) = Endpoint::from_shared(format!("http://{addr}")) else {
            continue;
        };
        let endpoint = endpoint.connect_timeout(peer.timeout).tcp_nodelay(true);
        if let Ok(channel) = endpoint.connect().await {
            return Ok(channel);
        }
    }
    Err(ErrorKind::Connection)
}

/// A channel whose connections are made by our TCP connect and TLS handshake (the run's
/// rustls configuration, ALPN h2), so that discovery and statistics verify the server as
/// the inference calls do.
async fn connect_tls_channel(peer: &Peer, tls: Arc<TlsClient>) -> Result<Channel, ErrorKind> {
    let (addrs, timeout) = (peer.addrs.clone(), peer.timeout);
    let connector = tower::service_fn(move |_: http::Uri| {
        let (tls, addrs) = (tls.clone(), addrs.clone());
        async move {
            let tcp = connect_tcp(&addrs, timeout)
                .await
                .map_err(|k| io::Error::other(k.to_string()))?;
            let stream = tls
                .connect(tcp, Alpn::H2, timeout)
                .await
                .map_err(|k| io::Error::other(k.to_string()))?;
            Ok::<_, io::Error>(TokioIo::new(stream))
        }
    });
    let endpoint = Endpoint::from_shared(format!("http://{}", peer.authority))
        .map_err(|_| ErrorKind::Connection)?
        .connect_timeout(peer.timeout);
    endpoint
        .connect_with_connector(connector)
        .await
        .map_err(|_| ErrorKind::Connection)
}

/// `-H` headers as gRPC metadata (perf_analyzer drops them on gRPC; we send them).
fn metadata_for(peer: &Peer) -> MetadataMap {
    let mut map = MetadataMap::new();
    for (name, value) in &peer.headers {
        if let (Ok(k), Ok(v)) = (
            AsciiMetadataKey::from_str(name),
            AsciiMetadataValue::from_str(value),
        ) {
            map.append(k, v);
        }
    }
    map
}

/// A control RPC's request: `message` with the `-H` headers as metadata and the run's
/// timeout.
pub fn with_metadata<T>(peer: &Peer, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    *request.metadata_mut() = metadata_for(peer);
    request.set_timeout(peer.timeout);
    request
}

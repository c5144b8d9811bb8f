//! The HTTP GET client of the monitors' pages (the Prometheus metrics endpoint): plain, or
//! over TLS with the run's TLS settings (an `https://` `--metrics-url`), so a server whose
//! metrics sit behind HTTPS is scraped like one whose metrics do not. A failed TLS
//! handshake is reported with its cause (unknown issuer, name mismatch, …), not as a bare
//! connection error.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::backend::transport::tls::{Alpn, TlsClient, TlsIo};
use crate::config::TlsSettings;

/// How long a connection and its handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A keep-alive GET client for one URL's host.
#[derive(Clone)]
pub enum PageClient {
    Plain(Client<HttpConnector, Empty<Bytes>>),
    Tls(Client<TlsConnect, Empty<Bytes>>, Arc<TlsClient>),
}

impl PageClient {
    /// A client for `url`: TLS when its scheme is `https` (with `tls`, or the system's roots).
    pub fn new(url: &Uri, tls: Option<&TlsSettings>) -> Result<PageClient, String> {
        let builder = Client::builder(TokioExecutor::new());
        if url.scheme_str() != Some("https") {
            return Ok(PageClient::Plain(builder.build_http()));
        }
        let settings = tls.cloned().unwrap_or_else(TlsSettings::system_default);
        let authority = url.authority().map_or("", |a| a.as_str());
        let authority = match url.port() {
            Some(_) => authority.to_string(),
            None => format!("{authority}:443"),
        };
        let client = Arc::new(TlsClient::new(&settings, &authority).map_err(|e| e.to_string())?);
        let connect = TlsConnect {
            tls: client.clone(),
        };
        Ok(PageClient::Tls(builder.build(connect), client))
    }

    /// The body of a successful GET; the error is a phrase (the TLS cause when TLS failed).
    pub async fn get(&self, url: &Uri) -> Result<Bytes, String> {
        let response = match self {
            PageClient::Plain(client) => client.get(url.clone()).await.map_err(|e| e.to_string()),
            PageClient::Tls(client, tls) => client.get(url.clone()).await.map_err(|e| {
                tls.failure()
                    .map_or_else(|| e.to_string(), |cause| format!("TLS: {cause}"))
            }),
        }?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        Ok(body.to_bytes())
    }
}

/// The connector of the TLS client: TCP to the URL's authority, then the handshake.
#[derive(Clone)]
pub struct TlsConnect {
    tls: Arc<TlsClient>,
}

type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<TlsIo>, std::io::Error>> + Send>>;

impl tower::Service<Uri> for TlsConnect {
    type Response = TokioIo<TlsIo>;
    type Error = std::io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let tls = self.tls.clone();
        Box::pin(async move {
            let host = uri.host().unwrap_or("localhost").trim_matches(['[', ']']);
            let port = uri.port_u16().unwrap_or(443);
            let connect = tokio::net::TcpStream::connect((host, port));
            let tcp = tokio::time::timeout(CONNECT_TIMEOUT, connect)
                .await
                .map_err(|_| std::io::Error::other("no connection within 2 s"))??;
            tcp.set_nodelay(true)?;
            let io = tls
                .connect(tcp, Alpn::Http1, CONNECT_TIMEOUT)
                .await
                .map_err(|kind| std::io::Error::other(format!("{kind:?}")))?;
            Ok(TokioIo::new(io))
        })
    }
}

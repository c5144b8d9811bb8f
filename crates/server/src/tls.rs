//! TLS for the embedded server (`inferperf serve --tls-cert C --tls-key K [--tls-client-ca
//! CA]`): a rustls acceptor put in front of the accepted sockets of the HTTP and gRPC ports,
//! so both serve TLS on the ports they would serve plain, and with a client CA both require
//! a client certificate it signed (mTLS). ALPN offers h2 and http/1.1.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use futures::Stream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client may take over its handshake before its connection is dropped.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// The server's certificate files; with a client CA, clients must present a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
}

impl TlsFiles {
    /// Reads the files and builds the acceptor once, to refuse unusable files up front.
    pub fn check(&self) -> anyhow::Result<()> {
        acceptor(self).map(|_| ())
    }
}

/// Builds the acceptor the files describe; a file that cannot be used is an error naming it.
pub(crate) fn acceptor(files: &TlsFiles) -> anyhow::Result<TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in certs(ca, "--tls-client-ca")? {
                roots
                    .add(cert)
                    .with_context(|| format!("--tls-client-ca {}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .with_context(|| format!("--tls-client-ca {}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        anyhow!(
            "--tls-key {}: no PEM private key ({e})",
            files.key.display()
        )
    })?;
    let mut config = builder
        .with_single_cert(certs(&files.cert, "--tls-cert")?, key)
        .context("--tls-cert and --tls-key do not belong together")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn certs(path: &Path, flag: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let list: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| anyhow!("{flag} {}: cannot be read ({e})", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| {
            anyhow!(
                "{flag} {}: not a PEM certificate file ({e})",
                path.display()
            )
        })?;
    if list.is_empty() {
        return Err(anyhow!(
            "{flag} {}: holds no PEM certificate",
            path.display()
        ));
    }
    Ok(list)
}

/// The handshake on an accepted socket; `None` when the client failed it or took too long.
pub(crate) async fn accept(acceptor: &TlsAcceptor, tcp: TcpStream) -> Option<TlsStream<TcpStream>> {
    let handshake = acceptor.accept(tcp);
    tokio::time::timeout(HANDSHAKE_LIMIT, handshake)
        .await
        .ok()?
        .ok()
}

/// The TLS connections of a listener as a stream (for tonic): each accepted socket's
/// handshake runs in a task of its own, so a slow client does not hold up the others.
pub(crate) fn incoming(
    listener: TcpListener,
    acceptor: TlsAcceptor,
) -> impl Stream<Item = Result<TlsStream<TcpStream>, std::io::Error>> {
    let (send, receive) = tokio::sync::mpsc::channel(256);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = send.closed() => return,
            };
            let Ok((tcp, _)) = accepted else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let (acceptor, send) = (acceptor.clone(), send.clone());
            tokio::spawn(async move {
                if let Some(stream) = accept(&acceptor, tcp).await {
                    let _ = send.send(Ok(stream)).await;
                }
            });
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(receive)
}

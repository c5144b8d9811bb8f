//! TLS for every connection kind, with rustls (ring): the client configuration, built once
//! per run from `config::TlsSettings` and held by the run's `Peer`; the handshake, timed and kept
//! out of every request's latency (connections open before measuring); and the one-sentence
//! cause of a failed handshake — unknown issuer, expired, name mismatch, a client
//! certificate the server asked for, a plain server — which the first connection of a run
//! turns into its error. [`TlsIo`] is the stream the HTTP/1.1, h2 and tonic paths read and
//! write; it notes a TLS error that comes after the handshake (a TLS 1.3 server refuses a
//! missing client certificate only then). A self-signed server certificate the user names
//! as trusted is taken as the server's own even when it is marked as a CA (`self_signed`).

mod self_signed;

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct};
use rustls::{RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use self::self_signed::NamedSelfSigned;
use crate::backend::outcome::ErrorKind;
use crate::config::{TlsFile, TlsSettings};
use inferperf_wire::error::{RunError, RunResult};

/// The application protocol a connection asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    Http1,
    H2,
}

/// A run's TLS client: its configurations (one per ALPN), the name the server's certificate
/// must hold, the handshakes made, and the cause of the last TLS failure.
pub struct TlsClient {
    http1: TlsConnector,
    h2: TlsConnector,
    name: ServerName<'static>,
    handshakes: Mutex<Vec<Duration>>,
    failure: Arc<FailureSlot>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsClient({:?})", self.name)
    }
}

/// Where the cause of the last TLS failure is kept, with what phrasing it needs.
#[derive(Debug)]
struct FailureSlot {
    cause: Mutex<Option<String>>,
    name: String,
    has_client_cert: bool,
    /// The server asked for a client certificate in the handshake (noted when this client
    /// has none to give: a server that then closes the connection is refusing mTLS).
    client_cert_asked: Arc<AtomicBool>,
    ca_flag: &'static str,
    cert_flags: String,
}

impl TlsClient {
    /// Reads the files the settings name and builds the configuration; `authority` is the
    /// `host:port` whose host the certificate must name unless `--ssl-target-name` says.
    pub fn new(settings: &TlsSettings, authority: &str) -> RunResult<TlsClient> {
        let shown = settings
            .target_name
            .clone()
            .unwrap_or_else(|| host_of(authority).to_string());
        let name = ServerName::try_from(shown.clone()).map_err(|_| {
            RunError::bad_option(format!(
                "'{shown}' (the host of -u) is not a DNS name or IP address a certificate can hold: give --ssl-target-name NAME."
            ))
        })?;
        let client_cert_asked = Arc::new(AtomicBool::new(false));
        let config = client_config(settings, &client_cert_asked)?;
        let with_alpn = |alpn: &[u8]| {
            let mut c = config.clone();
            c.alpn_protocols = vec![alpn.to_vec()];
            TlsConnector::from(Arc::new(c))
        };
        let flags = settings.flags;
        Ok(TlsClient {
            http1: with_alpn(b"http/1.1"),
            h2: with_alpn(b"h2"),
            name,
            handshakes: Mutex::new(Vec::new()),
            failure: Arc::new(FailureSlot {
                cause: Mutex::new(None),
                name: shown,
                has_client_cert: settings.client_cert.is_some(),
                client_cert_asked,
                ca_flag: flags.ca_flag(),
                cert_flags: format!("{} and {}", flags.cert_flag(), flags.key_flag()),
            }),
        })
    }

    /// The TLS handshake on a connected socket, within `timeout`; its time is recorded.
    pub async fn connect(
        &self,
        tcp: TcpStream,
        alpn: Alpn,
        timeout: Duration,
    ) -> Result<TlsIo, ErrorKind> {
        let connector = match alpn {
            Alpn::Http1 => &self.http1,
            Alpn::H2 => &self.h2,
        };
        let started = Instant::now();
        let handshake = connector.connect(self.name.clone(), tcp);
        match tokio::time::timeout(timeout, handshake).await {
            Ok(Ok(stream)) => {
                let took = started.elapsed();
                lock(&self.handshakes).push(took);
                Ok(TlsIo {
                    stream,
                    failure: self.failure.clone(),
                })
            }
            Ok(Err(e)) => {
                self.failure.note(&e, true);
                Err(ErrorKind::Connection)
            }
            Err(_) => {
                self.failure
                    .set("the server did not finish the handshake within the request timeout");
                Err(ErrorKind::Timeout)
            }
        }
    }

    /// The cause of the last TLS failure, as a phrase, if there was one. A connection
    /// that failed after the server asked for a client certificate this client lacks is
    /// that refusal, however the close reached the client (a read, a write, a reset).
    pub fn failure(&self) -> Option<String> {
        let noted = lock(&self.failure.cause).clone();
        noted.or_else(|| {
            self.failure
                .refused_without_client_cert()
                .then(|| self.failure.missing_client_cert())
        })
    }

    /// The handshakes made since the last call: how many and their median.
    pub fn take_handshakes(&self) -> Option<(usize, Duration)> {
        let mut times = std::mem::take(&mut *lock(&self.handshakes));
        if times.is_empty() {
            return None;
        }
        times.sort_unstable();
        Some((times.len(), times[times.len() / 2]))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The host of `host:port` (without an IPv6 address's brackets).
fn host_of(authority: &str) -> &str {
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

impl FailureSlot {
    fn set(&self, cause: &str) {
        *lock(&self.cause) = Some(cause.to_string());
    }

    /// Keeps the cause of `e` when it is a TLS matter (or, in the handshake, a close).
    fn note(&self, e: &io::Error, handshake: bool) {
        if let Some(cause) = self.cause_of(e, handshake) {
            self.set(&cause);
        }
    }

    /// The server closed the connection: a refusal of mTLS when it asked for a certificate.
    fn note_close(&self) {
        if self.refused_without_client_cert() {
            self.set(&self.missing_client_cert());
        }
    }

    fn cause_of(&self, e: &io::Error, handshake: bool) -> Option<String> {
        let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
        Some(match inner {
            Some(rustls::Error::InvalidCertificate(c)) => self.certificate_cause(c),
            Some(rustls::Error::AlertReceived(a)) => self.alert_cause(*a),
            Some(rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. }) => {
                PLAIN_SERVER.to_string()
            }
            Some(other) => format!("{other}"),
            None if self.refused_without_client_cert() => self.missing_client_cert(),
            None if handshake && e.kind() == io::ErrorKind::UnexpectedEof => {
                "the server closed the connection during the handshake (is it a plain http:// or grpc:// endpoint?)".to_string()
            }
            None => return None,
        })
    }

    fn certificate_cause(&self, c: &CertificateError) -> String {
        match c {
            CertificateError::UnknownIssuer => format!(
                "the server's certificate is signed by an authority this client does not trust (unknown issuer): give that authority's certificate with {}",
                self.ca_flag
            ),
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired: renew it (or check this machine's clock)".to_string()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet: check its dates and this machine's clock".to_string()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => format!(
                "the server's certificate does not hold the name '{}' (name mismatch): connect by a name it holds, or give --ssl-target-name NAME",
                self.name
            ),
            other => format!(
                "the server's certificate was refused ({})",
                rustls::Error::InvalidCertificate(other.clone())
            ),
        }
    }

    /// A server that asked for a client certificate, got none and closed the connection
    /// without an alert (gRPC's C++ servers do so) refused the missing certificate.
    fn refused_without_client_cert(&self) -> bool {
        !self.has_client_cert && self.client_cert_asked.load(Ordering::Relaxed)
    }

    fn missing_client_cert(&self) -> String {
        format!(
            "the server requires a client certificate (mTLS) and none was given: add {}",
            self.cert_flags
        )
    }

    fn alert_cause(&self, alert: AlertDescription) -> String {
        use AlertDescription as A;
        let refused_client = matches!(
            alert,
            A::CertificateRequired | A::HandshakeFailure | A::BadCertificate
        );
        match alert {
            _ if refused_client && !self.has_client_cert => self.missing_client_cert(),
            A::UnknownCA | A::BadCertificate | A::CertificateUnknown | A::AccessDenied => format!(
                "the server refused the client certificate ({alert:?}): give one signed by an authority the server trusts"
            ),
            other => format!("the server ended the handshake with the alert {other:?}"),
        }
    }
}

const PLAIN_SERVER: &str =
    "the server did not answer in TLS (is it a plain http:// or grpc:// endpoint?)";

/// The rustls configuration the settings describe (no ALPN yet).
fn client_config(s: &TlsSettings, client_cert_asked: &Arc<AtomicBool>) -> RunResult<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| RunError::failed(format!("TLS cannot be set up: {e}.")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier(s, provider)?);
    match (&s.client_cert, &s.client_key) {
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert, s.flags.cert_flag())?;
            let key_der = read_key(key, s.flags.key_flag())?;
            builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                RunError::bad_option(format!(
                    "{} and {} do not make a client identity ({e}): give the key of that certificate.",
                    s.flags.cert_flag(),
                    s.flags.key_flag()
                ))
            })
        }
        _ => Ok(
            builder.with_client_cert_resolver(Arc::new(NoClientCert(client_cert_asked.clone())))
        ),
    }
}

/// The client identity of a run without one: gives no certificate, and notes that the
/// server asked for one, so that a connection closed after the handshake is named as mTLS.
#[derive(Debug)]
struct NoClientCert(Arc<AtomicBool>);

impl rustls::client::ResolvesClientCert for NoClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.0.store(true, Ordering::Relaxed);
        None
    }

    fn has_certs(&self) -> bool {
        false
    }
}

/// How the server's certificate is checked: fully (default), without its name
/// (`--ssl-https-verify-host 0`) or not at all (`--ssl-https-verify-peer 0`).
fn verifier(
    s: &TlsSettings,
    provider: Arc<CryptoProvider>,
) -> RunResult<Arc<dyn ServerCertVerifier>> {
    if !s.verify_peer {
        return Ok(Arc::new(AnyCertificate(provider)));
    }
    let (roots, named) = roots(s)?;
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| RunError::failed(format!("TLS cannot verify servers: {e}.")))?;
    let checked = Arc::new(NamedSelfSigned::new(webpki, named));
    let verifier: Arc<dyn ServerCertVerifier> = if s.verify_host {
        checked
    } else {
        Arc::new(NoNameCheck(checked))
    };
    Ok(verifier)
}

/// The CA file's certificates (also returned, as the certificates the user named), else
/// the system's roots.
fn roots(s: &TlsSettings) -> RunResult<(RootCertStore, Vec<CertificateDer<'static>>)> {
    let mut store = RootCertStore::empty();
    let mut named = Vec::new();
    match &s.ca_file {
        Some(path) => {
            let file = TlsFile {
                path: path.clone(),
                der: false,
            };
            named = read_certs(&file, s.flags.ca_flag())?;
            for cert in named.iter().cloned() {
                store.add(cert).map_err(|e| {
                    RunError::bad_option(format!(
                        "{} '{}': a certificate cannot be used as a root ({e}).",
                        s.flags.ca_flag(),
                        path.display()
                    ))
                })?;
            }
        }
        None => {
            let _ = store.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    Ok((store, named))
}

fn read_certs(file: &TlsFile, flag: &str) -> RunResult<Vec<CertificateDer<'static>>> {
    let bad =
        |what: String| RunError::bad_option(format!("{flag} '{}': {what}.", file.path.display()));
    if file.der {
        let bytes = std::fs::read(&file.path).map_err(|e| bad(format!("cannot be read ({e})")))?;
        return Ok(vec![CertificateDer::from(bytes)]);
    }
    let certs: Vec<_> = CertificateDer::pem_file_iter(&file.path)
        .map_err(|e| bad(format!("cannot be read ({e})")))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(format!("is not a PEM certificate file ({e})")))?;
    if certs.is_empty() {
        return Err(bad("holds no PEM certificate".to_string()));
    }
    Ok(certs)
}

fn read_key(file: &TlsFile, flag: &str) -> RunResult<PrivateKeyDer<'static>> {
    let bad =
        |what: String| RunError::bad_option(format!("{flag} '{}': {what}.", file.path.display()));
    if file.der {
        let bytes = std::fs::read(&file.path).map_err(|e| bad(format!("cannot be read ({e})")))?;
        return PrivateKeyDer::try_from(bytes)
            .map_err(|e| bad(format!("is not a DER private key ({e})")));
    }
    PrivateKeyDer::from_pem_file(&file.path)
        .map_err(|e| bad(format!("holds no PEM private key ({e})")))
}

/// `--ssl-https-verify-peer 0`: any certificate is taken; signatures are still checked, so
/// the handshake itself stays sound.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `--ssl-https-verify-host 0`: the chain is verified, a name mismatch is let through.
#[derive(Debug)]
struct NoNameCheck(Arc<NamedSelfSigned>);

impl ServerCertVerifier for NoNameCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let checked =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match checked {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A TLS connection; a TLS error while reading is noted as the run's last TLS failure.
pub struct TlsIo {
    stream: tokio_rustls::client::TlsStream<TcpStream>,
    failure: Arc<FailureSlot>,
}

/// hyper's client pool asks a connection what it is; nothing to say beyond the default.
impl hyper_util::client::legacy::connect::Connection for TlsIo {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}

impl TlsIo {
    /// For an idle connection: false when the server closed it or sent something
    /// unasked. One read attempt that must not wait (session tickets are taken in passing).
    pub fn is_idle_and_open(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        let mut probe = [0u8; 1];
        let mut buf = ReadBuf::new(&mut probe);
        matches!(
            Pin::new(&mut self.stream).poll_read(&mut cx, &mut buf),
            Poll::Pending
        )
    }
}

impl AsyncRead for TlsIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let (before, room) = (buf.filled().len(), buf.remaining());
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        match &read {
            Poll::Ready(Err(e)) => this.failure.note(e, false),
            Poll::Ready(Ok(())) if room > 0 && buf.filled().len() == before => {
                this.failure.note_close()
            }
            _ => {}
        }
        read
    }
}

impl AsyncWrite for TlsIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Err(e)) = &written {
            this.failure.note(e, false);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Whether the server at `addrs` speaks TLS: a handshake that checks nothing gets through
/// (or the server answers it with a TLS alert). Asked only when a plain run failed to
/// connect, to say why.
pub async fn speaks_tls(addrs: &[SocketAddr], timeout: Duration) -> bool {
    let timeout = timeout.min(Duration::from_secs(3));
    let Ok(tcp) = super::tcp::connect_tcp(addrs, timeout).await else {
        return false;
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let Ok(builder) =
        ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()
    else {
        return false;
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let name = ServerName::try_from("inferperf.invalid").expect("a valid DNS name");
    let handshake = TlsConnector::from(Arc::new(config)).connect(name, tcp);
    match tokio::time::timeout(timeout, handshake).await {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => e
            .get_ref()
            .and_then(|i| i.downcast_ref::<rustls::Error>())
            .is_some_and(|e| matches!(e, rustls::Error::AlertReceived(_))),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_taken_from_the_authority() {
        assert_eq!(host_of("example.com:443"), "example.com");
        assert_eq!(host_of("[::1]:8443"), "::1");
        assert_eq!(host_of("127.0.0.1:8000"), "127.0.0.1");
    }
}

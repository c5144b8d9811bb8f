//! A self-signed server certificate the user names as trusted. `openssl req -x509` marks
//! the certificate it makes as a CA (CA:TRUE), and rustls refuses a CA as a server's own
//! (CaUsedAsEndEntity), where curl, perf_analyzer and gRPC's clients accept it when it is
//! the certificate given as trusted. [`NamedSelfSigned`] accepts it too, and only it: the
//! certificate the server shows must be byte for byte one of those given with the CA flag,
//! within its dates, for server use and for the name connected to; the handshake's signature
//! is still checked against it, so the server must hold its key. Any other certificate keeps
//! rustls's verdict.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

/// rustls's verification of the server's certificate, which also accepts a CA certificate
/// as the server's own when it is one of the `named` certificates the user trusts.
#[derive(Debug)]
pub(super) struct NamedSelfSigned {
    webpki: Arc<WebPkiServerVerifier>,
    named: Vec<CertificateDer<'static>>,
}

impl NamedSelfSigned {
    pub(super) fn new(
        webpki: Arc<WebPkiServerVerifier>,
        named: Vec<CertificateDer<'static>>,
    ) -> Self {
        NamedSelfSigned { webpki, named }
    }
}

impl ServerCertVerifier for NamedSelfSigned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verdict {
            Err(e) if is_ca_used_as_end_entity(&e) && self.is_named(end_entity) => {
                check_named(end_entity, server_name, now)
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

impl NamedSelfSigned {
    /// The certificate is, byte for byte, one the user gave as trusted.
    fn is_named(&self, cert: &CertificateDer<'_>) -> bool {
        self.named.iter().any(|n| n.as_ref() == cert.as_ref())
    }
}

/// rustls refused the certificate only because it is a CA shown as the server's own.
fn is_ca_used_as_end_entity(e: &rustls::Error) -> bool {
    let rustls::Error::InvalidCertificate(CertificateError::Other(other)) = e else {
        return false;
    };
    matches!(
        other.0.downcast_ref::<webpki::Error>(),
        Some(webpki::Error::CaUsedAsEndEntity)
    )
}

/// What rustls would have checked of a trusted certificate shown as the server's own:
/// its dates, its purpose and the name connected to.
fn check_named(
    der: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    now: UnixTime,
) -> Result<ServerCertVerified, rustls::Error> {
    let (_, cert) =
        X509Certificate::from_der(der.as_ref()).map_err(|_| CertificateError::BadEncoding)?;
    check_dates(&cert, now)?;
    check_server_use(&cert)?;
    verify_server_name(&ParsedCertificate::try_from(der)?, server_name)?;
    Ok(ServerCertVerified::assertion())
}

/// The certificate is valid at `now` (its dates inclusive, as webpki has them).
fn check_dates(cert: &X509Certificate<'_>, now: UnixTime) -> Result<(), CertificateError> {
    let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let validity = cert.validity();
    if now < validity.not_before.timestamp() {
        return Err(CertificateError::NotValidYet);
    }
    if now > validity.not_after.timestamp() {
        return Err(CertificateError::Expired);
    }
    Ok(())
}

/// A certificate that limits its purposes must name server authentication (as webpki asks).
fn check_server_use(cert: &X509Certificate<'_>) -> Result<(), CertificateError> {
    match cert.extended_key_usage() {
        Ok(None) => Ok(()),
        Ok(Some(eku)) if eku.value.server_auth => Ok(()),
        Ok(Some(_)) => Err(CertificateError::InvalidPurpose),
        Err(_) => Err(CertificateError::BadEncoding),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{
        date_time_ymd, BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    };
    use rustls::RootCertStore;
    use std::time::Duration;

    /// A self-signed CA:TRUE certificate for localhost and 127.0.0.1, as `openssl req -x509`
    /// makes it, valid through 2030, for `purpose` only if one is given.
    fn openssl_like(purpose: Option<ExtendedKeyUsagePurpose>) -> CertificateDer<'static> {
        let sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let mut params = CertificateParams::new(sans).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = date_time_ymd(2030, 1, 1);
        params.not_after = date_time_ymd(2030, 12, 31);
        params.extended_key_usages = purpose.into_iter().collect();
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    fn verifier(named: &[&CertificateDer<'static>]) -> NamedSelfSigned {
        let mut roots = RootCertStore::empty();
        for cert in named {
            roots.add((*cert).clone()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        NamedSelfSigned::new(webpki, named.iter().map(|c| (*c).clone()).collect())
    }

    fn at(year_2030_day: u64) -> UnixTime {
        // 2030-01-01T00:00:00Z, then whole days.
        UnixTime::since_unix_epoch(Duration::from_secs(1_893_456_000 + year_2030_day * 86_400))
    }

    fn verify(v: &NamedSelfSigned, cert: &CertificateDer<'_>, name: &str, now: UnixTime) -> String {
        let name = ServerName::try_from(name.to_string()).unwrap();
        match v.verify_server_cert(cert, &[], &name, &[], now) {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("{e:?}"),
        }
    }

    #[test]
    fn a_named_self_signed_ca_is_taken_for_its_names_within_its_dates() {
        let cert = openssl_like(None);
        let v = verifier(&[&cert]);
        assert_eq!(verify(&v, &cert, "localhost", at(10)), "ok");
        assert_eq!(verify(&v, &cert, "127.0.0.1", at(10)), "ok");
        assert!(verify(&v, &cert, "example.com", at(10)).contains("NotValidForName"));
        assert!(verify(&v, &cert, "localhost", at(400)).contains("Expired"));
    }

    #[test]
    fn an_unnamed_self_signed_ca_keeps_rustls_verdict() {
        let (cert, other) = (openssl_like(None), openssl_like(None));
        let v = verifier(&[&other]);
        assert!(verify(&v, &cert, "localhost", at(10)).contains("CaUsedAsEndEntity"));
    }

    #[test]
    fn a_named_certificate_for_another_purpose_is_refused() {
        let client_only = openssl_like(Some(ExtendedKeyUsagePurpose::ClientAuth));
        let v = verifier(&[&client_only]);
        assert!(verify(&v, &client_only, "localhost", at(10)).contains("InvalidPurpose"));
        let server = openssl_like(Some(ExtendedKeyUsagePurpose::ServerAuth));
        assert_eq!(
            verify(&verifier(&[&server]), &server, "localhost", at(10)),
            "ok"
        );
    }

    #[test]
    fn the_dates_are_checked_here_too() {
        let der = openssl_like(None);
        let (_, cert) = X509Certificate::from_der(der.as_ref()).unwrap();
        assert!(check_dates(&cert, at(10)).is_ok());
        assert_eq!(check_dates(&cert, at(400)), Err(CertificateError::Expired));
        let before = UnixTime::since_unix_epoch(Duration::from_secs(1_800_000_000));
        assert_eq!(
            check_dates(&cert, before),
            Err(CertificateError::NotValidYet)
        );
    }
}

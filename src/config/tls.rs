//! TLS settings from the flags: whether the run speaks TLS (an `https://` or `grpcs://`
//! URL, or any `--ssl-*` flag of the run's protocol, as perf_analyzer reads them), which
//! roots verify the server, the client's certificate and key for mTLS, and the two ways
//! verification is loosened (only by `--ssl-https-verify-peer 0` / `--ssl-https-verify-host 0`).
//! Files are checked to exist here; the backend reads them.

use std::path::{Path, PathBuf};

use super::{Protocol, ServiceKind};
use crate::cli::{ProfileArgs, TlsArgs};
use inferperf_wire::error::{RunError, RunResult};

/// Which flag family configured TLS: the message about a file names the flag it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFlags {
    Https,
    Grpc,
}

impl TlsFlags {
    pub fn ca_flag(self) -> &'static str {
        match self {
            TlsFlags::Https => "--ssl-https-ca-certificates-file",
            TlsFlags::Grpc => "--ssl-grpc-root-certifications-file",
        }
    }

    pub fn cert_flag(self) -> &'static str {
        match self {
            TlsFlags::Https => "--ssl-https-client-certificate-file",
            TlsFlags::Grpc => "--ssl-grpc-certificate-chain-file",
        }
    }

    pub fn key_flag(self) -> &'static str {
        match self {
            TlsFlags::Https => "--ssl-https-private-key-file",
            TlsFlags::Grpc => "--ssl-grpc-private-key-file",
        }
    }
}

/// A file of certificates or a key, and whether it is DER (else PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFile {
    pub path: PathBuf,
    pub der: bool,
}

/// The validated TLS settings of a run; `Config::tls` is `None` for plain connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub flags: TlsFlags,
    /// Roots that verify the server (PEM); `None`: the system's roots.
    pub ca_file: Option<PathBuf>,
    /// The client's certificate chain and key, for mTLS.
    pub client_cert: Option<TlsFile>,
    pub client_key: Option<TlsFile>,
    /// `--ssl-https-verify-peer 0` turns this off: any certificate is accepted.
    pub verify_peer: bool,
    /// `--ssl-https-verify-host 0` turns this off: the chain is verified, the name is not.
    pub verify_host: bool,
    /// `--ssl-target-name`: the name the certificate must hold, instead of the host.
    pub target_name: Option<String>,
}

impl TlsSettings {
    /// HTTPS with the system's roots, full verification and no client identity.
    pub fn system_default() -> TlsSettings {
        TlsSettings {
            flags: TlsFlags::Https,
            ca_file: None,
            client_cert: None,
            client_key: None,
            verify_peer: true,
            verify_host: true,
            target_name: None,
        }
    }

    /// The warning lines the report prints when verification was loosened.
    pub fn warnings(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.verify_peer {
            lines.push(
                "Warning: TLS certificate verification is off (--ssl-https-verify-peer 0): the server is not authenticated.".to_string(),
            );
        } else if !self.verify_host {
            lines.push(
                "Warning: the server's certificate is not checked against its name (--ssl-https-verify-host 0).".to_string(),
            );
        }
        lines
    }
}

fn https_flag_given(t: &TlsArgs) -> bool {
    t.ssl_https_verify_peer.is_some()
        || t.ssl_https_verify_host.is_some()
        || t.ssl_https_ca_certificates_file.is_some()
        || t.ssl_https_client_certificate_file.is_some()
        || t.ssl_https_client_certificate_type.is_some()
        || t.ssl_https_private_key_file.is_some()
        || t.ssl_https_private_key_type.is_some()
}

fn grpc_flag_given(t: &TlsArgs) -> bool {
    t.ssl_grpc_use_ssl
        || t.ssl_grpc_root_certifications_file.is_some()
        || t.ssl_grpc_private_key_file.is_some()
        || t.ssl_grpc_certificate_chain_file.is_some()
}

/// The TLS settings of the run, `None` for plain connections. `secure_url`: -u had an
/// `https://` or `grpcs://` scheme.
pub fn parse_tls(
    args: &ProfileArgs,
    protocol: Protocol,
    kind: ServiceKind,
    secure_url: bool,
) -> RunResult<Option<TlsSettings>> {
    let t = &args.tls;
    let (https, grpc) = (https_flag_given(t), grpc_flag_given(t));
    if https && protocol == Protocol::Grpc {
        return Err(RunError::bad_option(
            "The --ssl-https-* flags apply to -i http; for gRPC over TLS use --ssl-grpc-use-ssl (or grpcs://) and the --ssl-grpc-* files.",
        ));
    }
    if grpc && protocol == Protocol::Http {
        return Err(RunError::bad_option(
            "The --ssl-grpc-* flags apply to -i grpc; for HTTPS use an https:// URL and the --ssl-https-* flags.",
        ));
    }
    if !(secure_url || https || grpc) {
        if t.ssl_target_name.is_some() {
            return Err(RunError::bad_option(
                "--ssl-target-name applies to TLS: give -u as https://host:port (or grpcs:// with -i grpc).",
            ));
        }
        return Ok(None);
    }
    if kind == ServiceKind::Local {
        return Err(RunError::bad_option(
            "--service-kind local calls the models in this process: drop the --ssl-* flags and the https:// or grpcs:// scheme.",
        ));
    }
    let settings = match protocol {
        Protocol::Http => https_settings(t)?,
        Protocol::Grpc => grpc_settings(t)?,
    };
    check_pair(&settings)?;
    Ok(Some(settings))
}

fn https_settings(t: &TlsArgs) -> RunResult<TlsSettings> {
    let flags = TlsFlags::Https;
    let cert_der = parse_type(
        t.ssl_https_client_certificate_type.as_deref(),
        "--ssl-https-client-certificate-type",
    )?;
    let key_der = parse_type(
        t.ssl_https_private_key_type.as_deref(),
        "--ssl-https-private-key-type",
    )?;
    Ok(TlsSettings {
        flags,
        ca_file: existing(t.ssl_https_ca_certificates_file.as_deref(), flags.ca_flag())?,
        client_cert: existing(
            t.ssl_https_client_certificate_file.as_deref(),
            flags.cert_flag(),
        )?
        .map(|path| TlsFile {
            path,
            der: cert_der,
        }),
        client_key: existing(t.ssl_https_private_key_file.as_deref(), flags.key_flag())?
            .map(|path| TlsFile { path, der: key_der }),
        verify_peer: parse_switch(
            t.ssl_https_verify_peer.as_deref(),
            "--ssl-https-verify-peer",
            &["0", "1"],
        )?,
        verify_host: parse_switch(
            t.ssl_https_verify_host.as_deref(),
            "--ssl-https-verify-host",
            &["0", "1", "2"],
        )?,
        target_name: target_name(t.ssl_target_name.as_deref())?,
    })
}

fn grpc_settings(t: &TlsArgs) -> RunResult<TlsSettings> {
    let flags = TlsFlags::Grpc;
    let pem = |path| TlsFile { path, der: false };
    Ok(TlsSettings {
        flags,
        ca_file: existing(
            t.ssl_grpc_root_certifications_file.as_deref(),
            flags.ca_flag(),
        )?,
        client_cert: existing(
            t.ssl_grpc_certificate_chain_file.as_deref(),
            flags.cert_flag(),
        )?
        .map(pem),
        client_key: existing(t.ssl_grpc_private_key_file.as_deref(), flags.key_flag())?.map(pem),
        verify_peer: true,
        verify_host: true,
        target_name: target_name(t.ssl_target_name.as_deref())?,
    })
}

/// A client certificate needs its key and a key its certificate.
fn check_pair(s: &TlsSettings) -> RunResult<()> {
    match (&s.client_cert, &s.client_key) {
        (Some(_), None) => Err(RunError::bad_option(format!(
            "{} needs the certificate's private key too: add {}.",
            s.flags.cert_flag(),
            s.flags.key_flag()
        ))),
        (None, Some(_)) => Err(RunError::bad_option(format!(
            "{} needs the client certificate too: add {}.",
            s.flags.key_flag(),
            s.flags.cert_flag()
        ))),
        _ => Ok(()),
    }
}

/// The path, which must be a file.
fn existing(path: Option<&Path>, flag: &str) -> RunResult<Option<PathBuf>> {
    let Some(path) = path else {
        return Ok(None);
    };
    if !path.is_file() {
        return Err(RunError::bad_option(format!(
            "{flag} '{}' is not a file: check the path.",
            path.display()
        )));
    }
    Ok(Some(path.to_path_buf()))
}

/// `PEM` (default) or `DER`; true for DER.
fn parse_type(text: Option<&str>, flag: &str) -> RunResult<bool> {
    match text.map(str::to_ascii_uppercase).as_deref() {
        None | Some("PEM") => Ok(false),
        Some("DER") => Ok(true),
        Some(_) => Err(RunError::bad_option(format!(
            "{flag} '{}' is not a file type: use PEM or DER.",
            text.unwrap_or_default()
        ))),
    }
}

/// A 0/1(/2) switch: on unless 0; absent is on.
fn parse_switch(text: Option<&str>, flag: &str, allowed: &[&str]) -> RunResult<bool> {
    match text.map(str::trim) {
        None => Ok(true),
        Some(v) if allowed.contains(&v) => Ok(v != "0"),
        Some(v) => Err(RunError::bad_option(format!(
            "{flag} '{v}' must be one of {}.",
            allowed.join(", ")
        ))),
    }
}

fn target_name(name: Option<&str>) -> RunResult<Option<String>> {
    let Some(name) = name.map(str::trim) else {
        return Ok(None);
    };
    if rustls_pki_types::ServerName::try_from(name).is_err() {
        return Err(RunError::bad_option(format!(
            "--ssl-target-name '{name}' is not a DNS name or an IP address."
        )));
    }
    Ok(Some(name.to_string()))
}

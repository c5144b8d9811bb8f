//! The flags of `--service-kind torchserve`: where TorchServe's management API (model
//! discovery) and metrics endpoint (the server-side breakdown) are, and TorchServe's default
//! ports (8080 inference, 8081 management, 8082 metrics). Kept apart so that the rest of the
//! configuration need not know TorchServe's conventions.

use super::metrics::metrics_url;
use super::{Protocol, ServiceKind};
use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// TorchServe's inference port, where `-u` points by default.
pub const DEFAULT_URL: &str = "localhost:8080";
/// TorchServe's management port.
const MANAGEMENT_PORT: u16 = 8081;
/// TorchServe's metrics port.
const METRICS_PORT: u16 = 8082;

/// What a TorchServe run needs beyond the common flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchServeConfig {
    /// `http://host:port` of the management API.
    pub management_url: String,
    /// Whether `--torchserve-management-url` named it (else it is the default, and the
    /// client also tries `-u` itself before giving up on discovery).
    pub management_given: bool,
    /// `http://host:port/path` of the Prometheus metrics page.
    pub metrics_url: String,
}

/// TorchServe's inference port when `-u` is not given.
pub fn default_url(kind: ServiceKind) -> Option<&'static str> {
    (kind == ServiceKind::TorchServe).then_some(DEFAULT_URL)
}

/// Reads the TorchServe flags for `--service-kind torchserve`; refuses them elsewhere.
pub fn parse(
    args: &ProfileArgs,
    kind: ServiceKind,
    protocol: Protocol,
) -> RunResult<Option<TorchServeConfig>> {
    if kind != ServiceKind::TorchServe {
        if args.torchserve_management_url.is_some() {
            return Err(RunError::bad_option(
                "--torchserve-management-url applies to TorchServe only: add --service-kind torchserve, or drop it.",
            ));
        }
        return Ok(None);
    }
    if protocol == Protocol::Grpc {
        return Err(RunError::bad_option(
            "--service-kind torchserve speaks TorchServe's HTTP inference API only: use -i http (the default).",
        ));
    }
    if args.streaming {
        return Err(RunError::bad_option(
            "--streaming does not apply to TorchServe, whose predictions answer once: drop --streaming.",
        ));
    }
    let host = host_of(args.first_url().unwrap_or(DEFAULT_URL));
    let management_url = match args.torchserve_management_url.as_deref() {
        Some(given) => management_url(given)?,
        None => format!("http://{host}:{MANAGEMENT_PORT}"),
    };
    Ok(Some(TorchServeConfig {
        management_url,
        management_given: args.torchserve_management_url.is_some(),
        metrics_url: metrics_url(args, METRICS_PORT)?,
    }))
}

/// The host part of `-u` (scheme and port dropped).
pub fn host_of(url: &str) -> &str {
    let authority = url.split("://").last().unwrap_or(url);
    let authority = authority.trim_end_matches('/');
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

/// `--torchserve-management-url` as `http://host:port`.
fn management_url(given: &str) -> RunResult<String> {
    let given = given.trim();
    if given.starts_with("https://") {
        return Err(RunError::bad_option(format!(
            "--torchserve-management-url '{given}': HTTPS is not supported; give an http:// URL."
        )));
    }
    let bare = given.strip_prefix("http://").unwrap_or(given);
    let bare = bare.trim_end_matches('/');
    let valid = !bare.contains('/')
        && bare
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
        && bare.parse::<http::uri::Authority>().is_ok();
    if !valid {
        return Err(RunError::bad_option(format!(
            "--torchserve-management-url '{given}' is not host:port (e.g. localhost:8081)."
        )));
    }
    Ok(format!("http://{bare}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn management_urls_are_host_and_port() {
        assert_eq!(management_url("127.0.0.1:9").unwrap(), "http://127.0.0.1:9");
        assert_eq!(management_url("http://h:81/").unwrap(), "http://h:81");
        assert!(management_url("h").is_err());
        assert!(management_url("h:81/models").is_err());
        assert!(management_url("https://h:81").is_err());
        assert_eq!(host_of("http://a.b:8080"), "a.b");
        assert_eq!(host_of("localhost:8080"), "localhost");
    }
}

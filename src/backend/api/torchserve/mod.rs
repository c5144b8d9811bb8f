//! The TorchServe adapter: `POST /predictions/M[/V]` with a body that is the raw bytes of
//! the entry's input — the file a `TORCHSERVE_INPUT` entry names, as perf_analyzer sends
//! it, or the generated tensor's bytes — framed once per entry and sent on the hand-written
//! HTTP/1.1 KServe uses; any 2xx is a success. Discovery asks the management API
//! ([`management`]); the server-side breakdown comes from TorchServe's Prometheus
//! counters ([`metrics`]), since TorchServe has no statistics extension.

pub mod management;
pub mod metrics;

use std::time::Instant;

use bytes::BytesMut;

use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::backend::statistics::StatsSource;
use crate::backend::transport::http1::{frame_request, post_accepting, user_headers, Http1Stream};
use crate::backend::Conn;
use crate::backend::{Adapter, Connection, Discovered, Payload, Request, Target};
use crate::config::torchserve::TorchServeConfig;
use crate::data::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::ModelSpec;

/// The TorchServe adapter, with where its management API is and whether the inputs come
/// from `--shape` flags.
#[derive(Debug, Clone)]
pub struct TorchServe {
    settings: TorchServeConfig,
    shapes_given: bool,
}

impl TorchServe {
    /// The adapter of these settings; `shapes_given`: `--shape` describes the inputs.
    pub fn new(settings: &TorchServeConfig, shapes_given: bool) -> TorchServe {
        TorchServe {
            settings: settings.clone(),
            shapes_given,
        }
    }

    /// The metrics page the server-side breakdown is read from.
    pub fn metrics_url(&self) -> &str {
        &self.settings.metrics_url
    }
}

#[allow(async_fn_in_trait)]
impl Adapter for TorchServe {
    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        management::discover(target, &self.settings, self.shapes_given).await
    }

    fn encode(&self, target: &Target, _model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        if entry.prompt.is_some() {
            return Err(RunError::bad_option(format!(
                "--input-data {}: TorchServe takes a body of bytes, not a prompt.",
                entry.origin
            )));
        }
        let mut body = BytesMut::new();
        for input in &entry.inputs {
            body.extend_from_slice(&input.data);
        }
        let mut headers: Vec<(&str, &str)> = user_headers(&target.peer.headers).collect();
        if !target
            .peer
            .headers
            .iter()
            .any(|(name, _)| name == "content-type")
        {
            headers.push(("content-type", "application/octet-stream"));
        }
        let path = predictions_path(target);
        Ok(Payload::Http(frame_request(
            "POST",
            &path,
            &target.peer.authority,
            &headers,
            &body,
        )))
    }

    async fn open(&self, target: &Target, _slot: usize) -> Result<Connection, ErrorKind> {
        Ok(Connection::TorchServe(TsConn::open(target).await?))
    }

    async fn statistics(
        &self,
        target: &Target,
        _all_models: bool,
        _models: &[String],
    ) -> Result<StatsSource, String> {
        let source = metrics::TsMetricsSource::open(target, self.metrics_url()).await?;
        Ok(StatsSource::new(source))
    }
}

/// `/predictions/M` or, with `-x`, `/predictions/M/V`.
pub fn predictions_path(target: &Target) -> String {
    if target.version.is_empty() {
        format!("/predictions/{}", target.model)
    } else {
        format!("/predictions/{}/{}", target.model, target.version)
    }
}

/// One HTTP/1.1 connection to TorchServe's inference port.
pub struct TsConn {
    io: Http1Stream,
}

impl TsConn {
    pub async fn open(target: &Target) -> Result<TsConn, ErrorKind> {
        Ok(TsConn {
            io: Http1Stream::open(&target.peer).await?,
        })
    }
}

impl Conn for TsConn {
    fn is_usable(&mut self) -> bool {
        self.io.is_usable()
    }

    /// Writes a framed prediction and reads its answer: any 2xx with a whole body.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let (response, done): (_, Instant) =
            post_accepting(&mut self.io, request, ex, is_success).await?;
        if response.trailing > 0 {
            return Err(Failure::bad(
                Malformation::Overlong,
                format!("{} bytes came after the declared body", response.trailing),
            ));
        }
        ex.answer(done);
        ex.finish(done);
        Ok(())
    }
}

fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// A `http://host:port[/path]` URL as a target of its own (same headers and timeout, no
/// TLS), and its path; `Err` is the reason, as a phrase.
pub async fn side_target(target: &Target, url: &str) -> Result<(Target, String), String> {
    let bare = url.strip_prefix("http://").unwrap_or(url);
    let (authority, path) = match bare.find('/') {
        Some(at) => (&bare[..at], &bare[at..]),
        None => (bare, "/"),
    };
    let mut addrs: Vec<_> = tokio::net::lookup_host(authority)
        .await
        .map_err(|e| format!("cannot resolve {authority} ({e})"))?
        .collect();
    addrs.sort_by_key(|a| a.is_ipv6());
    let mut side = target.clone();
    side.peer.authority = authority.to_string();
    side.peer.addrs = addrs;
    side.peer.tls = None;
    Ok((side, path.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_2xx_is_a_success() {
        assert!(is_success(200) && is_success(201) && is_success(299));
        assert!(!is_success(199) && !is_success(404) && !is_success(503));
    }
}

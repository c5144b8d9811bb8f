//! KServe v2 over HTTP/1.1 with hyper: one connection per in-flight slot, request bodies
//! encoded once (JSON or the binary tensor data extension), and the REST calls that
//! discovery makes.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST};
use http::{HeaderMap, Method, Request, StatusCode, Uri};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

use super::{elapsed_ns, server_datatype, ConfigFacts, Discovered, Reply, Target};
use crate::error::{RunError, RunResult};
use crate::measure::sample::ErrorKind;
use crate::model::{DataType, Scheduler, TensorSpec};

const HEADER_LEN: &str = "inference-header-content-length";

/// A request body that notes when the connection took its bytes, so that the client's send
/// time can be told apart from the wait for the answer.
struct TimedBody {
    data: Option<Bytes>,
    taken_at: Arc<AtomicU64>,
    base: Instant,
}

impl Body for TimedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let data = self.data.take();
        if data.is_some() {
            let ns = self.base.elapsed().as_nanos() as u64;
            self.taken_at.store(ns, Ordering::Relaxed);
        }
        Poll::Ready(data.map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// One HTTP/1.1 connection to the server.
pub struct HttpConn {
    sender: SendRequest<TimedBody>,
    infer_uri: Uri,
    headers: HeaderMap,
    taken_at: Arc<AtomicU64>,
    base: Instant,
}

impl HttpConn {
    pub async fn open(target: &Target) -> Result<HttpConn, ErrorKind> {
        let stream = connect_any(target).await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|_| ErrorKind::Connection)?;
        tokio::spawn(async move {
            // The connection ends when the slot drops its sender or the server closes it.
            let _ = connection.await;
        });
        let infer_uri = format!("{}/infer", target.model_path())
            .parse()
            .map_err(|_| ErrorKind::BadResponse)?;
        Ok(HttpConn {
            sender,
            infer_uri,
            headers: base_headers(target),
            taken_at: Arc::new(AtomicU64::new(0)),
            base: Instant::now(),
        })
    }

    pub fn is_usable(&self) -> bool {
        !self.sender.is_closed()
    }

    /// POSTs an inference body and reads the whole answer.
    pub async fn infer(
        &mut self,
        body: Bytes,
        header_len: Option<usize>,
    ) -> Result<Reply, ErrorKind> {
        let mut headers = self.headers.clone();
        match header_len {
            Some(len) => {
                headers.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/octet-stream"),
                );
                headers.insert(HeaderName::from_static(HEADER_LEN), HeaderValue::from(len));
            }
            None => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            }
        }
        let uri = self.infer_uri.clone();
        self.exchange(Method::POST, uri, headers, body).await
    }

    /// One request/response exchange with timings.
    async fn exchange(
        &mut self,
        method: Method,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Reply, ErrorKind> {
        // The connection must have finished the previous exchange before it takes another.
        self.sender
            .ready()
            .await
            .map_err(|_| ErrorKind::Connection)?;
        let start_ns = self.base.elapsed().as_nanos() as u64;
        self.taken_at.store(start_ns, Ordering::Relaxed);
        let mut request = Request::new(TimedBody {
            data: (!body.is_empty()).then_some(body),
            taken_at: self.taken_at.clone(),
            base: self.base,
        });
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|_| ErrorKind::Connection)?;
        let first_byte = Instant::now();
        let status = response.status();
        let header_len = response
            .headers()
            .get(HEADER_LEN)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|_| ErrorKind::Connection)?
            .to_bytes();
        let recv_ns = elapsed_ns(first_byte);
        if status != StatusCode::OK {
            return Err(ErrorKind::HttpStatus(status.as_u16()));
        }
        let taken = self
            .taken_at
            .load(Ordering::Relaxed)
            .saturating_sub(start_ns);
        Ok(Reply {
            send_ns: taken.min(u32::MAX as u64) as u32,
            recv_ns,
            body,
            header_len,
        })
    }

    /// GETs a JSON resource; `Ok((status, body))` for any answer from the server.
    pub(super) async fn get(&mut self, path: &str) -> Result<(StatusCode, Bytes), ErrorKind> {
        let uri: Uri = path.parse().map_err(|_| ErrorKind::BadResponse)?;
        match self
            .exchange(Method::GET, uri, self.headers.clone(), Bytes::new())
            .await
        {
            Ok(reply) => Ok((StatusCode::OK, reply.body)),
            Err(ErrorKind::HttpStatus(code)) => Ok((
                StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                Bytes::new(),
            )),
            Err(other) => Err(other),
        }
    }
}

/// Headers every request carries: Host and the user's `-H` headers.
fn base_headers(target: &Target) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(host) = HeaderValue::from_str(&target.authority) {
        headers.insert(HOST, host);
    }
    for (name, value) in &target.headers {
        // Validated when the flags were read.
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(n, v);
        }
    }
    headers
}

/// Connects to the first address that accepts, with the target's timeout.
async fn connect_any(target: &Target) -> Result<TcpStream, ErrorKind> {
    for addr in &target.addrs {
        let attempt = tokio::time::timeout(target.timeout, TcpStream::connect(addr)).await;
        if let Ok(Ok(stream)) = attempt {
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
    }
    Err(ErrorKind::Connection)
}

/// Reads server metadata, model metadata and (if present) the model configuration.
pub async fn discover(target: &Target) -> RunResult<Discovered> {
    let mut conn = HttpConn::open(target)
        .await
        .map_err(|_| target.unreachable("connection refused or timed out"))?;
    let fail = |what: &str, e: ErrorKind| target.unreachable(&format!("{what} failed ({e})"));
    let (status, server) = conn.get("/v2").await.map_err(|e| fail("GET /v2", e))?;
    let extensions = if status == StatusCode::OK {
        parse_json(&server, "/v2")?["extensions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let model_path = target.model_path();
    let (status, metadata) = conn
        .get(&model_path)
        .await
        .map_err(|e| fail("GET model metadata", e))?;
    if status != StatusCode::OK {
        return Err(model_not_found(target, status));
    }
    let mut found = parse_metadata(&parse_json(&metadata, &model_path)?, target)?;
    found.extensions = extensions;
    let config_path = format!("{model_path}/config");
    let (status, config) = conn
        .get(&config_path)
        .await
        .map_err(|e| fail("GET model config", e))?;
    if status == StatusCode::OK {
        found.config = Some(parse_config(&parse_json(&config, &config_path)?));
    }
    Ok(found)
}

fn model_not_found(target: &Target, status: StatusCode) -> RunError {
    let version = if target.version.is_empty() {
        String::new()
    } else {
        format!(" version {}", target.version)
    };
    RunError::failed(format!(
        "The server at {} has no model '{}'{version} (HTTP {}): check -m and -x.",
        target.authority,
        target.model,
        status.as_u16()
    ))
}

fn parse_json(body: &[u8], path: &str) -> RunResult<Value> {
    serde_json::from_slice(body).map_err(|e| {
        RunError::failed(format!(
            "The server's answer to GET {path} is not JSON ({e}): is this a KServe v2 server? For a gRPC port use -i grpc."
        ))
    })
}

/// Model metadata: `{name, versions, platform, inputs: [{name, datatype, shape}], outputs}`.
fn parse_metadata(meta: &Value, target: &Target) -> RunResult<Discovered> {
    Ok(Discovered {
        name: meta["name"].as_str().unwrap_or(&target.model).to_string(),
        version: target.version.clone(),
        platform: meta["platform"].as_str().unwrap_or_default().to_string(),
        inputs: parse_tensors(&meta["inputs"])?,
        outputs: parse_tensors(&meta["outputs"])?,
        ..Default::default()
    })
}

fn parse_tensors(list: &Value) -> RunResult<Vec<TensorSpec>> {
    let Some(items) = list.as_array() else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap_or_default().to_string();
            let datatype: DataType = server_datatype(t["datatype"].as_str().unwrap_or(""), &name)?;
            let shape = t["shape"]
                .as_array()
                .map(|dims| dims.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default();
            Ok(TensorSpec {
                name,
                datatype,
                shape,
            })
        })
        .collect()
}

/// Names in first-seen order without repeats (an ensemble may call a model twice).
pub(super) fn unique(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = Vec::new();
    for name in names {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}

/// Triton's JSON model configuration.
fn parse_config(config: &Value) -> ConfigFacts {
    let scheduler = if config
        .get("ensemble_scheduling")
        .is_some_and(|v| !v.is_null())
    {
        Scheduler::Ensemble
    } else if config
        .get("sequence_batching")
        .is_some_and(|v| !v.is_null())
    {
        Scheduler::Sequence
    } else if config.get("dynamic_batching").is_some_and(|v| !v.is_null()) {
        Scheduler::Dynamic
    } else {
        Scheduler::None
    };
    ConfigFacts {
        max_batch_size: config["max_batch_size"].as_u64().unwrap_or(0) as u32,
        scheduler,
        decoupled: config["model_transaction_policy"]["decoupled"]
            .as_bool()
            .unwrap_or(false),
        response_cache: config["response_cache"]["enable"]
            .as_bool()
            .unwrap_or(false),
        composing_models: config["ensemble_scheduling"]["step"]
            .as_array()
            .map(|steps| {
                let names = steps.iter().filter_map(|s| s["model_name"].as_str());
                unique(names.map(String::from))
            })
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn triton_config_json_is_read() {
        let facts = parse_config(&json!({
            "max_batch_size": 8,
            "dynamic_batching": {"preferred_batch_size": [4]},
            "model_transaction_policy": {"decoupled": false},
            "response_cache": {"enable": true}
        }));
        assert_eq!(facts.max_batch_size, 8);
        assert_eq!(facts.scheduler, Scheduler::Dynamic);
        assert!(facts.response_cache);
        assert_eq!(parse_config(&json!({})).scheduler, Scheduler::None);
    }

    #[test]
    fn unknown_datatype_names_the_tensor() {
        let err =
            parse_tensors(&json!([{"name": "X", "datatype": "FP8", "shape": [1]}])).unwrap_err();
        assert!(err.to_string().contains("'X'"), "{err}");
    }
}

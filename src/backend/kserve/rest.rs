//! KServe v2 over HTTP/1.1: one connection per in-flight slot, each inference request framed
//! once when the dataset is built (JSON or the binary tensor data extension) and written in
//! one piece, its answer checked; and the REST calls that discovery and the statistics
//! reader make. The exchange itself is the hand-written HTTP/1.1 of `backend::http1`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;

use super::answer::check_http;
use super::shm_answer::SlotShm;
use crate::backend::http1::{frame_request, user_headers, Http1Stream, Response};
use crate::backend::memo::CheckedAnswers;
use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::backend::tls::TlsClient;
use crate::backend::{nanos, server_datatype, ConfigFacts, Discovered, Payload, Request, Target};
use crate::error::{RunError, RunResult};
use crate::model::{DataType, Scheduler, TensorSpec};

/// Path prefix of a model's REST resources: `/v2/models/M[/versions/V]`.
pub fn model_path(model: &str, version: &str) -> String {
    if version.is_empty() {
        format!("/v2/models/{model}")
    } else {
        format!("/v2/models/{model}/versions/{version}")
    }
}

/// The whole HTTP request for one inference body: `POST …/infer` with `Host`, the `-H`
/// headers and the content headers, framed once so that sending it is one write.
pub fn infer_request(target: &Target, body: &[u8], header_len: Option<usize>) -> Bytes {
    let path = format!("{}/infer", target.model_path());
    let header_len = header_len.map(|n| n.to_string());
    let mut headers: Vec<(&str, &str)> = user_headers(&target.headers).collect();
    match &header_len {
        Some(len) => {
            headers.push(("content-type", "application/octet-stream"));
            headers.push(("inference-header-content-length", len));
        }
        None => headers.push(("content-type", "application/json")),
    }
    frame_request("POST", &path, &target.authority, &headers, body)
}

/// Writes the framed HTTP request of `request` and reads its whole answer, which must be a
/// 200, setting the exchange's send and receive times: the response and when it was complete
/// (KServe's and TF Serving's REST connections).
pub(crate) async fn post(
    io: &mut Http1Stream,
    request: &Request,
    ex: &mut Exchange<'_>,
) -> Result<(Response, Instant), Failure> {
    post_accepting(io, request, ex, |status| status == 200).await
}

/// [`post`], with `accept` saying which statuses are a success (TorchServe: any 2xx).
pub(crate) async fn post_accepting(
    io: &mut Http1Stream,
    request: &Request,
    ex: &mut Exchange<'_>,
    accept: fn(u16) -> bool,
) -> Result<(Response, Instant), Failure> {
    let Payload::Http(bytes) = &request.payload else {
        return Err(ErrorKind::Connection.into());
    };
    io.send(bytes).await?;
    let written = Instant::now();
    let response = io.receive().await?;
    let done = Instant::now();
    if !accept(response.status) {
        return Err(ErrorKind::HttpStatus(response.status).into());
    }
    ex.send_ns = nanos(written.saturating_duration_since(ex.sent));
    ex.recv_ns = nanos(done.saturating_duration_since(response.first_byte));
    Ok((response, done))
}

/// One HTTP/1.1 connection to the server.
pub struct HttpConn {
    io: Http1Stream,
    /// Where to reconnect when a GET finds the connection closed.
    addrs: Vec<SocketAddr>,
    timeout: Duration,
    tls: Option<Arc<TlsClient>>,
    host: String,
    headers: Vec<(String, String)>,
    checked: CheckedAnswers<()>,
    /// `--shared-memory system`: the slot's output region and its requests.
    shm: Option<SlotShm>,
}

impl HttpConn {
    pub async fn open(target: &Target) -> Result<HttpConn, ErrorKind> {
        Ok(HttpConn {
            io: Http1Stream::open(target).await?,
            addrs: target.addrs.clone(),
            timeout: target.timeout,
            tls: target.tls.clone(),
            host: target.authority.clone(),
            headers: target.headers.clone(),
            checked: CheckedAnswers::default(),
            shm: None,
        })
    }

    /// The connection of a slot whose requests use shared-memory regions.
    pub fn with_shm(self, shm: SlotShm) -> HttpConn {
        HttpConn {
            shm: Some(shm),
            ..self
        }
    }

    pub fn is_usable(&mut self) -> bool {
        self.io.is_usable()
    }

    /// Writes a framed inference request and reads and checks its answer.
    pub async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let own = self.shm.as_mut().map(|shm| shm.request(request));
        let request = own.as_ref().unwrap_or(request);
        let (response, done) = post(&mut self.io, request, ex).await?;
        if response.trailing > 0 {
            return Err(Failure::bad(
                Malformation::Overlong,
                format!(
                    "{} bytes came after the {}-byte body the answer declares",
                    response.trailing,
                    response.body.len()
                ),
            ));
        }
        let (body, header_len) = (&response.body, response.header_len);
        match &self.shm {
            Some(shm) => shm.check_http(&mut self.checked, request, body, header_len)?,
            None => check_http(&mut self.checked, request, body, header_len)?,
        }
        ex.answer(done);
        ex.finish(done);
        Ok(())
    }

    /// GETs a resource; `Ok((status, body))` for any answer from the server. A connection
    /// the server closed meanwhile is opened anew first.
    pub(crate) async fn get(&mut self, path: &str) -> Result<(StatusCode, Bytes), ErrorKind> {
        self.exchange("GET", path, b"").await
    }

    /// POSTs a JSON body; `Ok((status, body))` for any answer, as [`HttpConn::get`].
    pub(crate) async fn post_json(
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

/// Reads server metadata, model metadata and (if present) the model configuration.
pub async fn discover(target: &Target) -> RunResult<Discovered> {
    let mut conn = match HttpConn::open(target).await {
        Ok(conn) => conn,
        Err(_) => {
            return Err(target
                .connect_failure("connection refused or timed out")
                .await)
        }
    };
    let fail = |what: &str, e: ErrorKind| target.unreachable(&format!("{what} failed ({e})"));
    let (status, server) = match conn.get("/v2").await {
        Ok(answer) => answer,
        Err(e) => {
            return Err(target
                .connect_failure(&format!("GET /v2 failed ({e})"))
                .await)
        }
    };
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
pub(crate) fn parse_metadata(meta: &Value, target: &Target) -> RunResult<Discovered> {
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
pub(crate) fn parse_config(config: &Value) -> ConfigFacts {
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
        string_sequence_ids: string_correlation_ids(&config["sequence_batching"]),
    }
}

/// Whether a sequence batcher's `CORRID` control input is `TYPE_STRING`.
fn string_correlation_ids(batching: &Value) -> bool {
    let controls = batching["control_input"].as_array().into_iter().flatten();
    controls
        .flat_map(|input| input["control"].as_array().into_iter().flatten())
        .any(|c| c["kind"] == "CONTROL_SEQUENCE_CORRID" && c["data_type"] == "TYPE_STRING")
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
        let sequence = parse_config(&json!({"sequence_batching": {"control_input": [
            {"name": "CORRID", "control": [
                {"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_STRING"}]}]}}));
        assert_eq!(sequence.scheduler, Scheduler::Sequence);
        assert!(sequence.string_sequence_ids);
        let numeric = parse_config(&json!({"sequence_batching": {}}));
        assert!(!numeric.string_sequence_ids);
    }

    #[test]
    fn unknown_datatype_names_the_tensor() {
        let err =
            parse_tensors(&json!([{"name": "X", "datatype": "FP8", "shape": [1]}])).unwrap_err();
        assert!(err.to_string().contains("'X'"), "{err}");
    }
}

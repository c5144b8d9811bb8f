//! KServe v2 over HTTP/1.1: one connection per in-flight slot, each inference request framed
//! once when the dataset is built (JSON or the binary tensor data extension) and written in
//! one piece, its answer checked; and discovery over REST. The exchange itself is the
//! transport's hand-written HTTP/1.1 (`transport::http1`); discovery goes through its control
//! client.

use http::StatusCode;
use serde_json::Value;

use super::answer::check_http;
use super::request::model_path;
use super::shm_answer::SlotShm;
use crate::backend::memo::CheckedAnswers;
use crate::backend::open_inference::metadata::{parse_config, parse_metadata};
use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::backend::transport::control::HttpControl;
use crate::backend::transport::http1::{post, Http1Stream};
use crate::backend::Conn;
use crate::backend::{Discovered, Request, Target};
use inferperf_wire::error::{RunError, RunResult};

/// One HTTP/1.1 connection to the server, for inference requests.
pub struct HttpConn {
    io: Http1Stream,
    checked: CheckedAnswers<()>,
    /// `--shared-memory system`: the slot's output region and its requests.
    shm: Option<SlotShm>,
}

impl HttpConn {
    pub async fn open(target: &Target) -> Result<HttpConn, ErrorKind> {
        Ok(HttpConn {
            io: Http1Stream::open(&target.peer).await?,
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
}

impl Conn for HttpConn {
    fn is_usable(&mut self) -> bool {
        self.io.is_usable()
    }

    /// Writes a framed inference request and reads and checks its answer.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
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
}

/// Reads server metadata, model metadata and (if present) the model configuration.
pub async fn discover(target: &Target) -> RunResult<Discovered> {
    let mut conn = match HttpControl::open(&target.peer).await {
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
    let model_path = model_path(&target.model, &target.version);
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
        target.peer.authority,
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

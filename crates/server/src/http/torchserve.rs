//! TorchServe's APIs on the embedded server's HTTP port, over the same models: `POST
//! /predictions/M[/V]` takes the body as the raw bytes of the model's one input and answers
//! with the raw bytes of its outputs (an identity model echoes), `GET /models` and `GET
//! /models/M[/V]` answer as TorchServe's management API does (served on the same port, so
//! a client that falls back to its inference address finds them), and `/ping`. Predictions
//! run through the model's scheduler and so are counted like every other front end's; the
//! metrics page shows them under TorchServe's names ([`super::metrics`]), with every answer
//! counted by its status class.

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, Method, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::reply::{body_reply, json_reply, read_body, Reply, OCTETS};
use crate::error::InferError;
use crate::local::LocalServer;
use inferperf_wire::model::DataType;
use inferperf_wire::proto::model_metadata_response::TensorMetadata;
use inferperf_wire::{InferRequest, Tensor};

/// A TorchServe path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TsRoute<'a> {
    Ping,
    Predict { name: &'a str, version: &'a str },
    ListModels,
    Describe { name: &'a str, version: &'a str },
}

/// Matches TorchServe's paths; others are not its.
pub(crate) fn route(path: &str) -> Option<TsRoute<'_>> {
    if path == "/ping" {
        return Some(TsRoute::Ping);
    }
    if path == "/models" {
        return Some(TsRoute::ListModels);
    }
    let (rest, predict) = match path.strip_prefix("/predictions/") {
        Some(rest) => (rest, true),
        None => (path.strip_prefix("/models/")?, false),
    };
    let mut parts = rest.split('/');
    let name = parts.next().filter(|n| !n.is_empty())?;
    let version = parts.next().unwrap_or("");
    if parts.next().is_some() {
        return None;
    }
    Some(match predict {
        true => TsRoute::Predict { name, version },
        false => TsRoute::Describe { name, version },
    })
}

/// Answers a request on a TorchServe route, counting the answer by its status class.
pub(crate) async fn handle(
    server: &LocalServer,
    method: &Method,
    route: TsRoute<'_>,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    let reply = answer(server, method, route, headers, body).await;
    server.torchserve_answers().count(reply.status().as_u16());
    reply
}

async fn answer(
    server: &LocalServer,
    method: &Method,
    route: TsRoute<'_>,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    match (method, route) {
        (&Method::GET, TsRoute::Ping) => json_reply(StatusCode::OK, &json!({"status": "Healthy"})),
        (&Method::GET, TsRoute::ListModels) => list(server),
        (&Method::GET, TsRoute::Describe { name, version }) => describe(server, name, version),
        (&Method::POST | &Method::PUT, TsRoute::Predict { name, version }) => {
            match read_body(headers, body).await {
                Ok(body) => predict(server, name, version, body).await,
                Err((status, message)) => error(status, "BadRequestException", &message),
            }
        }
        (method, _) => error(
            405,
            "MethodNotAllowedException",
            &format!("{method} is not allowed here"),
        ),
    }
}

/// TorchServe's error body: `{"code", "type", "message"}`.
fn error(status: u16, kind: &str, message: &str) -> Reply {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_reply(
        code,
        &json!({"code": status, "type": kind, "message": message}),
    )
}

fn infer_error(e: &InferError) -> Reply {
    let kind = match e {
        InferError::NotFound(_) => "ModelNotFoundException",
        InferError::BadRequest(_) => "BadRequestException",
        InferError::Unavailable(_) | InferError::ResourceExhausted(_) => {
            "ServiceUnavailableException"
        }
        _ => "InternalServerException",
    };
    error(e.http_status(), kind, e.message())
}

fn list(server: &LocalServer) -> Reply {
    let models: Vec<Value> = (server.names().iter())
        .map(|n| json!({"modelName": n, "modelUrl": format!("{n}.mar")}))
        .collect();
    json_reply(StatusCode::OK, &json!({ "models": models }))
}

/// Describe-model: one entry, version "1", one READY worker.
fn describe(server: &LocalServer, name: &str, version: &str) -> Reply {
    let found = server.find(name, version).and_then(|s| {
        s.model.refuse_kserve()?;
        Ok(s)
    });
    match found {
        Ok(_) => json_reply(
            StatusCode::OK,
            &json!([{
                "modelName": name,
                "modelVersion": "1",
                "modelUrl": format!("{name}.mar"),
                "runtime": "inferperf",
                "minWorkers": 1,
                "maxWorkers": 1,
                "batchSize": 1,
                "maxBatchDelay": 0,
                "loadedAtStartup": true,
                "workers": [{"id": "1", "status": "READY", "gpu": false}],
            }]),
        ),
        Err(e) => infer_error(&e),
    }
}

async fn predict(server: &LocalServer, name: &str, version: &str, body: Bytes) -> Reply {
    match run(server, name, version, body).await {
        Ok(answer) => body_reply(StatusCode::OK, answer, OCTETS),
        Err(e) => infer_error(&e),
    }
}

/// The body as the model's one input, the inference, and the outputs' bytes.
async fn run(
    server: &LocalServer,
    name: &str,
    version: &str,
    body: Bytes,
) -> Result<Bytes, InferError> {
    let meta = server
        .metadata(name)
        .ok_or_else(|| InferError::unknown_model(name, version))?;
    let [input] = meta.inputs.as_slice() else {
        return Err(InferError::BadRequest(format!(
            "a TorchServe prediction carries one body, and model '{name}' has {} inputs",
            meta.inputs.len()
        )));
    };
    let request = InferRequest {
        inputs: vec![body_tensor(input, body)?],
        ..Default::default()
    };
    let response = server.infer(name, version, request).await?;
    let mut out = BytesMut::new();
    for output in &response.outputs {
        out.extend_from_slice(&output.data);
    }
    Ok(out.freeze())
}

/// The body as a tensor of the input's datatype: one BYTES element, or as many elements as
/// the bytes hold, the first variable dimension taking what the fixed ones leave.
fn body_tensor(input: &TensorMetadata, body: Bytes) -> Result<Tensor, InferError> {
    let bad = |m: String| InferError::BadRequest(m);
    let datatype: DataType = (input.datatype.parse()).map_err(|_| {
        bad(format!(
            "input '{}' has datatype {}",
            input.name, input.datatype
        ))
    })?;
    let Some(size) = datatype.element_size() else {
        let mut data = BytesMut::with_capacity(4 + body.len());
        data.put_u32_le(body.len() as u32);
        data.extend_from_slice(&body);
        return Ok(tensor(
            input,
            datatype,
            vec![1; input.shape.len().max(1)],
            data.freeze(),
        ));
    };
    let fixed: i64 = input.shape.iter().filter(|&&d| d > 0).product();
    let elements = body.len() / size;
    let fits = body.len().is_multiple_of(size) && fixed > 0 && elements as i64 % fixed == 0;
    let variable = input.shape.iter().any(|&d| d < 0);
    if !fits || (!variable && elements as i64 != fixed) {
        return Err(bad(format!(
            "the body's {} bytes are not a whole {} tensor of shape {:?} for input '{}'",
            body.len(),
            input.datatype,
            input.shape,
            input.name
        )));
    }
    let mut left = elements as i64 / fixed;
    let shape = (input.shape.iter())
        .map(|&d| match d {
            d if d > 0 => d,
            _ => std::mem::replace(&mut left, 1),
        })
        .collect();
    Ok(tensor(input, datatype, shape, body))
}

fn tensor(input: &TensorMetadata, datatype: DataType, shape: Vec<i64>, data: Bytes) -> Tensor {
    Tensor {
        name: input.name.clone(),
        datatype,
        shape,
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_torchserves_paths_only() {
        let p = |name, version| Some(TsRoute::Predict { name, version });
        assert_eq!(route("/predictions/m"), p("m", ""));
        assert_eq!(route("/predictions/m/2"), p("m", "2"));
        assert_eq!(route("/models"), Some(TsRoute::ListModels));
        assert_eq!(
            route("/models/m/1"),
            Some(TsRoute::Describe {
                name: "m",
                version: "1"
            })
        );
        assert_eq!(route("/ping"), Some(TsRoute::Ping));
        assert_eq!(route("/predictions/"), None);
        assert_eq!(route("/predictions/m/1/x"), None);
        assert_eq!(route("/v2/models/m"), None);
    }

    #[test]
    fn the_body_fills_the_variable_dimension() {
        let input = TensorMetadata {
            name: "x".into(),
            datatype: "FP32".into(),
            shape: vec![-1, 4],
        };
        let t = body_tensor(&input, Bytes::from(vec![0u8; 32])).unwrap();
        assert_eq!(t.shape, vec![2, 4]);
        assert!(body_tensor(&input, Bytes::from(vec![0u8; 20])).is_err());
    }
}

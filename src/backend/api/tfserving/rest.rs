//! TF Serving's REST API over the hand-written HTTP/1.1 of `transport::http1`: discovery from
//! `GET /v1/models/M[/versions/V]/metadata`, each entry framed once as a
//! `POST /v1/models/M[/versions/V]:predict` with the columnar `inputs` body (or the row-wise
//! `instances` one), and the answer's `outputs` (or `predictions`) decoded with the
//! datatypes the signature declares and checked.

use std::collections::HashMap;

use bytes::Bytes;
use http::StatusCode;
use serde_json::{Map, Value};

use super::{discovered, no_model, pick_signature};
use crate::backend::check::wire_failure;
use crate::backend::memo::{memoised, CheckedAnswers};
use crate::backend::outcome::{ErrorKind, Exchange, Failure, Malformation};
use crate::backend::transport::control::HttpControl;
use crate::backend::transport::http1::{frame_request, post, user_headers, Http1Stream};
use crate::backend::Conn;
use crate::backend::{Discovered, Payload, Request, Target};
use crate::config::tfserving::RestFormat;
use crate::data::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::proto::tensorflow::{DataType as TfType, SignatureDef, TensorInfo};
use inferperf_wire::tf_json::{columns, from_json, rows, to_json};
use inferperf_wire::tfserving::tf_shape;
use inferperf_wire::{Tensor, WireError};

/// `/v1/models/M[/versions/V]`.
pub fn model_path(target: &Target) -> String {
    if target.version.is_empty() {
        format!("/v1/models/{}", target.model)
    } else {
        format!("/v1/models/{}/versions/{}", target.model, target.version)
    }
}

/// Reads the signature `signature` from the model's metadata resource.
pub async fn discover(target: &Target, signature: &str) -> RunResult<Discovered> {
    let mut conn = HttpControl::open(&target.peer)
        .await
        .map_err(|_| target.unreachable("connection refused or timed out"))?;
    let path = format!("{}/metadata", model_path(target));
    let (status, body) = conn
        .get(&path)
        .await
        .map_err(|e| target.unreachable(&format!("GET {path} failed ({e})")))?;
    if status != StatusCode::OK {
        return Err(no_model(target, &format!("HTTP {}", status.as_u16())));
    }
    let unreadable = |detail: String| {
        RunError::failed(format!(
            "The server's answer to GET {path} is not TF Serving's model metadata ({detail}): is this TF Serving's REST port? For its gRPC port use -i grpc."
        ))
    };
    let meta: Value = serde_json::from_slice(&body).map_err(|e| unreadable(e.to_string()))?;
    let map = &meta["metadata"]["signature_def"]["signature_def"];
    let Some(map) = map.as_object() else {
        return Err(unreadable("no metadata.signature_def.signature_def".into()));
    };
    let signatures: HashMap<String, SignatureDef> = map
        .iter()
        .map(|(name, def)| (name.clone(), signature_def(def)))
        .collect();
    discovered(target, pick_signature(target, &signatures, signature)?)
}

/// A signature in its JSON form (dtype names, int64 sizes as strings or numbers).
fn signature_def(def: &Value) -> SignatureDef {
    let infos = |side: &Value| -> HashMap<String, TensorInfo> {
        let Some(map) = side.as_object() else {
            return HashMap::new();
        };
        map.iter()
            .map(|(n, i)| (n.clone(), tensor_info(i)))
            .collect()
    };
    SignatureDef {
        inputs: infos(&def["inputs"]),
        outputs: infos(&def["outputs"]),
        method_name: def["method_name"].as_str().unwrap_or_default().to_string(),
    }
}

fn tensor_info(info: &Value) -> TensorInfo {
    let dtype = info["dtype"].as_str().unwrap_or_default();
    let size = |d: &Value| -> i64 {
        let size = &d["size"];
        (size.as_i64()).unwrap_or_else(|| size.as_str().and_then(|s| s.parse().ok()).unwrap_or(0))
    };
    let shape = &info["tensor_shape"];
    let dims: Vec<i64> = (shape["dim"].as_array())
        .map(|d| d.iter().map(size).collect())
        .unwrap_or_default();
    let mut tensor_shape = tf_shape(&dims);
    tensor_shape.unknown_rank = shape["unknown_rank"].as_bool().unwrap_or(false);
    TensorInfo {
        encoding: None,
        dtype: TfType::from_str_name(dtype).map_or(-1, |t| t as i32),
        tensor_shape: Some(tensor_shape),
    }
}

/// One entry as the whole HTTP request of a predict call.
pub fn encode(
    target: &Target,
    signature: &str,
    format: RestFormat,
    entry: &Entry,
) -> Result<Payload, WireError> {
    let mut body = Map::new();
    body.insert("signature_name".into(), Value::from(signature));
    match format {
        RestFormat::Inputs => {
            let inputs = (entry.inputs.iter())
                .map(|t| Ok((t.name.clone(), to_json(t)?)))
                .collect::<Result<Map<_, _>, WireError>>()?;
            body.insert("inputs".into(), Value::Object(inputs));
        }
        RestFormat::Instances => {
            body.insert("instances".into(), Value::Array(instances(&entry.inputs)?));
        }
    }
    let path = format!("{}:predict", model_path(target));
    let mut headers: Vec<(&str, &str)> = user_headers(&target.peer.headers).collect();
    headers.push(("content-type", "application/json"));
    let body = Value::Object(body).to_string();
    Ok(Payload::Http(frame_request(
        "POST",
        &path,
        &target.peer.authority,
        &headers,
        body.as_bytes(),
    )))
}

/// The inputs split along their first axis into rows: the values themselves for one input,
/// objects by input name for several (which must then have as many rows each).
fn instances(inputs: &[Tensor]) -> Result<Vec<Value>, WireError> {
    if let [only] = inputs {
        return rows(only);
    }
    let split = inputs.iter().map(rows).collect::<Result<Vec<_>, _>>()?;
    let count = split.first().map_or(0, Vec::len);
    if let Some(at) = split.iter().position(|r| r.len() != count) {
        return Err(WireError::TfJson {
            tensor: inputs[at].name.clone(),
            detail: format!(
                "instances need every input to have {count} rows, as '{}' has",
                inputs[0].name
            ),
        });
    }
    Ok((0..count)
        .map(|row| {
            let fields = inputs.iter().zip(&split);
            Value::Object(
                fields
                    .map(|(t, r)| (t.name.clone(), r[row].clone()))
                    .collect(),
            )
        })
        .collect())
}

/// One HTTP/1.1 connection to TF Serving's REST port.
pub struct TfHttpConn {
    io: Http1Stream,
    format: RestFormat,
    checked: CheckedAnswers<()>,
}

impl TfHttpConn {
    pub async fn open(target: &Target, format: RestFormat) -> Result<TfHttpConn, ErrorKind> {
        Ok(TfHttpConn {
            io: Http1Stream::open(&target.peer).await?,
            format,
            checked: CheckedAnswers::default(),
        })
    }
}

impl Conn for TfHttpConn {
    fn is_usable(&mut self) -> bool {
        self.io.is_usable()
    }

    /// Writes a framed predict request and reads and checks its answer.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let (response, done) = post(&mut self.io, request, ex).await?;
        if response.trailing > 0 {
            return Err(Failure::bad(
                Malformation::Overlong,
                format!("{} bytes came after the declared body", response.trailing),
            ));
        }
        memoised(&mut self.checked, request, &response.body, || {
            check_answer(request, self.format, &response.body)
        })?;
        ex.answer(done);
        ex.finish(done);
        Ok(())
    }
}

/// Decodes the outputs of a predict answer with the signature's datatypes and checks them.
pub fn check_answer(request: &Request, format: RestFormat, body: &Bytes) -> Result<(), Failure> {
    let answer: Value = serde_json::from_slice(body).map_err(|e| {
        Failure::bad(
            Malformation::Unreadable,
            format!("the answer is not JSON ({e})"),
        )
    })?;
    if let Some(error) = answer.get("error") {
        return Err(Failure::bad(
            Malformation::ErrorBody,
            format!("the answer is an error: {error}"),
        ));
    }
    let specs = &request.check.outputs;
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let key = match format {
        RestFormat::Inputs => "outputs",
        RestFormat::Instances => "predictions",
    };
    let missing = || {
        Failure::bad(
            Malformation::MissingOutput,
            format!("the answer has no '{key}'"),
        )
    };
    let found = answer.get(key).ok_or_else(missing)?;
    let by_name = match (format, found) {
        (RestFormat::Instances, Value::Array(rows)) => columns(rows, &names),
        (RestFormat::Instances, _) => Err(WireError::TfJson {
            tensor: key.into(),
            detail: "predictions must be a list of rows".into(),
        }),
        // Outputs by name; a lone `{"b64": …}` is a single BYTES scalar instead.
        (RestFormat::Inputs, Value::Object(map))
            if !(map.len() == 1 && map.contains_key("b64")) =>
        {
            Ok(map.clone())
        }
        (RestFormat::Inputs, value) if names.len() == 1 => {
            Ok(Map::from_iter([(names[0].to_string(), value.clone())]))
        }
        (RestFormat::Inputs, _) => Ok(Map::new()),
    }
    .map_err(wire_failure)?;
    let outputs = (specs.iter())
        .filter_map(|s| {
            by_name
                .get(&s.name)
                .map(|v| from_json(&s.name, s.datatype, v))
        })
        .collect::<Result<Vec<Tensor>, WireError>>()
        .map_err(wire_failure)?;
    request.check.check(&outputs)?;
    Ok(())
}

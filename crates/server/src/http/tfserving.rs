//! TF Serving's REST API on the embedded server's HTTP port: `POST
//! /v1/models/M[/versions/V]:predict` with a columnar (`inputs`) or row-wise (`instances`)
//! body, answered in the same form (`outputs` or `predictions`), and `GET
//! /v1/models/M[/versions/V]/metadata` with the signature in TF Serving's JSON. The
//! predictions run through [`predict`], as gRPC's do.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Map, Value};

use super::reply::{error_reply, infer_error_reply, json_reply, read_body, Reply};
use crate::error::InferError;
use crate::local::LocalServer;
use crate::tfserving::{check_signature, predict, signature_def, SIGNATURE};
use inferperf_wire::model::TensorSpec;
use inferperf_wire::proto::tensorflow::{SignatureDef, TensorInfo};
use inferperf_wire::tf_json::{columns, from_json, rows, to_json};
use inferperf_wire::tfserving::{dims, from_tf_dtype, tf_dtype_name};
use inferperf_wire::{Tensor, WireError};

/// A TF Serving REST path: the model, its version, and whether it predicts or describes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TfRoute<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub predict: bool,
}

/// Matches `/v1/models/M[/versions/V]:predict` and `…/metadata`; other paths are not TF
/// Serving's (the OpenAI routes share `/v1/models/`).
pub(crate) fn route(path: &str) -> Option<TfRoute<'_>> {
    let rest = path.strip_prefix("/v1/models/")?;
    let (resource, predict) = match rest.strip_suffix(":predict") {
        Some(resource) => (resource, true),
        None => (rest.strip_suffix("/metadata")?, false),
    };
    let (name, version) = match resource.split_once("/versions/") {
        Some((name, version)) => (name, version),
        None => (resource, ""),
    };
    let valid = |s: &str| !s.contains('/') && !s.contains(':');
    (!name.is_empty() && valid(name) && valid(version)).then_some(TfRoute {
        name,
        version,
        predict,
    })
}

/// Answers a request on a TF Serving route.
pub(crate) async fn handle(
    server: &LocalServer,
    method: &Method,
    route: TfRoute<'_>,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    match (route.predict, method) {
        (true, &Method::POST) => match read_body(headers, body).await {
            Ok(body) => predict_reply(server, &route, body).await,
            Err((status, message)) => error_reply(
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                &message,
            ),
        },
        (false, &Method::GET) => match signature_def(server, route.name, route.version) {
            Ok(signature) => json_reply(StatusCode::OK, &metadata_json(route.name, &signature)),
            Err(e) => infer_error_reply(&e),
        },
        _ => error_reply(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("this resource does not take {method}"),
        ),
    }
}

async fn predict_reply(server: &LocalServer, route: &TfRoute<'_>, body: Bytes) -> Reply {
    match run_predict(server, route, &body).await {
        Ok(answer) => json_reply(StatusCode::OK, &answer),
        Err(e) => infer_error_reply(&e),
    }
}

/// The request's tensors (decoded with the signature's datatypes), the prediction, and the
/// answer in the request's form.
async fn run_predict(
    server: &LocalServer,
    route: &TfRoute<'_>,
    body: &[u8],
) -> Result<Value, InferError> {
    let bad = |detail: String| InferError::BadRequest(detail);
    let request: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    check_signature(request["signature_name"].as_str().unwrap_or(""))?;
    let signature = signature_def(server, route.name, route.version)?;
    let specs = specs(&signature.inputs);
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let (by_name, rows_form) = match (request.get("inputs"), request.get("instances")) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "give either \"inputs\" or \"instances\", not both".into()
            ))
        }
        (Some(Value::Object(map)), None) if names.iter().all(|n| map.contains_key(*n)) => {
            (map.clone(), false)
        }
        (Some(value), None) if names.len() == 1 => (
            Map::from_iter([(names[0].to_string(), value.clone())]),
            false,
        ),
        (Some(_), None) => return Err(bad(format!("\"inputs\" must name the inputs {names:?}"))),
        (None, Some(Value::Array(instances))) => (
            columns(instances, &names).map_err(|e| bad(e.to_string()))?,
            true,
        ),
        _ => {
            return Err(bad(
                "the body has neither \"inputs\" nor a list of \"instances\"".into(),
            ))
        }
    };
    let inputs = (specs.iter())
        .map(|s| {
            let value = by_name
                .get(&s.name)
                .ok_or_else(|| bad(format!("input '{}' is missing", s.name)))?;
            from_json(&s.name, s.datatype, value).map_err(|e| bad(e.to_string()))
        })
        .collect::<Result<Vec<_>, InferError>>()?;
    let filter: Vec<String> = Vec::new();
    let response = predict(server, route.name, route.version, inputs, &filter).await?;
    answer_json(&response.outputs, rows_form).map_err(|e| InferError::Internal(e.to_string()))
}

fn specs(infos: &std::collections::HashMap<String, TensorInfo>) -> Vec<TensorSpec> {
    let mut specs: Vec<TensorSpec> = (infos.iter())
        .filter_map(|(name, info)| {
            Some(TensorSpec {
                name: name.clone(),
                datatype: from_tf_dtype(info.dtype)?,
                shape: dims(info.tensor_shape.as_ref()),
            })
        })
        .collect();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// `{"outputs": …}` (the value itself for one output) or `{"predictions": [row, …]}`.
fn answer_json(outputs: &[Tensor], rows_form: bool) -> Result<Value, WireError> {
    if !rows_form {
        if let [only] = outputs {
            return Ok(json!({ "outputs": to_json(only)? }));
        }
        let map = (outputs.iter())
            .map(|t| Ok((t.name.clone(), to_json(t)?)))
            .collect::<Result<Map<_, _>, WireError>>()?;
        return Ok(json!({ "outputs": map }));
    }
    if let [only] = outputs {
        return Ok(json!({ "predictions": rows(only)? }));
    }
    let split = outputs.iter().map(rows).collect::<Result<Vec<_>, _>>()?;
    let count = split.first().map_or(0, Vec::len);
    let predictions: Vec<Value> = (0..count)
        .map(|i| {
            Value::Object(
                outputs
                    .iter()
                    .zip(&split)
                    .map(|(t, r)| (t.name.clone(), r.get(i).cloned().unwrap_or(Value::Null)))
                    .collect(),
            )
        })
        .collect();
    Ok(json!({ "predictions": predictions }))
}

/// The metadata resource: the model spec and its signature map, as TF Serving writes them
/// (int64 sizes as strings).
fn metadata_json(name: &str, signature: &SignatureDef) -> Value {
    let infos = |map: &std::collections::HashMap<String, TensorInfo>| -> Value {
        Value::Object(
            map.iter()
                .map(|(n, info)| (n.clone(), info_json(n, info)))
                .collect(),
        )
    };
    json!({
        "model_spec": {"name": name, "signature_name": "", "version": "1"},
        "metadata": {"signature_def": {"signature_def": {
            SIGNATURE: {
                "inputs": infos(&signature.inputs),
                "outputs": infos(&signature.outputs),
                "method_name": signature.method_name,
            }
        }}}
    })
}

fn info_json(name: &str, info: &TensorInfo) -> Value {
    let dims: Vec<Value> = dims(info.tensor_shape.as_ref())
        .into_iter()
        .map(|size| json!({"size": size.to_string(), "name": ""}))
        .collect();
    json!({
        "dtype": tf_dtype_name(info.dtype),
        "tensor_shape": {"dim": dims, "unknown_rank": false},
        "name": format!("{name}:0"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_tf_servings_paths_only() {
        let r = |name, version, predict| {
            Some(TfRoute {
                name,
                version,
                predict,
            })
        };
        assert_eq!(route("/v1/models/m:predict"), r("m", "", true));
        assert_eq!(route("/v1/models/m/versions/2:predict"), r("m", "2", true));
        assert_eq!(route("/v1/models/m/metadata"), r("m", "", false));
        assert_eq!(
            route("/v1/models/m/versions/1/metadata"),
            r("m", "1", false)
        );
        assert_eq!(route("/v1/models/m"), None);
        assert_eq!(route("/v1/models/:predict"), None);
        assert_eq!(route("/v1/chat/completions"), None);
    }
}

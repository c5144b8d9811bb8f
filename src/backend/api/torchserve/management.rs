//! TorchServe model discovery from its management API: `GET /models/M[/V]` (describe
//! model) says whether the model is registered, its version, and whether a worker is ready.
//! TorchServe declares no tensors, so the input is the body itself (`TORCHSERVE_INPUT`) or
//! what `--shape` / `--input-datatype` declare. A management API that cannot be reached is
//! a note, never a failure: the run then goes on with the flags alone.

use http::StatusCode;
use serde_json::Value;

use super::side_target;
use crate::backend::transport::control::HttpControl;
use crate::backend::{Discovered, Target};
use crate::config::torchserve::TorchServeConfig;
use crate::data::torchserve::input_spec;
use inferperf_wire::error::{RunError, RunResult};

/// What describe-model says about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    pub version: String,
    pub workers: usize,
    pub ready_workers: usize,
}

/// One management API's answer about the model.
enum Answer {
    Described(Description),
    /// TorchServe said the model (or version) is not registered.
    NotRegistered(String),
}

/// Reads the model from the management API (the given URL; by default port 8081, then `-u`
/// itself, where the embedded server answers), else from the flags with a note.
pub async fn discover(
    target: &Target,
    settings: &TorchServeConfig,
    shapes_given: bool,
) -> RunResult<Discovered> {
    let mut urls = vec![settings.management_url.clone()];
    if !settings.management_given {
        urls.push(format!("http://{}", target.peer.authority));
    }
    let mut reasons = Vec::new();
    for url in &urls {
        match describe(target, url).await {
            Ok(Answer::Described(d)) => return Ok(described(target, &d, shapes_given)),
            Ok(Answer::NotRegistered(why)) => return Err(not_registered(target, url, &why)),
            Err(why) => reasons.push(format!("{url}: {why}")),
        }
    }
    eprintln!(
        "Note: TorchServe's management API could not describe model '{}' ({}); going on with the flags alone (give --torchserve-management-url to name it).",
        target.model,
        reasons.join("; ")
    );
    Ok(from_flags(target, String::new(), shapes_given))
}

/// `GET /models/M[/V]` at `url`; `Err` is why this URL is not a usable management API.
async fn describe(target: &Target, url: &str) -> Result<Answer, String> {
    let (side, _) = side_target(target, url).await?;
    let mut conn = HttpControl::open(&side.peer)
        .await
        .map_err(|e| format!("cannot connect ({e})"))?;
    let path = describe_path(target);
    let (status, body) = conn
        .get(&path)
        .await
        .map_err(|e| format!("GET {path} failed ({e})"))?;
    let json: Value = serde_json::from_slice(&body)
        .map_err(|_| format!("GET {path} did not answer JSON (HTTP {})", status.as_u16()))?;
    if status == StatusCode::NOT_FOUND && is_model_missing(&json) {
        let message = json["message"].as_str().unwrap_or("not registered");
        return Ok(Answer::NotRegistered(message.to_string()));
    }
    if !status.is_success() {
        return Err(format!("GET {path} answered HTTP {}", status.as_u16()));
    }
    parse_description(&json)
        .map(Answer::Described)
        .ok_or_else(|| format!("GET {path} is not TorchServe's model description"))
}

/// `/models/M` or `/models/M/V`.
pub fn describe_path(target: &Target) -> String {
    if target.version.is_empty() {
        format!("/models/{}", target.model)
    } else {
        format!("/models/{}/{}", target.model, target.version)
    }
}

/// TorchServe's 404 for a model or version it does not have (its other 404s, e.g. for a
/// path it does not serve, mean the URL is not the management API).
fn is_model_missing(json: &Value) -> bool {
    let kind = json["type"].as_str().unwrap_or_default();
    kind.starts_with("ModelNotFound") || kind.starts_with("ModelVersionNotFound")
}

/// The first entry of describe-model's list: version and workers.
pub fn parse_description(json: &Value) -> Option<Description> {
    let model = json.as_array()?.first()?;
    model.get("modelName")?;
    let workers = model["workers"].as_array().map_or(&[][..], Vec::as_slice);
    let ready = workers.iter().filter(|w| w["status"] == "READY").count();
    Some(Description {
        version: model["modelVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        workers: workers.len(),
        ready_workers: ready,
    })
}

fn described(target: &Target, d: &Description, shapes_given: bool) -> Discovered {
    if d.ready_workers == 0 {
        eprintln!(
            "Note: TorchServe lists no READY worker for model '{}' ({} workers): predictions may wait or fail.",
            target.model, d.workers
        );
    }
    from_flags(target, d.version.clone(), shapes_given)
}

/// The model as the flags declare it: the `--shape` inputs (the data step reads them), or
/// the body input `TORCHSERVE_INPUT`.
fn from_flags(target: &Target, version: String, shapes_given: bool) -> Discovered {
    Discovered {
        name: target.model.clone(),
        version,
        platform: "torchserve".to_string(),
        inputs: if shapes_given {
            Vec::new()
        } else {
            vec![input_spec()]
        },
        ..Default::default()
    }
}

fn not_registered(target: &Target, url: &str, why: &str) -> RunError {
    let version = match target.version.is_empty() {
        true => String::new(),
        false => format!(" version {}", target.version),
    };
    RunError::failed(format!(
        "TorchServe at {url} has no model '{}'{version} registered ({why}): check -m and -x, or register it.",
        target.model
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn describe_model_answers_are_read() {
        let answer = json!([{
            "modelName": "echo", "modelVersion": "1.0", "batchSize": 1,
            "workers": [{"id": "9000", "status": "READY"}, {"id": "9001", "status": "UNLOADING"}]
        }]);
        let d = parse_description(&answer).unwrap();
        assert_eq!(d.version, "1.0");
        assert_eq!((d.workers, d.ready_workers), (2, 1));
        assert!(parse_description(&json!({"error": "x"})).is_none());
        assert!(is_model_missing(
            &json!({"code": 404, "type": "ModelNotFoundException"})
        ));
        assert!(!is_model_missing(
            &json!({"code": 404, "type": "ResourceNotFoundException"})
        ));
    }
}

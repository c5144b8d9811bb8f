//! A request's `parameters` as the Open Inference Protocol carries them: the
//! `--request-parameter`s, and a sequence step's `sequence_id`, `sequence_start` and
//! `sequence_end`.

use serde_json::Value;

use crate::config::{ParameterValue, RequestParameter};
use inferperf_wire::model::SequenceStep;

/// `--request-parameter`s as the JSON values of a request's `parameters` (which the gRPC
/// encoder turns into typed `InferParameter`s).
pub fn request_parameters(list: &[RequestParameter]) -> serde_json::Map<String, Value> {
    let json = |value: &ParameterValue| match value {
        ParameterValue::Int(i) => Value::from(*i),
        ParameterValue::Bool(b) => Value::Bool(*b),
        ParameterValue::String(s) => Value::String(s.clone()),
    };
    list.iter()
        .map(|p| (p.name.clone(), json(&p.value)))
        .collect()
}

/// The sequence keys as JSON object members, without braces: `"sequence_id":7,...`.
pub fn sequence_members(step: &SequenceStep) -> String {
    let mut out = if step.string_id {
        format!("\"sequence_id\":\"{}\"", step.id)
    } else {
        format!("\"sequence_id\":{}", step.id)
    };
    if step.start {
        out.push_str(",\"sequence_start\":true");
    }
    if step.end {
        out.push_str(",\"sequence_end\":true");
    }
    out
}

/// The step's parameters as a JSON object's members (for in-process requests).
pub fn sequence_parameters(step: &SequenceStep) -> serde_json::Map<String, serde_json::Value> {
    let text = format!("{{{}}}", sequence_members(step));
    serde_json::from_str(&text).unwrap_or_default()
}

//! Recorded requests replayed as they were: AIPerf's raw_payload (each JSON line a whole
//! request body with its `messages`, sent byte for byte; a folder's files each one session
//! whose lines are its turns) and Amazon SageMaker's data capture (each line an event whose
//! `endpointInput` holds the captured body — its `messages`, `tools` and `max_tokens` are
//! replayed at the event's `inferenceTime`, the first at 0).

use serde_json::{Map, Value};

use super::formats::objects;
use super::turn_fields::bad;
use super::{Content, Record};
use crate::data::parts::Parts;
use inferperf_wire::error::RunResult;

/// raw_payload lines: a request each (`session`: the folder file's session, whose turns
/// they are, each carrying its own history as authored).
pub fn raw_lines(file: &str, text: &str, session: Option<u32>) -> RunResult<Vec<Record>> {
    let mut records = Vec::new();
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    for ((number, line), parsed) in lines.zip(objects(file, text)) {
        let (origin, body) = parsed?;
        debug_assert_eq!(origin, format!("{file} line {}", number + 1));
        if !body.get("messages").is_some_and(Value::is_array) {
            return Err(bad(
                &origin,
                "a raw_payload line is a whole request body with a \"messages\" list",
            ));
        }
        records.push(Record {
            session,
            content: Content::Raw {
                line: line.trim().to_string(),
                body: Value::Object(body),
            },
            ..Record::new(origin)
        });
    }
    Ok(records)
}

/// SageMaker capture files (`(name, text)`, every line an event): one request per event,
/// in time order, timestamps from the first event's.
pub fn sagemaker(files: &[(String, String)]) -> RunResult<Vec<Record>> {
    let mut records = Vec::new();
    for (name, text) in files {
        for line in objects(name, text) {
            let (origin, event) = line?;
            records.push(capture(origin, &event)?);
        }
    }
    let first = records
        .iter()
        .filter_map(|r| r.timestamp_ms)
        .fold(f64::INFINITY, f64::min);
    for record in &mut records {
        record.timestamp_ms = record.timestamp_ms.map(|t| t - first);
    }
    records.sort_by(|a, b| {
        a.timestamp_ms
            .partial_cmp(&b.timestamp_ms)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(records)
}

/// One capture event: its time, and the captured chat body's messages, tools and limit.
fn capture(origin: String, event: &Map<String, Value>) -> RunResult<Record> {
    let time = event
        .get("eventMetadata")
        .and_then(|m| m.get("inferenceTime"))
        .and_then(Value::as_str)
        .ok_or_else(|| bad(&origin, "no eventMetadata.inferenceTime"))?;
    let timestamp_ms = iso8601_ms(time).ok_or_else(|| {
        bad(
            &origin,
            format_args!("inferenceTime '{time}' is not an ISO-8601 time"),
        )
    })?;
    let input = event
        .get("captureData")
        .and_then(|c| c.get("endpointInput"))
        .ok_or_else(|| bad(&origin, "no captureData.endpointInput"))?;
    let body = decode(&origin, input)?;
    let Some(messages) = body.get("messages").filter(|m| m.is_array()) else {
        return Err(bad(
            &origin,
            "the captured body has no \"messages\"; only OpenAI chat captures are replayed",
        ));
    };
    let limit = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_u64))
        .map(|n| n.clamp(1, u32::MAX as u64) as u32);
    Ok(Record {
        timestamp_ms: Some(timestamp_ms),
        content: Content::Messages(messages.clone()),
        output_length: limit,
        parts: Parts {
            tools: body.get("tools").filter(|t| t.is_array()).cloned(),
            ..Parts::default()
        },
        ..Record::new(origin)
    })
}

/// A capture's `data`, JSON or base64 of JSON as its `encoding` says.
fn decode(origin: &str, capture: &Value) -> RunResult<Value> {
    use base64::Engine;
    let data = capture
        .get("data")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(origin, "the captured input has no \"data\""))?;
    let text = match capture
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or("BASE64")
    {
        "JSON" => data.as_bytes().to_vec(),
        "BASE64" => base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| {
                bad(
                    origin,
                    format_args!("the captured input is not base64 ({e})"),
                )
            })?,
        other => {
            return Err(bad(
                origin,
                format_args!("the captured input's encoding {other} is not JSON or BASE64"),
            ))
        }
    };
    serde_json::from_slice(&text)
        .map_err(|e| bad(origin, format_args!("the captured input is not JSON ({e})")))
}

/// Milliseconds since the epoch of an ISO-8601 time (`Z`, an offset, or none for UTC).
fn iso8601_ms(text: &str) -> Option<f64> {
    let text = text.trim();
    let (local, offset_s) = split_offset(text)?;
    let parsed = humantime::parse_rfc3339_weak(local).ok()?;
    let since = parsed.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(since.as_secs_f64() * 1000.0 - offset_s as f64 * 1000.0)
}

/// The local time and its offset from UTC in seconds.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    if let Some(local) = text.strip_suffix('Z') {
        return Some((local, 0));
    }
    let time_part = text.find('T').map_or(0, |i| i + 1);
    let sign_at = text[time_part..].rfind(['+', '-']).map(|i| i + time_part);
    let Some(at) = sign_at else {
        return Some((text, 0));
    };
    let (local, offset) = text.split_at(at);
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let (hours, minutes) = offset[1..].split_once(':').unwrap_or((&offset[1..], "0"));
    let seconds = hours.parse::<i64>().ok()? * 3600 + minutes.parse::<i64>().ok()? * 60;
    Some((local, sign * seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_lines_keep_their_bytes() {
        let line =
            r#"{"messages": [{"role": "user", "content": "hi"}], "model": "m",  "max_tokens": 9}"#;
        let records = raw_lines("r", &format!("{line}\n\n{line}\n"), Some(3)).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].origin, "r line 3");
        let Content::Raw { line: kept, .. } = &records[0].content else {
            panic!("raw");
        };
        assert_eq!(kept, line, "byte for byte");
        assert_eq!(records[0].session, Some(3));
        let message = raw_lines("r", "{\"model\": \"m\"}\n", None)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("r line 1: a raw_payload line is a whole request body"),
            "{message}"
        );
    }

    #[test]
    fn capture_events_replay_their_messages_at_their_times() {
        let event = |time: &str, max: u32| {
            let body = format!(
                r#"{{"messages":[{{"role":"user","content":"What is AI?"}}],"max_tokens":{max},"tools":[{{"type":"function"}}]}}"#
            );
            serde_json::json!({"captureData": {"endpointInput": {"data": body, "encoding": "JSON", "mode": "INPUT"},
                "endpointOutput": {"data": "{}", "encoding": "JSON"}},
                "eventMetadata": {"eventId": "e", "inferenceTime": time}, "eventVersion": "0"})
            .to_string()
        };
        let text = format!(
            "{}\n{}\n",
            event("2026-04-29T00:03:18Z", 50),
            event("2026-04-29T00:03:17.500+00:00", 7)
        );
        let records = sagemaker(&[("c.jsonl".into(), text)]).unwrap();
        assert_eq!(records[0].timestamp_ms, Some(0.0));
        assert_eq!(records[0].output_length, Some(7));
        assert_eq!(records[1].timestamp_ms, Some(500.0));
        assert!(records[1].parts.tools.is_some());
        assert!(matches!(records[1].content, Content::Messages(_)));
        assert_eq!(iso8601_ms("1970-01-01T01:00:00+01:00"), Some(0.0));
        let bad_event = r#"{"captureData": {"endpointInput": {"data": "{\"prompt\": \"x\"}", "encoding": "JSON"}}, "eventMetadata": {"inferenceTime": "2026-04-29T00:03:18Z"}}"#;
        let message = sagemaker(&[("c".into(), bad_event.into())])
            .unwrap_err()
            .to_string();
        assert!(message.contains("only OpenAI chat captures"), "{message}");
    }
}

//! A public dataset's rows as requests, with AIPerf's column mappings: a prompt column
//! (or a template filled from the row, Blazedit's), with its first image; MT-Bench's list of
//! prompts as one conversation; MMVU's question with its lettered choices and its video;
//! a conversation column's first user message with its first image; Spec-Bench's first
//! turn. Rows without a prompt are skipped, as AIPerf skips them.

use base64::Engine;
use serde_json::{Map, Value};

use super::record;
use crate::config::datasets::{PublicDataset, Shape};
use crate::data::parts::Parts;
use crate::data::traces::Record;
use inferperf_wire::error::{RunError, RunResult};

/// The requests of `rows`.
pub fn records(dataset: &PublicDataset, rows: &[Map<String, Value>]) -> RunResult<Vec<Record>> {
    let mut records = Vec::new();
    let mut session = 0u32;
    for (i, row) in rows.iter().enumerate() {
        let origin = format!("{} row {i}", dataset.name);
        match dataset.shape {
            Shape::Instruction {
                column,
                template,
                image,
            } => {
                if i == 0 && template.is_none() && !row.contains_key(column) {
                    return Err(missing(dataset, column, row));
                }
                let text = match template {
                    Some(template) => fill(template, row),
                    None => row.get(column).map(as_text).unwrap_or_default(),
                };
                let images = image.and_then(|c| first_image(row.get(c)));
                push(
                    &mut records,
                    origin,
                    text,
                    images.into_iter().collect(),
                    Vec::new(),
                );
            }
            Shape::PromptList => {
                let turns: Vec<String> = row
                    .get("prompt")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(as_text)
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect();
                let several = turns.len() > 1;
                for (k, text) in turns.into_iter().enumerate() {
                    let at = several.then_some(session);
                    records.push(record(format!("{origin} turn {k}"), text, at));
                }
                session += several as u32;
            }
            Shape::VideoQuestion => {
                let Some(video) = video(row.get("video")) else {
                    continue;
                };
                push(
                    &mut records,
                    origin,
                    question_with_choices(row),
                    Vec::new(),
                    vec![video],
                );
            }
            Shape::Conversation {
                column,
                content_key,
                image,
            } => {
                let messages = row.get(column).and_then(Value::as_array);
                let text = messages.and_then(|m| first_user_message(m, content_key));
                let images = first_image(row.get(image)).into_iter().collect();
                push(
                    &mut records,
                    origin,
                    text.unwrap_or_default(),
                    images,
                    Vec::new(),
                );
            }
            Shape::SpecBench => {
                let first = row
                    .get("turns")
                    .and_then(Value::as_array)
                    .and_then(|t| t.first());
                let text = first.map(as_text).unwrap_or_default();
                push(
                    &mut records,
                    origin,
                    text.trim().to_string(),
                    Vec::new(),
                    Vec::new(),
                );
            }
            Shape::ShareGpt => unreachable!("ShareGPT is read as a file"),
        }
    }
    Ok(records)
}

/// A single-turn request, unless its prompt is empty.
fn push(
    records: &mut Vec<Record>,
    origin: String,
    text: String,
    images: Vec<String>,
    videos: Vec<String>,
) {
    if text.trim().is_empty() {
        return;
    }
    let mut request = record(origin, text, None);
    request.parts = Parts {
        images,
        videos,
        ..Parts::default()
    };
    records.push(request);
}

fn missing(dataset: &PublicDataset, column: &str, row: &Map<String, Value>) -> RunError {
    let columns: Vec<&str> = row.keys().map(String::as_str).collect();
    RunError::failed(format!(
        "--public-dataset {}: the dataset has no column '{column}' (its columns: {}); the cached files are not that dataset's, or --hf-subset names another.",
        dataset.name,
        columns.join(", ")
    ))
}

/// A cell as text: strings as they are, other values as JSON.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A `{name}` template filled from the row's columns (Python's `str.format`, as AIPerf).
fn fill(template: &str, row: &Map<String, Value>) -> String {
    let mut out = template.to_string();
    for (name, value) in row {
        out = out.replace(&format!("{{{name}}}"), &as_text(value));
    }
    out
}

/// `"<question> A.<choice> B.<choice>..."`, as vLLM's benchmark and AIPerf build MMVU's.
fn question_with_choices(row: &Map<String, Value>) -> String {
    let question = row.get("question").map(as_text).unwrap_or_default();
    let question = question.trim();
    let choices: Vec<String> = match row.get("choices") {
        Some(Value::Object(choices)) => choices
            .iter()
            .filter(|(_, v)| !as_text(v).is_empty())
            .map(|(k, v)| format!("{k}.{}", as_text(v)))
            .collect(),
        _ => Vec::new(),
    };
    match (question.is_empty(), choices.is_empty()) {
        (false, false) => format!("{question} {}", choices.join(" ")),
        (true, false) => choices.join(" "),
        _ => question.to_string(),
    }
}

/// The first user (or human) message's text, `<image>` marks removed; else the first
/// message's.
fn first_user_message(messages: &[Value], key: &str) -> Option<String> {
    let messages: Vec<&Value> = messages
        .iter()
        .map(|m| m.as_array().and_then(|a| a.first()).unwrap_or(m))
        .filter(|m| m.as_object().is_some_and(|o| !o.is_empty()))
        .collect();
    let role = |m: &Value| {
        let role = m
            .get("role")
            .or_else(|| m.get("from"))
            .and_then(Value::as_str);
        role.unwrap_or_default().to_ascii_lowercase()
    };
    let chosen = messages
        .iter()
        .find(|m| matches!(role(m).as_str(), "user" | "human"))
        .or(messages.first())?;
    let text = chosen.get(key)?.as_str()?.replace("<image>", "");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The first image of a cell (one image, or a list of them) as a data URL: a `{bytes}`
/// object (the `datasets` Image feature) or a URL string.
fn first_image(cell: Option<&Value>) -> Option<String> {
    let items: Vec<&Value> = match cell? {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    items.into_iter().find_map(|item| match item {
        Value::Object(o) => {
            let encoded = o.get("bytes")?.as_str()?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            Some(format!(
                "data:image/{};base64,{encoded}",
                image_kind(&bytes)?
            ))
        }
        Value::String(url) if url.contains("://") || url.starts_with("data:") => Some(url.clone()),
        _ => None,
    })
}

/// The image type of encoded bytes, from their first bytes.
fn image_kind(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("png"),
        [0xFF, 0xD8, ..] => Some("jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("webp"),
        [b'B', b'M', ..] => Some("bmp"),
        _ => None,
    }
}

/// A row's video: a URL or path (a bare path as `file://`), or `{bytes, path}` as a data
/// URL typed by the path's extension.
fn video(cell: Option<&Value>) -> Option<String> {
    match cell? {
        Value::String(s) if s.is_empty() => None,
        Value::String(s) if s.contains("://") || s.starts_with("data:") => Some(s.clone()),
        Value::String(path) => Some(format!("file://{path}")),
        Value::Object(o) => {
            let encoded = o.get("bytes")?.as_str().filter(|b| !b.is_empty())?;
            let path = o.get("path").and_then(Value::as_str).unwrap_or_default();
            let kind = match path
                .rsplit('.')
                .next()
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                Some("webm") => "webm",
                Some("mov") => "quicktime",
                Some("avi") => "x-msvideo",
                _ => "mp4",
            };
            Some(format!("data:video/{kind};base64,{encoded}"))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;

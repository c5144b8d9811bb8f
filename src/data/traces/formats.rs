//! The JSON Lines formats of AIPerf's custom datasets — single_turn, multi_turn and
//! mooncake_trace — and its inputs.json, each read into [`Record`]s with every field checked.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::turn_fields::{self, bad};
use super::{Content, Record};
use crate::data::parts::Parts;
use inferperf_wire::error::RunResult;
use inferperf_wire::number::{readable, A_DAY_MS};

/// Every non-blank line of a JSON Lines file as an object, with its `FILE line N`.
pub(super) fn objects<'a>(
    file: &'a str,
    text: &'a str,
) -> impl Iterator<Item = RunResult<(String, Map<String, Value>)>> + 'a {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(move |(i, line)| {
            let origin = format!("{file} line {}", i + 1);
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(map)) => Ok((origin, map)),
                Ok(_) => Err(bad(&origin, "not a JSON object")),
                Err(e) => Err(bad(&origin, format_args!("not JSON ({e})"))),
            }
        })
}

pub(super) fn number(origin: &str, map: &Map<String, Value>, key: &str) -> RunResult<Option<f64>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
            _ => Err(bad(
                origin,
                format_args!("\"{key}\" must be a number of at least 0, not {v}"),
            )),
        },
    }
}

pub(super) fn count(origin: &str, map: &Map<String, Value>, key: &str) -> RunResult<Option<u32>> {
    match number(origin, map, key)? {
        None => Ok(None),
        Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(Some(n as u32)),
        Some(n) => Err(bad(
            origin,
            format_args!("\"{key}\" must be a whole number of at least 1, not {n}"),
        )),
    }
}

/// `timestamp` or `delay` (ms), not both, as AIPerf's models require.
pub(super) fn timing(
    origin: &str,
    map: &Map<String, Value>,
) -> RunResult<(Option<f64>, Option<f64>)> {
    let timestamp = number(origin, map, "timestamp")?;
    let delay = number(origin, map, "delay")?;
    if let Some(ms) = delay.filter(|&ms| ms > A_DAY_MS) {
        return Err(bad(
            origin,
            format_args!(
                "\"delay\" is {} ms: give milliseconds from 0 to {} (a day)",
                readable(ms),
                readable(A_DAY_MS)
            ),
        ));
    }
    if timestamp.is_some() && delay.is_some() {
        return Err(bad(
            origin,
            "\"timestamp\" and \"delay\" cannot both be given",
        ));
    }
    Ok((timestamp, delay))
}

/// A single_turn line (or a multi_turn turn): its texts and media, timing,
/// `output_length` and `extra`.
fn turn(
    origin: String,
    map: &Map<String, Value>,
    session: Option<u32>,
    folder: &Path,
) -> RunResult<Record> {
    let (timestamp_ms, delay_ms) = timing(&origin, map)?;
    let fields = turn_fields::read(&origin, map, folder)?;
    let mut texts = fields.texts.into_iter();
    let mut parts = fields.parts;
    let text = texts.next().unwrap_or_default();
    parts.texts = texts.collect();
    Ok(Record {
        content: Content::Text(text),
        output_length: count(&origin, map, "output_length")?,
        timestamp_ms,
        delay_ms,
        session,
        parts,
        passages: fields.passages,
        ..Record::new(origin)
    })
}

/// single_turn: a request per line; lines of one `session_id` are the turns of a session,
/// in the file's order, each sent as given (without the session's earlier turns).
pub fn single_turn(file: &str, text: &str, folder: &Path) -> RunResult<Vec<Record>> {
    let mut sessions = SessionIds::default();
    let records: RunResult<Vec<Record>> = objects(file, text)
        .map(|line| {
            let (origin, map) = line?;
            let session = sessions.of(&origin, &map)?;
            turn(origin, &map, session, folder)
        })
        .collect();
    Ok(sessions.group(records?))
}

/// The sessions of a format whose lines are requests (single_turn, mooncake_trace): each
/// `session_id` given numbered in order of first appearance.
#[derive(Default)]
pub(super) struct SessionIds {
    numbers: HashMap<String, u32>,
}

impl SessionIds {
    /// The session number of a line's `session_id` (a string or a number), if it has one.
    pub(super) fn of(&mut self, origin: &str, map: &Map<String, Value>) -> RunResult<Option<u32>> {
        let id = match map.get("session_id") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(id)) => id.clone(),
            Some(Value::Number(id)) => id.to_string(),
            Some(other) => {
                return Err(bad(
                    origin,
                    format_args!("\"session_id\" must be a string or a number, not {other}"),
                ))
            }
        };
        let next = self.numbers.len() as u32;
        Ok(Some(*self.numbers.entry(id).or_insert(next)))
    }

    /// The records with each session's lines together, where its first line is, in the
    /// file's order (as AIPerf groups them); a line of no session stays where it is.
    pub(super) fn group(&self, records: Vec<Record>) -> Vec<Record> {
        if self.numbers.is_empty() {
            return records;
        }
        let mut places: Vec<Vec<Record>> = Vec::new();
        let mut place_of: HashMap<u32, usize> = HashMap::new();
        for record in records {
            match record.session {
                Some(s) if place_of.contains_key(&s) => places[place_of[&s]].push(record),
                Some(s) => {
                    place_of.insert(s, places.len());
                    places.push(vec![record]);
                }
                None => places.push(vec![record]),
            }
        }
        places.into_iter().flatten().collect()
    }
}

/// multi_turn: a session per line, `{"session_id": ..., "turns": [{turn}, ...]}`; a first
/// turn of role "system" with text only is the session's system message, as AIPerf takes it.
pub fn multi_turn(file: &str, text: &str, folder: &Path) -> RunResult<Vec<Record>> {
    let mut records = Vec::new();
    for (session, line) in objects(file, text).enumerate() {
        let (origin, map) = line?;
        let turns = match map.get("turns") {
            Some(Value::Array(turns)) if !turns.is_empty() => turns,
            Some(Value::Array(_)) | None => {
                return Err(bad(
                    &origin,
                    "a session without turns; give \"turns\": [{\"text\": ...}, ...]",
                ))
            }
            Some(_) => return Err(bad(&origin, "\"turns\" must be a list of turns")),
        };
        let system = system_turn(turns);
        let first = records.len();
        for (k, value) in turns.iter().enumerate().skip(system.is_some() as usize) {
            let Value::Object(turn_map) = value else {
                return Err(bad(&origin, format_args!("turn {k} is not an object")));
            };
            records.push(turn(
                format!("{origin} turn {k}"),
                turn_map,
                Some(session as u32),
                folder,
            )?);
        }
        if records.len() == first {
            return Err(bad(
                &origin,
                "a session with only a system turn; give the turns after it",
            ));
        }
        for record in &mut records[first..] {
            record.system = system.clone();
        }
    }
    Ok(records)
}

/// A session's leading `{"role": "system", "text": ...}` turn, text only.
fn system_turn(turns: &[Value]) -> Option<String> {
    let first = turns.first()?.as_object()?;
    let media = [
        "image", "images", "audio", "audios", "video", "videos", "texts",
    ];
    if first.get("role").and_then(Value::as_str) != Some("system")
        || media
            .iter()
            .any(|k| first.get(*k).is_some_and(|v| !v.is_null()))
    {
        return None;
    }
    first
        .get("text")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// mooncake_trace: a request per line — `input_length` (with optional `hash_ids`),
/// `text_input`, `messages` or `payload`, exactly one; optional `timestamp` or `delay` and
/// `output_length`.
/// Lines of one `session_id` are the turns of a session, in the file's order.
pub fn mooncake(file: &str, text: &str) -> RunResult<Vec<Record>> {
    let mut sessions = SessionIds::default();
    let records: RunResult<Vec<Record>> = objects(file, text)
        .map(|line| {
            let (origin, map) = line?;
            let (timestamp_ms, delay_ms) = timing(&origin, &map)?;
            Ok(Record {
                content: mooncake_content(&origin, &map)?,
                output_length: count(&origin, &map, "output_length")?,
                timestamp_ms,
                delay_ms,
                session: sessions.of(&origin, &map)?,
                parts: tools_and_extra(&origin, &map)?,
                ..Record::new(origin)
            })
        })
        .collect();
    Ok(sessions.group(records?))
}

fn mooncake_content(origin: &str, map: &Map<String, Value>) -> RunResult<Content> {
    let given = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
    let modes = ["input_length", "text_input", "messages", "payload"];
    match modes.iter().filter(|k| given(k)).count() {
        0 => return Err(bad(origin, "no \"input_length\", \"text_input\", \"messages\" or \"payload\"; a trace line needs a length or a text")),
        1 => {}
        _ => return Err(bad(origin, "give one of \"input_length\", \"text_input\", \"messages\" and \"payload\", not several")),
    }
    if given("hash_ids") && !given("input_length") {
        return Err(bad(origin, "\"hash_ids\" go with \"input_length\""));
    }
    if given("tools") && !given("messages") {
        return Err(bad(origin, "\"tools\" go with \"messages\""));
    }
    if let Some(tokens) = count(origin, map, "input_length")? {
        return Ok(Content::Length {
            tokens,
            hash_ids: hash_ids(origin, map)?,
        });
    }
    if let Some(text) = map.get("text_input") {
        return match text.as_str() {
            Some(text) => Ok(Content::Text(text.to_string())),
            None => Err(bad(origin, "\"text_input\" must be a string")),
        };
    }
    if let Some(messages) = map.get("messages") {
        let valid = messages
            .as_array()
            .is_some_and(|m| !m.is_empty() && m.iter().all(|x| x.get("role").is_some()));
        if !valid {
            return Err(bad(
                origin,
                "\"messages\" must be a non-empty list of objects with a \"role\"",
            ));
        }
        return Ok(Content::Messages(messages.clone()));
    }

    match map.get("payload") {
        Some(body @ Value::Object(_)) => Ok(Content::Payload(body.clone())),
        _ => Err(bad(
            origin,
            "\"payload\" must be a request body (a JSON object)",
        )),
    }
}

/// A trace line's `tools` (sent as the body's) and `extra` (merged into the body last).
pub(super) fn tools_and_extra(origin: &str, map: &Map<String, Value>) -> RunResult<Parts> {
    let mut parts = Parts::default();
    match map.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) if !list.is_empty() && list.iter().all(Value::is_object) => {
            parts.tools = Some(Value::Array(list.clone()))
        }
        Some(_) => {
            return Err(bad(
                origin,
                "\"tools\" must be a non-empty list of tool definitions (objects)",
            ))
        }
    }
    match map.get("extra") {
        None | Some(Value::Null) => {}
        Some(Value::Object(extra)) => parts.extra = extra.clone(),
        Some(_) => return Err(bad(origin, "\"extra\" must be an object of request fields")),
    }
    Ok(parts)
}

fn hash_ids(origin: &str, map: &Map<String, Value>) -> RunResult<Vec<u64>> {
    match map.get("hash_ids") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| {
                id.as_u64().ok_or_else(|| {
                    bad(
                        origin,
                        format_args!("hash id {id} is not a whole number of at least 0"),
                    )
                })
            })
            .collect(),
        Some(_) => Err(bad(origin, "\"hash_ids\" must be a list of whole numbers")),
    }
}

/// AIPerf's inputs.json: `{"data": [{"session_id": ..., "payloads": [{body}, ...]}]}`,
/// each payload a turn sent as given.
pub fn inputs_json(file: &str, text: &str) -> RunResult<Vec<Record>> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| bad(file, format_args!("not JSON ({e}); AIPerf's inputs.json is {{\"data\": [{{\"session_id\": ..., \"payloads\": [...]}}]}}")))?;
    let Some(data) = root.get("data").and_then(Value::as_array) else {
        return Err(bad(file, "no \"data\" list; AIPerf's inputs.json is {\"data\": [{\"session_id\": ..., \"payloads\": [...]}]}"));
    };
    let mut records = Vec::new();
    for (i, session) in data.iter().enumerate() {
        let origin = format!("{file} data[{i}]");
        let Some(payloads) = session.get("payloads").and_then(Value::as_array) else {
            return Err(bad(&origin, "no \"payloads\" list"));
        };
        if payloads.is_empty() {
            return Err(bad(&origin, "a session without payloads"));
        }
        let multi = payloads.len() > 1;
        for (k, body) in payloads.iter().enumerate() {
            if !body.is_object() {
                return Err(bad(
                    &origin,
                    format_args!("payload {k} is not a request body (a JSON object)"),
                ));
            }
            records.push(Record {
                session: multi.then_some(i as u32),
                content: Content::Payload(body.clone()),
                ..Record::new(format!("{origin} payload {k}"))
            });
        }
    }
    Ok(records)
}

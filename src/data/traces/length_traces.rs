//! Traces that prescribe lengths, not texts: Alibaba's Bailian traces (JSON Lines of
//! `chat_id`, `parent_chat_id`, `timestamp` in seconds, `input_length`, `output_length`,
//! `turn` and `hash_ids` of 16-token blocks; a conversation is the requests that lead back
//! to one root) and BurstGPT's CSV (`Timestamp` in seconds, `Request tokens`, `Response
//! tokens`; every row its own request). Prompts of exactly those lengths are made later,
//! as for mooncake traces.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::formats::{count, objects};
use super::turn_fields::bad;
use super::{Content, Record};
use inferperf_wire::error::RunResult;

/// One Bailian line, checked.
struct BailianLine {
    origin: String,
    chat_id: i64,
    parent: i64,
    turn: i64,
    timestamp_ms: f64,
    input_length: u32,
    output_length: u32,
    hash_ids: Vec<u64>,
}

fn integer(origin: &str, map: &Map<String, Value>, key: &str) -> RunResult<i64> {
    map.get(key).and_then(Value::as_i64).ok_or_else(|| {
        bad(
            origin,
            format_args!("\"{key}\" must be a whole number (a Bailian line has chat_id, parent_chat_id, timestamp, input_length, output_length)"),
        )
    })
}

fn bailian_line(origin: String, map: &Map<String, Value>) -> RunResult<BailianLine> {
    let seconds = super::formats::number(&origin, map, "timestamp")?
        .ok_or_else(|| bad(&origin, "no \"timestamp\" (seconds)"))?;
    let length = |key: &str| -> RunResult<u32> {
        count(&origin, map, key)?.ok_or_else(|| bad(&origin, format_args!("no \"{key}\"")))
    };
    let hash_ids = match map.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| {
                id.as_u64().ok_or_else(|| {
                    bad(
                        &origin,
                        format_args!("hash id {id} is not a whole number of at least 0"),
                    )
                })
            })
            .collect::<RunResult<_>>()?,
        Some(_) => return Err(bad(&origin, "\"hash_ids\" must be a list of whole numbers")),
    };
    Ok(BailianLine {
        chat_id: integer(&origin, map, "chat_id")?,
        parent: integer(&origin, map, "parent_chat_id")?,
        turn: map.get("turn").and_then(Value::as_i64).unwrap_or(1),
        timestamp_ms: seconds * 1000.0,
        input_length: length("input_length")?,
        output_length: length("output_length")?,
        hash_ids,
        origin,
    })
}

/// Bailian's traces: each conversation's requests in turn order, numbered by first
/// appearance of their root, timestamps in ms.
pub fn bailian(file: &str, text: &str) -> RunResult<Vec<Record>> {
    let lines: Vec<BailianLine> = objects(file, text)
        .map(|line| line.and_then(|(origin, map)| bailian_line(origin, &map)))
        .collect::<RunResult<_>>()?;
    let parents: HashMap<i64, i64> = lines.iter().map(|l| (l.chat_id, l.parent)).collect();
    let root = |mut id: i64| {
        // A parent missing from the file, or a loop, ends the walk where it is.
        for _ in 0..parents.len() {
            match parents.get(&id) {
                Some(&parent) if parent != -1 && parent != id && parents.contains_key(&parent) => {
                    id = parent
                }
                _ => break,
            }
        }
        id
    };
    let mut order: Vec<i64> = Vec::new();
    let mut groups: HashMap<i64, Vec<&BailianLine>> = HashMap::new();
    for line in &lines {
        let r = root(line.chat_id);
        groups.entry(r).or_insert_with(|| {
            order.push(r);
            Vec::new()
        });
        groups.get_mut(&r).expect("just made").push(line);
    }
    let mut records = Vec::with_capacity(lines.len());
    for (session, r) in order.iter().enumerate() {
        let mut turns = groups.remove(r).unwrap_or_default();
        turns.sort_by_key(|l| l.turn);
        let several = turns.len() > 1;
        for line in turns {
            records.push(Record {
                session: several.then_some(session as u32),
                timestamp_ms: Some(line.timestamp_ms),
                content: Content::Length {
                    tokens: line.input_length,
                    hash_ids: line.hash_ids.clone(),
                },
                output_length: Some(line.output_length),
                ..Record::new(line.origin.clone())
            });
        }
    }
    Ok(records)
}

/// The BurstGPT columns inferperf reads.
const BURST_COLUMNS: [&str; 3] = ["Timestamp", "Request tokens", "Response tokens"];

/// BurstGPT's CSV: a request per row, its timestamp (seconds) in ms; rows asking no
/// tokens or answering none (BurstGPT's failed requests) are skipped and counted.
pub fn burst_gpt(file: &str, text: &str) -> RunResult<Vec<Record>> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| bad(file, format_args!("not CSV ({e})")))?
        .clone();
    let mut columns = [0usize; 3];
    for (slot, name) in columns.iter_mut().zip(BURST_COLUMNS) {
        *slot = header.iter().position(|h| h == name).ok_or_else(|| {
            bad(
                file,
                format_args!("no \"{name}\" column; BurstGPT's CSV has Timestamp, Request tokens and Response tokens"),
            )
        })?;
    }
    let mut records = Vec::new();
    let mut skipped = 0;
    for (i, row) in reader.records().enumerate() {
        let origin = format!("{file} line {}", i + 2);
        let row = row.map_err(|e| bad(&origin, format_args!("not a CSV row ({e})")))?;
        let field = |k: usize| row.get(columns[k]).unwrap_or_default();
        let seconds: f64 = match field(0).parse() {
            Ok(s) if f64::is_finite(s) && s >= 0.0 => s,
            _ => {
                return Err(bad(
                    &origin,
                    format_args!(
                        "Timestamp '{}' is not a number of seconds of at least 0",
                        field(0)
                    ),
                ))
            }
        };
        let tokens = |k: usize| -> RunResult<u32> {
            field(k).parse().map_err(|_| {
                bad(
                    &origin,
                    format_args!("{} '{}' is not a whole number", BURST_COLUMNS[k], field(k)),
                )
            })
        };
        let (asked, answered) = (tokens(1)?, tokens(2)?);
        if asked == 0 || answered == 0 {
            skipped += 1;
            continue;
        }
        records.push(Record {
            timestamp_ms: Some(seconds * 1000.0),
            content: Content::Length {
                tokens: asked,
                hash_ids: Vec::new(),
            },
            output_length: Some(answered),
            ..Record::new(origin)
        });
    }
    if skipped > 0 {
        println!(
            "Note: {skipped} rows of {file} ask or answer no tokens (BurstGPT's failed requests) and are skipped."
        );
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bailian_conversations_follow_their_parents_in_turn_order() {
        let text = concat!(
            "{\"chat_id\": 159, \"parent_chat_id\": -1, \"timestamp\": 61.114, \"input_length\": 521, \"output_length\": 132, \"type\": \"text\", \"turn\": 1}\n",
            "{\"chat_id\": 7, \"parent_chat_id\": -1, \"timestamp\": 61.5, \"input_length\": 20, \"output_length\": 5, \"turn\": 1, \"hash_ids\": [1, 2]}\n",
            "{\"chat_id\": 161, \"parent_chat_id\": 160, \"timestamp\": 63.0, \"input_length\": 700, \"output_length\": 9, \"turn\": 3}\n",
            "{\"chat_id\": 160, \"parent_chat_id\": 159, \"timestamp\": 62.5, \"input_length\": 676, \"output_length\": 80, \"turn\": 2}\n",
        );
        let records = bailian("b", text).unwrap();
        let seen: Vec<(Option<u32>, Option<f64>, Option<u32>)> = records
            .iter()
            .map(|r| (r.session, r.timestamp_ms, r.output_length))
            .collect();
        assert_eq!(
            seen,
            vec![
                (Some(0), Some(61114.0), Some(132)),
                (Some(0), Some(62500.0), Some(80)),
                (Some(0), Some(63000.0), Some(9)),
                (None, Some(61500.0), Some(5)),
            ]
        );
        assert_eq!(
            records[3].content,
            Content::Length {
                tokens: 20,
                hash_ids: vec![1, 2]
            }
        );
        let message = bailian(
            "b",
            "{\"chat_id\": 1, \"timestamp\": 1, \"input_length\": 2, \"output_length\": 3}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            message.contains("b line 1: \"parent_chat_id\""),
            "{message}"
        );
    }

    #[test]
    fn burst_gpt_rows_are_requests_and_failed_ones_are_skipped() {
        let text = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0.123,gpt-4,512,128,640,chat\n0.456,gpt-4,300,0,300,chat\n1.5,gpt-4,30,8,38,api\n";
        let records = burst_gpt("g.csv", text).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].timestamp_ms, Some(123.0));
        assert_eq!(records[1].output_length, Some(8));
        assert_eq!(records[1].origin, "g.csv line 4");
        let message = burst_gpt("g.csv", "Timestamp,Request tokens\n1,2\n")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("no \"Response tokens\" column"),
            "{message}"
        );
        let message = burst_gpt("g.csv", "Timestamp,Request tokens,Response tokens\nx,1,2\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("g.csv line 2: Timestamp 'x'"), "{message}");
    }
}

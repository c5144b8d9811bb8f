//! ShareGPT's JSON, read from a local file: a list of `{"conversations": [{"from": "human",
//! "value": ...}, {"from": "gpt", "value": ...}, ...]}`. As AIPerf reads it, every adjacent
//! human→gpt pair is a turn (the human text sent, the gpt text's length the answer's), and
//! a conversation with several pairs is a session. Conversations without a pair are
//! skipped, and said so.

use serde_json::Value;

use super::{Content, Record};
use crate::error::{RunError, RunResult};

/// The turns of a ShareGPT file; each gpt answer is kept so that the run's tokenizer counts
/// the answer's length asked for (see [`super::entries`]).
pub fn read(file: &str, text: &str) -> RunResult<Vec<Record>> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        RunError::bad_option(format!(
            "--input-file {file}: not JSON ({e}); ShareGPT's file is a list of {{\"conversations\": [{{\"from\": \"human\", \"value\": ...}}, ...]}}."
        ))
    })?;
    let Some(items) = root.as_array() else {
        return Err(RunError::bad_option(format!(
            "--input-file {file}: not a list; ShareGPT's file is a list of {{\"conversations\": [...]}}."
        )));
    };
    let mut records = Vec::new();
    let mut skipped = 0;
    let mut session = 0u32;
    for (i, item) in items.iter().enumerate() {
        let pairs = pairs(item.get("conversations"));
        if pairs.is_empty() {
            skipped += 1;
            continue;
        }
        let multi = pairs.len() > 1;
        for (k, (prompt, answer)) in pairs.into_iter().enumerate() {
            records.push(Record {
                origin: format!("{file} [{i}] turn {k}"),
                session: multi.then_some(session),
                timestamp_ms: None,
                delay_ms: None,
                content: Content::Text(prompt),
                output_length: None,
                answer: Some(answer),
            });
        }
        session += multi as u32;
    }
    if skipped > 0 {
        println!(
            "Note: {skipped} of {} ShareGPT conversations in {file} have no human→gpt pair and are skipped.",
            items.len()
        );
    }
    Ok(records)
}

/// Every adjacent human→gpt pair of a conversation, texts non-empty.
fn pairs(conversation: Option<&Value>) -> Vec<(String, String)> {
    let Some(messages) = conversation.and_then(Value::as_array) else {
        return Vec::new();
    };
    let turn = |m: &Value| -> Option<(String, String)> {
        let from = m.get("from")?.as_str()?.to_string();
        let value = m.get("value")?.as_str()?.to_string();
        Some((from, value))
    };
    let turns: Vec<(String, String)> = messages.iter().filter_map(turn).collect();
    let mut pairs = Vec::new();
    let mut i = 0;
    while i + 1 < turns.len() {
        let (from, prompt) = &turns[i];
        let (next, answer) = &turns[i + 1];
        if from == "human" && next == "gpt" && !prompt.is_empty() && !answer.is_empty() {
            pairs.push((prompt.clone(), answer.clone()));
            i += 2;
        } else {
            i += 1;
        }
    }
    pairs
}

//! ShareGPT's JSON, read from a local file: a list of `{"conversations": [{"from": "human",
//! "value": ...}, {"from": "gpt", "value": ...}, ...]}`. As AIPerf reads it, every adjacent
//! human→gpt pair is a turn (the human text sent, the gpt text's length the answer's), and
//! a conversation with several pairs is a session. Conversations without a pair are
//! skipped, and said so.

use serde_json::Value;

use super::{Content, Record};
use inferperf_wire::error::{RunError, RunResult};

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
                session: multi.then_some(session),
                content: Content::Text(prompt),
                answer: Some(answer),
                conversation: Some(i as u32),
                ..Record::new(format!("{file} [{i}] turn {k}"))
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

/// Every adjacent human→gpt pair of a conversation, texts non-empty, as AIPerf pairs them:
/// messages of other roles are passed over, and a conversation without any human or gpt
/// role is one pair of its first two values.
pub(super) fn pairs(conversation: Option<&Value>) -> Vec<(String, String)> {
    let Some(messages) = conversation.and_then(Value::as_array) else {
        return Vec::new();
    };
    let messages: Vec<&Value> = messages.iter().filter(|m| m.is_object()).collect();
    let from = |m: &Value| m.get("from").and_then(Value::as_str).map(str::to_string);
    let value = |m: &Value| {
        m.get("value")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    if messages.len() < 2 {
        return Vec::new();
    }
    let roles = |m: &&Value| matches!(from(m).as_deref(), Some("human" | "gpt"));
    if !messages.iter().any(roles) {
        return match (value(messages[0]), value(messages[1])) {
            (Some(prompt), Some(answer)) => vec![(prompt, answer)],
            _ => Vec::new(),
        };
    }
    let turns: Vec<&Value> = messages.into_iter().filter(roles).collect();
    let mut pairs = Vec::new();
    let mut i = 0;
    while i + 1 < turns.len() {
        let human = from(turns[i]).as_deref() == Some("human");
        if human && from(turns[i + 1]).as_deref() == Some("gpt") {
            if let (Some(prompt), Some(answer)) = (value(turns[i]), value(turns[i + 1])) {
                pairs.push((prompt, answer));
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    pairs
}

/// AIPerf's (and vLLM's) ShareGPT length rules, in the run's tokens: a prompt of 4 to 1024
/// tokens, an answer of at least 4 (unless --osl is given), both together at most 2048.
const MIN_TOKENS: u32 = 4;
const MAX_PROMPT: u32 = 1024;
const MAX_TOTAL: u32 = 2048;

/// The entries of the conversations whose every pair keeps AIPerf's length rules (a pair
/// that does not drops its whole conversation, as AIPerf drops it); says how many are kept.
pub fn filter(
    file: &super::TraceFile,
    entries: Vec<crate::data::Entry>,
    llm: &crate::config::OpenAiConfig,
    _counter: &dyn crate::data::tokenizer::TokenCount,
) -> RunResult<Vec<crate::data::Entry>> {
    use std::collections::HashSet;
    let skip_answer_check = llm.output_tokens_mean.is_some();
    let fits = |e: &crate::data::Entry| {
        let Some(p) = &e.prompt else { return false };
        let answer = p.max_tokens.unwrap_or(0);
        (MIN_TOKENS..=MAX_PROMPT).contains(&p.input_tokens)
            && (skip_answer_check || answer >= MIN_TOKENS)
            && p.input_tokens + answer <= MAX_TOTAL
    };
    let conversations: HashSet<u32> = file.records.iter().filter_map(|r| r.conversation).collect();
    let dropped: HashSet<u32> = file
        .records
        .iter()
        .zip(&entries)
        .filter(|(_, e)| !fits(e))
        .filter_map(|(r, _)| r.conversation)
        .collect();
    let kept: Vec<crate::data::Entry> = file
        .records
        .iter()
        .zip(entries)
        .filter(|(r, _)| r.conversation.is_none_or(|c| !dropped.contains(&c)))
        .map(|(_, e)| e)
        .collect();
    println!(
        "ShareGPT: kept {} of {} conversations whose every turn has a prompt of {MIN_TOKENS} to {MAX_PROMPT} tokens, an answer of at least {MIN_TOKENS} and both within {MAX_TOTAL} (AIPerf's rule, in the run's tokens).",
        conversations.len() - dropped.len(),
        conversations.len()
    );
    if kept.is_empty() {
        return Err(RunError::bad_option(
            "No ShareGPT conversation keeps AIPerf's length rules in the run's tokens: check --tokenizer.",
        ));
    }
    Ok(kept)
}

//! `--input-file` in AIPerf's formats (`--custom-dataset-type`): single_turn, multi_turn,
//! mooncake_trace, ShareGPT's JSON and AIPerf's inputs.json. Reading is in two steps so that
//! nothing is sent before the whole file is read and checked: [`read`] parses and checks
//! every line into protocol-free [`Record`]s (one sentence naming the file, the line and
//! what is wrong, exit 3), and [`entries`] turns them into the dataset's entries once the
//! run's tokenizer is known: texts counted, `input_length`s made into prompts of exactly
//! that many tokens, `hash_ids` into blocks of shared text, sessions into turns, and the
//! trace's slice, speed and context limit applied ([`slice`]).

mod blocks;
mod formats;
mod sharegpt;
pub mod slice;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::entry::{Entry, Prompt, Turn};
use super::prompts::{self, PromptMaker};
use super::tokenizer::TokenCount;
use crate::config::workload::{FileFormat, WorkloadConfig};
use crate::config::OpenAiConfig;
use crate::error::{RunError, RunResult};

/// What one request of a file asks: a text, a length to make a prompt of (with the hash ids
/// of its blocks), chat messages, or a whole body to send as given.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Length {
        tokens: u32,
        hash_ids: Vec<u64>,
    },
    /// Chat messages, with the tool definitions given beside them (`tools`).
    Messages {
        messages: Value,
        tools: Option<Value>,
    },
    Payload(Value),
}

/// One request read from a file, checked, before any token is counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// `FILE line N` (or `data[i]`), for messages.
    pub origin: String,
    /// The session the record is a turn of (multi_turn, ShareGPT, inputs.json).
    pub session: Option<u32>,
    pub timestamp_ms: Option<f64>,
    /// Milliseconds to wait before the turn (after the previous one's answer).
    pub delay_ms: Option<f64>,
    pub content: Content,
    pub output_length: Option<u32>,
    /// The answer a recorded conversation gave (ShareGPT): its length is the one asked for.
    pub answer: Option<String>,
}

/// A whole file, read and checked.
#[derive(Debug, Clone)]
pub struct TraceFile {
    pub path: PathBuf,
    pub format: FileFormat,
    pub records: Vec<Record>,
}

/// Reads and checks `--input-file` in its format, before anything is sent.
pub fn read(path: &Path, format: FileFormat, block_size: Option<u32>) -> RunResult<TraceFile> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        RunError::bad_option(format!("Cannot read --input-file {}: {e}.", path.display()))
    })?;
    let shown = path.display().to_string();
    let records = match format {
        FileFormat::SingleTurn => formats::single_turn(&shown, &text)?,
        FileFormat::MultiTurn => formats::multi_turn(&shown, &text)?,
        FileFormat::MooncakeTrace => formats::mooncake(&shown, &text)?,
        FileFormat::InputsJson => formats::inputs_json(&shown, &text)?,
        FileFormat::ShareGpt => sharegpt::read(&shown, &text)?,
    };
    if records.is_empty() {
        return Err(RunError::bad_option(format!(
            "--input-file {shown} holds no requests: give at least one line in {} form.",
            format.name()
        )));
    }
    check_timestamps(&records)?;
    blocks::check_fit(&records, block_size.unwrap_or(format.default_block_size()))?;
    Ok(TraceFile {
        path: path.to_path_buf(),
        format,
        records,
    })
}

/// Timestamps, where a file has them, must not go backwards (within a session, for the
/// formats of sessions).
fn check_timestamps(records: &[Record]) -> RunResult<()> {
    let mut last: Option<(Option<u32>, &str, f64)> = None;
    for record in records {
        let Some(at) = record.timestamp_ms else {
            continue;
        };
        if let Some((_, origin, before)) = last.filter(|l| l.0 == record.session) {
            if at < before {
                return Err(RunError::bad_option(format!(
                    "--input-file {}: timestamp {at} ms is before {origin}'s {before} ms; a trace's timestamps must not go backwards.",
                    record.origin
                )));
            }
        }
        last = Some((record.session, &record.origin, at));
    }
    Ok(())
}

/// The entries of a file, in its order: texts counted with `counter`, lengths made into
/// prompts of exactly that many tokens, the workload's slice applied.
pub fn entries(
    file: &TraceFile,
    workload: &WorkloadConfig,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<Vec<Entry>> {
    let block = workload
        .block_size
        .unwrap_or(file.format.default_block_size());
    let mut maker = PromptMaker::new(llm, seed, counter);
    let mut texts = blocks::BlockTexts::new(block);
    let mut entries = Vec::with_capacity(file.records.len());
    for record in &file.records {
        let prompt = prompt(record, &mut maker, &mut texts)?;
        entries.push(Entry {
            timestamp_ms: record.timestamp_ms,
            origin: record.origin.clone(),
            prompt: Some(prompt),
            ..Entry::default()
        });
    }
    number_turns(file, &mut entries);
    slice::apply(entries, &workload.slice)
}

fn prompt(
    record: &Record,
    maker: &mut PromptMaker,
    texts: &mut blocks::BlockTexts,
) -> RunResult<Prompt> {
    let (text, messages, body) = match &record.content {
        Content::Text(text) => (text.clone(), None, None),
        Content::Length { tokens, hash_ids } if hash_ids.is_empty() => {
            (maker.text_of(*tokens)?, None, None)
        }
        Content::Length { tokens, hash_ids } => {
            (texts.prompt(maker, *tokens, hash_ids)?, None, None)
        }
        Content::Messages { messages, .. } => (
            prompts::prompt_text(&serde_json::json!({ "messages": messages })),
            Some(messages.clone()),
            None,
        ),
        Content::Payload(body) => (prompts::prompt_text(body), None, Some(body.to_string())),
    };
    let input_tokens = maker.count(&text, &record.origin)?;
    let max_tokens = match (&record.content, record.output_length) {
        (Content::Payload(body), _) => prompts::body_max_tokens(body),
        (_, Some(n)) => Some(n),
        (_, None) => match &record.answer {
            Some(answer) => Some(maker.count(answer, &record.origin)?.max(1)),
            None => maker.max_tokens(),
        },
    };
    Ok(Prompt {
        text,
        input_tokens,
        max_tokens,
        body,
        system: None,
        messages: messages.map(std::sync::Arc::new),
        passages: None,
        tools: match &record.content {
            Content::Messages { tools, .. } => tools.clone().map(std::sync::Arc::new),
            _ => None,
        },
    })
}

/// Marks the records of each session as its turns, in order; a turn made of a text or a
/// length carries the session's history, except in single_turn (whose lines of a session
/// are sent as given, as AIPerf sends them).
fn number_turns(file: &TraceFile, entries: &mut [Entry]) {
    let records = &file.records;
    let chat = file.format != FileFormat::SingleTurn;
    let mut start = 0;
    while start < records.len() {
        let Some(session) = records[start].session else {
            start += 1;
            continue;
        };
        let end = (start..records.len())
            .find(|&i| records[i].session != Some(session))
            .unwrap_or(records.len());
        let of = (end - start) as u32;
        for (number, i) in (start..end).enumerate() {
            entries[i].turn = Some(Turn {
                session,
                number: number as u32,
                of,
                delay_ms: records[i].delay_ms,
                history: chat
                    && matches!(
                        records[i].content,
                        Content::Text(_) | Content::Length { .. }
                    ),
            });
        }
        start = end;
    }
}

#[cfg(test)]
mod tests;

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
mod length_traces;
mod payloads;
mod pools;
mod sharegpt;
pub mod slice;
mod speed_bench;
mod synthesis;
mod turn_fields;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::entry::{Entry, Prompt, Turn};
use super::parts::Parts;
use super::prompts::{self, PromptMaker};
use super::tokenizer::TokenCount;
use crate::config::workload::{FileFormat, WorkloadConfig};
use crate::config::OpenAiConfig;
use inferperf_wire::error::{RunError, RunResult};

/// What one request of a file asks: a text, a length to make a prompt of (with the hash ids
/// of its blocks), chat messages, or a whole body to send as given.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Length {
        tokens: u32,
        hash_ids: Vec<u64>,
    },
    Messages(Value),
    Payload(Value),
    /// A whole body sent byte for byte as its line gives it (raw_payload).
    Raw {
        line: String,
        body: Value,
    },
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
    /// More texts, media, tools and extra fields (AIPerf's fields).
    pub parts: Parts,
    /// The session's own system message (multi_turn's leading system turn).
    pub system: Option<String>,
    /// The ShareGPT conversation a pair comes from, for AIPerf's length filter (a failing
    /// pair drops its whole conversation).
    pub conversation: Option<u32>,
    /// A rankings line's passages (its query is the text).
    pub passages: Option<Vec<String>>,
}

impl Record {
    /// A record of `origin` asking an empty text, to be filled in.
    pub fn new(origin: String) -> Record {
        Record {
            origin,
            session: None,
            timestamp_ms: None,
            delay_ms: None,
            content: Content::Text(String::new()),
            output_length: None,
            answer: None,
            parts: Parts::default(),
            system: None,
            conversation: None,
            passages: None,
        }
    }
}

/// A whole file (or public dataset), read and checked.
#[derive(Debug, Clone)]
pub struct TraceFile {
    pub path: PathBuf,
    pub format: FileFormat,
    pub records: Vec<Record>,
    /// AIPerf's ShareGPT length filter applies (the public dataset's rule).
    pub sharegpt_filter: bool,
}

/// What reading a file needs beyond its path and format.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    pub block_size: Option<u32>,
    /// The run's seed (random_pool's draws).
    pub seed: u64,
    /// `--conversation-num` (random_pool's conversations; AIPerf's default 100).
    pub conversations: Option<u32>,
    /// `--prompt-batch-size` (random_pool's texts per request).
    pub texts_per_request: Option<u32>,
    /// The media batch sizes (random_pool's media per request).
    pub pool_media: crate::config::datasets::PoolMedia,
}

impl ReadOptions {
    /// The options a workload gives, with the run's seed.
    pub fn of(workload: &WorkloadConfig, seed: u64) -> ReadOptions {
        ReadOptions {
            block_size: workload.block_size,
            seed,
            conversations: workload.dataset.conversations,
            texts_per_request: workload.dataset.texts_per_request,
            pool_media: workload.dataset.pool_media,
        }
    }
}

/// ShareGPT's JSON as records, each pair's conversation noted for AIPerf's length filter.
pub fn sharegpt_records(file: &str, text: &str) -> RunResult<Vec<Record>> {
    sharegpt::read(file, text)
}

/// The run's file, read and checked before anything is sent (`None`: no --input-file).
pub fn read_input_file(workload: &WorkloadConfig, seed: u64) -> RunResult<Option<TraceFile>> {
    let Some((path, format)) = &workload.file else {
        return Ok(None);
    };
    let file = read(path, *format, &ReadOptions::of(workload, seed))?;
    match workload.synthesis.given() {
        true => synthesize(file, workload, seed).map(Some),
        false => Ok(Some(file)),
    }
}

/// The file's trace rebuilt by `--synthesis-*`, what its caps did said on the console.
fn synthesize(mut file: TraceFile, workload: &WorkloadConfig, seed: u64) -> RunResult<TraceFile> {
    let s = &workload.synthesis;
    let block = (workload.block_size).unwrap_or(file.format.default_block_size());
    let total = file.records.len();
    let (records, capped) = synthesis::apply(std::mem::take(&mut file.records), s, block, seed)?;
    let (most_isl, most_osl) = (s.max_isl.unwrap_or_default(), s.max_osl.unwrap_or_default());
    if capped.dropped_long_inputs > 0 {
        println!(
            "Dropped {} of the trace's {total} requests longer than --synthesis-max-isl {most_isl} tokens; they are not sent.",
            capped.dropped_long_inputs
        );
    }
    if capped.capped_answers > 0 {
        println!(
            "Capped {} asked answer lengths to --synthesis-max-osl {most_osl} tokens.",
            capped.capped_answers
        );
    }
    if records.is_empty() {
        return Err(RunError::bad_option(format!(
            "No request of --input-file {} is at most --synthesis-max-isl {most_isl} tokens long: raise it.",
            file.path.display()
        )));
    }
    file.records = records;
    Ok(file)
}

/// A file's recorded waits as the dataset flags have them: dropped
/// (`--ignore-trace-delays`) or capped (`--inter-turn-delay-cap-seconds`).
pub fn settle_delays(
    mut file: TraceFile,
    workload: &WorkloadConfig,
) -> RunResult<Option<TraceFile>> {
    let settings = &workload.dataset;
    for record in &mut file.records {
        if settings.ignore_trace_delays {
            record.timestamp_ms = None;
            record.delay_ms = None;
        }
        if let (Some(cap), Some(delay)) = (settings.delay_cap_ms, record.delay_ms) {
            record.delay_ms = Some(delay.min(cap));
        }
    }
    Ok(Some(file))
}

/// Reads and checks `--input-file` in its format, before anything is sent.
pub fn read(path: &Path, format: FileFormat, options: &ReadOptions) -> RunResult<TraceFile> {
    let shown = path.display().to_string();
    let folder = path.parent().unwrap_or(Path::new("."));
    let records = if path.is_dir() {
        read_folder(path, format, options)?
    } else {
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunError::bad_option(format!("Cannot read --input-file {shown}: {e}.")))?;
        match format {
            FileFormat::SingleTurn => formats::single_turn(&shown, &text, folder)?,
            FileFormat::MultiTurn => formats::multi_turn(&shown, &text, folder)?,
            FileFormat::MooncakeTrace => formats::mooncake(&shown, &text)?,
            FileFormat::InputsJson => formats::inputs_json(&shown, &text)?,
            FileFormat::ShareGpt => sharegpt::read(&shown, &text)?,
            FileFormat::RandomPool => pools::read(&[(shown.clone(), text)], folder, options)?,
            FileFormat::RawPayload => payloads::raw_lines(&shown, &text, None)?,
            FileFormat::BailianTrace => length_traces::bailian(&shown, &text)?,
            FileFormat::BurstGptTrace => length_traces::burst_gpt(&shown, &text)?,
            FileFormat::SagemakerDataCapture => payloads::sagemaker(&[(shown.clone(), text)])?,
            FileFormat::SpeedBench(_) => speed_bench::read(&shown, &text, format)?,
        }
    };
    if records.is_empty() {
        return Err(RunError::bad_option(format!(
            "--input-file {shown} holds no requests: give at least one line in {} form.",
            format.name()
        )));
    }
    check_timestamps(&records)?;
    let block = options.block_size.unwrap_or(format.default_block_size());
    blocks::check_fit(&records, block)?;
    Ok(TraceFile {
        path: path.to_path_buf(),
        format,
        records,
        sharegpt_filter: false,
    })
}

/// A folder given as `--input-file`: random_pool's pools, raw_payload's sessions (one
/// per `*.jsonl`, in name order) or SageMaker's capture files (`*.jsonl`, searched down).
fn read_folder(dir: &Path, format: FileFormat, options: &ReadOptions) -> RunResult<Vec<Record>> {
    let shown = dir.display();
    if !format.reads_folders() {
        return Err(RunError::bad_option(format!(
            "--input-file {shown} is a folder, and --custom-dataset-type {} reads one file: give the file (folders are for random_pool, raw_payload and sagemaker_data_capture).",
            format.name()
        )));
    }
    let recursive = format == FileFormat::SagemakerDataCapture;
    let only_jsonl = format != FileFormat::RandomPool;
    let mut files = Vec::new();
    list_files(dir, recursive, only_jsonl, &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err(RunError::bad_option(format!(
            "--input-file {shown} holds no *.jsonl file: give a folder of {} files.",
            format.name()
        )));
    }
    let mut texts = Vec::with_capacity(files.len());
    for file in &files {
        let text = std::fs::read_to_string(file).map_err(|e| {
            RunError::bad_option(format!("Cannot read --input-file {}: {e}.", file.display()))
        })?;
        texts.push((file.display().to_string(), text));
    }
    match format {
        FileFormat::RandomPool => pools::read(&texts, dir, options),
        FileFormat::SagemakerDataCapture => payloads::sagemaker(&texts),
        _ => {
            let mut records = Vec::new();
            for (session, (name, text)) in texts.iter().enumerate() {
                records.extend(payloads::raw_lines(name, text, Some(session as u32))?);
            }
            Ok(records)
        }
    }
}

/// The files of a folder (and of its folders, when `recursive`).
fn list_files(
    dir: &Path,
    recursive: bool,
    only_jsonl: bool,
    out: &mut Vec<PathBuf>,
) -> RunResult<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        RunError::bad_option(format!("Cannot read --input-file {}: {e}.", dir.display()))
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if recursive {
                list_files(&path, recursive, only_jsonl, out)?;
            }
            continue;
        }
        let jsonl = path.extension().is_some_and(|e| e == "jsonl");
        if jsonl || !only_jsonl {
            out.push(path);
        }
    }
    Ok(())
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
    let mut maker = PromptMaker::new(llm, seed, counter).with_corpus(workload.dataset.corpus);
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
    if file.sharegpt_filter {
        entries = sharegpt::filter(file, entries, llm, counter)?;
    }
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
        Content::Messages(messages) => (
            prompts::prompt_text(&serde_json::json!({ "messages": messages })),
            Some(messages.clone()),
            None,
        ),
        Content::Payload(body) => (prompts::prompt_text(body), None, Some(body.to_string())),
        Content::Raw { line, body } => (prompts::prompt_text(body), None, Some(line.clone())),
    };
    let mut input_tokens = maker.count(&text, &record.origin)?;
    for more in record.parts.texts.iter().chain(&record.system) {
        input_tokens += maker.count(more, &record.origin)?;
    }
    let max_tokens = match (&record.content, record.output_length) {
        (Content::Payload(body) | Content::Raw { body, .. }, _) => prompts::body_max_tokens(body),
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
        system: record.system.as_deref().map(Into::into),
        messages: messages.map(std::sync::Arc::new),
        media: None,
        parts: record.parts.clone().shared(),
        passages: record.passages.clone().map(Into::into),
        tools: record.parts.tools.clone().map(std::sync::Arc::new),
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

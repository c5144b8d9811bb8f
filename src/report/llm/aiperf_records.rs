//! AIPerf's per-request file, `profile_export.jsonl` (or `PREFIX.jsonl`): one JSON line per
//! request of the level, AIPerf's `metadata` (its place, when it was due, sent and done, in
//! ns since the epoch) and `metrics` (each `{value, unit}` under AIPerf's tag), or its
//! `error`. Written beside AIPerf's summaries when the artifacts are in AIPerf's layout, so
//! that the scripts AIPerf's users read their records with read inferperf's.

use std::io::{self, Write};

use super::json::{object, Json};
use crate::backend::ErrorKind;
use crate::measure::level::LevelResult;
use crate::measure::request_log::{RequestLog, RequestRecord};
use crate::results::Settings;

/// Writes every request of `r` as one AIPerf record line.
pub fn write_records(out: &mut impl Write, settings: &Settings, r: &LevelResult) -> io::Result<()> {
    let streaming = settings.streaming;
    let Some(log) = r.requests.as_ref() else {
        return Ok(());
    };
    for (i, (record, gaps)) in RequestLog::each(log).enumerate() {
        let line = record_json(i, record, gaps, streaming);
        writeln!(out, "{}", line.compact())?;
    }
    Ok(())
}

/// The value of one AIPerf per-request metric (`request_latency`, `time_to_first_token`,
/// …) for every request of `r` that succeeded and has it, in AIPerf's unit: what AIPerf's
/// distribution test reads from its records.
pub fn request_values(settings: &Settings, r: &LevelResult, tag: &str) -> Vec<f64> {
    let Some(log) = r.requests.as_ref() else {
        return Vec::new();
    };
    let per_request = (RequestLog::each(log))
        .filter(|(record, _)| record.error.is_none())
        .map(|(record, gaps)| metrics(record, gaps, settings.streaming));
    per_request
        .filter_map(|m| match m.get(tag)?.get("value")? {
            Json::Float(x) => Some(*x),
            Json::UInt(n) => Some(*n as f64),
            _ => None,
        })
        .collect()
}

/// One request as AIPerf's record.
fn record_json(index: usize, record: &RequestRecord, gaps: &[u64], streaming: bool) -> Json {
    let metadata = object([
        ("session_num", Json::from(index as u64)),
        ("turn_index", Json::from(0u64)),
        ("credit_issued_ns", Json::from(record.scheduled_ns)),
        ("request_start_ns", Json::from(record.sent_ns)),
        ("request_end_ns", Json::from(record.done_ns)),
        ("benchmark_phase", Json::from("profiling")),
        (
            "was_cancelled",
            Json::from(record.error == Some(ErrorKind::Cancelled)),
        ),
    ]);
    let mut fields = vec![("metadata", metadata)];
    match record.error {
        None => fields.push(("metrics", metrics(record, gaps, streaming))),
        Some(kind) => fields.push(("error", super::aiperf::error_details(&kind, None))),
    }
    object(fields)
}

/// The figures AIPerf records per request, those inferperf measures.
fn metrics(record: &RequestRecord, gaps: &[u64], streaming: bool) -> Json {
    let ms = |ns: u64| ns as f64 / 1e6;
    let value = |v: Json, unit: &str| object([("value", v), ("unit", Json::from(unit))]);
    let latency = record.done_ns.saturating_sub(record.sent_ns);
    let tokens = record.tokens;
    let mut fields = vec![
        ("request_latency", value(Json::from(ms(latency)), "ms")),
        (
            "input_sequence_length",
            value(Json::from(tokens.input), "tokens"),
        ),
        (
            "output_sequence_length",
            value(Json::from(tokens.output), "tokens"),
        ),
    ];
    if let Some(prompt) = tokens.usage_input {
        fields.push(("usage_prompt_tokens", value(Json::from(prompt), "tokens")));
    }
    if let Some(output) = tokens.usage_output {
        fields.push((
            "usage_completion_tokens",
            value(Json::from(output), "tokens"),
        ));
    }
    if streaming && record.answers > 0 {
        let ttft = record.first_ns.saturating_sub(record.sent_ns);
        fields.push(("time_to_first_token", value(Json::from(ms(ttft)), "ms")));
        if let Some(second) = gaps.first() {
            fields.push(("time_to_second_token", value(Json::from(ms(*second)), "ms")));
        }
        let chunks = gaps.iter().map(|&g| Json::from(ms(g))).collect();
        fields.push(("inter_chunk_latency", value(Json::Array(chunks), "ms")));
        if tokens.output >= 2 {
            let itl = (latency - ttft) as f64 / 1e6 / (tokens.output - 1) as f64;
            fields.push(("inter_token_latency", value(Json::from(itl), "ms")));
            if itl > 0.0 {
                let per_user = 1000.0 / itl;
                fields.push((
                    "output_token_throughput_per_user",
                    value(Json::from(per_user), "tokens/sec/user"),
                ));
            }
        }
    }
    object(fields)
}

//! perf_analyzer's `profile_export.json` for one LLM level — every request of every window
//! of the level with its send time and the times of its answers, the file GenAI-Perf
//! computes its figures from — and GenAI-Perf's `inputs.json`, the request bodies of the
//! run. Both are written from what inferperf keeps: the bodies of the dataset (encoded
//! again here, as the OpenAI adapter encodes them) and the level's request log. Response
//! bodies are not kept, so `response_outputs` is empty (see README, "LLM artifacts").

use std::io::{self, Write};

use crate::backend::openai::OpenAi;
use crate::config::{Config, LoadLevel};
use crate::data::Dataset;
use crate::measure::level::LevelResult;
use crate::measure::request_log::{RequestLog, RequestRecord};

use super::json::{object, Json};

/// The request body of each dataset entry, as the OpenAI adapter sends it.
#[derive(Debug, Clone, Default)]
pub struct Payloads {
    bodies: Vec<String>,
}

impl Payloads {
    /// The bodies of `dataset`: a body the user gave, as given; otherwise the adapter's.
    pub fn of(cfg: &Config, dataset: &Dataset) -> Payloads {
        let adapter = cfg.llm.as_ref().map(|_| OpenAi::new(cfg));
        let bodies = dataset
            .entries
            .iter()
            .map(|entry| match (&entry.prompt, &adapter) {
                (Some(prompt), _) if prompt.body.is_some() => {
                    prompt.body.clone().unwrap_or_default()
                }
                (Some(prompt), Some(adapter)) => adapter.body(&cfg.model_name, prompt).to_string(),
                _ => String::new(),
            })
            .collect();
        Payloads { bodies }
    }

    /// Bodies given directly (for tests and callers that hold them).
    pub fn from_bodies(bodies: Vec<String>) -> Payloads {
        Payloads { bodies }
    }

    /// GenAI-Perf's `inputs.json`: `{"data": [{"payload": [body]}, …]}`, each body as a
    /// JSON object (as text if it does not parse).
    pub fn inputs_json(&self) -> Json {
        let entries = self.bodies.iter().map(|body| {
            let payload = match serde_json::from_str::<serde_json::Value>(body) {
                Ok(value) => Json::from(&value),
                Err(_) => Json::from(body.as_str()),
            };
            object([("payload", Json::Array(vec![payload]))])
        });
        object([("data", Json::Array(entries.collect()))])
    }

    /// The body sent for dataset entry `index` (empty if there is none).
    fn body(&self, index: u32) -> &str {
        self.bodies.get(index as usize).map_or("", String::as_str)
    }
}

/// Writes perf_analyzer's `profile_export.json` of one level, compact as perf_analyzer
/// writes it, request by request (a level may hold many). Failed requests are left out:
/// perf_analyzer stops at the first failure, so its format has no place for them.
pub fn write_profile_export(
    out: &mut impl Write,
    cfg: &Config,
    r: &LevelResult,
    payloads: &Payloads,
) -> io::Result<()> {
    let experiment = match r.level {
        LoadLevel::Concurrency(c) => object([
            ("mode", Json::from("concurrency")),
            ("value", Json::from(c)),
        ]),
        LoadLevel::Rate(rate) => object([
            ("mode", Json::from("request_rate")),
            ("value", Json::from(rate)),
        ]),
    };
    write!(
        out,
        "{{\"experiments\":[{{\"experiment\":{},\"requests\":[",
        experiment.compact()
    )?;
    let log: Option<&RequestLog> = r.requests.as_ref();
    let answered = log
        .into_iter()
        .flat_map(RequestLog::each)
        .filter(|(record, _)| record.error.is_none());
    for (i, (record, gaps)) in answered.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(request_json(record, gaps, payloads).compact().as_bytes())?;
    }
    let bounds = log.map_or(&[][..], RequestLog::window_boundaries);
    let boundaries = bounds.iter().map(|&ns| Json::from(ns));
    let endpoint = cfg.llm.as_ref().map_or("", |llm| llm.endpoint.path());
    write!(
        out,
        "],\"window_boundaries\":{}}}],\"version\":{},\"service_kind\":\"openai\",\"endpoint\":{}}}",
        Json::Array(boundaries.collect()).compact(),
        Json::from(format!("inferperf {}", env!("CARGO_PKG_VERSION"))).compact(),
        Json::from(endpoint).compact()
    )
}

/// One request as perf_analyzer exports it, with the token counts inferperf has instead
/// of the response bodies it does not keep.
fn request_json(record: &RequestRecord, gaps: &[u64], payloads: &Payloads) -> Json {
    let times = record.answer_times(gaps).into_iter().map(Json::from);
    object([
        ("timestamp", Json::from(record.sent_ns)),
        (
            "request_inputs",
            object([("payload", Json::from(payloads.body(record.request)))]),
        ),
        ("response_timestamps", Json::Array(times.collect())),
        ("response_outputs", Json::Array(Vec::new())),
        ("output_tokens", Json::from(record.tokens.output)),
        ("input_tokens", Json::from(record.tokens.input)),
    ])
}

#[cfg(test)]
#[path = "profile_export_tests.rs"]
mod tests;

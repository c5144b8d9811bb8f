//! perf_analyzer's profile export (`--profile-export-file F`, and `profile_export.json` in
//! each LLM artifact folder): every request of every window of each level — unstable
//! windows too — with its send time, the times of its answers and the inputs it carried,
//! and the windows' boundaries. GenAI-Perf and other tools compute their own figures from
//! this file, so it is written in perf_analyzer's layout, compact, request by request.
//!
//! The file of `--profile-export-file` is claimed when the run starts (an existing path is
//! refused, as perf_analyzer refuses it), each level's experiment is appended as soon as
//! the level is measured, and the closing part is written when the run ends — also after
//! Ctrl-C or a failure, so the levels measured are never lost. Response bodies are not
//! kept (`response_outputs` is empty), and failed requests are left out: perf_analyzer
//! stops at the first failure, so its format has no place for one.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::apis::Capabilities;
use crate::measure::level::{LevelResult, LoadLevel};
use crate::measure::request_log::{RequestLog, RequestRecord};
use crate::results::{LoadSettings, Settings};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::tensor_values_json;

use super::llm::json::{object, Json};
use super::llm::payloads::Payloads;
use super::{Entry, Measured, Origin, Reporter, Run, Sent};

pub const REPORT: Entry = Entry {
    name: "profile export",
    // A merged run has no requests to list.
    is_on: |settings, origin| {
        settings.outputs.profile_export_file.is_some() && origin == Origin::Measured
    },
    open: |settings| Ok(Box::new(ProfileExportFile::new(settings))),
};

/// The `request_inputs` object of each dataset entry, as compact JSON text: an LLM
/// request's body as `{"payload": "<body>"}`; a tensor request's inputs by name, a single
/// element as a scalar and any other tensor as a flat array, as perf_analyzer writes them.
#[derive(Debug, Clone, Default)]
pub struct RequestInputs {
    entries: Vec<String>,
}

impl RequestInputs {
    pub fn of(settings: &Settings, sent: &Sent<'_>) -> RequestInputs {
        if settings.llm.is_some() {
            return RequestInputs::of_payloads(&(sent.bodies)());
        }
        let entries = sent.dataset.entries.iter().map(|entry| {
            let inputs: Vec<String> = entry
                .inputs
                .iter()
                .map(|t| {
                    format!(
                        "{}:{}",
                        Json::from(t.name.as_str()).compact(),
                        tensor_value(t)
                    )
                })
                .collect();
            format!("{{{}}}", inputs.join(","))
        });
        RequestInputs {
            entries: entries.collect(),
        }
    }

    /// The inputs of an LLM run: each body as the `payload` string.
    pub fn of_payloads(payloads: &Payloads) -> RequestInputs {
        let entries = payloads
            .bodies()
            .iter()
            .map(|body| object([("payload", Json::from(body.as_str()))]).compact());
        RequestInputs {
            entries: entries.collect(),
        }
    }

    /// The inputs of dataset entry `index` (`{}` if there is none).
    fn get(&self, index: u32) -> &str {
        self.entries
            .get(index as usize)
            .map_or("{}", String::as_str)
    }
}

/// One tensor's value as JSON text: a scalar for one element, else a flat array. Data that
/// has no JSON form (a BYTES element that is not UTF-8, a NaN) is written as `null`.
fn tensor_value(t: &inferperf_wire::Tensor) -> String {
    let Ok(array) = tensor_values_json(t) else {
        return "null".to_string();
    };
    let single = t.element_count() == Ok(1);
    match array.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
        Some(inner) if single => inner.to_string(),
        _ => array,
    }
}

/// Writes the whole export of one level (an LLM artifact folder's `profile_export.json`).
pub fn write_profile_export(
    out: &mut impl Write,
    settings: &Settings,
    r: &LevelResult,
    inputs: &RequestInputs,
) -> io::Result<()> {
    out.write_all(HEAD)?;
    write_experiment(out, settings, r, inputs)?;
    write_tail(out, settings)
}

const HEAD: &[u8] = b"{\"experiments\":[";

/// One level as an experiment: its load, its answered requests, its windows' boundaries.
fn write_experiment(
    out: &mut impl Write,
    settings: &Settings,
    r: &LevelResult,
    inputs: &RequestInputs,
) -> io::Result<()> {
    write!(
        out,
        "{{\"experiment\":{},\"requests\":[",
        experiment(settings, r.level).compact()
    )?;
    let log: Option<&RequestLog> = r.requests.as_ref();
    let answered = log
        .into_iter()
        .flat_map(RequestLog::each)
        .filter(|(record, _)| record.error.is_none());
    let tokens = settings.llm.is_some();
    for (i, (record, gaps)) in answered.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_request(out, record, gaps, inputs.get(record.request), tokens)?;
    }
    let bounds = log.map_or(&[][..], RequestLog::window_boundaries);
    let boundaries = bounds.iter().map(|&ns| Json::from(ns));
    write!(
        out,
        "],\"window_boundaries\":{}}}",
        Json::Array(boundaries.collect()).compact()
    )
}

/// The experiment's id: `{mode, value}`, with perf_analyzer's placeholders for the modes
/// that have no single load (a fixed schedule is request rate 0, a periodic run
/// concurrency 1).
fn experiment(settings: &Settings, level: LoadLevel) -> Json {
    let (mode, value) = match (&settings.load, level) {
        (LoadSettings::FixedSchedule, _) => ("request_rate", Json::from(0.0)),
        (LoadSettings::Periodic { .. }, _) => ("concurrency", Json::from(1u64)),
        (_, LoadLevel::Concurrency(c)) => ("concurrency", Json::from(c)),
        (_, LoadLevel::Rate(rate)) => ("request_rate", Json::from(rate)),
    };
    object([("mode", Json::from(mode)), ("value", value)])
}

/// One request as perf_analyzer exports it; an LLM request adds the token counts
/// inferperf has instead of the response bodies it does not keep.
fn write_request(
    out: &mut impl Write,
    record: &RequestRecord,
    gaps: &[u64],
    inputs: &str,
    tokens: bool,
) -> io::Result<()> {
    let times = record.answer_times(gaps).into_iter().map(Json::from);
    write!(
        out,
        "{{\"timestamp\":{},\"request_inputs\":{inputs},\"response_timestamps\":{},\"response_outputs\":[]",
        record.sent_ns,
        Json::Array(times.collect()).compact()
    )?;
    if record.sequence_id != 0 {
        write!(out, ",\"sequence_id\":{}", record.sequence_id)?;
    }
    if tokens {
        write!(
            out,
            ",\"output_tokens\":{},\"input_tokens\":{}",
            record.tokens.output, record.tokens.input
        )?;
    }
    out.write_all(b"}")
}

/// The end of the file: the tool's version, the service kind and the endpoint.
fn write_tail(out: &mut impl Write, settings: &Settings) -> io::Result<()> {
    let kind = settings.service_kind.as_str();
    let service_kind = Capabilities::named(kind).map_or(kind, |api| api.export_name);
    let endpoint = match &settings.llm {
        Some(llm) => llm.endpoint.as_str(),
        None => settings.grpc_method.as_deref().unwrap_or(""),
    };
    write!(
        out,
        "],\"version\":{},\"service_kind\":\"{service_kind}\",\"endpoint\":{}}}",
        Json::from(format!("inferperf {}", env!("CARGO_PKG_VERSION"))).compact(),
        Json::from(endpoint).compact()
    )
}

/// `--profile-export-file F`: the run's export, one experiment per level, written as the
/// run goes.
pub struct ProfileExportFile {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    inputs: RequestInputs,
    experiments: usize,
    /// The first write that failed; nothing more is written after it.
    error: Option<RunError>,
}

impl ProfileExportFile {
    fn new(settings: &Settings) -> ProfileExportFile {
        let path = settings.outputs.profile_export_file.as_deref();
        ProfileExportFile {
            path: PathBuf::from(path.unwrap_or_default()),
            out: None,
            inputs: RequestInputs::default(),
            experiments: 0,
            error: None,
        }
    }
}

impl Reporter for ProfileExportFile {
    /// Claims the path (refusing one that exists) and writes the file's opening.
    fn start(&mut self, run: &Run<'_>, sent: Option<&Sent<'_>>) -> RunResult<()> {
        let path = &self.path;
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| open_error(path, &e))?;
        let mut out = BufWriter::new(file);
        out.write_all(HEAD).map_err(|e| write_error(path, &e))?;
        self.out = Some(out);
        if let Some(sent) = sent {
            self.inputs = RequestInputs::of(run.settings(), sent);
        }
        Ok(())
    }

    /// Appends a level just measured. A failure is kept for the end.
    fn level(&mut self, run: &Run<'_>, r: &LevelResult) {
        let (Some(out), None) = (&mut self.out, &self.error) else {
            return;
        };
        let write = |out: &mut BufWriter<File>| -> io::Result<()> {
            if self.experiments > 0 {
                out.write_all(b",")?;
            }
            write_experiment(out, run.settings(), r, &self.inputs)?;
            out.flush()
        };
        match write(out) {
            Ok(()) => self.experiments += 1,
            Err(e) => self.error = Some(write_error(&self.path, &e)),
        }
    }

    /// Closes the file; the first write error, if any.
    fn finish(&mut self, run: &Run<'_>, _measured: &Measured<'_>) -> RunResult<()> {
        let Some(mut out) = self.out.take() else {
            return Ok(());
        };
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let close = write_tail(&mut out, run.settings()).and_then(|()| {
            out.write_all(b"\n")?;
            out.flush()
        });
        close.map_err(|e| write_error(&self.path, &e))
    }
}

/// Why the export cannot be started: an existing file, or a place that cannot be written
/// (a bad option either way: nothing was measured yet).
fn open_error(path: &Path, e: &io::Error) -> RunError {
    if e.kind() == io::ErrorKind::AlreadyExists {
        return RunError::bad_option(format!(
            "--profile-export-file {} already exists; remove it or choose a new path (it is never overwritten).",
            path.display()
        ));
    }
    RunError::bad_option(format!(
        "--profile-export-file {} cannot be written: {e}. Choose a path in a folder that exists and can be written.",
        path.display()
    ))
}

fn write_error(path: &Path, e: &io::Error) -> RunError {
    RunError::failed(format!(
        "Cannot write the profile export to {}: {e}.",
        path.display()
    ))
}

#[cfg(test)]
#[path = "profile_export_tests.rs"]
mod tests;

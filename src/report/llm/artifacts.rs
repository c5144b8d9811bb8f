//! `--artifact-dir DIR`: GenAI-Perf's artifact layout. `inputs.json` goes in DIR when the
//! run starts; each level gets its own folder, named as GenAI-Perf names it
//! (`<model>-openai-<endpoint>-concurrency<N>` or `…-request_rate<R>`), written as soon as
//! the level is measured so that an interrupted or failed run keeps the levels it finished.
//! A folder holds GenAI-Perf's CSV and JSON, AIPerf's CSV and JSON (and with
//! `--server-metrics` AIPerf's `server_metrics_export.json` and `.csv`, with
//! `--slice-duration` AIPerf's `profile_export_aiperf_timeslices.csv` and `.json`), and
//! perf_analyzer's `profile_export.json`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::measure::level::{LevelResult, LoadLevel};
use crate::measure::request_log::WallClock;
use crate::results::{LoadSettings, Settings};
use inferperf_wire::error::{RunError, RunResult};

use super::aiperf::RunLabels;
use super::{
    aiperf, aiperf_records, aiperf_telemetry, genai_perf, model_folder_name, python_float,
    timeslices,
};
use crate::report::profile_export::{write_profile_export, RequestInputs};
use crate::report::{Entry, Measured, Origin, Reporter, Run, Sent};

pub const REPORT: Entry = Entry {
    name: "LLM artifacts",
    // A merged run has no requests to list; a timeline has no levels.
    is_on: |settings, origin| {
        let dir = settings.llm.as_ref().and_then(|l| l.artifact_dir.as_ref());
        dir.is_some() && origin == Origin::Measured && !settings.is_timeline()
    },
    open: |settings| Ok(Box::new(Artifacts::new(settings))),
};

/// The artifact writer of a run (`--artifact-dir`).
pub struct Artifacts {
    dir: PathBuf,
    /// The payloads as the profile export's `request_inputs`.
    inputs: RequestInputs,
    labels: RunLabels,
    /// The first write that failed; later levels are not written.
    error: Option<RunError>,
}

impl Artifacts {
    fn new(settings: &Settings) -> Artifacts {
        let dir = settings
            .llm
            .as_ref()
            .and_then(|l| l.artifact_dir.as_deref());
        Artifacts {
            dir: PathBuf::from(dir.unwrap_or_default()),
            inputs: RequestInputs::default(),
            labels: RunLabels::default(),
            error: None,
        }
    }

    fn write_files(&self, settings: &Settings, folder: &Path, r: &LevelResult) -> RunResult<()> {
        std::fs::create_dir_all(folder).map_err(|e| write_error(folder, &e))?;
        let w = &r.merged;
        let outputs = &settings.outputs;
        let aiperf_name = |ending: &str| match &outputs.aiperf_export_prefix {
            Some(prefix) => format!("{prefix}.{ending}"),
            None => format!("profile_export_aiperf.{ending}"),
        };
        let texts = [
            (
                "profile_export_genai_perf.csv".to_string(),
                genai_perf::csv(settings, w),
            ),
            (
                "profile_export_genai_perf.json".to_string(),
                genai_perf::json(settings, r.level, w).pretty(),
            ),
            (aiperf_name("csv"), aiperf::csv(settings, w)),
            (
                aiperf_name("json"),
                aiperf::json(settings, r, &self.labels).pretty(),
            ),
        ];
        let server = [
            (
                "server_metrics_export.json",
                aiperf_telemetry::server_metrics_json(settings, w).map(|j| j.pretty()),
            ),
            (
                "server_metrics_export.csv",
                aiperf_telemetry::server_metrics_csv(settings, w),
            ),
        ];
        let server = (server.into_iter()).filter_map(|(n, t)| Some((n.to_string(), t?)));
        // AIPerf's `--slice-duration` files, when the level was sliced.
        let slices_name = |ending: &str| match &outputs.aiperf_export_prefix {
            Some(prefix) => format!("{prefix}_timeslices.{ending}"),
            None => format!("profile_export_aiperf_timeslices.{ending}"),
        };
        let sliced = (!r.slices.is_empty()).then(|| {
            [
                (slices_name("csv"), timeslices::csv(settings, r)),
                (
                    slices_name("json"),
                    timeslices::json(settings, r, &self.labels).pretty(),
                ),
            ]
        });
        let all = (texts.into_iter().chain(server)).chain(sliced.into_iter().flatten());
        for (name, text) in all {
            let path = folder.join(name);
            std::fs::write(&path, text).map_err(|e| write_error(&path, &e))?;
        }
        // `--export-level summary`: the summaries alone.
        if outputs.summary_only {
            return Ok(());
        }
        // AIPerf's layout: its per-request records too.
        if settings
            .command_line
            .as_ref()
            .is_some_and(|c| c.is_aiperf())
        {
            let name = match &outputs.aiperf_export_prefix {
                Some(prefix) => format!("{prefix}.jsonl"),
                None => "profile_export.jsonl".to_string(),
            };
            let path = folder.join(name);
            let write = || -> std::io::Result<()> {
                let mut out = BufWriter::new(File::create(&path)?);
                aiperf_records::write_records(&mut out, settings, r)?;
                out.flush()
            };
            write().map_err(|e| write_error(&path, &e))?;
        }
        let path = folder.join("profile_export.json");
        let write = || -> std::io::Result<()> {
            let mut out = BufWriter::new(File::create(&path)?);
            write_profile_export(&mut out, settings, r, &self.inputs)?;
            out.flush()
        };
        write().map_err(|e| write_error(&path, &e))
    }
}

impl Reporter for Artifacts {
    /// Creates DIR and writes `inputs.json` (the run stops here if it cannot: better than
    /// finding out after measuring).
    fn start(&mut self, _run: &Run<'_>, sent: Option<&Sent<'_>>) -> RunResult<()> {
        self.labels = run_labels(&self.dir);
        let Some(sent) = sent else {
            return Ok(());
        };
        let payloads = (sent.bodies)();
        self.inputs = RequestInputs::of_payloads(&payloads);
        let dir = &self.dir;
        std::fs::create_dir_all(dir).map_err(|e| write_error(dir, &e))?;
        let path = dir.join("inputs.json");
        let text = payloads.inputs_json().pretty();
        std::fs::write(&path, text).map_err(|e| write_error(&path, &e))
    }

    /// Writes the folder of a level just measured. A failure is kept for the end (the
    /// measurement goes on; the reports are still printed).
    fn level(&mut self, run: &Run<'_>, r: &LevelResult) {
        if self.error.is_some() {
            return;
        }
        // AIPerf writes its one level's files in the folder itself; GenAI-Perf a folder per level.
        let aiperf = (run.settings().command_line.as_ref()).is_some_and(|c| c.is_aiperf());
        let folder = match aiperf {
            true => self.dir.clone(),
            false => self.dir.join(level_folder_name(run.settings(), r.level)),
        };
        if let Err(error) = self.write_files(run.settings(), &folder, r) {
            self.error = Some(error);
        }
    }

    /// The first write error, if any.
    fn finish(&mut self, _run: &Run<'_>, _measured: &Measured<'_>) -> RunResult<()> {
        self.error.take().map_or(Ok(()), Err)
    }
}

/// The folder of a level, as GenAI-Perf names it: `<model>-openai-<endpoint>-<stimulus>`,
/// the stimulus `concurrency<N>`, `request_rate<R>` (R as Python prints a float: `10.0`)
/// or `fixed_schedule`; a periodic run is `periodic_concurrency<start>-<end>-<step>`.
pub fn level_folder_name(settings: &Settings, level: LoadLevel) -> String {
    let endpoint = settings.llm_endpoint().map_or("chat", |e| e.kind_name());
    let stimulus = match (&settings.load, level) {
        (LoadSettings::FixedSchedule, _) => "fixed_schedule".to_string(),
        (
            LoadSettings::Periodic {
                start, end, step, ..
            },
            _,
        ) => {
            format!("periodic_concurrency{start}-{end}-{step}")
        }
        (_, LoadLevel::Concurrency(c)) => format!("concurrency{c}"),
        (_, LoadLevel::Rate(rate)) => format!("request_rate{}", python_float(rate)),
    };
    format!(
        "{}-openai-{endpoint}-{stimulus}",
        model_folder_name(&settings.model_name)
    )
}

/// One sentence that names the path that could not be written.
fn write_error(path: &Path, e: &std::io::Error) -> RunError {
    RunError::failed(format!(
        "Cannot write the LLM artifacts to {}: {e}.",
        path.display()
    ))
}

/// The run's id (from the time it starts), command line and artifact folder.
fn run_labels(dir: &Path) -> RunLabels {
    let now_ns = WallClock::now().epoch_ns(std::time::Instant::now());
    let args: Vec<String> = crate::cli::without_header_values(std::env::args())
        .iter()
        .map(|a| shell_quoted(a))
        .collect();
    RunLabels {
        benchmark_id: format!("{:012x}", now_ns & 0xffff_ffff_ffff),
        cli_command: args.join(" "),
        artifact_dir: dir.display().to_string(),
    }
}

/// An argument as a shell reads it back: in single quotes when it holds anything but
/// letters, digits and `-_./:=,@%+`.
fn shell_quoted(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
#[path = "artifacts_tests.rs"]
mod tests;

//! `--artifact-dir DIR`: GenAI-Perf's artifact layout. `inputs.json` goes in DIR when the
//! run starts; each level gets its own folder, named as GenAI-Perf names it
//! (`<model>-openai-<endpoint>-concurrency<N>` or `…-request_rate<R>`), written as soon as
//! the level is measured so that an interrupted or failed run keeps the levels it finished.
//! A folder holds GenAI-Perf's CSV and JSON, AIPerf's CSV and JSON, and perf_analyzer's
//! `profile_export.json`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::config::{Config, LoadLevel, LoadMode};
use crate::data::Dataset;
use crate::error::{RunError, RunResult};
use crate::measure::level::LevelResult;
use crate::measure::request_log::WallClock;

use super::aiperf::RunLabels;
use super::payloads::Payloads;
use super::{aiperf, genai_perf, model_folder_name, python_float};
use crate::report::profile_export::{write_profile_export, RequestInputs};

/// The artifact writer of a run; does nothing when no `--artifact-dir` was given.
pub struct Artifacts<'a> {
    cfg: &'a Config,
    /// `--artifact-dir`, when given.
    dir: Option<PathBuf>,
    payloads: Payloads,
    /// The payloads as the profile export's `request_inputs`.
    inputs: RequestInputs,
    labels: RunLabels,
    /// The first write that failed; later levels are not written.
    error: Option<RunError>,
}

impl<'a> Artifacts<'a> {
    /// Creates DIR and writes `inputs.json` (the run stops here if it cannot: better than
    /// finding out after measuring).
    pub fn start(cfg: &'a Config, dataset: &Dataset) -> RunResult<Artifacts<'a>> {
        let dir = cfg.llm().and_then(|llm| llm.artifact_dir.clone());
        let mut artifacts = Artifacts {
            cfg,
            payloads: Payloads::default(),
            inputs: RequestInputs::default(),
            labels: run_labels(dir.as_deref()),
            dir,
            error: None,
        };
        if let Some(dir) = &artifacts.dir {
            artifacts.payloads = Payloads::of(cfg, dataset);
            artifacts.inputs = RequestInputs::of_payloads(&artifacts.payloads);
            std::fs::create_dir_all(dir).map_err(|e| write_error(dir, &e))?;
            let path = dir.join("inputs.json");
            let text = artifacts.payloads.inputs_json().pretty();
            std::fs::write(&path, text).map_err(|e| write_error(&path, &e))?;
        }
        Ok(artifacts)
    }

    /// Writes the folder of a level just measured. A failure is kept for
    /// [`Artifacts::finish`] (the measurement goes on; the reports are still printed).
    pub fn write_level(&mut self, r: &LevelResult) {
        let (Some(dir), None) = (&self.dir, &self.error) else {
            return;
        };
        let folder = dir.join(level_folder_name(self.cfg, r.level));
        if let Err(error) = self.write_files(&folder, r) {
            self.error = Some(error);
        }
    }

    /// The first write error, if any.
    pub fn finish(self) -> RunResult<()> {
        self.error.map_or(Ok(()), Err)
    }

    fn write_files(&self, folder: &Path, r: &LevelResult) -> RunResult<()> {
        std::fs::create_dir_all(folder).map_err(|e| write_error(folder, &e))?;
        let cfg = self.cfg;
        let w = &r.merged;
        let texts = [
            ("profile_export_genai_perf.csv", genai_perf::csv(cfg, w)),
            (
                "profile_export_genai_perf.json",
                genai_perf::json(cfg, r.level, w).pretty(),
            ),
            ("profile_export_aiperf.csv", aiperf::csv(cfg, w)),
            (
                "profile_export_aiperf.json",
                aiperf::json(cfg, r, &self.labels).pretty(),
            ),
        ];
        for (name, text) in texts {
            let path = folder.join(name);
            std::fs::write(&path, text).map_err(|e| write_error(&path, &e))?;
        }
        let path = folder.join("profile_export.json");
        let write = || -> std::io::Result<()> {
            let mut out = BufWriter::new(File::create(&path)?);
            write_profile_export(&mut out, cfg, r, &self.inputs)?;
            out.flush()
        };
        write().map_err(|e| write_error(&path, &e))
    }
}

/// The folder of a level, as GenAI-Perf names it: `<model>-openai-<endpoint>-<stimulus>`,
/// the stimulus `concurrency<N>`, `request_rate<R>` (R as Python prints a float: `10.0`)
/// or `fixed_schedule`; a periodic run is `periodic_concurrency<start>-<end>-<step>`.
pub fn level_folder_name(cfg: &Config, level: LoadLevel) -> String {
    let endpoint = cfg.llm().map_or("chat", |l| l.endpoint.kind_name());
    let stimulus = match (&cfg.load, level) {
        (LoadMode::FixedSchedule, _) => "fixed_schedule".to_string(),
        (LoadMode::Periodic(p), _) => {
            format!("periodic_concurrency{}-{}-{}", p.start, p.end, p.step)
        }
        (_, LoadLevel::Concurrency(c)) => format!("concurrency{c}"),
        (_, LoadLevel::Rate(rate)) => format!("request_rate{}", python_float(rate)),
    };
    format!(
        "{}-openai-{endpoint}-{stimulus}",
        model_folder_name(&cfg.model_name)
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
fn run_labels(dir: Option<&Path>) -> RunLabels {
    let now_ns = WallClock::now().epoch_ns(std::time::Instant::now());
    let args: Vec<String> = crate::cli::without_header_values(std::env::args())
        .iter()
        .map(|a| shell_quoted(a))
        .collect();
    RunLabels {
        benchmark_id: format!("{:012x}", now_ns & 0xffff_ffff_ffff),
        cli_command: args.join(" "),
        artifact_dir: dir.map_or(String::new(), |d| d.display().to_string()),
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

//! Where a run's reports go: `-f FILE` (perf_analyzer's CSV), `--report-dir DIR` (one folder
//! per run holding `results.json`, the CSV and the reports built from them) and
//! `--results-file FILE` (the results file alone). Only the names and the rules about them
//! live here; whether a path can really be written is found out when the run starts.

use std::path::{Path, PathBuf};

use super::aiperf::Lowered;
use super::LoadMode;
use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// The results file's name in a `--report-dir`.
pub const RESULTS_FILE_NAME: &str = "results.json";
/// perf_analyzer's CSV's name in a `--report-dir`.
pub const REPORT_CSV_NAME: &str = "results.csv";

/// The settings of the reports: where each goes and how much it says.
#[derive(Debug, Clone)]
pub struct OutputConfig {
    pub csv_file: Option<PathBuf>,
    /// `--report-dir`: the folder of `results.json`, the CSV and the reports built on them.
    pub report_dir: Option<PathBuf>,
    /// `--results-file`: the results file alone.
    pub results_file: Option<PathBuf>,
    /// `--profile-export-file`: perf_analyzer's per-request export.
    pub profile_export_file: Option<PathBuf>,
    /// `--per-url-csv`: a row per level and URL.
    pub per_url_csv: Option<PathBuf>,
    pub verbose: u8,
    /// `--verbose-csv`: perf_analyzer's extra CSV columns and one per `--metric`.
    pub verbose_csv: bool,
    /// Live progress on standard error when it is a terminal (off with `--no-progress`).
    pub progress: bool,
    /// AIPerf's `--ui-type dashboard` was asked for.
    pub dashboard_asked: bool,
    /// AIPerf's `--profile-export-prefix`: the base name of its files.
    pub aiperf_export_prefix: Option<String>,
    /// AIPerf's `--export-level summary`: no per-request file.
    pub summary_only: bool,
}

impl OutputConfig {
    /// The reports' flags: where each report goes and how much it says.
    pub(super) fn parse(
        args: &ProfileArgs,
        lowered: &Lowered,
        load: &LoadMode,
    ) -> RunResult<OutputConfig> {
        let (report_dir, results_file) = parse_outputs(args)?;
        Ok(OutputConfig {
            csv_file: args.csv_file.clone(),
            report_dir,
            results_file,
            profile_export_file: parse_profile_export(args, load)?,
            per_url_csv: args.per_url_csv.clone(),
            verbose: args.verbose,
            verbose_csv: args.verbose_csv,
            progress: !args.no_progress,
            dashboard_asked: args.aiperf.ui_type.as_deref().map(str::trim) == Some("dashboard"),
            aiperf_export_prefix: lowered.runtime.export_prefix.clone(),
            summary_only: lowered.runtime.summary_only,
        })
    }

    /// Where `results.json` goes: `DIR/results.json` with `--report-dir DIR`, or
    /// `--results-file`; `None` when the run writes no results file.
    pub fn results_path(&self) -> Option<PathBuf> {
        match (&self.report_dir, &self.results_file) {
            (Some(dir), _) => Some(dir.join(RESULTS_FILE_NAME)),
            (None, file) => file.clone(),
        }
    }

    /// Where perf_analyzer's CSV goes: `-f FILE`, and `DIR/results.csv` with
    /// `--report-dir DIR` (a report folder is complete on its own, whether or not `-f` also
    /// asks for a copy elsewhere).
    pub fn csv_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.csv_file.iter().cloned().collect();
        if let Some(dir) = &self.report_dir {
            let path = dir.join(REPORT_CSV_NAME);
            if !paths.iter().any(|p| same_path(p, &path)) {
                paths.push(path);
            }
        }
        paths
    }
}

impl super::Config {
    /// The outputs of one run of a sweep (AIPerf's comma-separated lists): the artifacts in
    /// `artifacts/<folder>` (AIPerf's layout, `artifacts` being the sweep's folder), the
    /// report folder `--report-dir DIR/<folder>`, and the files of `-f`, `--results-file`
    /// and `--profile-export-file` named with `-<folder>` before their extension.
    pub fn for_variation(&mut self, artifacts: Option<&Path>, folder: &str) {
        if let (Some(llm), Some(base)) = (self.target.llm_mut(), artifacts) {
            llm.artifact_dir = Some(base.join(folder));
        }
        let output = &mut self.output;
        output.report_dir = output.report_dir.as_ref().map(|d| d.join(folder));
        for file in [
            &mut output.csv_file,
            &mut output.results_file,
            &mut output.profile_export_file,
            &mut output.per_url_csv,
        ] {
            *file = file.as_deref().map(|path| suffixed(path, folder));
        }
        self.measure.repeats.in_sweep = true;
    }
}

impl super::Config {
    /// The configuration of profile run `index` (from 0) of `--num-profile-runs`: its
    /// outputs in `profile_runs/run_NNNN` of the artifact and report folders (AIPerf's
    /// layout) and its files named with `-run_NNNN`; no warm-up after the first run unless
    /// asked, and a seed of its own when asked.
    pub fn for_repetition(&mut self, index: u32) {
        let label = repetition_label(index);
        // Under a sweep's value AIPerf names the run's folder trial_NNNN (its label stays).
        let folder = match self.measure.repeats.in_sweep {
            true => format!("trial_{:04}", index + 1),
            false => label.clone(),
        };
        if let Some(llm) = self.target.llm_mut() {
            llm.artifact_dir =
                (llm.artifact_dir.take()).map(|d| d.join("profile_runs").join(&folder));
        }
        let output = &mut self.output;
        output.report_dir =
            (output.report_dir.take()).map(|d| d.join("profile_runs").join(&folder));
        for file in [
            &mut output.csv_file,
            &mut output.results_file,
            &mut output.profile_export_file,
            &mut output.per_url_csv,
        ] {
            *file = file.as_deref().map(|path| suffixed(path, &label));
        }
        let repeats = &self.measure.repeats;
        if index > 0 && !repeats.warm_up_after_first {
            self.load.warm_up = None;
            self.load.warmup_request_count = 0;
        }
        if repeats.vary_seed {
            self.load.seed = self.load.seed.wrapping_add(u64::from(index));
        }
    }
}

/// AIPerf's name of profile run `index` (from 0): `run_0001`.
pub fn repetition_label(index: u32) -> String {
    format!("run_{:04}", index + 1)
}

/// `out.csv` as `out-<suffix>.csv`.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, path.extension()) {
        (Some(stem), Some(ext)) => format!("{stem}-{suffix}.{}", ext.to_string_lossy()),
        (Some(stem), None) => format!("{stem}-{suffix}"),
        (None, _) => suffix.to_string(),
    };
    path.with_file_name(name)
}

/// `--report-dir` and `--results-file`: each a non-empty path, and not both (each names
/// where `results.json` goes).
fn parse_outputs(args: &ProfileArgs) -> RunResult<(Option<PathBuf>, Option<PathBuf>)> {
    let non_empty = |path: &Option<PathBuf>, flag: &str| match path {
        Some(p) if p.as_os_str().is_empty() => Err(RunError::bad_option(format!(
            "{flag} needs a path, e.g. {flag} runs/baseline."
        ))),
        _ => Ok(path.clone()),
    };
    let dir = non_empty(&args.report_dir, "--report-dir")?;
    let file = non_empty(&args.results_file, "--results-file")?;
    if let (Some(dir), Some(file)) = (&dir, &file) {
        return Err(RunError::bad_option(format!(
            "--report-dir {} already writes {}: drop --results-file {}.",
            dir.display(),
            dir.join(RESULTS_FILE_NAME).display(),
            file.display()
        )));
    }
    Ok((dir, file))
}

/// `--profile-export-file`: a path that does not exist yet (perf_analyzer refuses to
/// overwrite an export), for a run measured in windows (a `--ramp` or `--load-steps` run
/// has a per-second timeline instead, which the results file holds).
fn parse_profile_export(args: &ProfileArgs, load: &LoadMode) -> RunResult<Option<PathBuf>> {
    let Some(path) = &args.profile_export_file else {
        return Ok(None);
    };
    if path.as_os_str().is_empty() {
        return Err(RunError::bad_option(
            "--profile-export-file needs a path, e.g. --profile-export-file profile_export.json.",
        ));
    }
    if path.exists() {
        return Err(RunError::bad_option(format!(
            "--profile-export-file {} already exists; remove it or choose a new path (it is never overwritten).",
            path.display()
        )));
    }
    if load.timeline().is_some() {
        return Err(RunError::bad_option(
            "--profile-export-file lists requests by measurement window, and a --ramp or --load-steps run has none: use --report-dir or --results-file for its per-second timeline.",
        ));
    }
    Ok(Some(path.clone()))
}

/// Whether two paths name the same file as written (`./a.csv` and `a.csv` do).
fn same_path(a: &Path, b: &Path) -> bool {
    let plain = |p: &Path| -> PathBuf { p.components().collect() };
    plain(a) == plain(b)
}

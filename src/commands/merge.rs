//! The `merge` command end to end: read the shards' results files, refuse those that are
//! not the shards of one run, rebuild the run's configuration from the command line the
//! shards recorded (without the shard's own flags, with merge's output flags), merge the
//! levels (`results::merge`), and write every report a run writes — console, CSV,
//! results.json, report.html — through the same list of reports as `profile`.

use std::path::{Path, PathBuf};

use crate::cli::{clap_sentence, normalize_args, Command, MergeArgs};
use crate::config::{Config, RESULTS_FILE_NAME};
use crate::report::{Measured, Origin, Reports};
use crate::results::{self, MergedOrigin, Recorder, RunEnd, Settings};
use crate::scale_out::merge::{self, MergedRun, Shard};
use inferperf_wire::error::{RunError, RunResult, EXIT_OK, EXIT_UNSTABLE};
use inferperf_wire::model::ModelSpec;

/// Flags of a shard's command line that are the shard's own, not the run's: dropped with
/// their value before the command line is parsed again.
const SHARD_FLAGS: [&str; 3] = ["--shard", "--shards", "--start-at"];
/// Flags that take no value and are the shard's own.
const SHARD_SWITCHES: [&str; 1] = ["--enable-mpi"];
/// Where a shard wrote its reports: replaced by merge's own.
const OUTPUT_FLAGS: [&str; 5] = [
    "-f",
    "--report-dir",
    "--results-file",
    "--profile-export-file",
    "--per-url-csv",
];

/// Runs `inferperf merge`; the exit code is 2 when a merged level is unstable, else 0.
pub fn run(args: &MergeArgs) -> RunResult<i32> {
    let shards = read_shards(&args.shards)?;
    let mut notes = merge::check(&shards, args.allow_missing)?;
    let shards = in_shard_order(shards);
    let kept = run_arguments(&shards[0].file.settings.arguments);
    let cfg = merged_config(&shards[0], &kept, args)?;
    let model = model(&shards[0])?;
    let run = merge::merge(&cfg.measure, cfg.data.batch_size, &shards)?;
    notes.extend(run.notes.iter().cloned());
    let settings = merged_settings(&shards[0], &cfg);
    write_reports(&model, &shards, &run, settings, &notes)
}

/// Reads every file given (a run's folder stands for its `shard-I` folders); fewer than
/// two is a mistake.
fn read_shards(given: &[PathBuf]) -> RunResult<Vec<Shard>> {
    let paths: Vec<PathBuf> = given.iter().flat_map(|p| shard_folders(p)).collect();
    if paths.len() < 2 {
        return Err(RunError::bad_option(format!(
            "inferperf merge needs the results files of at least 2 shards ({} given), e.g. inferperf merge runs/shard-*/results.json --report-dir runs/merged.",
            paths.len()
        )));
    }
    paths
        .iter()
        .map(|path| {
            Ok(Shard {
                path: path.display().to_string(),
                file: results::read(path)?,
            })
        })
        .collect()
}

/// A run's folder, as `--report-dir DIR` of sharded processes leaves it (`DIR/shard-I/`,
/// no results file of its own), stands for its shards' folders in index order; any other
/// path for itself.
fn shard_folders(path: &Path) -> Vec<PathBuf> {
    if !path.is_dir() || path.join(RESULTS_FILE_NAME).exists() {
        return vec![path.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return vec![path.to_path_buf()];
    };
    let mut shards: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let index = name.to_str()?.strip_prefix("shard-")?.parse().ok()?;
            let folder = entry.path();
            folder
                .join(RESULTS_FILE_NAME)
                .is_file()
                .then_some((index, folder))
        })
        .collect();
    if shards.is_empty() {
        return vec![path.to_path_buf()];
    }
    shards.sort();
    shards.into_iter().map(|(_, folder)| folder).collect()
}

/// The shards by index, so that the first is the one whose server side is kept.
fn in_shard_order(mut shards: Vec<Shard>) -> Vec<Shard> {
    shards.sort_by_key(|s| s.file.settings.shard.as_ref().map_or(0, |r| r.index));
    shards
}

fn model(shard: &Shard) -> RunResult<ModelSpec> {
    let record = shard
        .file
        .model
        .as_ref()
        .ok_or_else(|| RunError::bad_option(format!("{} has no model record.", shard.path)))?;
    results::model_spec(record)
        .map_err(|why| RunError::bad_option(format!("{}: {why}.", shard.path)))
}

/// The run's configuration: the first shard's command line without the shard's own flags
/// and outputs (`kept`), with merge's outputs. The client's threads are all the shards'
/// (their CPU is summed), so that a client is said to limit the load only when it did.
fn merged_config(shard: &Shard, kept: &[String], args: &MergeArgs) -> RunResult<Config> {
    let refuse = |why: String| {
        RunError::bad_option(format!(
            "{}: {why}; merge rebuilds the run's settings from the shards' command line.",
            shard.path
        ))
    };
    if shard.file.settings.arguments.is_empty() {
        return Err(refuse(
            "the file records no command line (settings.arguments)".to_string(),
        ));
    }
    let mut line = vec!["inferperf".to_string()];
    line.extend(kept.iter().cloned());
    let line = normalize_args(line);
    let cli = crate::cli::parse_command_line(line.iter().cloned()).map_err(|e| {
        refuse(format!(
            "its command line (settings.arguments) does not parse: {}",
            clap_sentence(&e, &line).trim_end_matches(" see inferperf --help.")
        ))
    })?;
    let Command::Profile(mut profile) = cli.command else {
        return Err(refuse(
            "its command line (settings.arguments) is not a profile's".to_string(),
        ));
    };
    profile.csv_file.clone_from(&args.csv_file);
    profile.report_dir.clone_from(&args.report_dir);
    profile.results_file.clone_from(&args.results_file);
    profile.per_url_csv.clone_from(&args.per_url_csv);
    profile.profile_export_file = None;
    profile.no_progress = true;
    let mut cfg = Config::from_args(&profile).map_err(|e| {
        refuse(format!(
            "its command line (settings.arguments) is not valid here: {}",
            e.to_string().trim_end_matches('.')
        ))
    })?;
    // A merge run under MPI or in an Indexed Job is still no shard, nor are its outputs
    // a shard's.
    cfg.load.shard = None;
    cfg.output.csv_file.clone_from(&args.csv_file);
    cfg.output.report_dir.clone_from(&args.report_dir);
    cfg.output.results_file.clone_from(&args.results_file);
    cfg.output.per_url_csv.clone_from(&args.per_url_csv);
    cfg.arguments = merged_arguments(kept, args);
    cfg.load.client_threads *= args.shards.len();
    Ok(cfg)
}

/// The command line that rebuilds the merged run: the shards' own, with merge's outputs.
fn merged_arguments(kept: &[String], args: &MergeArgs) -> Vec<String> {
    let mut arguments = kept.to_vec();
    let outputs = [
        ("-f", &args.csv_file),
        ("--report-dir", &args.report_dir),
        ("--results-file", &args.results_file),
        ("--per-url-csv", &args.per_url_csv),
    ];
    for (flag, path) in outputs {
        if let Some(path) = path {
            arguments.push(flag.to_string());
            arguments.push(path.display().to_string());
        }
    }
    arguments
}

/// The merged run's settings: the shards' (the same, as checked), without a shard, with
/// the command line that rebuilds the run, merge's outputs and every shard's client
/// threads; what a shard's file may lack (written by an inferperf before it was recorded)
/// is taken from the rebuilt configuration.
fn merged_settings(shard: &Shard, cfg: &Config) -> Settings {
    let own = super::profile::recorded_settings(cfg);
    let mut settings = shard.file.settings.clone();
    settings.shard = None;
    settings.arguments = own.arguments;
    settings.csv_files = own.csv_files;
    settings.outputs = own.outputs;
    settings.client_threads = own.client_threads;
    settings.benchmark_duration_ms = own.benchmark_duration_ms;
    settings.grpc_method = own.grpc_method;
    if let (Some(llm), Some(own)) = (&mut settings.llm, own.llm) {
        llm.tokenizer = own.tokenizer;
    }
    settings
}

/// A shard's command line without the flags that are the shard's or its outputs.
fn run_arguments(recorded: &[String]) -> Vec<String> {
    let mut kept = Vec::with_capacity(recorded.len());
    let mut skip_value = false;
    for arg in recorded {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let mut with_value = SHARD_FLAGS.iter().chain(&OUTPUT_FLAGS);
        if with_value.clone().any(|flag| arg == flag) {
            skip_value = true;
            continue;
        }
        let dropped =
            with_value.any(|flag| joined(arg, flag)) || SHARD_SWITCHES.contains(&arg.as_str());
        if !dropped {
            kept.push(arg.clone());
        }
    }
    kept
}

/// `--flag=value`, or `-fvalue` for a short flag.
fn joined(arg: &str, flag: &str) -> bool {
    match arg.strip_prefix(flag) {
        Some(rest) if flag.starts_with("--") => rest.starts_with('='),
        Some(rest) => !rest.is_empty(),
        None => false,
    }
}

/// Prints the console report and writes the CSV, results.json and report.html of the
/// merged run, through the same reports as `profile` writes a run's.
fn write_reports(
    model: &ModelSpec,
    shards: &[Shard],
    run: &MergedRun,
    settings: Settings,
    notes: &[String],
) -> RunResult<i32> {
    let origin = MergedOrigin {
        merged_from: shards.iter().map(|s| s.path.clone()).collect(),
        settings,
        host: shards[0].file.host.clone(),
        started_at: run.started_at,
        ended_at: run.ended_at,
        start: run.start,
    };
    let mut reports = Reports::open(Recorder::merged(origin), Origin::Merged)?;
    reports.start(model, None)?;
    print!("{}", merge_block(shards, notes));
    for level in &run.levels {
        reports.level(level);
    }
    let failed = shards.iter().find_map(|s| {
        let error = s.file.error.as_ref()?;
        Some(RunError::failed(format!("{}: {error}", s.label())))
    });
    let end = RunEnd {
        interrupted: shards.iter().any(|s| s.file.interrupted),
        error: failed.as_ref(),
        timeline_total: None,
    };
    reports.finish(end, Measured::Levels(&run.levels))?;
    let unstable = run
        .levels
        .iter()
        .any(|r| !r.is_stable() && !super::profile::is_limit(r));
    Ok(if unstable { EXIT_UNSTABLE } else { EXIT_OK })
}

/// `Merged 2 shards: a/results.json, b/results.json` and the notes of the merge.
fn merge_block(shards: &[Shard], notes: &[String]) -> String {
    let files: Vec<&str> = shards.iter().map(|s| s.path.as_str()).collect();
    let mut text = format!("Merged {} shards: {}\n", shards.len(), files.join(", "));
    for note in notes {
        text.push_str(&format!("  Note: {note}\n"));
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_shard_flags_and_outputs_are_dropped() {
        let recorded = strings(&[
            "-m",
            "identity",
            "--shard",
            "1/2",
            "--start-at=@1700000000",
            "--enable-mpi",
            "-f",
            "a.csv",
            "-fb.csv",
            "--report-dir=runs/a",
            "--results-file",
            "r.json",
            "--profile-export-file",
            "e.json",
            "--per-url-csv=urls.csv",
            "-H",
            "Authorization: <hidden>",
            "--concurrency-range",
            "4",
        ]);
        assert_eq!(
            run_arguments(&recorded),
            strings(&[
                "-m",
                "identity",
                "-H",
                "Authorization: <hidden>",
                "--concurrency-range",
                "4"
            ])
        );
    }
}

//! AIPerf's sweeps by comma-separated lists (`--concurrency 1,2,4`, `--isl 128,512`): each
//! combination ([`crate::cli::sweep_lists`]) is a whole run of its own — warm-up, dataset,
//! seed and reports — one after the other with `--parameter-sweep-cooldown-seconds` between
//! them, its artifacts in `<sweep folder>/<variation>` as AIPerf lays them out. Every line
//! is checked before the first run starts, a failed run does not stop the others, and the
//! sweep ends with a table of the runs.

use std::sync::Arc;

use super::{profile_runs, ProfileOutcome};
use crate::cli::{parse_command_line, without_header_values, Command, Sweep, Variation};
use crate::config::Config;
use crate::load::profiler::Interrupt;
use inferperf_wire::error::{RunError, RunResult, EXIT_OK};

/// Runs every variation of `sweep` (whose lines follow `inferperf profile`); the exit code
/// of the sweep: the first failed run's, else 0.
pub async fn run(sweep: &Sweep) -> RunResult<i32> {
    let configs = checked_configs(&sweep.variations)?;
    let base = configs[0].target.llm().and_then(|l| l.artifact_dir.clone());
    let interrupt = Arc::new(Interrupt::default());
    crate::commands::watch_ctrl_c(interrupt.clone());
    let count = configs.len();
    let mut ended: Vec<(String, RunResult<ProfileOutcome>)> = Vec::new();
    for (i, (variation, mut cfg)) in sweep.variations.iter().zip(configs).enumerate() {
        cfg.for_variation(base.as_deref(), &variation.folder);
        println!(
            "=== Sweep run {} of {count}: {} ===",
            i + 1,
            variation.label
        );
        let outcome = profile_runs(&cfg, interrupt.clone()).await;
        if let Err(error) = &outcome {
            eprintln!("error: {error}");
        }
        ended.push((variation.label.clone(), outcome));
        if interrupt.is_raised() {
            break;
        }
        if i + 1 < count && sweep.cooldown_s > 0.0 {
            interrupt
                .sleep(inferperf_wire::number::saturating_secs(sweep.cooldown_s))
                .await;
        }
    }
    print_summary(&ended, count);
    let code = ended.iter().find_map(|(_, outcome)| match outcome {
        Err(error) => Some(error.exit_code()),
        Ok(outcome) if outcome.exit_code != EXIT_OK => Some(outcome.exit_code),
        Ok(_) => None,
    });
    super::super::interrupted(&interrupt, Ok(code.unwrap_or(EXIT_OK)))
}

/// Every variation's configuration, checked before anything is sent: a bad flag in any
/// run is the sweep's one sentence (exit 3).
fn checked_configs(variations: &[Variation]) -> RunResult<Vec<Config>> {
    variations
        .iter()
        .map(|variation| {
            let line = ["inferperf".to_string(), "profile".to_string()]
                .into_iter()
                .chain(variation.args.iter().cloned());
            let cli = parse_command_line(line).map_err(|e| {
                RunError::bad_option(format!(
                    "The sweep's run {} does not parse: {}",
                    variation.label,
                    e.kind()
                ))
            })?;
            let Command::Profile(args) = cli.command else {
                return Err(RunError::bad_option("A sweep is a profile's."));
            };
            let mut cfg = Config::from_args(&args)?;
            cfg.arguments = without_header_values(variation.args.iter().cloned());
            Ok(cfg)
        })
        .collect()
}

/// The table at the end of a sweep: each run and how it ended.
fn print_summary(ended: &[(String, RunResult<ProfileOutcome>)], count: usize) {
    println!("=== Sweep: {} of {count} runs ===", ended.len());
    for (label, outcome) in ended {
        let how = match outcome {
            Ok(outcome) if outcome.exit_code == EXIT_OK => "measured".to_string(),
            Ok(outcome) => format!("measured, exit {}", outcome.exit_code),
            Err(error) => format!("failed: {error}"),
        };
        println!("  {label}: {how}");
    }
}

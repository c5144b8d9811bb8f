//! AIPerf's runtime and output flags (`cli::AiperfRuntimeArgs`) read into inferperf's
//! settings: the logging level and `--extra-verbose` as `-v`, `--workers-max` as the cap on
//! client threads, AIPerf's transport and URL strategy (each has one value), connection
//! reuse, and which AIPerf files are written under which name.

use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// What of AIPerf's runtime flags has no perf_analyzer form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Runtime {
    /// `--connection-reuse-strategy never`: a new connection for every request.
    pub connection_per_request: bool,
    /// `--export-level summary`: no per-request file.
    pub summary_only: bool,
    /// `--profile-export-prefix`: the AIPerf files' base name.
    pub export_prefix: Option<String>,
}

/// Reads AIPerf's runtime flags, writing what has a perf_analyzer form into `args`.
pub(super) fn lower(args: &mut ProfileArgs) -> RunResult<Runtime> {
    let flags = args.aiperf_runtime.clone();
    if let Some(level) = &flags.log_level {
        args.verbose = args.verbose.max(verbosity(level)?);
    }
    if flags.extra_verbose {
        args.verbose = args.verbose.max(2);
    }
    if let Some(n) = flags.workers_max {
        if n == 0 {
            return Err(RunError::bad_option(
                "--workers-max 0 leaves no worker to send: give 1 or more.",
            ));
        }
        args.pa.max_threads = Some(args.pa.max_threads.map_or(n, |m| m.min(n)));
    }
    if let Some(s) = flags.stats_interval.filter(|s| !s.is_finite() || *s < 0.0) {
        return Err(RunError::bad_option(format!(
            "--stats-interval {s} is not a number of seconds of 0 or more."
        )));
    }
    one_value(flags.transport.as_deref(), "--transport", &["http"])?;
    one_value(
        flags.url_strategy.as_deref(),
        "--url-strategy",
        &["round-robin"],
    )?;
    for format in &flags.server_metrics_formats {
        one_value(Some(format), "--server-metrics-formats", &["json", "csv"])?;
    }
    if flags.auto_plot && flags.no_auto_plot {
        return Err(RunError::bad_option(
            "--auto-plot and --no-auto-plot say opposite things: give one.",
        ));
    }
    let connection_per_request = match flags.connection_reuse_strategy.as_deref() {
        None => false,
        Some(strategy) => {
            let strategy = aiperf_value(strategy);
            one_value(
                Some(&strategy),
                "--connection-reuse-strategy",
                &["pooled", "never", "sticky-user-sessions"],
            )?;
            strategy == "never"
        }
    };
    Ok(Runtime {
        connection_per_request,
        summary_only: export_summary_only(flags.export_level.as_deref())?,
        export_prefix: flags.profile_export_prefix.as_deref().map(prefix_name),
    })
}

/// AIPerf's value spelling: dashes or underscores, any case.
fn aiperf_value(value: &str) -> String {
    value.trim().to_ascii_lowercase().replace('_', "-")
}

/// A flag whose value must be one of `allowed` (in AIPerf's spelling).
fn one_value(given: Option<&str>, flag: &str, allowed: &[&str]) -> RunResult<()> {
    let Some(given) = given else {
        return Ok(());
    };
    if allowed.contains(&aiperf_value(given).as_str()) {
        return Ok(());
    }
    Err(RunError::bad_option(format!(
        "{flag} '{given}' is not one inferperf takes: use {}.",
        allowed.join(" or ")
    )))
}

/// AIPerf's logging levels as inferperf's `-v` count.
fn verbosity(level: &str) -> RunResult<u8> {
    match aiperf_value(level).as_str() {
        "trace" => Ok(2),
        "debug" => Ok(1),
        "info" | "notice" | "warning" | "success" | "error" | "critical" => Ok(0),
        _ => Err(RunError::bad_option(format!(
            "--log-level '{level}' is not one of AIPerf's levels: trace, debug, info, notice, warning, success, error or critical."
        ))),
    }
}

/// `--export-level`: whether only the summaries are written.
fn export_summary_only(level: Option<&str>) -> RunResult<bool> {
    match level.map(aiperf_value).as_deref() {
        None | Some("records") => Ok(false),
        Some("summary") => Ok(true),
        Some("raw") => Err(RunError::bad_option(
            "--export-level raw writes every request's and answer's raw bytes, which inferperf does not keep (its figures need only times and token counts): use records or summary.",
        )),
        Some(other) => Err(RunError::bad_option(format!(
            "--export-level '{other}' is not summary, records or raw."
        ))),
    }
}

/// AIPerf's prefix: the file name alone (a folder part is dropped, as AIPerf drops it), its
/// known endings taken off.
fn prefix_name(path: &std::path::Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let endings = [".csv", ".json", ".jsonl", "_timeslices", "_raw"];
    endings.iter().fold(name, |n, e| {
        n.strip_suffix(e).map(str::to_string).unwrap_or(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_values_take_aiperfs_spellings() {
        assert_eq!(verbosity("DEBUG").unwrap(), 1);
        assert_eq!(verbosity("trace").unwrap(), 2);
        assert!(verbosity("loud").is_err());
        assert!(one_value(Some("round_robin"), "--url-strategy", &["round-robin"]).is_ok());
        let err = one_value(Some("grpc"), "--transport", &["http"]).unwrap_err();
        assert!(err.to_string().contains("use http"), "{err}");
    }

    #[test]
    fn a_prefix_is_a_file_name_without_its_endings() {
        assert_eq!(
            prefix_name(std::path::Path::new("/tmp/out/run1.json")),
            "run1"
        );
        assert_eq!(prefix_name(std::path::Path::new("bench_raw")), "bench");
        assert!(export_summary_only(Some("summary")).unwrap());
        assert!(export_summary_only(Some("raw")).is_err());
    }
}

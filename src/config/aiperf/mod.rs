//! AIPerf's flags (`cli::AiperfArgs` and AIPerf's names of existing flags) turned into the
//! perf_analyzer settings they mean, before `Config::from_args` reads them: `--concurrency N`
//! is `--concurrency-range N` (or, with a rate, `--max-concurrency N`), `--request-rate R`
//! is `--request-rate-range R` with Poisson gaps, `--endpoint-type` is `--service-kind
//! openai` with its endpoint, `--goodput` limits are `--slo` conditions, `--model NAME` is
//! `-m NAME`. What has no perf_analyzer form (`--benchmark-duration`, the request's path
//! and its max-tokens field) is returned beside the rewritten flags.

mod defaults;
mod detect;
pub(in crate::config) mod headers;
mod runtime;
mod url_path;

use std::time::Duration;

use super::endpoints::Endpoint;
use super::measure::{AiperfMeasure, GoodputLimits};
use crate::cli::{AiperfArgs, ProfileArgs};
use inferperf_wire::error::{RunError, RunResult};

/// A flag and its `--no-` opposite together mean nothing: refused, as AIPerf refuses them.
fn refuse_both_ways(args: &ProfileArgs) -> RunResult<()> {
    let pairs = [
        (
            args.gpu_telemetry.is_some() && args.aiperf.no_gpu_telemetry,
            "--gpu-telemetry and --no-gpu-telemetry",
        ),
        (
            args.server_metrics.is_some() && args.aiperf.no_server_metrics,
            "--server-metrics and --no-server-metrics",
        ),
    ];
    match pairs.iter().find(|(both, _)| *both) {
        Some((_, flags)) => Err(RunError::bad_option(format!(
            "{flags} say opposite things: give one."
        ))),
        None => Ok(()),
    }
}

/// AIPerf's artifact folder when an AIPerf line names none (AIPerf always writes one):
/// `artifacts/<model>-openai-<endpoint type>-<stimulus>`, the stimulus `concurrency<N>`,
/// `request_rate<R>`, `concurrency<N>-request_rate<R>` (a rate with a cap) or
/// `fixed_schedule`.
pub(super) fn default_artifact_dir(config: &mut super::Config) {
    if !config.dialect.is_aiperf() {
        return;
    }
    let load = &config.load;
    let stimulus = match &load.mode {
        super::LoadMode::FixedSchedule => "fixed_schedule".to_string(),
        super::LoadMode::RequestRate { range, .. } => {
            let rate = format!(
                "request_rate{}",
                inferperf_wire::number::python_float(range.start)
            );
            match load.max_concurrency {
                Some(cap) => format!("concurrency{cap}-{rate}"),
                None => rate,
            }
        }
        _ => format!(
            "concurrency{}",
            load.session_concurrency.unwrap_or(load.concurrency.start)
        ),
    };
    let model = config.target.model_name.replace('/', "_");
    let Some(llm) = config.target.llm_mut() else {
        return;
    };
    if llm.artifact_dir.is_none() {
        let name = format!("{model}-openai-{}-{stimulus}", llm.endpoint.kind_name());
        llm.artifact_dir = Some(std::path::Path::new("artifacts").join(name));
    }
}

/// AIPerf's wait for the answers still due when `--benchmark-duration` ends.
const DEFAULT_BENCHMARK_GRACE: Duration = Duration::from_secs(30);

/// How requests to an OpenAI-compatible server are addressed and shaped beyond the
/// endpoint's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenAiWire {
    /// `--custom-endpoint` (or `--endpoint` beside `--endpoint-type`): the path requests go
    /// to, with its leading `/`, instead of the endpoint's.
    pub path: Option<String>,
    /// Send the answer's length as `max_completion_tokens` (AIPerf's chat requests) rather
    /// than `max_tokens` (GenAI-Perf's, completions, `--use-legacy-max-tokens`).
    pub max_completion_tokens: bool,
    /// The `template` type's Jinja body (`--extra-inputs payload_template:...`).
    pub template: Option<String>,
    /// The JMESPath of the answer's data (`--extra-inputs response_field:...`; `None`: found
    /// by its shape).
    pub response_field: Option<String>,
}

/// The flags in perf_analyzer's terms, with what they cannot say.
#[derive(Debug)]
pub(super) struct Lowered {
    pub args: ProfileArgs,
    pub wire: OpenAiWire,
    /// `--goodput`, `--benchmark-duration` and its grace period.
    pub measure: AiperfMeasure,
    /// AIPerf's runtime and output flags without a perf_analyzer form.
    pub runtime: runtime::Runtime,
}

/// Rewrites AIPerf's flags into perf_analyzer's; a combination that means two things is
/// a bad option.
pub(super) fn lower(given: &ProfileArgs) -> RunResult<Lowered> {
    let mut args = given.clone();
    if given.dialect.is_aiperf() {
        defaults::apply(&mut args)?;
    }
    let aiperf = &args.aiperf.clone();
    let runtime = runtime::lower(&mut args)?;
    refuse_both_ways(&args)?;
    refuse_config_file(&args)?;
    lower_model(&mut args)?;
    imply_openai(&mut args, aiperf)?;
    // A perf_analyzer line's -u is host:port, said so by its own sentence.
    let url_path = match given.dialect.is_aiperf() {
        true => url_path::take(&mut args)?,
        false => None,
    };
    let mut wire = lower_endpoint(&mut args, aiperf)?;
    if let Some(prefix) = url_path {
        let Some(endpoint) = args.llm.endpoint.clone() else {
            return Err(RunError::bad_option(format!(
                "--url with a path ({prefix}) is for OpenAI-compatible servers: give host:port alone, or add --endpoint-type."
            )));
        };
        let path = wire
            .path
            .take()
            .unwrap_or_else(|| match Endpoint::from_type_name(&endpoint) {
                Some(kind) => kind.path().to_string(),
                None => endpoint,
            });
        wire.path = Some(url_path::join(&prefix, &path));
    }
    headers::lower(&mut args)?;
    lower_load(&mut args, aiperf)?;
    let goodput = goodput_limits(&aiperf.goodput)?;
    match aiperf.ui_type.as_deref().map(str::trim) {
        None | Some("dashboard" | "simple") => {}
        Some("none") => args.no_progress = true,
        Some(other) => {
            return Err(RunError::bad_option(format!(
                "--ui-type '{other}' is not one of AIPerf's displays: use dashboard, simple or none (inferperf shows its own console report with each)."
            )))
        }
    }
    let benchmark_duration = aiperf
        .benchmark_duration
        .map(benchmark_duration)
        .transpose()?;
    let benchmark_grace = match (&args.aiperf_load.benchmark_grace_period, benchmark_duration) {
        (Some(_), None) => {
            return Err(RunError::bad_option(
                "--benchmark-grace-period is the wait after a --benchmark-duration run's last send: add --benchmark-duration SECONDS, or drop it.",
            ))
        }
        (Some(text), Some(_)) => super::load::warm_up::grace_period(text, "--benchmark-grace-period")?,
        (None, _) => Some(DEFAULT_BENCHMARK_GRACE),
    };
    Ok(Lowered {
        args,
        wire,
        measure: AiperfMeasure {
            goodput,
            benchmark_duration,
            benchmark_grace,
        },
        runtime,
    })
}

/// `-f` is perf_analyzer's CSV report, written over the path; AIPerf's `-f` reads a YAML
/// config. A YAML path is most likely the latter, and writing a CSV over it would lose it.
fn refuse_config_file(args: &ProfileArgs) -> RunResult<()> {
    let Some(path) = &args.csv_file else {
        return Ok(());
    };
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    if ["yaml", "yml"].contains(&extension.to_ascii_lowercase().as_str()) {
        return Err(RunError::bad_option(format!(
            "-f {}: -f is perf_analyzer's CSV report file, written over that path, and this looks like AIPerf's -f/--config YAML file, which inferperf does not read: give a .csv path.",
            path.display()
        )));
    }
    Ok(())
}

/// `--model NAME` (no `=`) is AIPerf's model name, as `-m NAME`; `--model NAME=KIND` stays a
/// built-in model of `--service-kind local`.
fn lower_model(args: &mut ProfileArgs) -> RunResult<()> {
    let (defs, names): (Vec<String>, Vec<String>) = args
        .local_models
        .iter()
        .cloned()
        .partition(|m| m.contains('='));
    args.local_models = defs;
    let one_model = |given: &str| {
        RunError::bad_option(format!(
            "--model {given}: inferperf profiles one model per run; give one name (AIPerf's list of models is not supported yet)."
        ))
    };
    if names.len() > 1 {
        return Err(one_model(&names.join(" --model ")));
    }
    if let Some(name) = names.into_iter().next() {
        let name = name.trim().to_string();
        let current = args.model_name.trim();
        if !current.is_empty() && current != name {
            return Err(RunError::bad_option(format!(
                "-m {current} and --model {name} name two models: give one."
            )));
        }
        args.model_name = name;
    }
    if args.model_name.contains(',') {
        return Err(one_model(&args.model_name));
    }
    Ok(())
}

/// `--endpoint-type` and `--custom-endpoint` mean an OpenAI-compatible server.
fn imply_openai(args: &mut ProfileArgs, aiperf: &AiperfArgs) -> RunResult<()> {
    let flag = match (&aiperf.endpoint_type, &aiperf.custom_endpoint) {
        (Some(_), _) => "--endpoint-type",
        (None, Some(_)) => "--custom-endpoint",
        (None, None) => return Ok(()),
    };
    match args.service_kind.as_deref().map(str::trim) {
        None => args.service_kind = Some("openai".into()),
        Some("openai") => {}
        Some(kind) => {
            return Err(RunError::bad_option(format!(
                "{flag} is for OpenAI-compatible servers, not --service-kind {kind}: drop --service-kind (AIPerf's {flag} implies openai) or {flag}."
            )))
        }
    }
    Ok(())
}

/// The endpoint and path of AIPerf's flags: `--endpoint-type T` picks the API and with it
/// `--endpoint` (AIPerf's alias) or `--custom-endpoint` is only the path.
fn lower_endpoint(args: &mut ProfileArgs, aiperf: &AiperfArgs) -> RunResult<OpenAiWire> {
    let mut path = aiperf.custom_endpoint.clone();
    let chat = match &aiperf.endpoint_type {
        Some(kind) => {
            let api = Endpoint::from_type_name(kind)
                .ok_or_else(|| RunError::bad_option(super::endpoints::unknown_type(kind)))?;
            if let Some(endpoint) = args.llm.endpoint.take() {
                if path.is_some() {
                    return Err(RunError::bad_option(
                        "--endpoint and --custom-endpoint both give the request path: give one.",
                    ));
                }
                path = Some(endpoint);
            }
            args.llm.endpoint = Some(api.kind_name().to_string());
            api == Endpoint::Chat
        }
        // AIPerf's default type is chat; GenAI-Perf's --endpoint, if given, names the API.
        None if path.is_some() && args.llm.endpoint.is_none() => {
            args.llm.endpoint = Some("v1/chat/completions".into());
            true
        }
        None => false,
    };
    Ok(OpenAiWire {
        path: path.map(|p| request_path(&p)).transpose()?,
        max_completion_tokens: chat && !aiperf.use_legacy_max_tokens,
        ..OpenAiWire::default()
    })
}

/// A request path: `/` first, printable ASCII without spaces.
fn request_path(text: &str) -> RunResult<String> {
    let trimmed = text.trim();
    let path = format!("/{}", trimmed.trim_start_matches('/'));
    let printable = path.bytes().all(|b| b.is_ascii_graphic());
    if trimmed.is_empty() || path == "/" || !printable {
        return Err(RunError::bad_option(format!(
            "--custom-endpoint '{text}' is not a request path: give one such as /v1/chat/completions (printable characters, no spaces)."
        )));
    }
    Ok(path)
}

/// `--concurrency N` and `--request-rate R` as perf_analyzer's range flags.
fn lower_load(args: &mut ProfileArgs, aiperf: &AiperfArgs) -> RunResult<()> {
    if let Some(rate) = aiperf.request_rate {
        if args.concurrency_range.is_some() {
            return Err(RunError::bad_option(
                "Cannot use both --concurrency-range and --request-rate inference load modes: choose one (AIPerf's --concurrency beside --request-rate caps the requests in flight).",
            ));
        }
        if args.request_rate_range.is_some() {
            return Err(RunError::bad_option(
                "--request-rate and --request-rate-range both set the request rate: give one.",
            ));
        }
        super::bounds::rate(rate, "--request-rate")?;
        args.request_rate_range = Some(rate.to_string());
        // AIPerf's arrival pattern is Poisson unless told otherwise.
        let pattern = aiperf.arrival_pattern.is_some() || aiperf.arrival_smoothness.is_some();
        if args.request_distribution.is_none() && !pattern {
            args.request_distribution = Some("poisson".into());
        }
    }
    let Some(n) = aiperf.concurrency else {
        return Ok(());
    };
    if n == 0 {
        return Err(RunError::bad_option(
            "--concurrency 0 keeps no request in flight: give 1 or more.",
        ));
    }
    let open_loop = args.request_rate_range.is_some()
        || args.request_intervals.is_some()
        || args.fixed_schedule;
    if open_loop {
        // As in AIPerf, a concurrency beside a rate caps the requests in flight.
        if args.max_concurrency.is_some() {
            return Err(RunError::bad_option(
                "--concurrency beside a request rate caps the requests in flight, as --max-concurrency does: give one.",
            ));
        }
        args.max_concurrency = Some(n);
        return Ok(());
    }
    let old = args.old_concurrency.is_some()
        || args.old_max_concurrency.is_some()
        || args.old_dynamic_concurrency;
    if args.concurrency_range.is_some() || old {
        return Err(RunError::bad_option(
            "--concurrency and --concurrency-range (or -t/-c/-d) both set the concurrency: give one.",
        ));
    }
    args.concurrency_range = Some(n.to_string());
    Ok(())
}

/// `--benchmark-duration SECONDS`: above 0, at most a day.
fn benchmark_duration(seconds: f64) -> RunResult<Duration> {
    super::bounds::seconds_flag(
        "--benchmark-duration",
        seconds,
        super::bounds::MIN_TIMEOUT_S,
    )
}

/// AIPerf's `--goodput 'METRIC:VALUE ...'` (values in ms): the strictest limit of each
/// figure.
fn goodput_limits(values: &[String]) -> RunResult<GoodputLimits> {
    let mut limits = GoodputLimits::default();
    for pair in values.iter().flat_map(|v| v.split_whitespace()) {
        let bad = || {
            RunError::bad_option(format!(
                "--goodput '{pair}' is not METRIC:VALUE with VALUE a number of ms above 0 (e.g. --goodput 'time_to_first_token:100 inter_token_latency:10')."
            ))
        };
        let (metric, value) = pair.split_once(':').ok_or_else(bad)?;
        let value: f64 = value.trim().parse().map_err(|_| bad())?;
        let (least, most) = (
            super::bounds::MIN_LATENCY_LIMIT_US / 1e3,
            super::bounds::MAX_LATENCY_LIMIT_US / 1e3,
        );
        let what = format!("--goodput '{pair}': the limit");
        let value = inferperf_wire::number::within(&what, value, least, most, "ms")?;
        let slot = match metric.trim() {
            "time_to_first_token" => &mut limits.ttft_ms,
            "inter_token_latency" => &mut limits.itl_ms,
            "request_latency" => &mut limits.latency_ms,
            other => {
                return Err(RunError::bad_option(format!(
                    "--goodput '{pair}': {other} is an AIPerf metric inferperf's goodput does not limit yet; use time_to_first_token, inter_token_latency or request_latency (in ms)."
                )))
            }
        };
        *slot = Some(slot.map_or(value, |old: f64| old.min(value)));
        limits.given.push(pair.to_string());
    }
    Ok(limits)
}

/// The AIPerf flags that only an OpenAI-compatible server takes, refused elsewhere.
pub(super) fn refuse_without_openai(aiperf: &AiperfArgs) -> RunResult<()> {
    if aiperf.use_legacy_max_tokens {
        return Err(RunError::bad_option(
            "--use-legacy-max-tokens applies to OpenAI-compatible servers: add --endpoint-type chat (or --service-kind openai).",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

//! The metrics flags: `--collect-metrics`, `--metrics-url`, `--metrics-interval` as
//! perf_analyzer has them, and `--metric NAME[{labels}][:avg|max|rate]` for any series a
//! server exposes.

use std::str::FromStr;
use std::time::Duration;

use super::ServiceKind;
use crate::cli::ProfileArgs;
use crate::prometheus::parse_labels;
use inferperf_wire::error::{RunError, RunResult};

/// How a metric's scrapes within a window become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricAggregation {
    Avg,
    Max,
    /// The first value seen (perf_analyzer's total GPU memory).
    First,
    /// Increase per second of a counter.
    Rate,
}

impl MetricAggregation {
    pub fn label(self) -> &'static str {
        match self {
            MetricAggregation::Avg => "avg",
            MetricAggregation::Max => "max",
            MetricAggregation::First => "first",
            MetricAggregation::Rate => "rate",
        }
    }
}

/// The LLM serving engines whose metric names `--server-metrics` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Vllm,
    Sglang,
    Tgi,
    LlamaCpp,
    Triton,
    TrtLlm,
}

impl Engine {
    pub const ALL: [Engine; 6] = [
        Engine::Vllm,
        Engine::Sglang,
        Engine::Tgi,
        Engine::LlamaCpp,
        Engine::Triton,
        Engine::TrtLlm,
    ];

    /// The preset's name (`--server-metrics-preset`).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Tgi => "tgi",
            Engine::LlamaCpp => "llamacpp",
            Engine::Triton => "triton",
            Engine::TrtLlm => "trtllm",
        }
    }

    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One `--metric`: a series name, optional label values it must have, and an aggregation.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpec {
    /// The flag's text, which names the metric in reports.
    pub text: String,
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub how: MetricAggregation,
}

impl FromStr for MetricSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<MetricSpec, String> {
        let text = text.trim();
        let name_end = text.find(['{', ':']).unwrap_or(text.len());
        let name = &text[..name_end];
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("'{name}' is not a metric name"));
        }
        let mut rest = &text[name_end..];
        let mut labels = Vec::new();
        if let Some(after) = rest.strip_prefix('{') {
            let (parsed, tail) = parse_labels(after)?;
            labels = parsed;
            rest = tail;
        }
        let how = match rest {
            "" | ":avg" => MetricAggregation::Avg,
            ":max" => MetricAggregation::Max,
            ":rate" => MetricAggregation::Rate,
            other => return Err(format!("'{other}' is not :avg, :max or :rate")),
        };
        Ok(MetricSpec {
            text: text.to_string(),
            name: name.to_string(),
            labels,
            how,
        })
    }
}

/// Where and how often to scrape, and what to report.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsConfig {
    /// `http://host:port/path` or `https://host:port/path`.
    pub url: String,
    /// The other pages of `--server-metrics URL URL...` (an engine's replicas), read with
    /// `url` at each scrape, their series added to its.
    pub more_urls: Vec<String>,
    /// For an `https://` URL: the run's TLS settings (its CA, client identity and
    /// verification), or the system's roots when the run itself is plain. Set by
    /// `Config::from_args`.
    pub tls: Option<super::TlsSettings>,
    pub interval: Duration,
    /// `--collect-metrics`: perf_analyzer's GPU metrics and the server's CPU and memory.
    pub standard: bool,
    pub specs: Vec<MetricSpec>,
    /// `--server-metrics`: the serving engine's series, of the engine named (`Some`) or
    /// recognised from the page (`None`).
    pub engine: Option<Option<Engine>>,
    /// `--gpu-telemetry URL`: the page is a DCGM exporter's, its GPU series kept.
    pub dcgm: bool,
}

/// Where `--gpu-telemetry` reads the GPUs.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuTelemetry {
    /// A DCGM exporter's Prometheus page.
    Dcgm(MetricsConfig),
    /// The NVIDIA driver's NVML library on this machine, read every `interval`.
    Nvml { interval: Duration },
}

/// The DCGM exporter's own default page.
const DCGM_DEFAULT_URL: &str = "http://localhost:9400/metrics";

/// `--gpu-telemetry [URL|nvml]`, read every `--metrics-interval`.
pub fn parse_gpu_telemetry(args: &ProfileArgs) -> RunResult<Option<GpuTelemetry>> {
    let Some(items) = &args.gpu_telemetry else {
        return Ok(None);
    };
    let given = one_gpu_source(items)?;
    let given = given.as_str();
    if args.metrics_interval == 0 {
        return Err(RunError::bad_option(
            "--metrics-interval must be a positive number of milliseconds.",
        ));
    }
    let interval = Duration::from_millis(args.metrics_interval);
    if matches!(given, "nvml" | "pynvml") {
        return Ok(Some(GpuTelemetry::Nvml { interval }));
    }
    let page = match given {
        "" | "dashboard" => DCGM_DEFAULT_URL.to_string(),
        url => url.to_string(),
    };
    let with_page = ProfileArgs {
        metrics_url: Some(page),
        ..args.clone()
    };
    let url = metrics_url(&with_page, 9400).map_err(|_| {
        RunError::bad_option(format!(
            "--gpu-telemetry '{given}' is neither a URL (e.g. localhost:9400/metrics, a DCGM exporter) nor nvml."
        ))
    })?;
    Ok(Some(GpuTelemetry::Dcgm(MetricsConfig {
        more_urls: Vec::new(),
        url,
        tls: None,
        interval,
        standard: false,
        specs: Vec::new(),
        engine: None,
        dcgm: true,
    })))
}

/// The one source of `--gpu-telemetry`'s items (space- or comma-separated, as AIPerf takes
/// them): a DCGM page, `nvml`/`pynvml`, or nothing for the default page; AIPerf's
/// `dashboard` (its live view's telemetry) adds nothing here.
fn one_gpu_source(items: &[String]) -> RunResult<String> {
    let mut sources: Vec<&str> = items
        .iter()
        .flat_map(|item| item.split(','))
        .map(str::trim)
        .filter(|item| !item.is_empty() && *item != "dashboard")
        .collect();
    sources.dedup();
    if let Some(amd) = sources.iter().find(|s| s.eq_ignore_ascii_case("amdsmi")) {
        return Err(RunError::bad_option(format!(
            "--gpu-telemetry {amd} reads AMD GPUs through AMD SMI, which inferperf does not read: give a DCGM exporter's URL or nvml."
        )));
    }
    match sources.as_slice() {
        [] => Ok(String::new()),
        [one] => Ok(one.to_string()),
        [first, second, ..] => Err(RunError::bad_option(format!(
            "--gpu-telemetry gives several sources ({first}, {second}, ...): inferperf reads one DCGM page or nvml per run; give one."
        ))),
    }
}

/// The metrics configuration, when `--collect-metrics` or a `--metric` asks for scraping.
pub fn parse_metrics(args: &ProfileArgs, kind: ServiceKind) -> RunResult<Option<MetricsConfig>> {
    let specs = args
        .metrics
        .iter()
        .map(|m| {
            m.parse::<MetricSpec>().map_err(|why| {
                RunError::bad_option(format!(
                    "--metric '{m}': {why}; write NAME[{{label=\"value\"}}][:avg|max|rate]."
                ))
            })
        })
        .collect::<RunResult<Vec<_>>>()?;
    let engine = engine_preset(args)?;
    let scraping = args.collect_metrics || !specs.is_empty() || engine.is_some();
    if !scraping {
        // TorchServe's server-side breakdown is read from its metrics page, which
        // --metrics-url names without any scraping asked for.
        if args.metrics_url.is_some() && kind != ServiceKind::TorchServe {
            return Err(RunError::bad_option(
                "--metrics-url needs --collect-metrics (or a --metric) to scrape it.",
            ));
        }
        return Ok(None);
    }
    if args.metrics_interval == 0 {
        return Err(RunError::bad_option(
            "--metrics-interval must be a positive number of milliseconds.",
        ));
    }
    let (url, more_urls) = page_urls(args, kind)?;
    Ok(Some(MetricsConfig {
        url,
        more_urls,
        tls: None,
        interval: Duration::from_millis(args.metrics_interval),
        standard: args.collect_metrics,
        specs,
        engine,
        dcgm: false,
    }))
}

/// `--server-metrics` and `--server-metrics-preset`: whether the engine's series are read,
/// and of which engine.
fn engine_preset(args: &ProfileArgs) -> RunResult<Option<Option<Engine>>> {
    let preset = match args.server_metrics_preset.as_deref() {
        None => None,
        Some(name) => Some(Engine::from_name(name.trim()).ok_or_else(|| {
            RunError::bad_option(format!(
                "--server-metrics-preset '{name}' is not an engine inferperf knows: use vllm, sglang, tgi, llamacpp, triton or trtllm."
            ))
        })?),
    };
    Ok((args.server_metrics.is_some() || preset.is_some()).then_some(preset))
}

/// The pages scraped: `--server-metrics URL...` or `--metrics-url`; for an OpenAI-compatible
/// server read with `--server-metrics` alone, /metrics on its `-u` port, as AIPerf reads it.
/// The first page, and the others of `--server-metrics` (their series added to its).
fn page_urls(args: &ProfileArgs, kind: ServiceKind) -> RunResult<(String, Vec<String>)> {
    let given: Vec<&str> = (args.server_metrics.iter().flatten())
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    let page = |url: &str| {
        let with_url = ProfileArgs {
            metrics_url: Some(url.to_string()),
            ..args.clone()
        };
        metrics_url(&with_url, default_metrics_port(kind))
    };
    match (given.split_first(), args.metrics_url.as_deref()) {
        (Some((first, _)), Some(m)) if *first != m.trim() => Err(RunError::bad_option(
            "--server-metrics and --metrics-url name different pages: give the pages to --server-metrics alone.",
        )),
        (Some((first, rest)), _) => {
            let more = rest.iter().map(|url| page(url)).collect::<RunResult<_>>()?;
            Ok((page(first)?, more))
        }
        (None, None) if args.server_metrics.is_some() && kind == ServiceKind::OpenAi => {
            let url = args.first_url().unwrap_or("localhost:8000").trim();
            let base = url.trim_end_matches('/');
            Ok((page(&format!("{base}/metrics"))?, Vec::new()))
        }
        _ => Ok((metrics_url(args, default_metrics_port(kind))?, Vec::new())),
    }
}

/// The metrics port of the server kind: TorchServe's 8082, else Triton's 8002.
fn default_metrics_port(kind: ServiceKind) -> u16 {
    match kind {
        ServiceKind::TorchServe => 8082,
        _ => 8002,
    }
}

/// `--metrics-url` as `http[s]://host:port/path`, or port `default_port` on the host of `-u`.
pub(super) fn metrics_url(args: &ProfileArgs, default_port: u16) -> RunResult<String> {
    let Some(given) = args.metrics_url.as_deref().map(str::trim) else {
        let url = args.first_url().unwrap_or("localhost:8000");
        let authority = url.split("://").last().unwrap_or(url);
        let host = authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host);
        return Ok(format!("http://{host}:{default_port}/metrics"));
    };
    let with_scheme = match given.starts_with("http://") || given.starts_with("https://") {
        true => given.to_string(),
        false => format!("http://{given}"),
    };
    let valid = with_scheme
        .parse::<hyper::Uri>()
        .is_ok_and(|u| u.host().is_some());
    if !valid {
        return Err(RunError::bad_option(format!(
            "--metrics-url '{given}' is not a URL (e.g. localhost:8002/metrics)."
        )));
    }
    Ok(with_scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_specs_parse() {
        let s: MetricSpec = "nv_inference_count{model=\"a,b\"}:rate".parse().unwrap();
        assert_eq!(s.name, "nv_inference_count");
        assert_eq!(s.labels, vec![("model".to_string(), "a,b".to_string())]);
        assert_eq!(s.how, MetricAggregation::Rate);
        assert_eq!(
            "x".parse::<MetricSpec>().unwrap().how,
            MetricAggregation::Avg
        );
        assert_eq!(
            "x:max".parse::<MetricSpec>().unwrap().how,
            MetricAggregation::Max
        );
        assert!("x:median"
            .parse::<MetricSpec>()
            .unwrap_err()
            .contains(":median"));
        assert!("9x".parse::<MetricSpec>().is_err());
        assert!("x{a=1}".parse::<MetricSpec>().is_err());
    }
}

//! The settings block of the results file: every flag that shapes what was measured, taken
//! from the validated configuration so that a reader sees what the run did, not what was
//! typed. Nothing secret goes in: `-H` headers by name only, no user or password of a URL.

use std::path::Path;

use crate::config::shard::ShardPlan;
use crate::config::shm::SharedMemory;
use crate::config::{
    ApiSettings, DataConfig, GpuTelemetry, InputData, LoadConfig, LoadMode, MeasureConfig,
    MeasurementMode, MetricsConfig, OpenAiConfig, OutputConfig, PromptSource, Protocol,
    TargetConfig, TensorFormat, TimelineKind, TlsSettings,
};
use crate::results::schema::*;

/// The settings of a run, from the sections of its configuration and its command line:
/// each section's part in one block (the file's field order is the schema's, not this one).
pub fn settings(
    target: &TargetConfig,
    data: &DataConfig,
    load: &LoadConfig,
    measure: &MeasureConfig,
    output: &OutputConfig,
    arguments: &[String],
) -> Settings {
    Settings {
        // The target section.
        model_name: target.model_name.clone(),
        model_version: target.model_version.clone(),
        url: without_userinfo(&target.url),
        urls: match target.urls.len() {
            1 => Vec::new(),
            _ => target.urls.iter().map(|u| without_userinfo(u)).collect(),
        },
        service_kind: target.service_kind().capabilities().name.to_string(),
        protocol: protocol_name(target.protocol).to_string(),
        local_models: (target.local_models().iter())
            .map(ToString::to_string)
            .collect(),
        input_tensor_format: target.input_format.map(format_name),
        output_tensor_format: target.output_format.map(format_name),
        header_names: target
            .headers
            .iter()
            .map(|(name, _)| name.clone())
            .collect(),
        streaming: target.streaming,
        validation_tolerance: target.validation_tolerance,
        request_timeout_s: target.request_timeout.as_secs_f64(),
        grpc_connection_share: target.grpc_connection_share,
        llm: target.llm().map(llm),
        shared_memory: Some(shared_memory_name(target.shm().mode).to_string()),
        output_shared_memory_size: Some(target.shm().output_size),
        tls: target.tls.as_ref().map(tls_record),
        grpc_method: match &target.api {
            ApiSettings::DynamicGrpc(grpc) => Some(grpc.method.clone()),
            _ => None,
        },
        server_in_process: target.server_in_process,
        request_cancellation: target.cancellation.map(|c| CancellationRecord {
            rate_percent: c.percent,
            delay_s: c.delay.as_secs_f64(),
        }),
        // The data section.
        batch_size: data.batch_size,
        input_data: input_data(&data.input_data),
        shapes: data.shapes.clone(),
        string_length: data.string_length,
        string_data: data.string_data.clone(),
        input_datatypes: (data.input_datatypes.iter())
            .map(|(name, t)| (name.clone(), t.as_str().to_string()))
            .collect(),
        // The load section.
        load: load_record(load),
        max_concurrency: load.max_concurrency,
        seed: load.seed,
        binary_search: load.binary_search,
        request_count: load.request_count,
        warmup_request_count: load.warmup_request_count,
        client_threads: load.client_threads,
        send_slack_us: load.send_slack.as_micros() as u64,
        shard: load.shard.as_ref().map(shard_record),
        // The measure section.
        measurement_mode: measurement_mode_name(measure.measurement_mode).to_string(),
        measurement_interval_ms: measure.measurement_interval.as_millis() as u64,
        measurement_request_count: measure.measurement_request_count,
        stability_percentage: measure.stability_percentage,
        max_trials: measure.max_trials,
        percentile: measure.percentile,
        latency_threshold_ms: measure.latency_threshold_ms,
        slo: measure.slo.iter().map(ToString::to_string).collect(),
        goodput: measure.goodput.given.clone(),
        metrics: measure.metrics.as_ref().map(metrics),
        gpu_telemetry: measure.gpu_telemetry.as_ref().map(|g| match g {
            GpuTelemetry::Dcgm(m) => without_userinfo(&m.url),
            GpuTelemetry::Nvml { .. } => "nvml".to_string(),
        }),
        reported_percentiles: measure.reported_percentiles(),
        benchmark_duration_ms: measure.benchmark_duration.map(|d| d.as_millis() as u64),
        // The output section, and the command line as given.
        csv_files: output.csv_paths().iter().map(|p| display(p)).collect(),
        outputs: outputs_record(output),
        arguments: arguments.to_vec(),
        command_line: None,
    }
}

/// The record of whose command line a run's was.
pub fn command_line_record(dialect: &crate::cli::Dialect) -> CommandLineRecord {
    match dialect {
        crate::cli::Dialect::Aiperf { because } => CommandLineRecord {
            tool: "aiperf".into(),
            because: Some(because.clone()),
        },
        crate::cli::Dialect::PerfAnalyzer => CommandLineRecord {
            tool: "perf_analyzer".into(),
            because: None,
        },
    }
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Http => "http",
        Protocol::Grpc => "grpc",
    }
}

fn shared_memory_name(mode: SharedMemory) -> &'static str {
    match mode {
        SharedMemory::None => "none",
        SharedMemory::System => "system",
    }
}

fn measurement_mode_name(mode: MeasurementMode) -> &'static str {
    match mode {
        MeasurementMode::TimeWindows => "time_windows",
        MeasurementMode::CountWindows => "count_windows",
    }
}

/// TLS to the server, its files by path only.
fn tls_record(t: &TlsSettings) -> TlsRecord {
    TlsRecord {
        ca_file: t.ca_file.as_deref().map(display),
        client_certificate_file: t.client_cert.as_ref().map(|f| display(&f.path)),
        verify_peer: t.verify_peer,
        verify_host: t.verify_host,
        target_name: t.target_name.clone(),
    }
}

fn shard_record(s: &ShardPlan) -> ShardRecord {
    ShardRecord {
        index: s.index,
        count: s.count,
        source: s.source.label().to_string(),
        start_at: s.start_at.map(crate::results::rfc3339),
    }
}

fn outputs_record(output: &OutputConfig) -> OutputsRecord {
    OutputsRecord {
        verbose: output.verbose,
        verbose_csv: output.verbose_csv,
        report_dir: output.report_dir.as_deref().map(display),
        results_file: output.results_file.as_deref().map(display),
        per_url_csv: output.per_url_csv.as_deref().map(display),
        profile_export_file: output.profile_export_file.as_deref().map(display),
        aiperf_export_prefix: output.aiperf_export_prefix.clone(),
        summary_only: output.summary_only,
    }
}

fn load_record(load: &LoadConfig) -> LoadSettings {
    match &load.mode {
        LoadMode::Concurrency => LoadSettings::Concurrency {
            start: load.concurrency.start,
            end: load.concurrency.end,
            step: load.concurrency.step,
        },
        LoadMode::RequestRate {
            range,
            distribution,
        } => LoadSettings::RequestRate {
            start: range.start,
            end: range.end,
            step: range.step,
            distribution: distribution.name().to_string(),
            arrival_smoothness: distribution.smoothness(),
        },
        LoadMode::Intervals { gaps } => {
            let total: f64 = gaps.iter().map(|g| g.as_secs_f64()).sum();
            LoadSettings::Intervals {
                count: gaps.len(),
                rate: if total > 0.0 {
                    gaps.len() as f64 / total
                } else {
                    0.0
                },
            }
        }
        LoadMode::FixedSchedule => LoadSettings::FixedSchedule,
        LoadMode::Periodic(p) => LoadSettings::Periodic {
            start: p.start,
            end: p.end,
            step: p.step,
            request_period: p.period,
        },
        LoadMode::Timeline { plan, distribution } => LoadSettings::Timeline {
            kind: timeline_kind(plan.kind).to_string(),
            distribution: distribution.name().to_string(),
            arrival_smoothness: distribution.smoothness(),
            segments: plan
                .segments
                .iter()
                .map(|s| SegmentRecord {
                    from: s.from,
                    to: s.to,
                    duration_s: s.secs(),
                })
                .collect(),
        },
    }
}

/// `rate` or `concurrency`.
pub fn timeline_kind(kind: TimelineKind) -> &'static str {
    match kind {
        TimelineKind::Rate => "rate",
        TimelineKind::Concurrency => "concurrency",
    }
}

fn input_data(data: &InputData) -> InputDataSettings {
    let (kind, paths) = match data {
        InputData::Random => ("random", Vec::new()),
        InputData::Zero => ("zero", Vec::new()),
        InputData::Json(files) => ("json", files.iter().map(|p| display(p)).collect()),
        InputData::Directory(dir) => ("directory", vec![display(dir)]),
    };
    InputDataSettings {
        kind: kind.to_string(),
        paths,
    }
}

fn format_name(format: TensorFormat) -> String {
    match format {
        TensorFormat::Binary => "binary",
        TensorFormat::Json => "json",
    }
    .to_string()
}

fn metrics(m: &MetricsConfig) -> MetricsSettings {
    MetricsSettings {
        url: without_userinfo(&m.url),
        more_urls: m.more_urls.iter().map(|u| without_userinfo(u)).collect(),
        interval_ms: m.interval.as_millis() as u64,
        standard: m.standard,
        metrics: m.specs.iter().map(|s| s.text.clone()).collect(),
    }
}

fn llm(l: &OpenAiConfig) -> LlmSettings {
    LlmSettings {
        endpoint: l.endpoint.path().to_string(),
        input_tokens_mean: l.input_tokens_mean,
        input_tokens_stddev: l.input_tokens_stddev,
        output_tokens_mean: l.output_tokens_mean,
        output_tokens_stddev: l.output_tokens_stddev,
        output_tokens_deterministic: l.output_deterministic,
        extra_inputs: l
            .extra_inputs
            .iter()
            .map(|(key, value)| format!("{key}:{value}"))
            .collect(),
        prompt_source: match &l.prompt_source {
            PromptSource::Synthetic => "synthetic".to_string(),
            PromptSource::File(path) => display(path),
        },
        num_prompts: l.num_prompts,
        artifact_dir: l.artifact_dir.as_deref().map(display),
        tokenizer: l.tokenizer.clone(),
        endpoint_type: endpoint_type(l.endpoint),
    }
}

/// The endpoint type's name when its path does not name it (see
/// [`RecordedSettings::llm_endpoint`](super::recorded)).
fn endpoint_type(endpoint: crate::config::Endpoint) -> Option<String> {
    let by_path = crate::config::Endpoint::ALL
        .into_iter()
        .find(|e| e.path() == endpoint.path());
    (by_path != Some(endpoint)).then(|| endpoint.kind_name().to_string())
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// A URL or `host:port` without a `user:password@` part.
pub fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_loses_its_credentials_only() {
        assert_eq!(without_userinfo("localhost:8000"), "localhost:8000");
        assert_eq!(without_userinfo("me:secret@host:8000"), "host:8000");
        assert_eq!(
            without_userinfo("http://u:p@host:8002/metrics?a=b@c"),
            "http://host:8002/metrics?a=b@c"
        );
        assert_eq!(
            without_userinfo("http://host:8002/metrics"),
            "http://host:8002/metrics"
        );
    }
}

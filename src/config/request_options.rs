//! The checks of perf_analyzer's remaining options (`cli::request_options`): what each means in
//! inferperf, and the one sentence for a value or combination that cannot work.

use super::{Config, Protocol, ServerStatistics, ServiceKind};
use crate::cli::RequestOptionArgs;
use inferperf_wire::error::{RunError, RunResult};

/// `--max-threads N` caps the client threads: min(`--client-threads`, N).
pub(super) fn cap_client_threads(threads: usize, args: &RequestOptionArgs) -> RunResult<usize> {
    match args.max_threads {
        None => Ok(threads),
        Some(0) => Err(RunError::bad_option(
            "--max-threads must be at least 1 (it caps the client threads).",
        )),
        Some(most) => Ok(threads.min(most)),
    }
}

/// A `--request-parameter`'s value, typed as its TYPE says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParameterValue {
    Int(i64),
    Bool(bool),
    String(String),
}

/// One `--request-parameter NAME:VALUE:TYPE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestParameter {
    pub name: String,
    pub value: ParameterValue,
}

/// The `--request-parameter` list in order of first appearance, a repeated name keeping
/// its last value (as perf_analyzer's map of them).
pub(super) fn parse_request_parameters(list: &[String]) -> RunResult<Vec<RequestParameter>> {
    let mut parsed: Vec<RequestParameter> = Vec::new();
    for text in list {
        let parameter = parse_request_parameter(text)?;
        match parsed.iter_mut().find(|p| p.name == parameter.name) {
            Some(earlier) => *earlier = parameter,
            None => parsed.push(parameter),
        }
    }
    Ok(parsed)
}

fn parse_request_parameter(text: &str) -> RunResult<RequestParameter> {
    let malformed = |why: &str| {
        RunError::bad_option(format!(
            "--request-parameter '{text}' {why}: give NAME:VALUE:TYPE with TYPE int, bool or string (e.g. max_tokens:256:int)."
        ))
    };
    let (name, rest) = text
        .split_once(':')
        .ok_or_else(|| malformed("has no VALUE"))?;
    let (value, kind) = rest
        .rsplit_once(':')
        .ok_or_else(|| malformed("has no TYPE"))?;
    if name.trim().is_empty() {
        return Err(malformed("has an empty NAME"));
    }
    let value = match kind.trim().to_ascii_lowercase().as_str() {
        "int" => ParameterValue::Int(
            value
                .trim()
                .parse()
                .map_err(|_| malformed("has a VALUE that is not a whole number"))?,
        ),
        "bool" => ParameterValue::Bool(
            parse_bool(value).ok_or_else(|| malformed("has a VALUE that is not true or false"))?,
        ),
        "string" => ParameterValue::String(value.to_string()),
        _ => return Err(malformed("has an unknown TYPE")),
    };
    Ok(RequestParameter {
        name: name.trim().to_string(),
        value,
    })
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

impl Config {
    /// Request parameters travel in KServe v2 requests only.
    pub(super) fn check_request_parameters(&self) -> RunResult<()> {
        let kind = self.target.service_kind();
        if !self.target.request_parameters().is_empty() && !kind.capabilities().request_parameters {
            return Err(RunError::bad_option(format!(
                "--request-parameter is sent as KServe v2 request parameters, which --service-kind {} does not take: drop it.",
                self.target.service_kind().label().to_ascii_lowercase()
            )));
        }
        Ok(())
    }

    /// Dynamic gRPC sends what `message_generator` entries print, so it needs a JSON
    /// input-data file and has no tensors to stream or sequence.
    pub(super) fn check_dynamic_grpc(&self) -> RunResult<()> {
        if self.target.service_kind() != ServiceKind::DynamicGrpc {
            return Ok(());
        }
        if !matches!(self.data.input_data, super::InputData::Json(_)) {
            return Err(RunError::bad_option(
                "--service-kind dynamic_grpc sends the messages that the message_generator commands of --input-data FILE.json print: give such a file.",
            ));
        }
        if self.target.streaming {
            return Err(RunError::bad_option(
                "--streaming is KServe's ModelStreamInfer; --service-kind dynamic_grpc makes one call of --grpc-method per request: drop --streaming.",
            ));
        }
        Ok(())
    }
}

pub use inferperf_wire::grpc_frames::GrpcCompression;

/// `--grpc-compression-algorithm none|gzip|deflate`; gRPC only, as in perf_analyzer.
pub(super) fn parse_grpc_compression(
    args: &RequestOptionArgs,
    protocol: Protocol,
    kind: ServiceKind,
) -> RunResult<Option<GrpcCompression>> {
    let Some(text) = args.grpc_compression_algorithm.as_deref() else {
        return Ok(None);
    };
    let algorithm = match text.trim().to_ascii_lowercase().as_str() {
        "none" => return Ok(None),
        "gzip" => GrpcCompression::Gzip,
        "deflate" => GrpcCompression::Deflate,
        _ => {
            return Err(RunError::bad_option(format!(
                "--grpc-compression-algorithm '{text}' is not one of none, gzip or deflate."
            )))
        }
    };
    if protocol != Protocol::Grpc {
        return Err(RunError::bad_option(
            "--grpc-compression-algorithm compresses gRPC messages: add -i grpc or drop it.",
        ));
    }
    if !kind.capabilities().grpc_compression {
        return Err(RunError::bad_option(
            "--grpc-compression-algorithm applies to --service-kind triton or tfserving over gRPC.",
        ));
    }
    Ok(Some(algorithm))
}

/// The trace settings to set for the run (`--trace-level`, `--trace-rate`, `--trace-count`,
/// `--log-frequency`), as the trace extension names them; empty when none is asked.
pub(super) fn parse_trace_settings(
    args: &RequestOptionArgs,
    protocol: Protocol,
    kind: ServiceKind,
) -> RunResult<serde_json::Map<String, serde_json::Value>> {
    use serde_json::Value;
    let mut settings = serde_json::Map::new();
    if !args.trace_levels.is_empty() {
        let mut levels = Vec::new();
        for level in &args.trace_levels {
            let level = level.trim().to_ascii_uppercase();
            if !matches!(level.as_str(), "OFF" | "TIMESTAMPS" | "TENSORS") {
                return Err(RunError::bad_option(format!(
                    "--trace-level '{level}' is not one of OFF, TIMESTAMPS or TENSORS."
                )));
            }
            levels.push(Value::from(level));
        }
        settings.insert("trace_level".into(), Value::Array(levels));
    }
    if let Some(count) = args.trace_count {
        if count < -1 {
            return Err(RunError::bad_option(
                "--trace-count must be -1 (no limit) or a count of requests.",
            ));
        }
        settings.insert("trace_count".into(), Value::from(count.to_string()));
    }
    let positive = [
        ("trace_rate", "--trace-rate", args.trace_rate),
        ("log_frequency", "--log-frequency", args.log_frequency),
    ];
    for (key, flag, value) in positive {
        match value {
            Some(0) if key == "trace_rate" => {
                return Err(RunError::bad_option(format!("{flag} must be at least 1.")))
            }
            Some(n) => {
                settings.insert(key.into(), Value::from(n.to_string()));
            }
            None => {}
        }
    }
    if !settings.is_empty() && (kind != ServiceKind::Triton || protocol != Protocol::Http) {
        return Err(RunError::bad_option(
            "The --trace-* and --log-frequency flags set Triton's trace settings over its HTTP trace extension: use --service-kind triton with -i http.",
        ));
    }
    Ok(settings)
}

/// `--bls-composing-models a:3,b`: the models a BLS model calls, each `MODEL` or
/// `MODEL:VERSION`, in order of first appearance without repeats. Only a server with
/// Triton's statistics extension can break them down.
pub(super) fn parse_bls_composing_models(
    args: &RequestOptionArgs,
    kind: ServiceKind,
) -> RunResult<Vec<String>> {
    let mut models: Vec<String> = Vec::new();
    for item in args.bls_composing_models.iter().flat_map(|l| l.split(',')) {
        let item = item.trim();
        let bad = |why: &str| {
            RunError::bad_option(format!(
                "--bls-composing-models '{item}' {why}: give MODEL or MODEL:VERSION, separated by commas (e.g. preprocess:1,classifier)."
            ))
        };
        let (name, version) = item.split_once(':').unwrap_or((item, ""));
        if name.is_empty() {
            return Err(bad("has no model name"));
        }
        if item.contains(':')
            && (version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(bad("has a version that is not a whole number"));
        }
        if !models.iter().any(|m| m == item) {
            models.push(item.to_string());
        }
    }
    // A BLS model is broken down from the statistics of the models it calls.
    let statistics = kind.capabilities().server_statistics;
    let per_model = matches!(
        statistics,
        ServerStatistics::StatisticsExtension | ServerStatistics::InProcess
    );
    if !models.is_empty() && !per_model {
        return Err(RunError::bad_option(
            "--bls-composing-models breaks a BLS model down with Triton's statistics extension, which only --service-kind triton has.",
        ));
    }
    Ok(models)
}

/// `--grpc-method PACKAGE.SERVICE/METHOD`: required by `--service-kind dynamic_grpc`, which
/// sends the messages of an `--input-data` file's `message_generator` entries, and
/// meaningless without it.
pub(super) fn parse_grpc_method(
    args: &crate::cli::ProfileArgs,
    kind: ServiceKind,
) -> RunResult<Option<String>> {
    let method = args.pa.grpc_method.as_deref().map(str::trim);
    match (method, kind) {
        (None, ServiceKind::DynamicGrpc) => Err(RunError::bad_option(
            "--service-kind dynamic_grpc calls the method --grpc-method names: add --grpc-method PACKAGE.SERVICE/METHOD (e.g. --grpc-method helloworld.Greeter/SayHello).",
        )),
        (None, _) => Ok(None),
        (Some(_), k) if k != ServiceKind::DynamicGrpc => Err(RunError::bad_option(
            "--grpc-method names the method of --service-kind dynamic_grpc: add --service-kind dynamic_grpc, or leave --grpc-method out.",
        )),
        (Some(method), _) => {
            let well_formed = method.split_once('/').is_some_and(|(service, name)| {
                let part = |p: &str| !p.is_empty() && !p.contains(['/', ' ']);
                part(service) && part(name) && service.contains('.')
            });
            if !well_formed {
                return Err(RunError::bad_option(format!(
                    "--grpc-method '{method}' is not PACKAGE.SERVICE/METHOD (e.g. helloworld.Greeter/SayHello)."
                )));
            }
            Ok(Some(method.to_string()))
        }
    }
}

/// Where `--service-kind triton_c_api` finds Triton and the models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TritonCApiSettings {
    /// `--triton-server-directory` (perf_analyzer's default: /opt/tritonserver).
    pub server_directory: std::path::PathBuf,
    /// `--model-repository`.
    pub model_repository: std::path::PathBuf,
    /// Triton's error and warning log on stderr (with `-v`; it is silent otherwise, as the
    /// errors that stop a run are in inferperf's own sentence).
    pub server_log: bool,
    /// `--request-parameter`s, sent with every request.
    pub request_parameters: Vec<RequestParameter>,
    /// `--bls-composing-models`: the models a BLS model calls, loaded with the model.
    pub bls_composing_models: Vec<String>,
}

/// `--triton-server-directory` and `--model-repository`: needed by, and only meaningful
/// with, `--service-kind triton_c_api`.
pub(super) fn parse_triton_c_api(
    args: &RequestOptionArgs,
    kind: ServiceKind,
    verbose: bool,
) -> RunResult<Option<TritonCApiSettings>> {
    if kind != ServiceKind::TritonCApi {
        if args.triton_server_directory.is_some() || args.model_repository.is_some() {
            return Err(RunError::bad_option(
                "--triton-server-directory and --model-repository run Triton in this process: add --service-kind triton_c_api.",
            ));
        }
        return Ok(None);
    }
    let Some(model_repository) = args.model_repository.clone() else {
        return Err(RunError::bad_option(
            "--service-kind triton_c_api needs --model-repository DIR: the model repository Triton loads the model from.",
        ));
    };
    if !model_repository.is_dir() {
        return Err(RunError::bad_option(format!(
            "--model-repository {} is not a folder: give the model repository Triton loads from.",
            model_repository.display()
        )));
    }
    let server_directory = (args.triton_server_directory.clone())
        .unwrap_or_else(|| std::path::PathBuf::from("/opt/tritonserver"));
    Ok(Some(TritonCApiSettings {
        server_directory,
        model_repository,
        server_log: verbose,
        request_parameters: Vec::new(),
        bls_composing_models: Vec::new(),
    }))
}

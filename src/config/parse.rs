//! The parsers of single options: each turns one flag's text (or value) into what `Config`
//! holds, or into the error that names the flag. They live apart from `Config::from_args`,
//! which puts the options together, to keep config.rs to the checks between options.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{
    ConcurrencyRange, InputData, MeasurementMode, Protocol, ServiceKind, Streaming, TensorFormat,
};
use crate::cli::ProfileArgs;
use inferperf_server::ModelDef;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::DataType;

/// `--streaming` goes over gRPC (or in process, where the models stream directly; or as
/// server-sent events from an OpenAI-compatible server).
pub(super) fn parse_streaming(
    streaming: bool,
    protocol: Protocol,
    kind: ServiceKind,
) -> RunResult<bool> {
    let elsewhere = matches!(
        kind.capabilities().streaming,
        Streaming::InProcess | Streaming::ServerSentEvents
    );
    if streaming && protocol != Protocol::Grpc && !elsewhere {
        return Err(RunError::bad_option(
            "--streaming sends over gRPC's ModelStreamInfer: add -i grpc (and a gRPC port in -u).",
        ));
    }
    Ok(streaming)
}

pub(super) fn parse_tolerance(value: f64) -> RunResult<f64> {
    if !(value.is_finite() && value >= 0.0) {
        return Err(RunError::bad_option(format!(
            "--validation-tolerance {value} must be a number of at least 0 (e.g. 1e-5)."
        )));
    }
    Ok(value)
}

pub(super) fn non_empty(value: &str, flag: &str) -> RunResult<String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(RunError::bad_option(format!("{flag} must not be empty.")));
    }
    Ok(value.to_string())
}

pub(super) fn positive(value: u64, flag: &str) -> RunResult<u64> {
    if value == 0 {
        return Err(RunError::bad_option(format!("{flag} must be at least 1.")));
    }
    Ok(value)
}

pub(super) fn parse_protocol(text: &str) -> RunResult<Protocol> {
    match text.to_ascii_lowercase().as_str() {
        "http" => Ok(Protocol::Http),
        "grpc" => Ok(Protocol::Grpc),
        _ => Err(RunError::bad_option(format!(
            "-i '{text}' is not a protocol: use -i http or -i grpc."
        ))),
    }
}

pub(super) fn parse_local_models(kind: ServiceKind, values: &[String]) -> RunResult<Vec<ModelDef>> {
    if kind != ServiceKind::Local {
        if values.is_empty() {
            return Ok(Vec::new());
        }
        return Err(RunError::bad_option(
            "--model defines in-process models and needs --service-kind local; to serve them over the network use `inferperf serve --model ...`.",
        ));
    }
    if values.is_empty() {
        return Ok(inferperf_server::default_models());
    }
    values
        .iter()
        .map(|text| {
            text.parse::<ModelDef>()
                .map_err(|e| RunError::bad_option(format!("--model {text}: {e}")))
        })
        .collect()
}

/// `start[:end[:step]]` of whole numbers; with only a start, end = start; step 1 unless given.
pub(crate) fn whole_range(text: &str) -> Option<(u32, u32, u32)> {
    let parts: Vec<u32> = text
        .split(':')
        .map(|p| p.trim().parse::<u32>().ok())
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [s] => Some((*s, *s, 1)),
        [s, e] => Some((*s, *e, 1)),
        [s, e, st] => Some((*s, *e, *st)),
        _ => None,
    }
}

/// Parses `start[:end[:step]]`; with only a start, end = start.
pub fn parse_concurrency_range(text: &str) -> RunResult<ConcurrencyRange> {
    let bad = || {
        RunError::bad_option(format!(
            "--concurrency-range '{text}' is not start[:end[:step]] with whole numbers (e.g. 1:8 or 4:64:4)."
        ))
    };
    let (start, end, step) = whole_range(text).ok_or_else(bad)?;
    if start == 0 || step == 0 {
        return Err(RunError::bad_option(format!(
            "--concurrency-range '{text}': start and step must be at least 1."
        )));
    }
    if end != 0 && end < start {
        return Err(RunError::bad_option(format!(
            "--concurrency-range '{text}': the end is below the start."
        )));
    }
    Ok(ConcurrencyRange { start, end, step })
}

/// `-u` as `host:port`, and whether its scheme asked for TLS (`https://`, `grpcs://`).
pub(super) fn parse_url(url: Option<&str>, protocol: Protocol) -> RunResult<(String, bool)> {
    let default = match protocol {
        Protocol::Http => "localhost:8000",
        Protocol::Grpc => "localhost:8001",
    };
    let raw = url.unwrap_or(default).trim();
    let secure = check_scheme(raw, protocol)?;
    let without_scheme = ["http://", "grpc://", "https://", "grpcs://"]
        .iter()
        .find_map(|scheme| raw.strip_prefix(scheme))
        .unwrap_or(raw)
        .trim_end_matches('/');
    if without_scheme.contains('@') {
        return Err(RunError::bad_option(
            "-u holds a user name or password, which inferperf never sends nor prints: give host:port and pass credentials with -H 'Authorization: …'.",
        ));
    }
    let port_ok = without_scheme
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    let authority_ok = without_scheme.parse::<http::uri::Authority>().is_ok();
    if !port_ok || !authority_ok || without_scheme.contains('/') {
        return Err(RunError::bad_option(format!(
            "-u '{raw}' is not host:port (e.g. -u localhost:8000)."
        )));
    }
    Ok((without_scheme.to_string(), secure))
}

/// Every `-u` URL as `host:port`, in order: the items of each comma-separated value of each
/// `-u`, and whether their scheme asked for TLS (all alike: one TLS setting serves them all).
pub(super) fn parse_urls(given: &[String], protocol: Protocol) -> RunResult<(Vec<String>, bool)> {
    let Some(first) = given.first() else {
        let (url, secure) = parse_url(None, protocol)?;
        return Ok((vec![url], secure));
    };
    let mut urls: Vec<String> = Vec::new();
    let mut schemes = Vec::new();
    for value in given {
        if !value.contains(',') {
            let (url, secure) = parse_url(Some(value), protocol)?;
            push_url(&mut urls, url)?;
            schemes.push((value.trim().to_string(), secure));
            continue;
        }
        for item in value.split(',') {
            if item.trim().is_empty() {
                return Err(RunError::bad_option(format!(
                    "-u '{value}' has an empty item: list host:port values separated by single commas (e.g. -u a:8000,b:8000)."
                )));
            }
            let (url, secure) = parse_url(Some(item), protocol)?;
            push_url(&mut urls, url)?;
            schemes.push((item.trim().to_string(), secure));
        }
    }
    let secure = schemes[0].1;
    if let Some((item, _)) = schemes.iter().find(|(_, s)| *s != secure) {
        return Err(RunError::bad_option(format!(
            "-u '{item}' does not use TLS like '{}' does: give every URL of the list the same scheme (all plain or all https:// / grpcs://).",
            first.split(',').next().unwrap_or(first).trim()
        )));
    }
    Ok((urls, secure))
}

/// Adds a `-u` server to the list; a server given twice is refused.
fn push_url(urls: &mut Vec<String>, url: String) -> RunResult<()> {
    if urls.contains(&url) {
        return Err(RunError::bad_option(format!(
            "-u lists {url} twice: give each server once."
        )));
    }
    urls.push(url);
    Ok(())
}

/// Whether the URL's scheme asks for TLS; a TLS scheme of the other protocol is refused.
pub(super) fn check_scheme(raw: &str, protocol: Protocol) -> RunResult<bool> {
    let https = raw.starts_with("https://");
    let grpcs = raw.starts_with("grpcs://");
    if https && protocol == Protocol::Grpc {
        return Err(RunError::bad_option(format!(
            "-u '{raw}' is an HTTPS URL but -i grpc was given: use grpcs://host:port for gRPC over TLS."
        )));
    }
    if grpcs && protocol == Protocol::Http {
        return Err(RunError::bad_option(format!(
            "-u '{raw}' is gRPC over TLS: add -i grpc (or use https:// for HTTP)."
        )));
    }
    Ok(https || grpcs)
}

pub(super) fn parse_measurement_mode(text: &str) -> RunResult<MeasurementMode> {
    match text {
        "time_windows" => Ok(MeasurementMode::TimeWindows),
        "count_windows" => Ok(MeasurementMode::CountWindows),
        _ => Err(RunError::bad_option(format!(
            "--measurement-mode '{text}' is unknown: use time_windows or count_windows."
        ))),
    }
}

/// `-s PCT`: a spread of 0.001% to 1000% (at 1000% every window agrees).
pub(super) fn parse_stability(value: f64) -> RunResult<f64> {
    inferperf_wire::number::within("-s", value, 0.001, 1000.0, "%")
}

pub(super) fn parse_percentile(value: f64) -> RunResult<f64> {
    let (least, most) = super::bounds::PERCENTILES;
    inferperf_wire::number::within("--percentile", value, least, most, "")
}

/// `-l MS`: 0 for no limit, else a latency from a nanosecond to a day.
pub(super) fn parse_latency_threshold(value: f64) -> RunResult<Option<f64>> {
    if value == 0.0 {
        return Ok(None);
    }
    let least = super::bounds::MIN_LATENCY_LIMIT_US / 1e3;
    let most = super::bounds::MAX_LATENCY_LIMIT_US / 1e3;
    inferperf_wire::number::within("-l", value, least, most, "ms (0 for no limit)").map(Some)
}

pub(super) fn parse_client_threads(count: usize) -> RunResult<usize> {
    if !(1..=1024).contains(&count) {
        return Err(RunError::bad_option(format!(
            "--client-threads {count} must be between 1 and 1024."
        )));
    }
    Ok(count)
}

/// `--grpc-connection-share`, else (over gRPC) perf_analyzer's environment variable, else
/// its 6.
pub(super) fn parse_connection_share(flag: Option<usize>, protocol: Protocol) -> RunResult<usize> {
    const VARIABLE: &str = "TRITON_CLIENT_GRPC_CHANNEL_MAX_SHARE_COUNT";
    let from_env = match protocol {
        Protocol::Grpc => std::env::var(VARIABLE).ok(),
        Protocol::Http => None,
    };
    let (count, source) = match (flag, from_env) {
        (Some(n), _) => (Some(n), "--grpc-connection-share".to_string()),
        (None, Some(text)) => (text.trim().parse().ok(), format!("{VARIABLE}={text}")),
        (None, None) => (Some(6), String::new()),
    };
    match count {
        Some(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(RunError::bad_option(format!(
            "{source} must be a whole number of requests per connection, at least 1."
        ))),
    }
}

/// `--input-data`: random, zero, a directory, or JSON files (only files may repeat).
/// `--input-data`, or its perf_analyzer predecessors `-z` (zero) and `--data-directory DIR`.
pub(super) fn input_data_args(args: &ProfileArgs) -> RunResult<Vec<String>> {
    let old = match (args.old_zero_input, &args.old_data_directory) {
        (true, Some(_)) => {
            return Err(RunError::bad_option(
                "-z (zero data) and --data-directory both set the request data: keep one (both are old forms of --input-data).",
            ))
        }
        (true, None) => Some(("-z", "zero".to_string())),
        (false, Some(dir)) => Some(("--data-directory", dir.clone())),
        (false, None) => None,
    };
    match old {
        None => Ok(args.input_data.clone()),
        Some((flag, _)) if args.input_data != ["random"] => Err(RunError::bad_option(format!(
            "{flag} and --input-data both set the request data: keep --input-data ({flag} is its old form)."
        ))),
        Some((_, value)) => Ok(vec![value]),
    }
}

pub(super) fn parse_input_data(values: &[String]) -> RunResult<InputData> {
    let mut files = Vec::new();
    for text in values {
        let path = PathBuf::from(text);
        let single = match text.as_str() {
            "random" => InputData::Random,
            "zero" => InputData::Zero,
            _ if path.is_dir() => InputData::Directory(path),
            _ if path.exists() => {
                files.push(path);
                continue;
            }
            _ => {
                return Err(RunError::bad_option(format!(
                    "--input-data '{text}' is not random, zero, or an existing JSON file or directory: check the path."
                )))
            }
        };
        if values.len() > 1 {
            return Err(RunError::bad_option(format!(
                "--input-data '{text}' cannot be combined with other --input-data values: only JSON files may be repeated."
            )));
        }
        return Ok(single);
    }
    Ok(if files.is_empty() {
        InputData::Random
    } else {
        InputData::Json(files)
    })
}

pub(super) fn parse_tensor_format(text: &str, flag: &str) -> RunResult<TensorFormat> {
    match text {
        "binary" => Ok(TensorFormat::Binary),
        "json" => Ok(TensorFormat::Json),
        _ => Err(RunError::bad_option(format!(
            "{flag} '{text}' is unknown: use binary or json."
        ))),
    }
}

/// Parses repeated `--shape NAME:d1,d2,...` (the name may itself contain ':').
pub fn parse_shapes(values: &[String]) -> RunResult<BTreeMap<String, Vec<i64>>> {
    let mut shapes = BTreeMap::new();
    for text in values {
        let bad = || {
            RunError::bad_option(format!(
                "--shape '{text}' is not NAME:d1,d2,... with positive whole dimensions (e.g. --shape INPUT0:3,224,224)."
            ))
        };
        let (name, dims) = text.rsplit_once(':').ok_or_else(bad)?;
        if name.is_empty() {
            return Err(bad());
        }
        let dims: Vec<i64> = dims
            .split(',')
            .map(|d| {
                d.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|&d| d > 0)
                    .ok_or_else(bad)
            })
            .collect::<RunResult<_>>()?;
        shapes.insert(name.to_string(), dims);
    }
    Ok(shapes)
}

/// Parses repeated `--input-datatype NAME:TYPE`.
pub(super) fn parse_input_datatypes(values: &[String]) -> RunResult<BTreeMap<String, DataType>> {
    values
        .iter()
        .map(|text| {
            let parsed = text
                .rsplit_once(':')
                .and_then(|(name, t)| Some((name.to_string(), t.parse::<DataType>().ok()?)));
            parsed.ok_or_else(|| {
                RunError::bad_option(format!(
                    "--input-datatype '{text}' is not NAME:TYPE with a KServe datatype (e.g. INPUT0:FP32)."
                ))
            })
        })
        .collect()
}

/// Parses repeated `-H 'Name: value'` into validated header pairs.
pub fn parse_headers(values: &[String]) -> RunResult<Vec<(String, String)>> {
    values.iter().map(|text| parse_header(text)).collect()
}

/// One `-H 'Name: value'`. A message names the header, never its value: values carry
/// credentials.
pub(super) fn parse_header(text: &str) -> RunResult<(String, String)> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(RunError::bad_option(
            "-H needs 'Name: value' (a header without ':' was given; its text is not repeated here).",
        ));
    };
    let (name, value) = (name.trim(), value.trim());
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(RunError::bad_option(format!(
            "-H: {:?} is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only).",
            name.chars().take(64).collect::<String>()
        )));
    }
    if http::HeaderValue::from_str(value).is_err() {
        return Err(RunError::bad_option(format!(
            "-H {name}: its value holds a character a header cannot carry (a line break or a control character)."
        )));
    }
    Ok((name.to_ascii_lowercase(), value.to_string()))
}

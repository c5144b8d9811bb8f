//! Shared helpers for the integration tests: start the embedded server on free ports, run
//! the real `inferperf` binary, and profile in-process.
#![allow(dead_code)]

use std::process::Output;
use std::sync::Arc;

use inferperf::cli::{normalize_args, Command};
use inferperf::config::Config;
use inferperf::load::profiler::Interrupt;
use inferperf::measure::level::LevelResult;
use inferperf_server::{self as server, ModelDef, RunningServer, ServeOptions};

/// Starts the embedded server on free loopback ports with the given models (or the
/// default set when empty).
pub async fn start_server(models: &[&str]) -> RunningServer {
    let models: Vec<ModelDef> = if models.is_empty() {
        server::default_models()
    } else {
        models
            .iter()
            .map(|m| m.parse().expect("model definition"))
            .collect()
    };
    server::start(ServeOptions {
        host: "127.0.0.1".parse().unwrap(),
        http_port: 0,
        grpc_port: 0,
        metrics_port: None,
        models,
        statistics: true,
        tls: None,
    })
    .await
    .expect("embedded server starts")
}

/// Starts the embedded server over TLS (HTTPS and gRPC with TLS) with the given models and
/// the server's certificate and key.
pub async fn start_tls_server(
    models: &[&str],
    cert: &std::path::Path,
    key: &std::path::Path,
) -> RunningServer {
    server::start(ServeOptions {
        host: "127.0.0.1".parse().unwrap(),
        http_port: 0,
        grpc_port: 0,
        metrics_port: None,
        models: models.iter().map(|m| m.parse().expect("model")).collect(),
        statistics: true,
        tls: Some(server::TlsFiles {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            client_ca: None,
        }),
    })
    .await
    .expect("TLS server starts")
}

/// Successful inferences the embedded server has counted for `model` (its own statistics,
/// the truth a run's counts are held to).
pub fn served(server: &RunningServer, model: &str) -> u64 {
    let stats = server.local.statistics(model).expect("model statistics");
    (stats.inference_stats)
        .and_then(|s| s.success)
        .map_or(0, |d| d.count)
}

/// `-u` for the server over the given protocol.
pub fn url(server: &RunningServer, protocol: &str) -> String {
    match protocol {
        "grpc" => server.grpc_addr.to_string(),
        _ => server.http_addr.to_string(),
    }
}

/// Parses profile flags (without the program name) into a validated Config.
pub fn config(args: &[&str]) -> Config {
    let mut all = vec!["inferperf".to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    let cli = inferperf::cli::parse_command_line(normalize_args(all)).expect("flags parse");
    let Command::Profile(p) = cli.command else {
        panic!("expected the profile command");
    };
    Config::from_args(&p).expect("flags are valid")
}

/// Profiles in-process and returns every level's result.
pub async fn profile(args: &[&str]) -> Vec<LevelResult> {
    let cfg = config(args);
    let prepared = inferperf::commands::profile::prepare(&cfg)
        .await
        .expect("target prepares");
    let (profiler, _notes) = prepared
        .profiler(&cfg, Arc::new(Interrupt::default()))
        .await;
    let outcome = profiler.measure_levels(|_| {}).await;
    if let Some(e) = outcome.error {
        panic!("profile failed: {e}");
    }
    outcome.results
}

/// Profiles in-process with the run's reports (`--results-file`, `--artifact-dir`, …)
/// written, and returns every level's result.
pub async fn profile_with_reports(args: &[&str]) -> Vec<LevelResult> {
    let cfg = config(args);
    let outcome = inferperf::commands::profile::profile(&cfg, Arc::new(Interrupt::default()))
        .await
        .expect("the run completes");
    outcome.results
}

/// Runs the real binary with these arguments.
pub async fn run_cli(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .expect("inferperf runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Prepares a run from profile flags, sends every encoded request of its dataset once with
/// a plain client (so that what is checked is the client's encoding, not its answer
/// checking), and returns the decoded outputs of each answer.
pub async fn answers(
    args: &[&str],
) -> (
    inferperf::commands::profile::Prepared,
    Vec<Vec<inferperf_wire::Tensor>>,
) {
    use inferperf::backend::Payload;
    let cfg = config(args);
    let prepared = inferperf::commands::profile::prepare(&cfg)
        .await
        .expect("prepare");
    let target = &prepared.target;
    let mut all = Vec::new();
    for request in prepared.requests.iter() {
        let response = match &request.payload {
            Payload::Http(bytes) => http_answer(target, bytes).await,
            Payload::Grpc(framed) => grpc_answer(target, framed).await,
            Payload::Local(call) => {
                let inferperf::backend::Api::Local(local) = &target.api else {
                    panic!("{args:?}: in-process calls are the local API's");
                };
                let server = local.started().expect("in-process models");
                let call = inferperf_wire::InferRequest::clone(call);
                server
                    .infer(&target.model, &target.version, call)
                    .await
                    .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            }
        };
        all.push(response.outputs);
    }
    (prepared, all)
}

async fn http_answer(
    target: &inferperf::backend::Target,
    bytes: &[u8],
) -> inferperf_wire::InferResponse {
    use inferperf::backend::transport::http1::Http1Stream;
    let mut io = Http1Stream::connect(&target.peer.addrs, target.peer.timeout)
        .await
        .expect("connect");
    io.send(bytes).await.expect("send");
    let answer = io.receive().await.expect("answer");
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    inferperf_wire::decode_http_response(&answer.body, answer.header_len).expect("decodes")
}

async fn grpc_answer(
    target: &inferperf::backend::Target,
    framed: &[u8],
) -> inferperf_wire::InferResponse {
    use inferperf_wire::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
    use prost::Message;
    let message = inferperf_wire::proto::ModelInferRequest::decode(&framed[5..]).expect("protobuf");
    let url = format!("http://{}", target.peer.addrs[0]);
    let channel = tonic::transport::Endpoint::from_shared(url).expect("a URL");
    let mut client = GrpcInferenceServiceClient::new(channel.connect().await.expect("connect"));
    let answer = client.model_infer(message).await.expect("answer");
    inferperf_wire::from_grpc_response(answer.into_inner()).expect("decodes")
}

/// docs/results.schema.json.
pub fn schema() -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Validates a file against the schema, failing with every error and where it is.
pub fn assert_valid(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let instance: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .take(10)
        .collect();
    assert!(
        errors.is_empty(),
        "{}:\n{}",
        path.display(),
        errors.join("\n")
    );
    instance
}

/// A word-level tokenizer.json in `dir`: every whitespace-separated word is one token (words
/// it does not know are one `[UNK]` each), as the embedded server's `llm` kind counts.
pub fn word_tokenizer(dir: &std::path::Path) -> std::path::PathBuf {
    let vocab = serde_json::json!({"[UNK]": 0, "tok": 1});
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    let file = dir.join("tokenizer.json");
    std::fs::write(&file, json.to_string()).unwrap();
    file
}

/// The flags of a streamed chat run of model `chat` at `addr`, counted with `tokenizer`,
/// then `extra`.
pub fn chat_flags<'a>(addr: &'a str, tokenizer: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-m",
        "chat",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        addr,
        "--tokenizer",
        tokenizer,
    ];
    args.extend_from_slice(extra);
    args
}

//! Every number a user can give on the command line, tried with the values that break
//! programs: 0, -1, NaN, inf, 1e-300, 1e300, 2^64 and a word. The flags are found by walking
//! the command line's own definition of `profile`, `serve`, `sweep`, `compare` and `merge`,
//! so a new flag cannot slip past: each flag that takes a value is either in [`NUMBERS`],
//! with where its numbers sit, or in [`NO_NUMBER`]. Each case is run by the real binary,
//! which must end within seconds either with exit 3 and one sentence naming the flag, or by
//! running and counting what happened (exit 0, or 2 for a level that did not stabilize);
//! never with a panic. `serve` accepting a value is a server still serving after two
//! seconds. The numeric fields of the input files are walked in `number_walk_files`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::CommandFactory;
use inferperf::cli::Cli;
use inferperf_server::RunningServer;
use tokio::sync::Semaphore;

use crate::common;

/// The values each number is tried with.
pub const BAD: [&str; 8] = [
    "0",
    "-1",
    "NaN",
    "inf",
    "1e-300",
    "1e300",
    "18446744073709551616",
    "x",
];

/// A case that runs longer than this hangs (a case takes well under a second, a run a few).
const HANG: Duration = Duration::from_secs(40);

/// The invocation a number is tried in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Context {
    /// `identity` over HTTP, short windows.
    Http,
    /// `identity` over gRPC.
    Grpc,
    /// `identity` over HTTPS, the server's CA given.
    Tls,
    /// The sequence model over HTTP.
    Seq,
    /// The `llm` model over OpenAI chat.
    Llm,
    /// `--service-kind local` with the model the template defines as `m`.
    Local,
    /// `inferperf serve` on free ports.
    Serve,
    /// `inferperf sweep` of an `inferperf serve` command.
    Sweep,
    /// `inferperf compare` of two results files.
    Compare,
}

/// (command, flag, context, template): the flag's long name (or short letter), and where the
/// number goes (`{}`) among the arguments the template adds.
#[rustfmt::skip]
const NUMBERS: &[(&str, &str, Context, &str)] = &[
    ("profile", "b", Context::Http, "-b {}"),
    ("profile", "concurrency-range", Context::Http, "--concurrency-range {}"),
    ("profile", "concurrency-range", Context::Http, "--concurrency-range 1:{}"),
    ("profile", "concurrency-range", Context::Http, "--concurrency-range 1:2:{}"),
    ("profile", "request-rate-range", Context::Http, "--request-rate-range {}"),
    ("profile", "request-rate-range", Context::Http, "--request-rate-range 100:{}"),
    ("profile", "request-rate-range", Context::Http, "--request-rate-range 100:200:{}"),
    ("profile", "seed", Context::Http, "--seed {}"),
    ("profile", "max-concurrency", Context::Http, "--request-rate-range 100 --max-concurrency {}"),
    ("profile", "periodic-concurrency-range", Context::Http, "--periodic-concurrency-range {}:4:2 --request-period 4"),
    ("profile", "periodic-concurrency-range", Context::Http, "--periodic-concurrency-range 1:{}:2 --request-period 4"),
    ("profile", "periodic-concurrency-range", Context::Http, "--periodic-concurrency-range 1:4:{} --request-period 4"),
    ("profile", "request-period", Context::Http, "--periodic-concurrency-range 1:4:2 --request-period {}"),
    ("profile", "ramp", Context::Http, "--request-rate-range 100 --ramp {}"),
    ("profile", "ramp", Context::Http, "--request-rate-range 100 --ramp {}s"),
    ("profile", "load-steps", Context::Http, "--load-steps {}:0.2s"),
    ("profile", "load-steps", Context::Http, "--load-steps 2:{}s"),
    ("profile", "load-steps", Context::Http, "--load-steps rate={}:0.2s"),
    ("profile", "slo", Context::Http, "--concurrency-range 1:2 --binary-search --slo p99<{}ms"),
    ("profile", "t", Context::Http, "-t {}"),
    ("profile", "c", Context::Http, "-d -c {}"),
    ("profile", "measurement-interval", Context::Http, "-p {}"),
    ("profile", "measurement-request-count", Context::Http, "--measurement-mode count_windows --measurement-request-count {}"),
    ("profile", "stability-percentage", Context::Http, "-s {}"),
    ("profile", "max-trials", Context::Http, "-r {}"),
    ("profile", "percentile", Context::Http, "--percentile {}"),
    ("profile", "latency-threshold", Context::Http, "--concurrency-range 1:2 -l {}"),
    ("profile", "request-count", Context::Http, "--request-count {}"),
    ("profile", "warmup-request-count", Context::Http, "--warmup-request-count {}"),
    ("profile", "shape", Context::Http, "--shape INPUT0:{}"),
    ("profile", "string-length", Context::Http, "--string-length {}"),
    ("profile", "validation-tolerance", Context::Http, "--validation-tolerance {}"),
    ("profile", "metrics-interval", Context::Http, "--collect-metrics --metrics-interval {}"),
    ("profile", "request-timeout", Context::Http, "--request-timeout {}"),
    ("profile", "max-response-bytes", Context::Http, "--max-response-bytes {}"),
    ("profile", "client-threads", Context::Http, "--client-threads {}"),
    ("profile", "send-slack", Context::Http, "--request-rate-range 100 --send-slack {}"),
    ("profile", "grpc-connection-share", Context::Grpc, "--grpc-connection-share {}"),
    ("profile", "shard", Context::Http, "--concurrency-range 4 --shard {}/2"),
    ("profile", "shard", Context::Http, "--concurrency-range 4 --shard 1/{}"),
    ("profile", "shards", Context::Http, "--concurrency-range 4 --shards {}"),
    ("profile", "start-at", Context::Http, "--shard 0/1 --start-at @{}"),
    ("profile", "start-at", Context::Http, "--shard 0/1 --start-at {}"),
    ("profile", "synthetic-input-tokens-mean", Context::Llm, "--synthetic-input-tokens-mean {}"),
    ("profile", "synthetic-input-tokens-stddev", Context::Llm, "--synthetic-input-tokens-stddev {}"),
    ("profile", "output-tokens-mean", Context::Llm, "--output-tokens-mean {}"),
    ("profile", "output-tokens-stddev", Context::Llm, "--output-tokens-mean 4 --output-tokens-stddev {}"),
    ("profile", "extra-inputs", Context::Llm, "--extra-inputs max_tokens:{}"),
    ("profile", "num-prompts", Context::Llm, "--num-prompts {}"),
    ("profile", "rankings-passages-mean", Context::Llm, "--rankings-passages-mean {}"),
    ("profile", "rankings-passages-stddev", Context::Llm, "--rankings-passages-stddev {}"),
    ("profile", "rankings-passages-prompt-token-mean", Context::Llm, "--rankings-passages-prompt-token-mean {}"),
    ("profile", "rankings-passages-prompt-token-stddev", Context::Llm, "--rankings-passages-prompt-token-stddev {}"),
    ("profile", "rankings-query-prompt-token-mean", Context::Llm, "--rankings-query-prompt-token-mean {}"),
    ("profile", "rankings-query-prompt-token-stddev", Context::Llm, "--rankings-query-prompt-token-stddev {}"),
    ("profile", "ssl-https-verify-peer", Context::Tls, "--ssl-https-verify-peer {}"),
    ("profile", "ssl-https-verify-host", Context::Tls, "--ssl-https-verify-host {}"),
    ("profile", "sequence-length", Context::Seq, "--sequence-length {}"),
    ("profile", "sequence-length-variation", Context::Seq, "--sequence-length-variation {}"),
    ("profile", "sequence-id-range", Context::Seq, "--sequence-id-range {}"),
    ("profile", "sequence-id-range", Context::Seq, "--sequence-id-range 1:{}"),
    ("profile", "num-of-sequences", Context::Seq, "--request-rate-range 100 --num-of-sequences {}"),
    ("profile", "max-threads", Context::Http, "--max-threads {}"),
    ("profile", "session-concurrency", Context::Llm, "--session-concurrency {}"),
    ("profile", "conversation-num", Context::Llm, "--conversation-num {}"),
    ("profile", "session-turns-mean", Context::Llm, "--session-turns-mean {}"),
    ("profile", "session-turns-stddev", Context::Llm, "--session-turns-mean 2 --session-turns-stddev {}"),
    ("profile", "session-turn-delay-mean", Context::Llm, "--session-turns-mean 2 --session-turn-delay-mean {}"),
    ("profile", "session-turn-delay-stddev", Context::Llm, "--session-turns-mean 2 --session-turn-delay-mean 1 --session-turn-delay-stddev {}"),
    ("profile", "session-delay-ratio", Context::Llm, "--session-turns-mean 2 --session-turn-delay-mean 1 --session-delay-ratio {}"),
    ("profile", "arrival-smoothness", Context::Http, "--request-rate-range 100 --arrival-smoothness {}"),
    ("profile", "request-cancellation-rate", Context::Llm, "--request-cancellation-rate {}"),
    ("profile", "request-cancellation-delay", Context::Llm, "--request-cancellation-rate 10 --request-cancellation-delay {}"),
    ("profile", "isl-block-size", Context::Llm, "--isl-block-size {}"),
    ("profile", "prefix-prompt-length", Context::Llm, "--num-prefix-prompts 2 --prefix-prompt-length {}"),
    ("profile", "num-prefix-prompts", Context::Llm, "--prefix-prompt-length 4 --num-prefix-prompts {}"),
    ("profile", "shared-system-prompt-length", Context::Llm, "--shared-system-prompt-length {}"),
    ("profile", "fixed-schedule-start-offset", Context::Llm, "--fixed-schedule --fixed-schedule-start-offset {}"),
    ("profile", "fixed-schedule-end-offset", Context::Llm, "--fixed-schedule --fixed-schedule-end-offset {}"),
    ("profile", "replay-speedup", Context::Llm, "--replay-speedup {}"),
    ("profile", "synthesis-speedup-ratio", Context::Llm, "--synthesis-speedup-ratio {}"),
    ("profile", "synthesis-prefix-len-multiplier", Context::Llm, "--synthesis-prefix-len-multiplier {}"),
    ("profile", "synthesis-prefix-root-multiplier", Context::Llm, "--synthesis-prefix-root-multiplier {}"),
    ("profile", "synthesis-prompt-len-multiplier", Context::Llm, "--synthesis-prompt-len-multiplier {}"),
    ("profile", "synthesis-output-len-multiplier", Context::Llm, "--synthesis-output-len-multiplier {}"),
    ("profile", "synthesis-max-isl", Context::Llm, "--synthesis-max-isl {}"),
    ("profile", "synthesis-max-osl", Context::Llm, "--synthesis-max-osl {}"),
    ("profile", "max-context-length", Context::Llm, "--max-context-length {}"),
    ("profile", "request-parameter", Context::Http, "--request-parameter n:{}:int"),
    ("profile", "request-parameter", Context::Http, "--request-parameter n:{}:double"),
    ("profile", "trace-rate", Context::Http, "--trace-level TIMESTAMPS --trace-rate {}"),
    ("profile", "trace-count", Context::Http, "--trace-level TIMESTAMPS --trace-count {}"),
    ("profile", "log-frequency", Context::Http, "--trace-level TIMESTAMPS --log-frequency {}"),
    ("profile", "output-shared-memory-size", Context::Http, "--shared-memory system --output-shared-memory-size {}"),
    ("profile", "concurrency", Context::Llm, "--concurrency {}"),
    ("profile", "request-rate", Context::Llm, "--request-rate {}"),
    ("profile", "benchmark-duration", Context::Llm, "--benchmark-duration {}"),
    ("profile", "goodput", Context::Llm, "--goodput time_to_first_token:{}"),
    ("profile", "audio-batch-size", Context::Llm, "--audio-length-mean 0.1 --audio-batch-size {}"),
    ("profile", "audio-depths", Context::Llm, "--audio-length-mean 0.1 --audio-depths {}"),
    ("profile", "audio-length-mean", Context::Llm, "--audio-length-mean {}"),
    ("profile", "audio-length-stddev", Context::Llm, "--audio-length-mean 0.1 --audio-length-stddev {}"),
    ("profile", "audio-num-channels", Context::Llm, "--audio-length-mean 0.1 --audio-num-channels {}"),
    ("profile", "audio-sample-rates", Context::Llm, "--audio-length-mean 0.1 --audio-sample-rates {}"),
    ("profile", "image-batch-size", Context::Llm, "--image-width-mean 8 --image-height-mean 8 --image-batch-size {}"),
    ("profile", "image-height-mean", Context::Llm, "--image-width-mean 8 --image-height-mean {}"),
    ("profile", "image-height-stddev", Context::Llm, "--image-width-mean 8 --image-height-mean 8 --image-height-stddev {}"),
    ("profile", "image-width-mean", Context::Llm, "--image-height-mean 8 --image-width-mean {}"),
    ("profile", "image-width-stddev", Context::Llm, "--image-width-mean 8 --image-height-mean 8 --image-width-stddev {}"),
    ("profile", "video-audio-depth", Context::Llm, "--video-width 8 --video-height 8 --video-audio-num-channels 1 --video-audio-depth {}"),
    ("profile", "video-audio-num-channels", Context::Llm, "--video-width 8 --video-height 8 --video-audio-num-channels {}"),
    ("profile", "video-audio-sample-rate", Context::Llm, "--video-width 8 --video-height 8 --video-audio-num-channels 1 --video-audio-sample-rate {}"),
    ("profile", "video-batch-size", Context::Llm, "--video-width 8 --video-height 8 --video-batch-size {}"),
    ("profile", "video-duration", Context::Llm, "--video-width 8 --video-height 8 --video-duration {}"),
    ("profile", "video-fps", Context::Llm, "--video-width 8 --video-height 8 --video-fps {}"),
    ("profile", "video-height", Context::Llm, "--video-width 8 --video-height {}"),
    ("profile", "video-width", Context::Llm, "--video-height 8 --video-width {}"),
    ("profile", "benchmark-grace-period", Context::Llm, "--benchmark-duration 0.3 --benchmark-grace-period {}"),
    ("profile", "concurrency-ramp-duration", Context::Llm, "--concurrency 2 --request-count 4 --concurrency-ramp-duration {}"),
    ("profile", "request-rate-ramp-duration", Context::Llm, "--request-rate 50 --request-count 4 --request-rate-ramp-duration {}"),
    ("profile", "request-rate-series", Context::Llm, "--request-count 4 --request-rate-series {}:0.2"),
    ("profile", "request-rate-series", Context::Llm, "--request-count 4 --request-rate-series 50:{}"),
    ("profile", "prefill-concurrency", Context::Llm, "--concurrency 2 --request-count 4 --prefill-concurrency {}"),
    ("profile", "prefill-concurrency-ramp-duration", Context::Llm, "--concurrency 2 --request-count 4 --prefill-concurrency 1 --prefill-concurrency-ramp-duration {}"),
    ("profile", "user-centric-rate", Context::Llm, "--num-users 2 --request-count 4 --user-centric-rate {}"),
    ("profile", "num-users", Context::Llm, "--user-centric-rate 20 --request-count 4 --num-users {}"),
    ("profile", "slice-duration", Context::Llm, "--request-count 4 --slice-duration {}"),
    ("profile", "failed-request-threshold", Context::Llm, "--request-count 4 --failed-request-threshold {}"),
    ("profile", "warmup-duration", Context::Llm, "--request-count 4 --warmup-duration {}"),
    ("profile", "warmup-grace-period", Context::Llm, "--request-count 4 --warmup-duration 0.2 --warmup-grace-period {}"),
    ("profile", "warmup-concurrency", Context::Llm, "--request-count 4 --warmup-request-count 2 --warmup-concurrency {}"),
    ("profile", "warmup-concurrency-ramp-duration", Context::Llm, "--request-count 4 --warmup-request-count 2 --warmup-concurrency 2 --warmup-concurrency-ramp-duration {}"),
    ("profile", "warmup-prefill-concurrency", Context::Llm, "--request-count 4 --warmup-request-count 2 --warmup-prefill-concurrency {}"),
    ("profile", "warmup-prefill-concurrency-ramp-duration", Context::Llm, "--request-count 4 --warmup-request-count 2 --warmup-prefill-concurrency 1 --warmup-prefill-concurrency-ramp-duration {}"),
    ("profile", "num-warmup-sessions", Context::Llm, "--conversation-num 2 --session-turns-mean 2 --num-warmup-sessions {}"),
    ("profile", "inter-turn-delay-cap-seconds", Context::Llm, "--session-turns-mean 2 --session-turn-delay-mean 1 --inter-turn-delay-cap-seconds {}"),
    ("profile", "parameter-sweep-cooldown-seconds", Context::Llm, "--concurrency 1,2 --request-count 2 --parameter-sweep-cooldown-seconds {}"),
    ("profile", "num-profile-runs", Context::Llm, "--request-count 2 --num-profile-runs {}"),
    ("profile", "profile-run-cooldown-seconds", Context::Llm, "--request-count 2 --num-profile-runs 2 --profile-run-cooldown-seconds {}"),
    ("profile", "confidence-level", Context::Llm, "--request-count 2 --num-profile-runs 2 --confidence-level {}"),
    ("profile", "convergence-threshold", Context::Llm, "--request-count 2 --num-profile-runs 2 --convergence-metric request_count --convergence-threshold {}"),
    ("profile", "prompt-batch-size", Context::Llm, "--request-count 4 --prompt-batch-size {}"),
    ("profile", "random-range-ratio", Context::Llm, "--request-count 4 --random-range-ratio {}"),
    ("profile", "seq-dist", Context::Llm, "--request-count 4 --seq-dist {},3"),
    ("profile", "seq-dist", Context::Llm, "--request-count 4 --seq-dist 10,3:{};20,3:50"),
    ("profile", "user-context-prompt-length", Context::Llm, "--request-count 4 --user-context-prompt-length {}"),
    ("profile", "reset-kv-cache-timeout-seconds", Context::Llm, "--request-count 4 --reset-kv-cache --reset-kv-cache-timeout-seconds {}"),
    ("profile", "server-profiler-timeout-seconds", Context::Llm, "--request-count 4 --server-profiler --server-profiler-timeout-seconds {}"),
    ("profile", "wait-for-model-interval", Context::Llm, "--request-count 4 --wait-for-model-timeout 1 --wait-for-model-interval {}"),
    ("profile", "wait-for-model-timeout", Context::Llm, "--request-count 4 --wait-for-model-timeout {}"),
    ("profile", "stats-interval", Context::Llm, "--request-count 4 --stats-interval {}"),
    ("profile", "warmup-request-rate", Context::Llm, "--request-count 4 --warmup-request-count 2 --warmup-request-rate {}"),
    ("profile", "warmup-request-rate-ramp-duration", Context::Llm, "--request-count 4 --warmup-request-count 2 --warmup-request-rate 50 --warmup-request-rate-ramp-duration {}"),
    ("profile", "workers-max", Context::Llm, "--request-count 4 --workers-max {}"),
    ("profile", "model", Context::Local, "--model m=sleep:ms={}"),
    ("profile", "model", Context::Local, "--model m=identity:max_batch={}"),
    ("profile", "model", Context::Local, "--model m=identity:instances={}"),
    ("profile", "model", Context::Local, "--model m=identity:queue_delay_us={}"),
    ("profile", "model", Context::Local, "--model m=identity:shape={}"),
    ("profile", "model", Context::Local, "--model m=fail:rate={}"),
    ("serve", "http-port", Context::Serve, "--http-port {}"),
    ("serve", "grpc-port", Context::Serve, "--grpc-port {}"),
    ("serve", "metrics-port", Context::Serve, "--metrics-port {}"),
    ("serve", "model", Context::Serve, "--model m=llm:ttft_ms={}"),
    ("serve", "model", Context::Serve, "--model m=llm:itl_ms={}"),
    ("serve", "model", Context::Serve, "--model m=llm:itl_us_per_sequence={}"),
    ("serve", "model", Context::Serve, "--model m=llm:output_tokens={}"),
    ("serve", "model", Context::Serve, "--model m=llm:prefill_us_per_token={}"),
    ("serve", "model", Context::Serve, "--model m=llm:tokens_per_event={}"),
    ("serve", "model", Context::Serve, "--model m=llm:reasoning_tokens={}"),
    ("serve", "model", Context::Serve, "--model m=embeddings:dims={}"),
    ("serve", "model", Context::Serve, "--model m=sleep:ms={}"),
    ("serve", "model", Context::Serve, "--model m=identity:preferred_batch={}"),
    ("serve", "model", Context::Serve, "--model m=stream:responses={}"),
    ("serve", "model", Context::Serve, "--model m=stream:interval_ms={}"),
    ("sweep", "ready-timeout", Context::Sweep, "--ready-timeout {}"),
    ("sweep", "stop-grace", Context::Sweep, "--stop-grace {}"),
    ("compare", "fail-on", Context::Compare, "--fail-on throughput<-{}%"),
    ("compare", "fail-on", Context::Compare, "--fail-on p99>+{}%"),
    ("compare", "fail-on", Context::Compare, "--fail-on p{}>+5%"),
];

/// The flags that take a value that is not a number, by command.
#[rustfmt::skip]
const NO_NUMBER: &[(&str, &[&str])] = &[
    ("profile", &[
        "m", "x", "url", "i", "service-kind", "model-signature-name", "tfserving-rest-format",
        "torchserve-management-url", "request-distribution", "request-intervals",
        "data-directory", "measurement-mode", "input-data", "string-data",
        "input-tensor-format", "output-tensor-format", "input-datatype", "header", "f",
        "per-url-csv", "report-dir", "results-file", "profile-export-file", "metrics-url",
        "metric", "server-metrics", "server-metrics-preset", "gpu-telemetry", "endpoint",
        "tokenizer", "convergence-metric", "convergence-mode", "convergence-stat",
        "tokenizer-revision", "prompt-source", "input-file",
        "arrival-pattern", "custom-dataset-type", "cache-bust",
        "artifact-dir", "ssl-grpc-root-certifications-file", "ssl-grpc-private-key-file",
        "ssl-grpc-certificate-chain-file", "ssl-https-ca-certificates-file",
        "ssl-https-client-certificate-file", "ssl-https-client-certificate-type",
        "ssl-https-private-key-file", "ssl-https-private-key-type", "ssl-target-name",
        "grpc-compression-algorithm", "bls-composing-models", "grpc-method", "trace-level",
        "shared-memory", "triton-server-directory", "model-repository", "endpoint-type",
        "custom-endpoint", "ui-type", "api-key", "request-content-type",
        "audio-format", "image-format", "image-source", "image-source-sampling",
        "video-audio-codec", "video-codec", "video-format", "video-synth-type",
        "connection-reuse-strategy", "dataset-sampling-strategy", "export-level", "hf-subset",
        "log-level", "parameter-sweep-mode", "profile-export-prefix", "prompt-corpus",
        "public-dataset", "random-corpus-style", "reset-kv-cache-path", "server-metrics-formats",
        "server-profiler-start-path", "server-profiler-stop-path", "session-header", "sweep-type",
        "system-prompt", "system-prompt-file", "transport", "url-strategy", "wait-for-model-mode",
        "warmup-arrival-pattern",
    ]),
    ("serve", &["host", "tls-cert", "tls-key", "tls-client-ca"]),
    ("sweep", &["server", "param", "report-dir", "profile"]),
    ("compare", &["runs", "output"]),
    ("merge", &["shards", "f", "report-dir", "results-file", "per-url-csv"]),
];

/// The flags of `command` that take a value, by long name, short letter or id.
fn value_flags(command: &str) -> BTreeSet<String> {
    let cli = Cli::command();
    let sub = cli
        .find_subcommand(command)
        .unwrap_or_else(|| panic!("no command {command}"));
    sub.get_arguments()
        .filter(|a| a.get_action().takes_values())
        .map(|a| match (a.get_long(), a.get_short()) {
            (Some(long), _) => long.to_string(),
            (None, Some(short)) => short.to_string(),
            (None, None) => a.get_id().to_string(),
        })
        .collect()
}

/// What the cases run against.
pub struct World {
    pub server: RunningServer,
    /// The same models over HTTPS (certificates in `dir`).
    pub tls: RunningServer,
    pub dir: tempfile::TempDir,
    /// Two results files of the same short run, for `compare`.
    pub results: [PathBuf; 2],
}

impl World {
    pub async fn new() -> World {
        let server = common::start_server(&[
            "identity=identity",
            "seq=sequence",
            "llm=llm:ttft_ms=1,itl_ms=1,output_tokens=4",
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        crate::pa_options::write_certs(dir.path());
        let tls = common::start_tls_server(
            &["identity=identity"],
            &dir.path().join("server.pem"),
            &dir.path().join("server.key"),
        )
        .await;
        let results = [dir.path().join("a.json"), dir.path().join("b.json")];
        let http = server.http_addr.to_string();
        for file in &results {
            let mut args = base(Context::Http, &http);
            args.extend(["--results-file".into(), file.display().to_string()]);
            let out = run(&args, false).await.expect("a short run");
            assert!(matches!(out.code, Some(0 | 2)), "{}", out.stderr);
        }
        World {
            server,
            tls,
            dir,
            results,
        }
    }

    /// The arguments of `context` around `added` (the template with its number).
    pub fn args(&self, context: Context, added: &[String]) -> Vec<String> {
        let http = self.server.http_addr.to_string();
        let mut args = match context {
            Context::Grpc => base(context, &self.server.grpc_addr.to_string()),
            Context::Tls => {
                let url = format!("https://{}", self.tls.http_addr);
                let mut args = base(context, &url);
                let ca = self.dir.path().join("ca.pem");
                args.extend([
                    "--ssl-https-ca-certificates-file".into(),
                    ca.display().to_string(),
                ]);
                args
            }
            Context::Serve => strings(&["serve", "--http-port", "0", "--grpc-port", "0"]),
            Context::Compare => {
                let mut args = vec!["compare".to_string()];
                args.extend(self.results.iter().map(|p| p.display().to_string()));
                args
            }
            Context::Sweep => {
                let server = format!(
                    "'{}' serve --http-port {{port}} --grpc-port 0 --model m=identity",
                    env!("CARGO_BIN_EXE_inferperf")
                );
                let out = self.dir.path().join(format!("sweep-{}", added.join("_")));
                let mut args = strings(&["sweep", "--server", &server, "--param", "n=1"]);
                args.extend(["--report-dir".into(), out.display().to_string()]);
                args.extend(added.iter().cloned());
                args.extend(strings(&[
                    "--", "-m", "m", "-p", "100", "-s", "100", "-r", "3",
                ]));
                return args;
            }
            _ => base(context, &http),
        };
        args.extend(added.iter().cloned());
        args
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The short run of `context` against `url`: three windows of 100 ms.
fn base(context: Context, url: &str) -> Vec<String> {
    let short = ["-p", "100", "-s", "100", "-r", "3", "--no-progress"];
    let mut args = match context {
        Context::Grpc => strings(&["-m", "identity", "-u", url, "-i", "grpc"]),
        Context::Seq => strings(&["-m", "seq", "-u", url]),
        Context::Llm => strings(&["-m", "llm", "-u", url, "--endpoint-type", "chat"]),
        Context::Local => strings(&["-m", "m", "--service-kind", "local"]),
        _ => strings(&["-m", "identity", "-u", url]),
    };
    args.extend(strings(&short));
    args
}

/// What a case left.
pub struct Ran {
    pub code: Option<i32>,
    pub stderr: String,
    pub stdout: String,
    pub took: Duration,
    /// Still running when it was stopped (a server serving).
    pub serving: bool,
}

/// Reads a pipe to its end.
fn read_all(
    mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        let mut bytes = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut pipe, &mut bytes).await;
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// `text` without the values of [`BAD`] as given (a sentence may quote what was given).
fn unechoed(text: &str) -> String {
    BAD.iter()
        .fold(text.to_string(), |t, bad| t.replace(bad, "·"))
}

/// The longest run of digits in `text`: a number printed for a person has fewer than 20.
pub fn longest_digits(text: &str) -> usize {
    text.split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0)
}

/// Runs the binary; `serving` stops it after two seconds of running (a server that took
/// its flags). A case past [`HANG`] is stopped with SIGTERM (a sweep stops its server).
pub async fn run(args: &[String], serving: bool) -> Result<Ran, String> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{args:?}: cannot start: {e}"))?;
    let reader = read_all(child.stderr.take().unwrap());
    let out_reader = read_all(child.stdout.take().unwrap());
    let limit = if serving {
        Duration::from_secs(2)
    } else {
        HANG
    };
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => Some(status.map_err(|e| e.to_string())?),
        Err(_) => {
            if let Some(pid) = child.id() {
                // SAFETY: signals the child this test started and still holds.
                unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            }
            if tokio::time::timeout(Duration::from_secs(5), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
            None
        }
    };
    let stderr = reader.await.unwrap_or_default();
    let stdout = out_reader.await.unwrap_or_default();
    Ok(Ran {
        code: status.and_then(|s| s.code()),
        stderr,
        stdout,
        took: started.elapsed(),
        serving: status.is_none() && serving,
    })
}

/// Whether a case ended well: one sentence naming `names` (any of them) with exit 3, or a
/// run (exit 0 or 2), or a server still serving; never a panic or a hang.
pub fn judge(case: &str, ran: &Ran, names: &[String]) -> Result<(), String> {
    let err = ran.stderr.trim();
    let problem = if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
        Some("a panic".to_string())
    } else if longest_digits(&unechoed(&ran.stdout)).max(longest_digits(&unechoed(err))) >= 20 {
        Some("a number no one can read".to_string())
    } else if ran.code.is_none() && !ran.serving {
        Some(format!("no end after {:?} (a hang)", ran.took))
    } else if ran.code == Some(3) {
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        if errors.len() != 1 {
            Some("not one 'error: ' sentence".to_string())
        } else if !names.iter().any(|n| errors[0].contains(n.as_str())) {
            Some(format!("a sentence that does not name {names:?}"))
        } else {
            None
        }
    } else if !(ran.serving
        || matches!(ran.code, Some(0 | 2))
        || gate_failed(ran)
        || all_refused(ran))
    {
        Some(format!("exit {:?}", ran.code))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(format!("{case}: {problem}; stderr: {err}")),
    }
}

/// A run whose every request the server refused ran, and ends as an error (exit 99) in one
/// sentence saying so: the server's answers are in the reports.
fn all_refused(ran: &Ran) -> bool {
    let errors: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    ran.code == Some(99)
        && errors.len() == 1
        && errors[0].starts_with("error: No request succeeded")
}

/// `compare` exits 1 when a figure moved past a --fail-on limit: the gate did its work.
fn gate_failed(ran: &Ran) -> bool {
    ran.code == Some(1) && ran.stderr.trim().is_empty()
}

/// Runs `cases` (name, arguments, serving, names to find in a refusal) two at a time and
/// returns every failure.
pub async fn run_all(cases: Vec<(String, Vec<String>, bool, Vec<String>)>) -> Vec<String> {
    let slots = Arc::new(Semaphore::new(2));
    let mut tasks = tokio::task::JoinSet::new();
    for (name, args, serving, names) in cases {
        let permit = slots.clone().acquire_owned().await.unwrap();
        tasks.spawn(async move {
            let _permit = permit;
            match run(&args, serving).await {
                Ok(ran) => judge(&name, &ran, &names),
                Err(e) => Err(e),
            }
        });
    }
    let mut failures = Vec::new();
    while let Some(done) = tasks.join_next().await {
        if let Err(e) = done.unwrap() {
            failures.push(e);
        }
    }
    failures.sort();
    failures
}

/// The names a refusal of `flag` of `command` may use for it: its long and short forms.
fn flag_names(command: &str, flag: &str) -> Vec<String> {
    let cli = Cli::command();
    let sub = cli.find_subcommand(command).unwrap();
    let arg = sub
        .get_arguments()
        .find(|a| {
            a.get_long() == Some(flag) || a.get_short().map(String::from).as_deref() == Some(flag)
        })
        .unwrap_or_else(|| panic!("{command} has no flag {flag}"));
    let mut names: Vec<String> = arg
        .get_long()
        .map(|l| format!("--{l}"))
        .into_iter()
        .collect();
    names.extend(arg.get_short().map(|s| format!("-{s}")));
    names.extend(
        ALSO_NAMED
            .iter()
            .filter(|(f, _)| *f == flag)
            .map(|(_, n)| n.to_string()),
    );
    names
}

/// Other flags a refusal may rightly name: a model's shape that `--shape` must settle (a
/// variable or empty dimension) is refused by naming `--shape`.
const ALSO_NAMED: &[(&str, &str)] = &[("model", "--shape")];

#[test]
fn every_flag_that_takes_a_value_is_walked_or_takes_no_number() {
    let mut problems = Vec::new();
    for command in ["profile", "serve", "sweep", "compare", "merge"] {
        let walked: BTreeSet<&str> = NUMBERS
            .iter()
            .filter(|(c, ..)| *c == command)
            .map(|(_, flag, ..)| *flag)
            .collect();
        let plain: BTreeSet<&str> = NO_NUMBER
            .iter()
            .filter(|(c, _)| *c == command)
            .flat_map(|(_, flags)| flags.iter().copied())
            .collect();
        for flag in value_flags(command) {
            let listed = walked.contains(flag.as_str()) as u8 + plain.contains(flag.as_str()) as u8;
            if listed != 1 {
                problems.push(format!("{command} {flag}: listed {listed} times"));
            }
        }
        let known = value_flags(command);
        for flag in walked.iter().chain(&plain) {
            if !known.contains(*flag) {
                problems.push(format!("{command} {flag}: no such flag"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_numeric_flag_refuses_or_runs_every_bad_number() {
    let world = World::new().await;
    let mut cases = Vec::new();
    for (command, flag, context, template) in NUMBERS {
        for bad in BAD {
            let added: Vec<String> = template
                .split_whitespace()
                .map(|w| w.replace("{}", bad))
                .collect();
            let args = world.args(*context, &added);
            let name = format!("{command} {}", added.join(" "));
            let serving = *context == Context::Serve;
            cases.push((name, args, serving, flag_names(command, flag)));
        }
    }
    let total = cases.len();
    let failures = run_all(cases).await;
    eprintln!("number walk: {total} command lines tried");
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every `.rs` file under `dir`.
fn sources(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn floats_become_durations_only_through_the_checked_helper() {
    // These panic on NaN, a negative or a huge value; `inferperf_wire::number` has the checked
    // and saturating forms.
    let panicking = [
        "from_secs_f64",
        "from_secs_f32",
        "mul_f64",
        "mul_f32",
        "div_f64",
        "div_f32",
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for tree in ["src", "crates/wire/src", "crates/server/src"] {
        sources(&root.join(tree), &mut files);
    }
    assert!(files
        .iter()
        .any(|f| f.ends_with("crates/server/src/llm/mod.rs")));
    let mut found = Vec::new();
    for file in files
        .iter()
        .filter(|f| !f.ends_with("crates/wire/src/number.rs"))
    {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if panicking.iter().any(|p| line.contains(p)) {
                found.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "use inferperf_wire::number:\n{}",
        found.join("\n")
    );
}

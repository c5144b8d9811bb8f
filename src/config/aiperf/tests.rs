//! AIPerf's command line lowered into perf_analyzer's settings, and its bad combinations.

use std::time::Duration;

use crate::cli::{normalize_args, refuse_aiperf_only, Cli, Command};
use crate::config::{
    ApiSettings, ArrivalPattern, Config, Endpoint, LoadMode, OpenAiWire, ServiceKind,
};
use clap::Parser;
use inferperf_wire::error::{RunResult, EXIT_BAD_OPTION};

fn line(args: &[&str]) -> Vec<String> {
    let mut all = vec!["inferperf".to_string(), "profile".to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    normalize_args(all)
}

/// The request path and max-tokens field of an OpenAI run.
fn wire(c: &Config) -> &OpenAiWire {
    match &c.target.api {
        ApiSettings::OpenAi(openai) => &openai.wire,
        other => panic!("not an OpenAI run: {other:?}"),
    }
}

fn config(args: &[&str]) -> RunResult<Config> {
    let cli = Cli::try_parse_from(line(args)).expect("flags parse");
    let Command::Profile(p) = cli.command else {
        panic!("expected profile");
    };
    Config::from_args(&p)
}

/// An AIPerf LLM command line's start.
const AIPERF: [&str; 6] = [
    "--model",
    "llm",
    "--url",
    "http://127.0.0.1:9",
    "--endpoint-type",
    "chat",
];

fn aiperf(rest: &[&str]) -> RunResult<Config> {
    let mut all = AIPERF.to_vec();
    all.extend_from_slice(rest);
    config(&all)
}

fn refused(result: RunResult<Config>, expected: &str) {
    let err = result.expect_err(expected);
    let text = err.to_string();
    assert_eq!(err.exit_code(), EXIT_BAD_OPTION, "{text}");
    assert!(text.contains(expected), "{text}");
    assert!(!text.contains('\n') && text.ends_with('.'), "{text}");
}

#[test]
fn an_aiperf_command_line_is_one_openai_level_of_n_requests() {
    let c = aiperf(&["--streaming", "--concurrency", "2", "--request-count", "20"]).unwrap();
    assert_eq!(c.target.service_kind(), ServiceKind::OpenAi);
    assert_eq!(
        (c.target.model_name.as_str(), c.target.url.as_str()),
        ("llm", "127.0.0.1:9")
    );
    assert_eq!(c.load.mode, LoadMode::Concurrency);
    assert_eq!(
        (c.load.concurrency.start, c.load.max_concurrency()),
        (2, Some(2))
    );
    assert_eq!(c.load.request_count, Some(20));
    assert!(c.target.streaming);
    let llm = c.target.llm().unwrap();
    assert_eq!(llm.endpoint, Endpoint::Chat);
    // AIPerf's chat requests carry max_completion_tokens; the legacy flag switches back.
    assert!(wire(&c).max_completion_tokens);
    assert_eq!(wire(&c).path, None);
    let legacy = aiperf(&["--use-legacy-max-tokens"]).unwrap();
    assert!(!wire(&legacy).max_completion_tokens);
    // GenAI-Perf's form keeps max_tokens, and so do completions.
    let genai = config(&[
        "-m",
        "m",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
    ]);
    assert!(!wire(&genai.unwrap()).max_completion_tokens);
    let completions = config(&["-m", "m", "--endpoint-type", "completions"]).unwrap();
    assert_eq!(
        completions.target.llm().unwrap().endpoint,
        Endpoint::Completions
    );
    assert!(!wire(&completions).max_completion_tokens);
}

#[test]
fn without_a_count_or_duration_a_level_is_measured_until_stable() {
    let c = aiperf(&["--concurrency", "4"]).unwrap();
    assert_eq!(
        (c.load.request_count, c.measure.benchmark_duration),
        (None, None)
    );
    assert_eq!(c.load.levels().count(), 1);
    assert_eq!(c.load.concurrency.start, 4);
    assert_eq!(c.measure.max_trials, 10);
}

#[test]
fn benchmark_duration_is_one_window_of_a_single_level() {
    let c = aiperf(&["--concurrency", "3", "--benchmark-duration", "2.5"]).unwrap();
    assert_eq!(
        c.measure.benchmark_duration,
        Some(Duration::from_millis(2500))
    );
    assert_eq!(c.load.request_count, None);
    let rate = aiperf(&["--request-rate", "5", "--benchmark-duration", "1"]).unwrap();
    assert!(matches!(rate.load.mode, LoadMode::RequestRate { .. }));
    refused(
        aiperf(&["--concurrency-range", "1:4", "--benchmark-duration", "2"]),
        "--benchmark-duration measures one level",
    );
    refused(
        aiperf(&["--benchmark-duration", "0"]),
        "--benchmark-duration is 0: give a number from 0.001 to 86400 seconds.",
    );
    refused(
        aiperf(&["--benchmark-duration", "NaN"]),
        "--benchmark-duration is NaN",
    );
}

#[test]
fn request_rate_is_one_poisson_level_and_concurrency_beside_it_a_cap() {
    let c = aiperf(&["--request-rate", "2.5", "--concurrency", "4"]).unwrap();
    let LoadMode::RequestRate {
        range,
        distribution,
    } = c.load.mode
    else {
        panic!("a rate level: {:?}", c.load.mode);
    };
    assert_eq!((range.start, range.end), (2.5, 2.5));
    assert_eq!(distribution, ArrivalPattern::Poisson);
    assert_eq!(c.load.max_concurrency, Some(4));
    let constant = aiperf(&["--request-rate", "3", "--request-distribution", "constant"]);
    assert!(matches!(
        constant.unwrap().load.mode,
        LoadMode::RequestRate {
            distribution: ArrivalPattern::Constant,
            ..
        }
    ));
    // perf_analyzer's --request-rate-range keeps its constant default.
    let pa = aiperf(&["--request-rate-range", "3"]).unwrap();
    assert!(matches!(
        pa.load.mode,
        LoadMode::RequestRate {
            distribution: ArrivalPattern::Constant,
            ..
        }
    ));
    refused(
        aiperf(&["--request-rate", "0"]),
        "--request-rate is 0: give a number from 0.001",
    );
    refused(
        aiperf(&["--request-rate", "2", "--request-rate-range", "3"]),
        "both set the request rate",
    );
    refused(
        aiperf(&[
            "--request-rate",
            "2",
            "--concurrency",
            "2",
            "--max-concurrency",
            "3",
        ]),
        "give one",
    );
    refused(
        aiperf(&["--concurrency", "2", "--concurrency-range", "3"]),
        "both set the concurrency",
    );
    refused(aiperf(&["--concurrency", "0"]), "--concurrency 0");
}

#[test]
fn the_responses_api_is_an_endpoint_type_and_an_endpoint() {
    let aiperf = config(&["-m", "m", "--endpoint-type", "responses", "--streaming"]).unwrap();
    assert_eq!(aiperf.target.service_kind(), ServiceKind::OpenAi);
    assert_eq!(aiperf.target.llm().unwrap().endpoint, Endpoint::Responses);
    assert_eq!(aiperf.target.llm().unwrap().endpoint.path(), "v1/responses");
    assert_eq!(wire(&aiperf).path, None);
    assert!(!wire(&aiperf).max_completion_tokens);
    let genai = [
        "-m",
        "m",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/responses",
    ];
    let genai = config(&genai).unwrap();
    assert_eq!(genai.target.llm().unwrap().endpoint, Endpoint::Responses);
    assert_eq!(genai.target.api.endpoint(), "v1/responses");
}

#[test]
fn endpoint_type_implies_openai_and_endpoint_is_then_the_path() {
    let c = config(&[
        "-m",
        "m",
        "--endpoint-type",
        "embeddings",
        "--endpoint",
        "v1/x",
    ])
    .unwrap();
    assert_eq!(c.target.llm().unwrap().endpoint, Endpoint::Embeddings);
    assert_eq!(wire(&c).path.as_deref(), Some("/v1/x"));
    let custom = config(&["-m", "m", "--custom-endpoint", "/my/chat"]).unwrap();
    assert_eq!(custom.target.service_kind(), ServiceKind::OpenAi);
    assert_eq!(custom.target.llm().unwrap().endpoint, Endpoint::Chat);
    assert_eq!(wire(&custom).path.as_deref(), Some("/my/chat"));
    let explicit = config(&[
        "-m",
        "m",
        "--service-kind",
        "openai",
        "--endpoint-type",
        "chat",
    ]);
    assert_eq!(explicit.unwrap().target.service_kind(), ServiceKind::OpenAi);
    refused(
        config(&[
            "-m",
            "m",
            "--service-kind",
            "triton",
            "--endpoint-type",
            "chat",
        ]),
        "not --service-kind triton",
    );
    refused(
        config(&["-m", "m", "--endpoint-type", "rankings"]),
        "--endpoint-type 'rankings'",
    );
    refused(
        config(&["-m", "m", "--custom-endpoint", "/a b"]),
        "--custom-endpoint '/a b'",
    );
    refused(
        config(&["-m", "m", "--use-legacy-max-tokens"]),
        "--use-legacy-max-tokens applies to OpenAI-compatible servers",
    );
}

#[test]
fn model_names_the_model_unless_it_defines_a_local_one() {
    let c = config(&["--model-names", "a", "--endpoint-type", "chat"]).unwrap();
    assert_eq!(c.target.model_name, "a");
    let local = config(&[
        "-m",
        "x",
        "--service-kind",
        "local",
        "--model",
        "x=identity",
    ]);
    let local = local.unwrap();
    assert_eq!(
        (
            local.target.model_name.as_str(),
            local.target.local_models().len()
        ),
        ("x", 1)
    );
    refused(
        config(&["-m", "a", "--model", "b", "--endpoint-type", "chat"]),
        "-m a and --model b name two models",
    );
    refused(
        config(&["--model", "a,b", "--endpoint-type", "chat"]),
        "one model per run",
    );
    refused(
        config(&["--model", "a", "--model", "b", "--endpoint-type", "chat"]),
        "one model per run",
    );
}

#[test]
fn goodput_limits_count_good_requests_and_judge_no_level() {
    let c = aiperf(&[
        "--goodput",
        "time_to_first_token:100 inter_token_latency:10",
        "request_latency:2500 time_to_first_token:80",
    ])
    .unwrap();
    let limits = &c.measure.goodput;
    assert_eq!(
        (limits.ttft_ms, limits.itl_ms, limits.latency_ms),
        (Some(80.0), Some(10.0), Some(2500.0))
    );
    assert_eq!(limits.given.len(), 4);
    // Not a --slo: no level is judged, so a trace replay takes it too.
    assert!(c.measure.slo.is_empty());
    let trace = aiperf(&["--goodput", "request_latency:648", "--fixed-schedule"]);
    assert!(
        trace
            .as_ref()
            .map_or_else(|e| !e.to_string().contains("--slo"), |_| true),
        "{:?}",
        trace.err()
    );
    refused(
        aiperf(&["--goodput", "output_token_throughput_per_user:600"]),
        "output_token_throughput_per_user is an AIPerf metric",
    );
    refused(
        aiperf(&["--goodput", "time_to_first_token"]),
        "not METRIC:VALUE",
    );
    refused(
        aiperf(&["--goodput", "time_to_first_token:-1"]),
        "the limit is -1: give a number from 1e-6 to 86400000 ms.",
    );
}

#[test]
fn aiperf_names_of_existing_flags_are_taken() {
    let c = aiperf(&[
        "--isl",
        "16",
        "--osl=8",
        "--osl-stddev",
        "1",
        "--num-requests",
        "7",
        "--random-seed",
        "5",
        "--header",
        "x-a: b",
        "--num-dataset-entries",
        "3",
        "--request-timeout-seconds",
        "4",
        "--num-warmup-requests",
        "2",
        "--ui-type",
        "none",
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--concurrency",
        "1",
    ])
    .unwrap();
    let llm = c.target.llm().unwrap();
    assert_eq!(
        (llm.input_tokens_mean, llm.output_tokens_mean),
        (16, Some(8))
    );
    assert_eq!((llm.output_tokens_stddev, llm.num_prompts), (1.0, 3));
    assert_eq!(
        (
            c.load.request_count,
            c.load.seed,
            c.load.warmup_request_count
        ),
        (Some(7), 5, 2)
    );
    assert_eq!(c.target.headers, vec![("x-a".to_string(), "b".to_string())]);
    assert_eq!(c.target.request_timeout, Duration::from_secs(4));
    assert!(!c.output.progress);
    assert!(aiperf(&["--ui", "dashboard"]).unwrap().output.progress);
    refused(aiperf(&["--ui-type", "fancy"]), "--ui-type 'fancy'");
    // AIPerf's -f is its YAML config: never written over with a CSV.
    refused(
        aiperf(&["-f", "run.yaml"]),
        "-f run.yaml: -f is perf_analyzer's CSV",
    );
    assert!(aiperf(&["-f", "out.csv"]).is_ok());
}

#[test]
fn an_aiperf_flag_inferperf_lacks_is_refused_by_name() {
    let sentence = |args: &[&str]| refuse_aiperf_only(&line(args));
    // AIPerf's -f config.yaml (no -m: the file would hold it) is its --config.
    for config in [
        &["-f", "config.yaml"][..],
        &["-fconfig.yml"],
        &["-f", "a.csv", "-f", "b.YAML"],
    ] {
        let text = sentence(config).expect("refused");
        assert!(text.starts_with("--config is AIPerf's"), "{text}");
    }
    assert_eq!(sentence(&["-m", "m", "-f", "out.csv"]), None);
    for flag in [
        "--zmq-host",
        "--stream",
        "--record-processor-service-count",
        "--wandb-project",
    ] {
        let text = sentence(&["-m", "m", flag, "5"]).expect(flag);
        assert!(
            text.starts_with(&format!(
                "{flag} is AIPerf's, and inferperf does not take it: "
            )),
            "{text}"
        );
    }
    // With a value attached, and after flags inferperf has.
    let text = sentence(&["--concurrency", "2", "--accuracy-tasks=mmlu"]).unwrap();
    assert!(text.starts_with("--accuracy-tasks is AIPerf's"), "{text}");
    // The flags inferperf has, under AIPerf's names too, pass; so does a value after --.
    let fine = [
        "--concurrency",
        "2",
        "--request-rate",
        "1",
        "--isl",
        "5",
        "--model",
        "m",
        "--url",
        "u",
        "--streaming",
        "--goodput",
        "request_latency:5",
        "--ui",
        "none",
        "--arrival-pattern",
        "gamma",
        "--vllm-burstiness",
        "2",
        "--request-cancellation-rate",
        "5",
        "--request-cancellation-delay",
        "1",
        "-H",
        "a: b",
    ];
    assert_eq!(sentence(&fine), None);
    assert_eq!(sentence(&["-m", "m", "--", "--stream"]), None);
    // Other commands are left to their own flags.
    let serve = vec![
        "inferperf".to_string(),
        "serve".to_string(),
        "--stream".to_string(),
    ];
    assert_eq!(refuse_aiperf_only(&serve), None);
}

//! Every option of `aiperf profile` in AIPerf 0.13, with how inferperf takes it: with
//! AIPerf's meaning, with a meaning of its own (and why), or not at all (and why). The table
//! is the one place this is said: the refusal of a flag on the command line, the dialect
//! rule (which flags are AIPerf's), docs/aiperf.md's table and the test that holds the
//! table to AIPerf's own `--help` (tests/fixtures/aiperf-0.13-profile-flags.txt) all read it.

/// How inferperf takes an AIPerf option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// With AIPerf's meaning.
    Same,
    /// Taken, with another meaning: why.
    Differently(&'static str),
    /// Refused by name (exit 3): why it cannot apply.
    Refused(&'static str),
}

/// An AIPerf option: its long names (the first is AIPerf's main one) and how it is taken.
#[derive(Debug, Clone, Copy)]
pub struct AiperfFlag {
    pub names: &'static [&'static str],
    pub taken: Taken,
}

use Taken::{Differently, Refused, Same};

const fn flag(names: &'static [&'static str], taken: Taken) -> AiperfFlag {
    AiperfFlag { names, taken }
}

/// Why AIPerf's search planners are refused.
const SEARCH: &str = "AIPerf's search planners (grid recipes, Bayesian and adaptive search over a space with SLA targets) are a search tool of their own; inferperf searches a concurrency or rate range with --binary-search and --slo for the highest level that meets a limit.";
/// Why AIPerf's accuracy benchmarks are refused.
const ACCURACY: &str = "AIPerf's accuracy benchmarks grade answers to task sets (MMLU, AIME…) with a grader; inferperf measures speed and checks answers only against expected outputs given in the input data.";
/// Why AIPerf's agentic scenarios are refused.
const SCENARIO: &str = "AIPerf's scenarios (AgentX) are AIPerf's own recipes of trajectories and their timing, not a measurement setting; replay their traces with --input-file and --custom-dataset-type.";
/// Why AIPerf's own services' settings are refused.
const SERVICES: &str = "it sets AIPerf's own processes (its message bus, record processors, control API), which inferperf, one process of tasks, does not have.";
/// Why live exports to other services are refused.
const EXPORTS: &str = "inferperf sends nothing to other services during a run; log its results.json, CSV and AIPerf files with your tracking tool.";
/// Why Baseten's trace flags are refused.
const BASETEN: &str =
    "it shapes the replay of Baseten traces (Parquet/Arrow files), which inferperf does not read.";
/// Why Weka's trace flags are refused.
const WEKA: &str =
    "it shapes the replay of Weka (SemiAnalysis) traces, which inferperf does not read.";
/// How AIPerf's trace synthesis is taken.
const SYNTHESIS: &str = "a trace is rebuilt as AIPerf's synthesizer rebuilds it; without a trace file the flag is refused (AIPerf ignores it), and a request made wholly of shared blocks keeps its short last block (AIPerf's synthesizer stops on it).";

/// AIPerf 0.13's `profile` options, in the order of its `--help`.
pub const AIPERF_FLAGS: &[AiperfFlag] = &[
    // Endpoint
    flag(&["model-names", "model"], Differently("one model per run: AIPerf's list of models (a comma list, or --model repeated) is refused, and --model NAME=KIND stays inferperf's built-in model of --service-kind local.")),
    flag(&["model-selection-strategy"], Refused("it picks among several models, and inferperf profiles one model per run.")),
    flag(&["custom-endpoint", "endpoint"], Same),
    flag(&["endpoint-type"], Differently("every type that is one request and one answer is taken; image_generation, image_edit, image_retrieval, video_generation and audio_transcription are refused by name, each with why.")),
    flag(&["streaming"], Same),
    flag(&["url"], Same),
    flag(&["url-strategy"], Same),
    flag(&["request-timeout-seconds"], Same),
    flag(&["wait-for-model-timeout"], Same),
    flag(&["wait-for-model-mode"], Differently("the wait retries inferperf's own check, the model listed at /v1/models and one short request answered, whatever the mode.")),
    flag(&["wait-for-model-interval"], Same),
    flag(&["reset-kv-cache"], Same),
    flag(&["reset-kv-cache-timeout-seconds"], Same),
    flag(&["reset-kv-cache-path"], Same),
    flag(&["server-profiler"], Same),
    flag(&["server-profiler-timeout-seconds"], Same),
    flag(&["server-profiler-start-path"], Same),
    flag(&["server-profiler-stop-path"], Same),
    flag(&["api-key"], Same),
    flag(&["transport", "transport-type"], Same),
    flag(&["use-legacy-max-tokens"], Same),
    flag(&["use-server-token-count"], Same),
    flag(&["per-chunk-usage"], Differently("the field is sent, but inferperf times every chunk and counts its tokens with the tokenizer, so its inter-token latency needs no correction from the usage.")),
    flag(&["connection-reuse-strategy"], Differently("inferperf keeps one connection per request slot (and per session), reused; `never` opens a new one for every request.")),
    flag(&["download-video-content"], Refused("it downloads the videos a dataset names by URL before sending them; inferperf sends a dataset's video URLs as given and its synthetic videos inline.")),
    flag(&["request-content-type"], Same),
    flag(&["session-header"], Same),
    flag(&["uuid-and-strip"], Refused("it strips images vLLM's multimodal cache already holds, by UUIDs of AIPerf's datasets; inferperf sends every image whole.")),
    // Tokenizer
    flag(&["tokenizer"], Same),
    flag(&["tokenizer-revision"], Same),
    flag(&["tokenizer-trust-remote-code"], Refused("inferperf reads a tokenizer's tokenizer.json and never runs a model repository's Python code.")),
    flag(&["apply-chat-template"], Same),
    // Input
    flag(&["extra-inputs"], Same),
    flag(&["header"], Same),
    flag(&["input-file"], Same),
    flag(&["public-dataset"], Differently("the text and image datasets are taken; the speech datasets (librispeech, voxpopuli, gigaspeech, ami, spgispeech), the agent-span ones (exgentic) and weka_hf are refused by name, each with why.")),
    flag(&["hf-subset"], Same),
    flag(&["hf-weka-dataset"], Refused(WEKA)),
    flag(&["dataset-filter"], Refused("it filters rows of AIPerf's agent-trace datasets (exgentic), which inferperf does not read.")),
    flag(&["custom-dataset-type"], Differently("every JSON Lines and CSV type is taken; baseten_trace (Parquet or Arrow) and tracelab (gzipped agent rounds) are refused by name, each with why.")),
    flag(&["ignore-trace-delays"], Same),
    flag(&["use-think-time-only"], Refused(WEKA)),
    flag(&["max-context-length"], Differently("requests whose prompt and asked answer exceed it are dropped and counted for every trace format, not whole Weka traces.")),
    flag(&["dataset-sampling-strategy"], Same),
    flag(&["allow-dataset-wrap", "no-allow-dataset-wrap"], Refused(WEKA)),
    flag(&["random-seed"], Same),
    flag(&["trace-session-sample-ratio"], Refused(BASETEN)),
    flag(&["config"], Refused("-f is perf_analyzer's CSV report file; inferperf reads its settings from the command line only.")),
    // Fixed schedule
    flag(&["fixed-schedule"], Same),
    flag(&["no-fixed-schedule"], Same),
    flag(&["fixed-schedule-auto-offset"], Same),
    flag(&["fixed-schedule-start-offset"], Same),
    flag(&["fixed-schedule-end-offset"], Same),
    // Goodput
    flag(&["goodput"], Same),
    // Conversation input
    flag(&["conversation-num", "num-conversations", "num-sessions"], Same),
    flag(&["num-dataset-entries", "num-prompts"], Same),
    flag(&["conversation-turn-mean", "session-turns-mean"], Same),
    flag(&["conversation-turn-stddev", "session-turns-stddev"], Same),
    flag(&["conversation-turn-delay-mean", "session-turn-delay-mean"], Same),
    flag(&["conversation-turn-delay-stddev", "session-turn-delay-stddev"], Same),
    flag(&["conversation-turn-delay-ratio", "session-delay-ratio"], Same),
    flag(&["inter-turn-delay-cap-seconds"], Same),
    flag(&["max-idle-gap-cap-seconds"], Refused(BASETEN)),
    flag(&["replay-speedup"], Differently("it speeds up the replay of every trace format, not only Baseten's.")),
    flag(&["open-loop-replay", "no-open-loop-replay"], Refused(BASETEN)),
    flag(&["open-loop-strict"], Refused(BASETEN)),
    flag(&["omit-kv-hints"], Refused(BASETEN)),
    flag(&["force-min-tokens", "no-force-min-tokens"], Refused(BASETEN)),
    // Prompt
    flag(&["prompt-batch-size", "batch-size-text", "batch-size"], Same),
    flag(&["prompt-corpus"], Same),
    flag(&["cache-bust"], Same),
    flag(&["system-prompt"], Same),
    flag(&["system-prompt-file"], Same),
    flag(&["prompt-prefix-pool-size", "prefix-prompt-pool-size", "num-prefix-prompts"], Same),
    flag(&["prompt-prefix-length", "prefix-prompt-length"], Same),
    flag(&["shared-system-prompt-length"], Same),
    flag(&["user-context-prompt-length"], Same),
    flag(&["prompt-input-tokens-mean", "synthetic-input-tokens-mean", "isl"], Same),
    flag(&["prompt-input-tokens-stddev", "synthetic-input-tokens-stddev", "isl-stddev"], Same),
    flag(&["prompt-input-tokens-block-size", "synthetic-input-tokens-block-size", "isl-block-size"], Same),
    flag(&["seq-dist", "sequence-distribution"], Same),
    flag(&["random-range-ratio"], Same),
    flag(&["random-corpus-style"], Same),
    flag(&["prompt-output-tokens-mean", "output-tokens-mean", "osl"], Same),
    flag(&["prompt-output-tokens-stddev", "output-tokens-stddev", "osl-stddev"], Same),
    // Audio, image, video
    flag(&["audio-batch-size", "batch-size-audio"], Same),
    flag(&["audio-length-mean"], Same),
    flag(&["audio-length-stddev"], Same),
    flag(&["audio-format"], Same),
    flag(&["audio-depths"], Same),
    flag(&["audio-sample-rates"], Same),
    flag(&["audio-num-channels"], Same),
    flag(&["image-width-mean"], Same),
    flag(&["image-width-stddev"], Same),
    flag(&["image-height-mean"], Same),
    flag(&["image-height-stddev"], Same),
    flag(&["image-batch-size", "batch-size-image"], Same),
    flag(&["image-format"], Same),
    flag(&["image-source"], Same),
    flag(&["image-source-sampling"], Same),
    flag(&["video-batch-size", "batch-size-video"], Same),
    flag(&["video-duration"], Same),
    flag(&["video-fps"], Same),
    flag(&["video-width"], Same),
    flag(&["video-height"], Same),
    flag(&["video-synth-type"], Same),
    flag(&["video-format"], Same),
    flag(&["video-codec"], Same),
    flag(&["video-audio-sample-rate"], Same),
    flag(&["video-audio-num-channels"], Same),
    flag(&["video-audio-codec"], Same),
    flag(&["video-audio-depth"], Same),
    // Rankings
    flag(&["rankings-passages-mean"], Same),
    flag(&["rankings-passages-stddev"], Same),
    flag(&["rankings-passages-prompt-token-mean"], Same),
    flag(&["rankings-passages-prompt-token-stddev"], Same),
    flag(&["rankings-query-prompt-token-mean"], Same),
    flag(&["rankings-query-prompt-token-stddev"], Same),
    // Synthesis
    flag(&["synthesis-speedup-ratio"], Differently(SYNTHESIS)),
    flag(&["synthesis-prefix-len-multiplier"], Differently(SYNTHESIS)),
    flag(&["synthesis-prefix-root-multiplier"], Differently(SYNTHESIS)),
    flag(&["synthesis-prompt-len-multiplier"], Differently(SYNTHESIS)),
    flag(&["synthesis-output-len-multiplier"], Differently(SYNTHESIS)),
    flag(&["synthesis-max-isl"], Differently(SYNTHESIS)),
    flag(&["synthesis-max-osl"], Differently(SYNTHESIS)),
    // Load generator
    flag(&["benchmark-duration"], Same),
    flag(&["benchmark-grace-period"], Same),
    flag(&["concurrency"], Same),
    flag(&["prefill-concurrency"], Same),
    flag(&["request-rate"], Same),
    flag(&["arrival-pattern", "request-rate-mode"], Same),
    flag(&["arrival-smoothness", "vllm-burstiness"], Same),
    flag(&["request-count", "num-requests"], Same),
    flag(&["concurrency-ramp-duration"], Same),
    flag(&["prefill-concurrency-ramp-duration"], Same),
    flag(&["request-rate-ramp-duration"], Same),
    flag(&["request-rate-series"], Same),
    flag(&["failed-request-threshold"], Differently("the run stops as in AIPerf, and ends as a failed run (exit 99), where AIPerf exits 0.")),
    flag(&["trajectory-start-min-ratio"], Refused(SCENARIO)),
    flag(&["trajectory-start-max-ratio"], Refused(SCENARIO)),
    flag(&["burst-phase-starts"], Refused(SCENARIO)),
    flag(&["trace-idle-gap-cap-seconds"], Refused(SCENARIO)),
    flag(&["system-idle-gap-cap-seconds"], Refused(SCENARIO)),
    flag(&["scenario"], Refused(SCENARIO)),
    flag(&["unsafe-override"], Refused(SCENARIO)),
    // Warm-up
    flag(&["warmup-request-count", "num-warmup-requests"], Same),
    flag(&["warmup-duration"], Same),
    flag(&["agentic-cache-warmup-duration"], Refused(SCENARIO)),
    flag(&["agentic-warmup-grace-period"], Refused(SCENARIO)),
    flag(&["num-warmup-sessions"], Same),
    flag(&["warmup-concurrency"], Same),
    flag(&["warmup-prefill-concurrency"], Same),
    flag(&["warmup-request-rate"], Same),
    flag(&["warmup-arrival-pattern"], Same),
    flag(&["warmup-grace-period"], Same),
    flag(&["warmup-concurrency-ramp-duration"], Same),
    flag(&["warmup-prefill-concurrency-ramp-duration"], Same),
    flag(&["warmup-request-rate-ramp-duration"], Same),
    // User-centric rate
    flag(&["user-centric-rate"], Same),
    flag(&["num-users"], Same),
    // Request cancellation
    flag(&["request-cancellation-rate"], Same),
    flag(&["request-cancellation-delay"], Same),
    // Output
    flag(&["output-artifact-dir", "artifact-dir"], Same),
    flag(&["profile-export-prefix", "profile-export-file"], Differently("--profile-export-file is perf_analyzer's per-request export (both tools have the name); --profile-export-prefix names the AIPerf files as AIPerf does.")),
    flag(&["export-level", "profile-export-level"], Differently("summary and records are taken; raw is refused: inferperf keeps no request or answer bytes.")),
    flag(&["slice-duration"], Same),
    flag(&["auto-plot", "no-auto-plot"], Differently("inferperf draws its charts in the HTML report (--report-dir) rather than AIPerf's PNG plots; --auto-plot writes that report into the artifact folder.")),
    flag(&["plot-required"], Differently("with --auto-plot, a report that cannot be written fails the run, as a plot that cannot be drawn does in AIPerf.")),
    flag(&["export-outputs-json"], Refused("inferperf keeps no answer's text (its figures need only times and token counts), so it has no outputs to write.")),
    flag(&["otel-url"], Refused(EXPORTS)),
    flag(&["stream"], Refused(EXPORTS)),
    flag(&["otel-resource-attributes"], Refused(EXPORTS)),
    flag(&["gen-ai-provider"], Refused(EXPORTS)),
    flag(&["mlflow-tracking-uri"], Refused(EXPORTS)),
    flag(&["mlflow-experiment"], Refused(EXPORTS)),
    flag(&["mlflow-run-name"], Refused(EXPORTS)),
    flag(&["mlflow-tag"], Refused(EXPORTS)),
    flag(&["mlflow-parent-run-id"], Refused(EXPORTS)),
    flag(&["mlflow-artifact-glob"], Refused(EXPORTS)),
    flag(&["wandb-project"], Refused(EXPORTS)),
    flag(&["wandb-entity"], Refused(EXPORTS)),
    flag(&["wandb-run-name"], Refused(EXPORTS)),
    flag(&["wandb-tag"], Refused(EXPORTS)),
    // HTTP trace
    flag(&["export-http-trace"], Refused("inferperf reports each request's HTTP phases in its figures (connecting, sending, waiting, receiving) rather than a per-request trace file.")),
    flag(&["show-trace-timing"], Refused("inferperf prints the HTTP phases of every LLM run under its table, without a flag.")),
    // Server metrics
    flag(&["server-metrics"], Differently("several pages (an engine's replicas) are added up into one engine's figures; AIPerf's export keeps each page apart.")),
    flag(&["no-server-metrics"], Same),
    flag(&["server-metrics-formats"], Differently("inferperf writes AIPerf's server_metrics_export.json and .csv; jsonl and parquet are refused.")),
    // Network latency
    flag(&["network-latency-automatic"], Refused("inferperf does not subtract a measured network delay from its figures; it reports each request's HTTP phases instead.")),
    flag(&["network-latency-mean"], Refused("inferperf does not subtract a network delay from its figures; it reports each request's HTTP phases instead.")),
    flag(&["network-latency-ping-interval"], Refused("inferperf does not ping the server for a network delay; it reports each request's HTTP phases instead.")),
    // GPU telemetry
    flag(&["gpu-telemetry"], Differently("read only when asked (AIPerf tries DCGM on localhost:9400 and 9401 unasked), from one source per run: a DCGM exporter's page or NVML (pynvml); AMD SMI, CSV files and several pages are refused.")),
    flag(&["no-gpu-telemetry"], Same),
    // UI
    flag(&["ui-type", "ui"], Differently("dashboard shows inferperf's progress line until its live dashboard lands; simple and none as in AIPerf.")),
    // Multi-run
    flag(&["num-profile-runs"], Same),
    flag(&["profile-run-cooldown-seconds"], Same),
    flag(&["confidence-level"], Same),
    flag(&["profile-run-disable-warmup-after-first", "no-profile-run-disable-warmup-after-first"], Same),
    flag(&["set-consistent-seed", "no-set-consistent-seed"], Same),
    flag(&["vary-seed-per-trial", "no-vary-seed-per-trial"], Differently("each run draws its workload with the seed plus its index, not AIPerf's SHA-256 of the seed, the label and the trial: distinct workloads, as AIPerf's, but not the same ones.")),
    flag(&["convergence-metric"], Differently("the runs stop once the figure has settled, as AIPerf documents; AIPerf 0.13 itself asks its test only under a sweep in independent mode, and otherwise makes every run.")),
    flag(&["convergence-stat"], Same),
    flag(&["convergence-threshold"], Same),
    flag(&["convergence-mode"], Differently("distribution is taken with --export-level summary too (the requests are compared in memory), where AIPerf refuses it; its p-value is counted exactly up to 10 million pairs of requests, Kolmogorov's limit beyond.")),
    flag(&["parameter-sweep-cooldown-seconds"], Same),
    flag(&["parameter-sweep-same-seed", "no-parameter-sweep-same-seed"], Same),
    flag(&["parameter-sweep-mode"], Differently("with --num-profile-runs, each value's runs follow one another in its own folder (VALUE/profile_runs/trial_NNNN, AIPerf's independent mode) whatever the mode.")),
    flag(&["sweep-type"], Same),
    flag(&["no-sweep-table"], Same),
    flag(&["search-space"], Refused(SEARCH)),
    flag(&["search-metric"], Refused(SEARCH)),
    flag(&["search-stat"], Refused(SEARCH)),
    flag(&["search-direction"], Refused(SEARCH)),
    flag(&["search-max-iterations"], Refused(SEARCH)),
    flag(&["search-initial-points"], Refused(SEARCH)),
    flag(&["search-random-seed"], Refused(SEARCH)),
    flag(&["search-planner"], Refused(SEARCH)),
    flag(&["optuna-sampler"], Refused(SEARCH)),
    flag(&["optuna-acquisition"], Refused(SEARCH)),
    flag(&["optuna-terminator"], Refused(SEARCH)),
    flag(&["search-percentile-pooling"], Refused(SEARCH)),
    flag(&["bo-constraint-mode"], Refused(SEARCH)),
    flag(&["variant", "sweep-variant"], Refused(SEARCH)),
    flag(&["search-sla"], Refused(SEARCH)),
    flag(&["search-sla-tier"], Refused(SEARCH)),
    flag(&["search-recipe"], Refused(SEARCH)),
    flag(&["ttft-sla-ms"], Refused(SEARCH)),
    flag(&["isl-osl-pairs"], Refused(SEARCH)),
    flag(&["itl-sla-ms"], Refused(SEARCH)),
    flag(&["tpot-sla-ms"], Refused(SEARCH)),
    flag(&["e2e-sla-ms"], Refused(SEARCH)),
    flag(&["error-rate-sla"], Refused(SEARCH)),
    flag(&["slo-attainment-fraction"], Refused(SEARCH)),
    flag(&["search-style"], Refused(SEARCH)),
    flag(&["degradation-threshold"], Refused(SEARCH)),
    flag(&["degradation-metric-tag"], Refused(SEARCH)),
    flag(&["degradation-stat"], Refused(SEARCH)),
    flag(&["isl-min"], Refused(SEARCH)),
    flag(&["isl-max"], Refused(SEARCH)),
    flag(&["isl-steps"], Refused(SEARCH)),
    flag(&["concurrency-min"], Refused(SEARCH)),
    flag(&["concurrency-max"], Refused(SEARCH)),
    flag(&["concurrency-steps"], Refused(SEARCH)),
    flag(&["osl-min"], Refused(SEARCH)),
    flag(&["osl-max"], Refused(SEARCH)),
    flag(&["osl-steps"], Refused(SEARCH)),
    // Accuracy
    flag(&["accuracy-benchmark"], Refused(ACCURACY)),
    flag(&["accuracy-tasks"], Refused(ACCURACY)),
    flag(&["accuracy-n-shots"], Refused(ACCURACY)),
    flag(&["accuracy-enable-cot", "accuracy-no-enable-cot"], Refused(ACCURACY)),
    flag(&["accuracy-grader"], Refused(ACCURACY)),
    flag(&["accuracy-system-prompt"], Refused(ACCURACY)),
    flag(&["accuracy-verbose"], Refused(ACCURACY)),
    // Service
    flag(&["log-level"], Differently("debug and trace are -v (per-window detail); the other levels change nothing, inferperf's console being its report.")),
    flag(&["verbose"], Differently("per-window detail and the client's overhead, perf_analyzer's -v.")),
    flag(&["extra-verbose"], Differently("-vv: perf_analyzer's extra verbose output.")),
    flag(&["record-processor-service-count", "record-processors"], Refused(SERVICES)),
    flag(&["api-port"], Refused(SERVICES)),
    flag(&["api-host"], Refused(SERVICES)),
    flag(&["stats-interval"], Differently("inferperf's progress line shows every window as it ends; the interval changes nothing.")),
    // Workers
    flag(&["workers-max", "max-workers"], Differently("it caps inferperf's client threads (--client-threads), which replace AIPerf's worker processes.")),
    // ZMQ communication
    flag(&["zmq-host"], Refused(SERVICES)),
    flag(&["zmq-ipc-path"], Refused(SERVICES)),
    flag(&["zmq-dual-bind"], Refused(SERVICES)),
];

/// The option a long name (without `--`) belongs to, if it is AIPerf's.
pub fn aiperf_flag(name: &str) -> Option<&'static AiperfFlag> {
    AIPERF_FLAGS.iter().find(|f| f.names.contains(&name))
}

/// The sentence that refuses an AIPerf flag inferperf does not take, if `name` is one.
pub fn refusal(name: &str) -> Option<String> {
    match aiperf_flag(name)?.taken {
        Refused(why) => Some(format!(
            "--{name} is AIPerf's, and inferperf does not take it: {why}"
        )),
        _ => None,
    }
}

//! AIPerf 0.13's names for the flags of an LLM run, so that an `aiperf profile ...` command
//! line runs with `aiperf` replaced by `inferperf`: the flags AIPerf has and perf_analyzer
//! does not, AIPerf's other names of flags inferperf already has, and the sentence for an
//! AIPerf flag inferperf does not have. `config::aiperf` turns them into perf_analyzer's
//! settings; this module only declares and names them.

use clap::{Args, CommandFactory};

use super::Cli;

/// The AIPerf flags of an LLM run that perf_analyzer has no name for.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "AIPerf flags (LLM runs)")]
pub struct AiperfArgs {
    /// AIPerf's API type: chat, completions, embeddings, responses, messages, the rankings
    /// types, huggingface_generate, template, raw and AIPerf 0.13's others (see
    /// docs/servers/openai.md). Implies --service-kind openai and the type's path
    /// (v1/chat/completions, ...); with it,
    /// --endpoint is AIPerf's --custom-endpoint (a path), not GenAI-Perf's endpoint. With
    /// chat the answer's length is sent as max_completion_tokens, as AIPerf does (see
    /// --use-legacy-max-tokens); with --endpoint v1/chat/completions, as max_tokens, as
    /// GenAI-Perf does.
    #[arg(long, value_name = "TYPE")]
    pub endpoint_type: Option<String>,
    /// AIPerf's: the path requests are sent to instead of the endpoint type's (e.g.
    /// /v1/custom). Implies --service-kind openai; the type is --endpoint-type's, or chat
    /// (AIPerf's default).
    #[arg(long, value_name = "PATH")]
    pub custom_endpoint: Option<String>,
    /// AIPerf's: keep N requests in flight, one level (the same as --concurrency-range N).
    /// With --request-count or --benchmark-duration it is one measurement of that many
    /// requests or seconds, as in AIPerf; without either inferperf follows perf_analyzer
    /// and measures windows until they are stable (AIPerf would send 10 requests). With
    /// --request-rate it caps the requests in flight (--max-concurrency), as in AIPerf.
    #[arg(long, value_name = "N", value_parser = one_concurrency)]
    pub concurrency: Option<u32>,
    /// AIPerf's: send R requests per second, one level (the same as --request-rate-range R),
    /// with Poisson gaps as AIPerf unless --request-distribution constant is given. With
    /// --request-count or --benchmark-duration, one measurement as under --concurrency.
    #[arg(long, value_name = "R", value_parser = one_rate)]
    pub request_rate: Option<f64>,
    /// AIPerf's gaps between open-loop requests: constant, poisson or gamma (gamma: see
    /// --arrival-smoothness). The same as --request-distribution for constant and poisson;
    /// given both, they must agree.
    #[arg(long, visible_alias = "request-rate-mode", value_name = "PATTERN")]
    pub arrival_pattern: Option<String>,
    /// AIPerf's shape of gamma arrivals (vLLM's --burstiness): gaps drawn from a gamma
    /// distribution of this shape and the rate's mean, so their coefficient of variation is
    /// 1/sqrt(S): 1 is Poisson, below 1 burstier, above 1 smoother. Implies
    /// --arrival-pattern gamma; default 1 with gamma.
    #[arg(
        long,
        visible_alias = "vllm-burstiness",
        value_name = "S",
        allow_negative_numbers = true
    )]
    pub arrival_smoothness: Option<f64>,
    /// AIPerf's: cancel this percent (0–100) of the requests, picked at random from
    /// --random-seed (a rerun picks the same sends): each picked request is sent whole,
    /// then its connection is closed --request-cancellation-delay seconds after the send
    /// and the request counts as cancelled — not an error, and in no latency or token
    /// figure. One whose answer completes before the delay is counted as answered.
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true)]
    pub request_cancellation_rate: Option<f64>,
    /// AIPerf's: seconds after the send at which a request picked by
    /// --request-cancellation-rate is cancelled (default 0: as soon as it is sent).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub request_cancellation_delay: Option<f64>,
    /// AIPerf's: one measurement of this many seconds at a single concurrency or request
    /// rate, without stability check. As in every time window of inferperf, a request counts
    /// when its answer arrives within the window; requests still in flight at its end are not
    /// waited for (AIPerf's --benchmark-grace-period is not supported).
    #[arg(long, value_name = "SECONDS")]
    pub benchmark_duration: Option<f64>,
    /// AIPerf's: a trace whose first record has a timestamp (with an explicit trace
    /// --custom-dataset-type) is not replayed at its timestamps but sent as the load flags
    /// say, as any other input file.
    #[arg(long)]
    pub no_fixed_schedule: bool,
    /// With chat: send the answer's length as max_tokens rather than max_completion_tokens
    /// (AIPerf's flag; for servers that predate max_completion_tokens). Completions always
    /// send max_tokens.
    #[arg(long)]
    pub use_legacy_max_tokens: bool,
    /// AIPerf's goodput limits, METRIC:VALUE pairs separated by spaces or repeated:
    /// time_to_first_token, inter_token_latency and request_latency, in ms (AIPerf's
    /// unit), e.g. --goodput 'time_to_first_token:100 inter_token_latency:10'. Each becomes
    /// the --slo condition ttft_p99<=VALUEms, itl_p99<=VALUEms or p99<=VALUEms: goodput
    /// counts the requests whose own figures are within every limit, and a sweep judges its
    /// levels' p99 by them.
    #[arg(long, value_name = "METRIC:MS", num_args = 1..)]
    pub goodput: Vec<String>,
    /// AIPerf's display: dashboard, simple or none. inferperf has one console display; none
    /// turns off its progress line (--no-progress), the others change nothing.
    #[arg(long = "ui-type", visible_alias = "ui", value_name = "UI")]
    pub ui_type: Option<String>,
    /// AIPerf's: do not read the server's metrics page (an AIPerf command line reads
    /// /metrics on the -u server by default, as AIPerf does).
    #[arg(long)]
    pub no_server_metrics: bool,
    /// AIPerf's: no GPU telemetry (inferperf reads it only with --gpu-telemetry).
    #[arg(long)]
    pub no_gpu_telemetry: bool,
}

/// The sentence for a comma-separated list where one run's value is read: `inferperf
/// profile` makes a run per value before parsing (see `cli::sweep_lists`).
const ONE_VALUE: &str =
    "a comma-separated list is AIPerf's sweep, a run per value; each run takes one value";

/// `--concurrency N`: one whole number (a list was made into runs before).
fn one_concurrency(text: &str) -> Result<u32, String> {
    if text.contains(',') {
        return Err(ONE_VALUE.into());
    }
    text.trim()
        .parse()
        .map_err(|_| "not a whole number of requests in flight".into())
}

/// `--request-rate R`: one number (a list was made into runs before).
fn one_rate(text: &str) -> Result<f64, String> {
    if text.contains(',') {
        return Err(ONE_VALUE.into());
    }
    text.trim()
        .parse()
        .map_err(|_| "not a number of requests per second".into())
}

/// AIPerf's other names of flags inferperf has under GenAI-Perf's or perf_analyzer's name,
/// rewritten to that name before the flags are parsed (so that inferperf's own messages
/// name its flags as perf_analyzer users know them, `-m` for one).
pub const AIPERF_ALIASES: &[(&str, &str)] = &[
    ("isl", "--synthetic-input-tokens-mean"),
    ("prompt-input-tokens-mean", "--synthetic-input-tokens-mean"),
    ("isl-stddev", "--synthetic-input-tokens-stddev"),
    (
        "prompt-input-tokens-stddev",
        "--synthetic-input-tokens-stddev",
    ),
    ("osl", "--output-tokens-mean"),
    ("prompt-output-tokens-mean", "--output-tokens-mean"),
    ("osl-stddev", "--output-tokens-stddev"),
    ("prompt-output-tokens-stddev", "--output-tokens-stddev"),
    ("num-dataset-entries", "--num-prompts"),
    ("output-artifact-dir", "--artifact-dir"),
    ("num-warmup-requests", "--warmup-request-count"),
    ("model-names", "--model"),
];

/// The help paragraph that lists [`AIPERF_ALIASES`] and the AIPerf names inferperf reads
/// with perf_analyzer's meaning.
pub const AIPERF_HELP: &str = "\
AIPerf 0.13's command line: `aiperf profile ...` runs as `inferperf profile ...` and means \
what it means in AIPerf. A command line is AIPerf's when it names a flag only AIPerf has and \
none only perf_analyzer has; then what it leaves out takes AIPerf's defaults (the chat \
endpoint, 10 requests without a bound, AIPerf's seed, prompts and artifact folder, a \
timestamped trace replayed at its timestamps) and comma-separated lists (--concurrency 1,2,4) \
are a sweep, a whole run per value. AIPerf's names also taken: --model/--model-names (as -m; --model NAME=KIND[:OPTS] stays \
a --service-kind local model), --url (as -u, with or without http://; default localhost:8000 \
in both), --header (-H), --request-count/--num-requests, --random-seed (--seed), \
--request-timeout-seconds (--request-timeout), --verbose (-v), --isl and \
--prompt-input-tokens-mean (--synthetic-input-tokens-mean), --osl and \
--prompt-output-tokens-mean (--output-tokens-mean), their -stddev forms, \
--num-dataset-entries (--num-prompts), --output-artifact-dir (--artifact-dir), \
--num-warmup-requests (--warmup-request-count); --url, --header and --extra-inputs take \
several values after one flag, and --extra-inputs a JSON object too, as in AIPerf. Where the \
two tools give a name two meanings inferperf follows perf_analyzer: -f is the CSV report (not \
AIPerf's --config; a .yaml path is refused), -b the batch size, --profile-export-file \
perf_analyzer's per-request export; --request-count is exactly N requests in one window \
(AIPerf's meaning too). docs/aiperf.md lists every AIPerf flag, taken or refused and why; a \
refused one is refused by name (exit 3), never ignored; inferperf exits 3 on a bad option \
where perf_analyzer exits 99.";

/// Rewrites AIPerf's other names ([`AIPERF_ALIASES`]) to inferperf's, `--isl 8` and
/// `--isl=8` alike; a `--` ends the options, as for clap.
pub fn rewrite_aliases(args: &mut [String]) {
    for arg in args.iter_mut() {
        if arg.as_str() == "--" {
            break;
        }
        let Some(given) = arg.strip_prefix("--") else {
            continue;
        };
        let (name, value) = match given.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (given, None),
        };
        if let Some((_, ours)) = AIPERF_ALIASES.iter().find(|(theirs, _)| *theirs == name) {
            *arg = match value {
                Some(value) if ours.starts_with("--") => format!("{ours}={value}"),
                // A short flag takes an attached value as is: `-mNAME`.
                Some(value) => format!("{ours}{value}"),
                None => ours.to_string(),
            };
        }
    }
}

/// The sentence for the first AIPerf flag of a `profile` command line that inferperf does
/// not have, if any. It is checked before clap reads the line, which would otherwise take
/// an AIPerf name that starts an inferperf one (`--stream`) for that one.
pub fn refuse_aiperf_only(args: &[String]) -> Option<String> {
    if args.get(1).map(String::as_str) != Some("profile") {
        return None;
    }
    if names_a_yaml_config(&args[2..]) {
        return super::aiperf_flags::refusal("config");
    }
    let ours = profile_long_names();
    for arg in args.iter().skip(2) {
        if arg == "--" {
            break;
        }
        let Some(name) = arg
            .strip_prefix("--")
            .map(|a| a.split('=').next().unwrap_or(a))
        else {
            continue;
        };
        if let Some(sentence) = super::aiperf_flags::refusal(name) {
            return Some(sentence);
        }
        let renamed = AIPERF_ALIASES.iter().any(|(theirs, _)| *theirs == name);
        let aiperfs = super::aiperf_flags::aiperf_flag(name).is_some();
        if aiperfs && !renamed && !ours.iter().any(|o| o == name) {
            return Some(format!(
                "--{name} is an AIPerf flag inferperf does not have yet: drop it (the AIPerf flags inferperf takes are listed in inferperf profile --help)."
            ));
        }
    }
    None
}

/// Whether `-f` names a YAML file: AIPerf's `-f/--config`, where perf_analyzer's `-f` is the
/// CSV report (refused before clap, which would first ask for the model the file holds).
fn names_a_yaml_config(args: &[String]) -> bool {
    let yaml = |path: &str| {
        let lower = path.to_ascii_lowercase();
        lower.ends_with(".yaml") || lower.ends_with(".yml")
    };
    let split = args.windows(2).any(|w| w[0] == "-f" && yaml(&w[1]));
    let joined = (args.iter()).any(|a| {
        a.strip_prefix("-f")
            .is_some_and(|p| !p.is_empty() && yaml(p.trim_start_matches('=')))
    });
    split || joined
}

/// Every long name and alias of `inferperf profile`.
fn profile_long_names() -> Vec<String> {
    let cli = Cli::command();
    let Some(profile) = cli.find_subcommand("profile") else {
        return Vec::new();
    };
    profile
        .get_arguments()
        .flat_map(|a| {
            let aliases = a.get_all_aliases().unwrap_or_default();
            a.get_long().into_iter().chain(aliases)
        })
        .map(str::to_string)
        .collect()
}

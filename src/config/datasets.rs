//! AIPerf's dataset and prompt flags (`cli::DatasetArgs`) checked once into the settings the
//! dataset box reads: a public dataset, the sampling order, system and context prompts,
//! the synthetic corpus with its length distributions (`--seq-dist`, `--random-range-ratio`)
//! and what happens to a trace's recorded waits. Each flag's own rules are here; their rules
//! with the workload's other flags are `workload::check_dataset`'s.

use crate::cli::{DatasetArgs, ProfileArgs};
use inferperf_wire::error::{RunError, RunResult};

pub use super::public_datasets::{PublicChoice, PublicDataset, Shape, Source};

/// Most tokens of a context prompt, and most texts per request.
const MOST_TOKENS: u32 = 1_000_000;
const MOST_TEXTS: u32 = 1_000;
/// Longest delay cap: a day.
const MOST_CAP_S: f64 = 86_400.0;

/// The order entries (conversations) are drawn in (`--dataset-sampling-strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// In order, wrapping around.
    Sequential,
    /// With replacement.
    Random,
    /// A new permutation each pass.
    Shuffle,
}

/// The text synthetic prompts are made of (`--prompt-corpus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Corpus {
    /// Pseudo-words (inferperf's synthetic text).
    #[default]
    Sonnet,
    /// Code-like tokens: identifiers, keywords, operators and brackets.
    Coding,
    /// Random letter strings.
    Random,
}

/// The benchmark whose window `--random-range-ratio` follows (`--random-corpus-style`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CorpusStyle {
    /// vLLM: `[floor(m(1-r)), ceil(m(1+r))]`.
    #[default]
    Vllm,
    /// SGLang: `[max(1, int(m·r)), m]`.
    Sglang,
}

/// One (input, output) length pair of `--seq-dist`, with its weight in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthPair {
    pub isl: u32,
    pub isl_stddev: f64,
    pub osl: u32,
    pub osl_stddev: f64,
    pub percent: f64,
}

/// `--random-range-ratio`: the ratio of the input and of the output window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeRatio {
    pub input: f64,
    pub output: f64,
}

/// The dataset settings of AIPerf's flags.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DatasetSettings {
    pub public: Option<PublicChoice>,
    /// `None`: the source's own (sequential; shuffle for random_pool).
    pub sampling: Option<Sampling>,
    pub ignore_trace_delays: bool,
    /// `--inter-turn-delay-cap-seconds`, in ms.
    pub delay_cap_ms: Option<f64>,
    /// `--system-prompt` or the file's text.
    pub system_prompt: Option<String>,
    pub user_context_tokens: Option<u32>,
    pub corpus: Corpus,
    pub corpus_style: CorpusStyle,
    pub seq_dist: Option<Vec<LengthPair>>,
    pub range_ratio: Option<RangeRatio>,
    /// Texts per request (`--prompt-batch-size`), `None` when not given (1).
    pub texts_per_request: Option<u32>,
    /// `--conversation-num`: random_pool's number of conversations (AIPerf's default 100).
    pub conversations: Option<u32>,
    /// `--image-batch-size`, `--audio-batch-size` and `--video-batch-size` over a
    /// random_pool: media drawn per request from the pool (set by the workload's reading).
    pub pool_media: PoolMedia,
}

/// Media of each kind drawn per request from a random_pool (`None`: not given, 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolMedia {
    pub images: Option<u32>,
    pub audios: Option<u32>,
    pub videos: Option<u32>,
}

impl PoolMedia {
    pub fn given(&self) -> bool {
        *self != PoolMedia::default()
    }
}

impl DatasetSettings {
    /// Reads the flags; `conversations` is `--conversation-num`.
    pub fn parse(args: &DatasetArgs, conversations: Option<u64>) -> RunResult<DatasetSettings> {
        let corpus_style = match args.random_corpus_style.as_deref().map(str::trim) {
            None | Some("vllm") => CorpusStyle::Vllm,
            Some("sglang") => CorpusStyle::Sglang,
            Some(other) => return Err(choice("--random-corpus-style", other, "vllm or sglang")),
        };
        Ok(DatasetSettings {
            public: super::public_datasets::parse(
                args.public_dataset.as_deref(),
                args.hf_subset.as_deref(),
            )?,
            sampling: args
                .dataset_sampling_strategy
                .as_deref()
                .map(parse_sampling)
                .transpose()?,
            ignore_trace_delays: args.ignore_trace_delays,
            delay_cap_ms: args
                .inter_turn_delay_cap_seconds
                .map(|s| {
                    inferperf_wire::number::within(
                        "--inter-turn-delay-cap-seconds",
                        s,
                        0.0,
                        MOST_CAP_S,
                        "s",
                    )
                })
                .transpose()?
                .map(|s| s * 1000.0),
            system_prompt: system_prompt(args)?,
            user_context_tokens: tokens(
                args.user_context_prompt_length,
                "--user-context-prompt-length",
            )?,
            corpus: args
                .prompt_corpus
                .as_deref()
                .map(parse_corpus)
                .transpose()?
                .unwrap_or_default(),
            corpus_style,
            seq_dist: args.seq_dist.as_deref().map(parse_seq_dist).transpose()?,
            range_ratio: args
                .random_range_ratio
                .as_deref()
                .map(|r| parse_range_ratio(r, corpus_style))
                .transpose()?,
            texts_per_request: match args.prompt_batch_size {
                Some(n) if n == 0 || n > MOST_TEXTS => {
                    return Err(RunError::bad_option(format!(
                    "--prompt-batch-size {n} must be between 1 and {MOST_TEXTS} texts per request."
                )))
                }
                n => n,
            },
            conversations: conversations.map(|n| n.min(u32::MAX as u64) as u32),
            pool_media: PoolMedia::default(),
        })
    }

    /// The flags that shape synthetic prompts only, given: (flag, given).
    pub fn synthetic_only(&self) -> [(&'static str, bool); 4] {
        [
            (
                "--user-context-prompt-length",
                self.user_context_tokens.is_some(),
            ),
            ("--seq-dist", self.seq_dist.is_some()),
            ("--random-range-ratio", self.range_ratio.is_some()),
            ("--prompt-batch-size", self.texts_per_request.is_some()),
        ]
    }
}

/// The rows AIPerf reads of a streamed public dataset: the request count, else the number
/// of dataset entries (given, else the conversations, else 100).
pub fn streamed_rows(profile: &ProfileArgs) -> usize {
    if profile.request_count > 0 {
        return profile.request_count.min(usize::MAX as u64) as usize;
    }
    match profile.llm.num_prompts {
        Some(n) => n,
        None => super::openai::default_entries(profile.sessions.conversation_num, 0),
    }
}

fn choice(flag: &str, given: &str, choices: &str) -> RunError {
    RunError::bad_option(format!("{flag} '{given}' is not one of {choices}."))
}

fn parse_sampling(text: &str) -> RunResult<Sampling> {
    match text.trim() {
        "sequential" => Ok(Sampling::Sequential),
        "random" => Ok(Sampling::Random),
        "shuffle" => Ok(Sampling::Shuffle),
        other => Err(choice(
            "--dataset-sampling-strategy",
            other,
            "sequential, random or shuffle",
        )),
    }
}

fn parse_corpus(text: &str) -> RunResult<Corpus> {
    match text.trim() {
        "sonnet" => Ok(Corpus::Sonnet),
        "coding" => Ok(Corpus::Coding),
        "random" => Ok(Corpus::Random),
        other => Err(choice("--prompt-corpus", other, "sonnet, coding or random")),
    }
}

fn tokens(value: Option<u32>, flag: &str) -> RunResult<Option<u32>> {
    match value {
        Some(n) if n == 0 || n > MOST_TOKENS => Err(RunError::bad_option(format!(
            "{flag} {n} must be between 1 and {MOST_TOKENS} tokens."
        ))),
        other => Ok(other),
    }
}

/// `--system-prompt TEXT` or `--system-prompt-file FILE` (read as it is, UTF-8).
fn system_prompt(args: &DatasetArgs) -> RunResult<Option<String>> {
    match (&args.system_prompt, &args.system_prompt_file) {
        (Some(_), Some(_)) => Err(RunError::bad_option(
            "--system-prompt and --system-prompt-file both give the system prompt: give one.",
        )),
        (Some(text), None) if text.is_empty() => Err(RunError::bad_option(
            "--system-prompt is empty: give its text, or drop the flag.",
        )),
        (Some(text), None) => Ok(Some(text.clone())),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                RunError::bad_option(format!(
                    "Cannot read --system-prompt-file {}: {e}; give a UTF-8 text file.",
                    path.display()
                ))
            })?;
            if text.is_empty() {
                return Err(RunError::bad_option(format!(
                    "--system-prompt-file {} is empty: give a file holding the system prompt.",
                    path.display()
                )));
            }
            Ok(Some(text))
        }
        (None, None) => Ok(None),
    }
}

/// `--seq-dist` in AIPerf's three forms; the weights are percentages summing to 100.
pub fn parse_seq_dist(text: &str) -> RunResult<Vec<LengthPair>> {
    let trimmed = text.trim();
    let bad = |why: String| {
        RunError::bad_option(format!(
            "--seq-dist '{text}': {why}; give ISL,OSL:PERCENT pairs such as '128,64:25;512,128:75' (or [(128,64):25,...], or JSON {{\"pairs\": [...]}})."
        ))
    };
    let pairs = if trimmed.starts_with('{') {
        json_pairs(trimmed).map_err(bad)?
    } else if let Some(inner) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        bracket_pairs(inner).map_err(bad)?
    } else {
        let items = trimmed.split(';').map(str::trim).filter(|p| !p.is_empty());
        items
            .map(pair)
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?
    };
    if pairs.is_empty() {
        return Err(bad("no pair".into()));
    }
    let total: f64 = pairs.iter().map(|p| p.percent).sum();
    if (total - 100.0).abs() > 1e-6 {
        return Err(bad(format!("the percentages add up to {total}, not 100")));
    }
    Ok(pairs)
}

/// `ISL[|SD],OSL[|SD]:PERCENT`.
fn pair(text: &str) -> Result<LengthPair, String> {
    let (lengths, percent) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("'{text}' has no ':PERCENT'"))?;
    let (isl, osl) = lengths
        .split_once(',')
        .ok_or_else(|| format!("'{text}' is not ISL,OSL:PERCENT"))?;
    let (isl, isl_stddev) = length(isl)?;
    let (osl, osl_stddev) = length(osl)?;
    checked_pair(isl, isl_stddev, osl, osl_stddev, number(percent)?)
}

fn checked_pair(
    isl: u32,
    isl_stddev: f64,
    osl: u32,
    osl_stddev: f64,
    percent: f64,
) -> Result<LengthPair, String> {
    if !(0.0..=100.0).contains(&percent) {
        return Err(format!("percentage {percent} is not within 0 to 100"));
    }
    Ok(LengthPair {
        isl,
        isl_stddev,
        osl,
        osl_stddev,
        percent,
    })
}

/// `N` or `N|STDDEV`, N a whole number of tokens of at least 1.
fn length(text: &str) -> Result<(u32, f64), String> {
    let (mean, stddev) = match text.split_once('|') {
        Some((mean, sd)) => (mean, number(sd)?),
        None => (text, 0.0),
    };
    let mean: u32 = mean
        .trim()
        .parse()
        .map_err(|_| format!("'{}' is not a whole number of tokens", mean.trim()))?;
    if mean == 0 || mean > MOST_TOKENS {
        return Err(format!("length {mean} is not between 1 and {MOST_TOKENS}"));
    }
    Ok((mean, stddev))
}

/// A number of at least 0.
fn number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        _ => Err(format!("'{}' is not a number of at least 0", text.trim())),
    }
}

/// `(ISL[|SD],OSL[|SD]):PERCENT` items separated by commas.
fn bracket_pairs(inner: &str) -> Result<Vec<LengthPair>, String> {
    let mut pairs = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let body = rest
            .strip_prefix('(')
            .ok_or_else(|| format!("'{rest}' does not start with '('"))?;
        let (lengths, after) = body
            .split_once(')')
            .ok_or_else(|| format!("'({body}' has no ')'"))?;
        let after = after
            .trim_start()
            .strip_prefix(':')
            .ok_or("a pair has no ':PERCENT'")?;
        let (percent, next) = after.split_once(',').unwrap_or((after, ""));
        pairs.push(pair(&format!("{lengths}:{percent}"))?);
        rest = next.trim();
    }
    Ok(pairs)
}

/// `{"pairs": [{"isl", "osl", "prob", "isl_stddev"?, "osl_stddev"?}]}`.
fn json_pairs(text: &str) -> Result<Vec<LengthPair>, String> {
    let root: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let items = root
        .get("pairs")
        .and_then(|p| p.as_array())
        .ok_or("the JSON has no \"pairs\" list")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |key: &str| item.get(key).and_then(serde_json::Value::as_f64);
            let (Some(isl), Some(osl), Some(prob)) = (field("isl"), field("osl"), field("prob"))
            else {
                return Err(format!("pair {i} needs \"isl\", \"osl\" and \"prob\""));
            };
            let whole = |v: f64| -> Result<u32, String> {
                match v {
                    v if v >= 1.0 && v <= MOST_TOKENS as f64 => Ok(v as u32),
                    v => Err(format!("length {v} is not between 1 and {MOST_TOKENS}")),
                }
            };
            let sd = |key: &str| number(&field(key).unwrap_or(0.0).to_string());
            checked_pair(
                whole(isl)?,
                sd("isl_stddev")?,
                whole(osl)?,
                sd("osl_stddev")?,
                prob,
            )
        })
        .collect()
}

/// `--random-range-ratio R` (or, vLLM style, `{"input": R, "output": R}`).
pub fn parse_range_ratio(text: &str, style: CorpusStyle) -> RunResult<RangeRatio> {
    let bad = |why: &str| RunError::bad_option(format!("--random-range-ratio '{text}': {why}."));
    let trimmed = text.trim();
    let (input, output) =
        match trimmed.parse::<f64>() {
            Ok(r) => (r, r),
            Err(_) if style == CorpusStyle::Sglang => return Err(bad(
                "SGLang's style takes one ratio for both lengths: give a plain number such as 0.3",
            )),
            Err(_) => {
                let value: serde_json::Value = serde_json::from_str(trimmed)
                    .map_err(|_| bad("give a number in [0, 1) or {\"input\": R, \"output\": R}"))?;
                let get = |k: &str| value.get(k).and_then(serde_json::Value::as_f64);
                match (get("input"), get("output")) {
                    (Some(i), Some(o)) => (i, o),
                    _ => {
                        return Err(bad(
                            "the JSON object needs numbers \"input\" and \"output\"",
                        ))
                    }
                }
            }
        };
    let most_open = style == CorpusStyle::Vllm;
    for r in [input, output] {
        let fits = r.is_finite() && r >= 0.0 && (r < 1.0 || (!most_open && r <= 1.0));
        if !fits {
            let range = if most_open { "[0, 1)" } else { "[0, 1]" };
            return Err(bad(&format!("the ratio {r} is not within {range}")));
        }
    }
    Ok(RangeRatio { input, output })
}

/// The window of lengths a range ratio draws from around `mean`: vLLM's symmetric one, at
/// least `least`; SGLang's `[max(1, int(mean·r)), mean]`.
pub fn window(mean: u32, ratio: f64, style: CorpusStyle, least: u32) -> (u32, u32) {
    let m = mean as f64;
    match style {
        CorpusStyle::Vllm => {
            let low = (m * (1.0 - ratio)).floor().max(least as f64) as u32;
            let high = (m * (1.0 + ratio)).ceil().max(low as f64) as u32;
            (low, high)
        }
        CorpusStyle::Sglang => (((m * ratio) as u32).max(1), mean.max(1)),
    }
}

#[cfg(test)]
#[path = "datasets_tests.rs"]
mod tests;

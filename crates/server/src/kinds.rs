//! The model kinds and the options only some kinds take (`sleep`'s service time, `fail`'s
//! rate and mode, `stream`'s responses and timing, `llm`'s token timing and `embeddings`'
//! size), read from `key=value` text and printed back. Split from [`super::def`], which reads the options every kind shares, so each
//! file says one thing.

use std::fmt;

use super::llm::prefix_cache::DEFAULT_BLOCK;
use super::llm::prompt_tokens::ServerTokenizer;

/// How a delay is drawn from its mean: the `sleep` kind's service time, the `stream`
/// kind's first response and each gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    /// Exactly the mean.
    Fixed,
    /// Uniform over `[0, 2·mean]`.
    Uniform,
    /// Normal with the mean and standard deviation mean/4, clamped at 0.
    Normal,
    /// Exponential with the mean.
    Exponential,
}

impl Dist {
    pub fn name(self) -> &'static str {
        match self {
            Dist::Fixed => "fixed",
            Dist::Uniform => "uniform",
            Dist::Normal => "normal",
            Dist::Exponential => "exponential",
        }
    }

    fn from_name(name: &str) -> Option<Dist> {
        [Dist::Fixed, Dist::Uniform, Dist::Normal, Dist::Exponential]
            .into_iter()
            .find(|d| d.name() == name)
    }
}

/// What a `fail` model does to the requests it picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailMode {
    /// Answers an error with the model's `code`.
    Error,
    /// Answers success with a valid body that lacks every output.
    BadBody,
    /// Answers success with the right outputs' names, datatypes and shapes but wrong
    /// values.
    WrongValues,
}

impl FailMode {
    pub fn name(self) -> &'static str {
        match self {
            FailMode::Error => "error",
            FailMode::BadBody => "bad_body",
            FailMode::WrongValues => "wrong_values",
        }
    }

    fn from_name(name: &str) -> Option<FailMode> {
        [FailMode::Error, FailMode::BadBody, FailMode::WrongValues]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// The error codes a `fail` model can answer with (HTTP statuses; gRPC gets the match).
pub const FAIL_CODES: [u16; 5] = [400, 404, 429, 500, 503];

/// The most responses one request of a `stream` model may ask for.
pub const MAX_STREAM_RESPONSES: u32 = 100_000;

/// The most tokens one `llm` answer may have (`output_tokens`, or a request's `max_tokens`).
pub(crate) const MAX_LLM_TOKENS: u32 = 1_000_000;

/// The most numbers one `embeddings` vector may have.
pub(crate) const MAX_EMBEDDING_DIMS: u32 = 65_536;

/// How an `llm` model times its tokens (see [`super::llm`] for the scheduling).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmTiming {
    /// From a request taking a slot to its first event, before the prompt's share.
    pub ttft_ms: f64,
    /// One decode step: every sequence in the batch gets its next event.
    pub itl_ms: f64,
    /// A step lasts this many microseconds more per sequence in the batch (a bigger batch
    /// decodes slower, as on a GPU; 0: every step `itl_ms` whatever the batch holds).
    pub itl_us_per_sequence: f64,
    /// The answer's natural length (it stops there unless `ignore_eos`); `None`: it runs
    /// to the request's `max_tokens`, or 16 without one.
    pub output_tokens: Option<u32>,
    /// The time to first token grows by this many microseconds per prompt token.
    pub prefill_us_per_token: f64,
    /// Tokens each step produces and each streamed event carries (the last may carry
    /// fewer).
    pub tokens_per_event: u32,
    /// The first this many tokens of each chat answer are sent as reasoning
    /// (`reasoning_content`), the rest as content; usage counts them in
    /// `completion_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: u32,
    /// The prefix cache's size in tokens (0: no cache; see [`super::prefix_cache`]).
    pub prefix_cache: u32,
    /// Tokens per cache block.
    pub block: u32,
    /// Counts prompts with this tokenizer instead of by words.
    pub tokenizer: Option<ServerTokenizer>,
    /// Whose names the engine's state has on `/metrics`.
    pub metrics: EngineNames,
    /// The power model of the GPU the model stands for (see [`super::gpu_power`]).
    pub gpu_watts_idle: f64,
    pub gpu_watts_per_sequence: f64,
}

/// The serving engine whose metric names an `llm` model's `/metrics` families take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineNames {
    Vllm,
    Sglang,
}

impl EngineNames {
    pub fn name(self) -> &'static str {
        match self {
            EngineNames::Vllm => "vllm",
            EngineNames::Sglang => "sglang",
        }
    }
}

/// The largest prefix cache, in tokens.
pub(crate) const MAX_PREFIX_CACHE: u32 = 1_000_000_000;

/// The largest cache block, in tokens.
pub(crate) const MAX_BLOCK: u32 = 4096;

/// What a model does with a request.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelKind {
    /// `OUTPUT0` = `INPUT0`, any datatype.
    Identity,
    /// INT32 `OUTPUT0` = `INPUT0 + INPUT1`, `OUTPUT1` = `INPUT0 - INPUT1` (wrapping).
    AddSub,
    /// Identity for BYTES tensors: each string comes back as it was sent.
    Echo,
    /// Identity after a service time of mean `ms` per execution (sleeping, or burning CPU
    /// when `spin`).
    Sleep { ms: f64, dist: Dist, spin: bool },
    /// Identity, but a fraction `rate` of requests is spoiled as `mode` says (with the
    /// error `code` for [`FailMode::Error`]).
    Fail {
        rate: f64,
        code: u16,
        mode: FailMode,
    },
    /// Decoupled identity: each request gets `responses` answers, the first `first_ms`
    /// after its execution starts and the rest `interval_ms` apart (each delay drawn from
    /// `dist`), then an empty final one.
    Stream {
        responses: u32,
        first_ms: f64,
        interval_ms: f64,
        dist: Dist,
        spin: bool,
    },
    /// Identity-shaped and doing no work.
    Noop,
    /// A stateful accumulator with Triton's sequence batching: INT32 `OUTPUT` is the running
    /// sum of `INPUT` over the requests of the sequence (see [`super::sequences`]).
    Sequence { string_ids: bool },
    /// An OpenAI-compatible text generator behind continuous batching, served on
    /// `/v1/chat/completions` and `/v1/completions` only.
    Llm(LlmTiming),
    /// OpenAI-compatible embeddings of `dims` numbers after a service time of `ms` per
    /// request and `us_per_token` per token read, served on `/v1/embeddings` and as a
    /// reranker on `/v1/ranking`, `/rerank` and `/v2/rerank`.
    Embeddings {
        dims: u32,
        ms: f64,
        us_per_token: f64,
    },
    /// A BLS (business logic scripting) model: each request runs the `calls` models in turn
    /// on its own inputs, inside this model's compute, then answers as `identity` (see
    /// [`super::bls`]). The calls count in their models' statistics as Triton counts a
    /// Python model's BLS requests.
    Bls { calls: Vec<String> },
}

/// The kinds, as error messages list them.
pub(crate) const KINDS: &str =
    "identity, add_sub, echo, sleep, fail, stream, noop, sequence, llm, embeddings, bls";

impl ModelKind {
    pub fn name(&self) -> &'static str {
        match self {
            ModelKind::Identity => "identity",
            ModelKind::AddSub => "add_sub",
            ModelKind::Echo => "echo",
            ModelKind::Sleep { .. } => "sleep",
            ModelKind::Fail { .. } => "fail",
            ModelKind::Stream { .. } => "stream",
            ModelKind::Noop => "noop",
            ModelKind::Sequence { .. } => "sequence",
            ModelKind::Llm(_) => "llm",
            ModelKind::Embeddings { .. } => "embeddings",
            ModelKind::Bls { .. } => "bls",
        }
    }

    /// The kind for a name, with its default options.
    pub fn from_name(name: &str) -> Option<ModelKind> {
        Some(match name {
            "identity" => ModelKind::Identity,
            "add_sub" => ModelKind::AddSub,
            "echo" => ModelKind::Echo,
            "sleep" => ModelKind::Sleep {
                ms: 10.0,
                dist: Dist::Fixed,
                spin: false,
            },
            "fail" => ModelKind::Fail {
                rate: 0.1,
                code: 500,
                mode: FailMode::Error,
            },
            "stream" => ModelKind::Stream {
                responses: 5,
                first_ms: 10.0,
                interval_ms: 4.0,
                dist: Dist::Fixed,
                spin: false,
            },
            "noop" => ModelKind::Noop,
            "sequence" => ModelKind::Sequence { string_ids: false },
            "llm" => ModelKind::Llm(LlmTiming {
                ttft_ms: 20.0,
                itl_ms: 5.0,
                itl_us_per_sequence: 0.0,
                output_tokens: None,
                prefill_us_per_token: 0.0,
                tokens_per_event: 1,
                reasoning_tokens: 0,
                prefix_cache: 0,
                block: DEFAULT_BLOCK,
                tokenizer: None,
                metrics: EngineNames::Vllm,
                gpu_watts_idle: 60.0,
                gpu_watts_per_sequence: 25.0,
            }),
            "embeddings" => ModelKind::Embeddings {
                dims: 16,
                ms: 1.0,
                us_per_token: 0.0,
            },
            "bls" => ModelKind::Bls { calls: Vec::new() },
            _ => return None,
        })
    }

    /// Whether an execution waits (sleeps or spins), so it must not run on an async worker.
    pub fn blocks(&self) -> bool {
        match self {
            ModelKind::Sleep { ms, .. } => *ms > 0.0,
            ModelKind::Stream { .. } => true,
            _ => false,
        }
    }

    /// Whether the model answers a request with several responses, over a stream only
    /// (Triton's decoupled transaction policy).
    pub fn decoupled(&self) -> bool {
        matches!(self, ModelKind::Stream { .. })
    }

    /// Whether the model is served only on the OpenAI routes (`/v1/...`), not over KServe.
    pub fn openai(&self) -> bool {
        matches!(self, ModelKind::Llm(_) | ModelKind::Embeddings { .. })
    }

    /// The options this kind takes beyond the common ones, as error messages list them.
    pub fn own_options(&self) -> &'static str {
        match self {
            ModelKind::Llm(_) => {
                ", ttft_ms, itl_ms, itl_us_per_sequence, output_tokens, prefill_us_per_token, tokens_per_event, reasoning_tokens, prefix_cache, block, tokenizer"
            }
            ModelKind::Embeddings { .. } => ", dims, ms, us_per_token",
            ModelKind::Fail { .. } => ", rate, mode, code",
            ModelKind::Sleep { .. } => ", ms, dist, spin",
            ModelKind::Stream { .. } => ", responses, first_ms, interval_ms, dist, spin",
            ModelKind::Sequence { .. } => ", string_ids",
            ModelKind::Bls { .. } => ", calls",
            _ => "",
        }
    }

    /// Applies an option of this kind; `None` when the kind has no such option, else the
    /// option's result where `bad` words a bad value.
    pub fn set(
        &mut self,
        key: &str,
        value: &str,
        bad: &dyn Fn(&str) -> String,
    ) -> Option<Result<(), String>> {
        match self {
            ModelKind::Sleep { ms, dist, spin } => match key {
                "ms" => Some(millis(value, bad).map(|v| *ms = v)),
                _ => set_timing(key, value, bad, dist, spin),
            },
            ModelKind::Fail { rate, code, mode } => set_fail(key, value, bad, rate, code, mode),
            ModelKind::Stream {
                responses,
                first_ms,
                interval_ms,
                dist,
                spin,
            } => match key {
                "responses" => Some(stream_responses(value, bad).map(|n| *responses = n)),
                "first_ms" => Some(millis(value, bad).map(|v| *first_ms = v)),
                "interval_ms" => Some(millis(value, bad).map(|v| *interval_ms = v)),
                _ => set_timing(key, value, bad, dist, spin),
            },
            ModelKind::Llm(timing) => set_llm(key, value, bad, timing),
            ModelKind::Sequence { string_ids } => match key {
                "string_ids" => Some(
                    (value.parse::<bool>())
                        .map(|s| *string_ids = s)
                        .map_err(|_| bad("expected true or false")),
                ),
                _ => None,
            },
            ModelKind::Embeddings {
                dims,
                ms,
                us_per_token,
            } => Some(match key {
                "dims" => whole(value, 1, MAX_EMBEDDING_DIMS, bad).map(|n| *dims = n),
                "ms" => millis(value, bad).map(|v| *ms = v),
                "us_per_token" => (value.parse::<f64>().ok())
                    .filter(|v| *v == 0.0 || (0.001..=1_000_000.0).contains(v))
                    .map(|v| *us_per_token = v)
                    .ok_or_else(|| bad("expected microseconds ≥ 0, such as 20 or 0.5")),
                _ => return None,
            }),
            ModelKind::Bls { calls } => match key {
                "calls" => Some(model_names(value, bad).map(|names| *calls = names)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Checks this kind's options against each other once all are applied; `keys` are the
    /// options the definition gave.
    pub fn check(&self, model: &str, keys: &[&str]) -> Result<(), String> {
        match self {
            ModelKind::Fail { mode, .. } if *mode != FailMode::Error && keys.contains(&"code") => {
                Err(format!(
                    "model '{model}': code= goes only with mode=error, since mode={} answers success",
                    mode.name()
                ))
            }
            _ => Ok(()),
        }
    }
}

/// A `bls` model's `calls=a+b`: model names joined by `+`, none empty.
fn model_names(value: &str, bad: &dyn Fn(&str) -> String) -> Result<Vec<String>, String> {
    let names: Vec<String> = value.split('+').map(|n| n.trim().to_string()).collect();
    match names.iter().any(String::is_empty) {
        true => Err(bad(
            "expected model names joined by '+', e.g. calls=pre+net",
        )),
        false => Ok(names),
    }
}

fn millis(value: &str, bad: &dyn Fn(&str) -> String) -> Result<f64, String> {
    (value.parse::<f64>().ok())
        .filter(|m| *m == 0.0 || (0.001..=3_600_000.0).contains(m))
        .ok_or_else(|| {
            bad("expected 0 or milliseconds from 0.001 to 3600000 (an hour), such as 10 or 0.5")
        })
}

fn stream_responses(value: &str, bad: &dyn Fn(&str) -> String) -> Result<u32, String> {
    (value.trim().parse::<u32>().ok())
        .filter(|n| *n <= MAX_STREAM_RESPONSES)
        .ok_or_else(|| {
            bad(&format!(
                "expected a whole number from 0 to {MAX_STREAM_RESPONSES}"
            ))
        })
}

/// A whole number from `low` to `high`.
fn whole(value: &str, low: u32, high: u32, bad: &dyn Fn(&str) -> String) -> Result<u32, String> {
    (value.trim().parse::<u32>().ok())
        .filter(|n| (low..=high).contains(n))
        .ok_or_else(|| bad(&format!("expected a whole number from {low} to {high}")))
}

fn set_llm(
    key: &str,
    value: &str,
    bad: &dyn Fn(&str) -> String,
    t: &mut LlmTiming,
) -> Option<Result<(), String>> {
    Some(match key {
        "ttft_ms" => millis(value, bad).map(|v| t.ttft_ms = v),
        "itl_ms" => millis(value, bad)
            .and_then(|v| {
                (v >= 0.01)
                    .then_some(v)
                    .ok_or_else(|| bad("a decode step takes at least 0.01 ms"))
            })
            .map(|v| t.itl_ms = v),
        "output_tokens" => whole(value, 1, MAX_LLM_TOKENS, bad).map(|n| t.output_tokens = Some(n)),
        "itl_us_per_sequence" => (value.parse::<f64>().ok())
            .filter(|v| *v == 0.0 || (0.001..=1_000_000.0).contains(v))
            .map(|v| t.itl_us_per_sequence = v)
            .ok_or_else(|| bad("expected microseconds ≥ 0, such as 200 or 0.5")),
        "prefill_us_per_token" => (value.parse::<f64>().ok())
            .filter(|v| *v == 0.0 || (0.001..=1_000_000.0).contains(v))
            .map(|v| t.prefill_us_per_token = v)
            .ok_or_else(|| bad("expected microseconds ≥ 0, such as 50 or 0.5")),
        "tokens_per_event" => whole(value, 1, MAX_LLM_TOKENS, bad).map(|n| t.tokens_per_event = n),
        "reasoning_tokens" => whole(value, 0, MAX_LLM_TOKENS, bad).map(|n| t.reasoning_tokens = n),
        "prefix_cache" => whole(value, 0, MAX_PREFIX_CACHE, bad).map(|n| t.prefix_cache = n),
        "block" => whole(value, 1, MAX_BLOCK, bad).map(|n| t.block = n),
        "tokenizer" => ServerTokenizer::load(value)
            .map(|tokenizer| t.tokenizer = Some(tokenizer))
            .map_err(|e| bad(&e)),
        "metrics" => match value {
            "vllm" => Ok(EngineNames::Vllm),
            "sglang" => Ok(EngineNames::Sglang),
            _ => Err(bad("expected vllm or sglang")),
        }
        .map(|names| t.metrics = names),
        "gpu_watts_idle" => watts(value, bad).map(|w| t.gpu_watts_idle = w),
        "gpu_watts_per_sequence" => watts(value, bad).map(|w| t.gpu_watts_per_sequence = w),
        _ => return None,
    })
}

/// A power model's watts: 0 to 10 kW.
fn watts(value: &str, bad: &dyn Fn(&str) -> String) -> Result<f64, String> {
    (value.trim().parse::<f64>().ok())
        .filter(|w| (0.0..=10_000.0).contains(w))
        .ok_or_else(|| bad("expected watts from 0 to 10000, such as 60 or 12.5"))
}

/// The `dist` and `spin` options `sleep` and `stream` share.
fn set_timing(
    key: &str,
    value: &str,
    bad: &dyn Fn(&str) -> String,
    dist: &mut Dist,
    spin: &mut bool,
) -> Option<Result<(), String>> {
    Some(match key {
        "dist" => Dist::from_name(value)
            .map(|d| *dist = d)
            .ok_or_else(|| bad("expected fixed, uniform, normal or exponential")),
        "spin" => (value.parse::<bool>())
            .map(|s| *spin = s)
            .map_err(|_| bad("expected true or false")),
        _ => return None,
    })
}

fn set_fail(
    key: &str,
    value: &str,
    bad: &dyn Fn(&str) -> String,
    rate: &mut f64,
    code: &mut u16,
    mode: &mut FailMode,
) -> Option<Result<(), String>> {
    Some(match key {
        "rate" => (value.parse::<f64>().ok())
            .filter(|r| (0.0..=1.0).contains(r))
            .map(|r| *rate = r)
            .ok_or_else(|| bad("expected a number between 0 and 1")),
        "code" => (value.parse::<u16>().ok())
            .filter(|c| FAIL_CODES.contains(c))
            .map(|c| *code = c)
            .ok_or_else(|| bad("expected one of 400, 404, 429, 500, 503")),
        "mode" => FailMode::from_name(value)
            .map(|m| *mode = m)
            .ok_or_else(|| bad("expected error, bad_body or wrong_values")),
        _ => return None,
    })
}

/// Writes `,dist=..` and `,spin=true` when spinning.
fn write_timing(f: &mut fmt::Formatter<'_>, dist: Dist, spin: bool) -> fmt::Result {
    write!(f, ",dist={}", dist.name())?;
    if spin {
        write!(f, ",spin=true")?;
    }
    Ok(())
}

impl ModelKind {
    /// Writes the kind's own options as `,key=value` pieces, in the form
    /// [`ModelKind::set`] reads.
    pub fn write_options(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelKind::Fail {
                rate,
                code,
                mode: FailMode::Error,
            } => write!(f, ",rate={rate},code={code}"),
            ModelKind::Fail { rate, mode, .. } => write!(f, ",rate={rate},mode={}", mode.name()),
            ModelKind::Sleep { ms, dist, spin } => {
                write!(f, ",ms={ms}")?;
                write_timing(f, *dist, *spin)
            }
            ModelKind::Stream {
                responses,
                first_ms,
                interval_ms,
                dist,
                spin,
            } => {
                write!(
                    f,
                    ",responses={responses},first_ms={first_ms},interval_ms={interval_ms}"
                )?;
                write_timing(f, *dist, *spin)
            }
            ModelKind::Llm(t) => {
                write!(f, ",ttft_ms={},itl_ms={}", t.ttft_ms, t.itl_ms)?;
                if t.itl_us_per_sequence > 0.0 {
                    write!(f, ",itl_us_per_sequence={}", t.itl_us_per_sequence)?;
                }
                if let Some(n) = t.output_tokens {
                    write!(f, ",output_tokens={n}")?;
                }
                write!(
                    f,
                    ",prefill_us_per_token={},tokens_per_event={}",
                    t.prefill_us_per_token, t.tokens_per_event
                )?;
                if t.reasoning_tokens > 0 {
                    write!(f, ",reasoning_tokens={}", t.reasoning_tokens)?;
                }
                if t.prefix_cache > 0 {
                    write!(f, ",prefix_cache={},block={}", t.prefix_cache, t.block)?;
                }
                if let Some(tokenizer) = &t.tokenizer {
                    write!(f, ",tokenizer={}", tokenizer.path())?;
                }
                write!(
                    f,
                    ",metrics={},gpu_watts_idle={},gpu_watts_per_sequence={}",
                    t.metrics.name(),
                    t.gpu_watts_idle,
                    t.gpu_watts_per_sequence
                )
            }
            ModelKind::Embeddings {
                dims,
                ms,
                us_per_token,
            } => {
                write!(f, ",dims={dims},ms={ms}")?;
                match *us_per_token {
                    0.0 => Ok(()),
                    us => write!(f, ",us_per_token={us}"),
                }
            }
            ModelKind::Sequence { string_ids: true } => write!(f, ",string_ids=true"),
            ModelKind::Bls { calls } if !calls.is_empty() => {
                write!(f, ",calls={}", calls.join("+"))
            }
            _ => Ok(()),
        }
    }
}

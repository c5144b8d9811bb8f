//! Model definitions: how a `--model NAME=KIND[:key=value,...]` flag is read into a
//! [`ModelDef`] (kind, tensors, batching, instances, dynamic batching) and printed back.
//! Every bad definition is refused here with one sentence naming the bad part, so the
//! scheduler and the models can trust what they are given.

use std::fmt;
use std::str::FromStr;

use super::kinds::KINDS;
pub use super::kinds::{Dist, FailMode, LlmTiming, ModelKind, FAIL_CODES, MAX_STREAM_RESPONSES};
pub(crate) use super::kinds::{EngineNames, MAX_LLM_TOKENS};
use inferperf_wire::model::DataType;

const COMMON: &str = "shape, max_batch, instances, queue_delay_us, preferred_batch";

/// The most instances a model may have (each batching instance is a thread).
pub(crate) const MAX_INSTANCES: u32 = 256;

/// The most sequences one `llm` engine decodes together.
pub(crate) const MAX_LLM_BATCH: u32 = 1_000_000;

/// One served model: its kind, datatype, dimensions (without the batch dimension), maximum
/// batch size (0 = the model does not batch), parallel instances and dynamic batching.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDef {
    pub name: String,
    pub kind: ModelKind,
    pub datatype: DataType,
    pub dims: Vec<i64>,
    pub max_batch: u32,
    pub instances: u32,
    /// The dynamic batcher's maximum queue delay; `None` with no preferred sizes means
    /// no dynamic batching.
    pub queue_delay_us: Option<u64>,
    pub preferred_batch: Vec<u32>,
}

impl ModelDef {
    /// A model of the kind with its default options.
    pub fn new(name: &str, kind: ModelKind) -> ModelDef {
        let (datatype, dims, max_batch) = match kind {
            ModelKind::AddSub => (DataType::Int32, vec![16], 0),
            ModelKind::Sequence { .. } => (DataType::Int32, vec![1], 0),
            ModelKind::Echo | ModelKind::Llm(_) => (DataType::Bytes, vec![1], 8),
            ModelKind::Embeddings { .. } => (DataType::Bytes, vec![1], 0),
            _ => (DataType::Fp32, vec![16], 8),
        };
        ModelDef {
            name: name.to_string(),
            kind,
            datatype,
            dims,
            max_batch,
            instances: 1,
            queue_delay_us: None,
            preferred_batch: Vec::new(),
        }
    }

    /// Whether requests are batched together (Triton: `dynamic_batching` is in the config).
    pub fn dynamic_batching(&self) -> bool {
        self.queue_delay_us.is_some() || !self.preferred_batch.is_empty()
    }

    /// The largest batch one execution takes: the largest preferred size if any, else the
    /// maximum batch size (at least 1).
    pub fn max_execution_batch(&self) -> u32 {
        let preferred = self.preferred_batch.iter().copied().max();
        preferred.unwrap_or(self.max_batch).max(1)
    }

    /// The maximum batch size KServe sees: `max_batch`, except for the OpenAI kinds, whose
    /// requests carry no batch dimension (an `llm` model's `max_batch` counts the
    /// sequences one engine decodes together).
    pub fn kserve_max_batch(&self) -> u32 {
        if self.kind.openai() {
            0
        } else {
            self.max_batch
        }
    }

    /// The shape the metadata reports: `[-1] + dims` for a batching model, else `dims`.
    pub fn metadata_shape(&self) -> Vec<i64> {
        if self.kserve_max_batch() > 0 {
            std::iter::once(-1)
                .chain(self.dims.iter().copied())
                .collect()
        } else {
            self.dims.clone()
        }
    }

    /// Applies one `key=value` option.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let bad = |what: &str| format!("option '{key}={value}' is not valid: {what}");
        if self.kind.openai() {
            return self.set_openai(key, value, &bad);
        }
        match key {
            "datatype" => self.set_datatype(value).map_err(|e| bad(&e))?,
            "shape" => self.dims = parse_dims(value).map_err(|e| bad(&e))?,
            "max_batch" => self.max_batch = parse_num(value).ok_or_else(|| bad(WHOLE))?,
            "instances" => {
                self.instances = parse_num(value)
                    .filter(|n| (1..=MAX_INSTANCES).contains(n))
                    .ok_or_else(|| bad(&format!("expected 1 to {MAX_INSTANCES}")))?
            }
            "queue_delay_us" => {
                self.queue_delay_us = Some(parse_num(value).ok_or_else(|| bad(WHOLE))?)
            }
            "preferred_batch" => {
                self.preferred_batch = parse_sizes(value).ok_or_else(|| {
                    bad("expected batch sizes ≥ 1 separated by commas, such as 4,8")
                })?
            }
            _ => return self.set_kind_option(key, value, &bad),
        }
        Ok(())
    }

    /// Applies an option of an OpenAI kind: `instances`, `max_batch` (`llm`: sequences
    /// decoded together, at least 1) and the kind's own; the tensor and dynamic batching
    /// options do not apply.
    fn set_openai(
        &mut self,
        key: &str,
        value: &str,
        bad: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        let llm = matches!(self.kind, ModelKind::Llm(_));
        let range = |low: u32, high: u32| {
            (parse_num::<u32>(value).filter(|n| (low..=high).contains(n)))
                .ok_or_else(|| bad(&format!("expected 1 to {high}")))
        };
        match key {
            "instances" => self.instances = range(1, MAX_INSTANCES)?,
            "max_batch" if llm => self.max_batch = range(1, MAX_LLM_BATCH)?,
            _ => {
                return self.kind.set(key, value, bad).unwrap_or_else(|| {
                    let common = if llm {
                        "instances, max_batch"
                    } else {
                        "instances"
                    };
                    Err(format!(
                        "option '{key}' is not known for kind {}; it takes {common}{}",
                        self.kind.name(),
                        self.kind.own_options()
                    ))
                })
            }
        }
        Ok(())
    }

    fn set_datatype(&mut self, value: &str) -> Result<(), String> {
        let datatype = value
            .parse::<DataType>()
            .map_err(|e| format!("{e}; use e.g. FP32, INT8 or BYTES"))?;
        match self.kind {
            ModelKind::AddSub if datatype != DataType::Int32 => Err("add_sub is INT32 only".into()),
            ModelKind::Echo if datatype != DataType::Bytes => Err("echo is BYTES only".into()),
            _ => {
                self.datatype = datatype;
                Ok(())
            }
        }
    }

    /// Applies an option that only some kinds take; `bad` words a bad value.
    fn set_kind_option(
        &mut self,
        key: &str,
        value: &str,
        bad: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        self.kind.set(key, value, bad).unwrap_or_else(|| {
            Err(format!(
                "option '{key}' is not known for kind {}; it takes datatype, {COMMON}{}",
                self.kind.name(),
                self.kind.own_options()
            ))
        })
    }

    /// Checks the options against each other once all are applied.
    fn check(&self) -> Result<(), String> {
        let name = &self.name;
        if self.dynamic_batching() && self.max_batch == 0 {
            return Err(format!(
                "model '{name}': dynamic batching (queue_delay_us or preferred_batch) needs max_batch ≥ 1"
            ));
        }
        if let Some(p) = (self.preferred_batch.iter()).find(|&&p| p > self.max_batch) {
            return Err(format!(
                "model '{name}': preferred_batch {p} is larger than max_batch {}",
                self.max_batch
            ));
        }
        Ok(())
    }
}

const WHOLE: &str = "expected a whole number ≥ 0";

fn parse_num<T: FromStr>(value: &str) -> Option<T> {
    value.trim().parse().ok()
}

fn parse_sizes(value: &str) -> Option<Vec<u32>> {
    let sizes: Option<Vec<u32>> = (value.split(','))
        .map(|s| parse_num::<u32>(s).filter(|&n| n >= 1))
        .collect();
    let mut sizes = sizes?;
    sizes.sort_unstable();
    sizes.dedup();
    Some(sizes)
}

/// Parses comma-separated dimensions; -1 marks a variable dimension.
fn parse_dims(value: &str) -> Result<Vec<i64>, String> {
    if value.trim().is_empty() {
        return Err("expected dimensions such as 16 or 3,224,224".into());
    }
    let dim = |d: &str| {
        let d = d.trim();
        d.parse::<i64>()
            .ok()
            .filter(|&n| n >= -1)
            .ok_or_else(|| format!("dimension '{d}' is not a whole number ≥ -1"))
    };
    let dims: Vec<i64> = value.split(',').map(dim).collect::<Result<_, _>>()?;
    let elements = dims
        .iter()
        .try_fold(1u128, |n, &d| n.checked_mul(d.max(1) as u128))
        .unwrap_or(u128::MAX);
    if elements > MAX_ELEMENTS {
        return Err(format!(
            "the shape holds {elements} elements; at most {MAX_ELEMENTS} (a 2 GiB request of 8-byte values)"
        ));
    }
    Ok(dims)
}

/// The most elements a model's shape may hold: one 2 GiB request of 8-byte values.
const MAX_ELEMENTS: u128 = 1 << 28;

/// Splits `key=value,key=value` where a value may itself hold commas (`shape=2,3`): a
/// piece without `=` continues the previous value.
fn split_options(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for piece in text.split(',') {
        match (piece.split_once('='), out.last_mut()) {
            (Some((k, v)), _) => out.push((k.trim().to_string(), v.trim().to_string())),
            (None, Some((_, v))) => {
                v.push(',');
                v.push_str(piece.trim());
            }
            (None, None) => return Err(format!("option '{piece}' is not of the form key=value")),
        }
    }
    Ok(out)
}

fn check_name(name: &str) -> Result<(), String> {
    let ok =
        !name.is_empty() && (name.chars()).all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    if ok {
        return Ok(());
    }
    Err(format!(
        "model name '{name}' must be non-empty and use only letters, digits, '_', '-' and '.'"
    ))
}

impl FromStr for ModelDef {
    type Err = String;

    /// Parses `NAME=KIND[:key=value,...]`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not of the form NAME=KIND[:key=value,...]"))?;
        let name = name.trim();
        check_name(name)?;
        let (kind, options) = rest.split_once(':').unwrap_or((rest, ""));
        let kind = ModelKind::from_name(kind.trim()).ok_or_else(|| {
            format!(
                "model kind '{}' is not known; use one of {KINDS}",
                kind.trim()
            )
        })?;
        let mut def = ModelDef::new(name, kind);
        let options = match options.trim() {
            "" => Vec::new(),
            text => split_options(text)?,
        };
        for (key, value) in &options {
            def.set(key, value)?;
        }
        def.check()?;
        let keys: Vec<&str> = options.iter().map(|(k, _)| k.as_str()).collect();
        def.kind.check(&def.name, &keys)?;
        Ok(def)
    }
}

fn join<T: ToString>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(T::to_string).collect();
    items.join(",")
}

impl fmt::Display for ModelDef {
    /// The definition in the form [`ModelDef::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}:", self.name, self.kind.name())?;
        if self.kind.openai() {
            write!(f, "instances={}", self.instances)?;
            if matches!(self.kind, ModelKind::Llm(_)) {
                write!(f, ",max_batch={}", self.max_batch)?;
            }
            return self.kind.write_options(f);
        }
        if !matches!(
            self.kind,
            ModelKind::AddSub | ModelKind::Echo | ModelKind::Sequence { .. }
        ) {
            write!(f, "datatype={},", self.datatype)?;
        }
        write!(f, "shape={},max_batch={}", join(&self.dims), self.max_batch)?;
        if self.instances != 1 {
            write!(f, ",instances={}", self.instances)?;
        }
        if let Some(d) = self.queue_delay_us {
            write!(f, ",queue_delay_us={d}")?;
        }
        if !self.preferred_batch.is_empty() {
            write!(f, ",preferred_batch={}", join(&self.preferred_batch))?;
        }
        self.kind.write_options(f)
    }
}

/// The models served when none are given: `identity` (FP32 [16], max batch 8), `add_sub`
/// (INT32 [16]) and `noop` (FP32 [16], max batch 8, no work).
pub fn default_models() -> Vec<ModelDef> {
    vec![
        ModelDef::new("identity", ModelKind::Identity),
        ModelDef::new("add_sub", ModelKind::AddSub),
        ModelDef::new("noop", ModelKind::Noop),
    ]
}

/// What each kind does and the options it alone takes, for `serve --help`; the defaults are
/// printed from [`ModelDef::new`] beside it.
const KIND_HELP: [(&str, &str); 11] = [
    ("identity", "OUTPUT0 = INPUT0, any datatype"),
    ("add_sub", "INT32 INPUT0, INPUT1 -> OUTPUT0 sum, OUTPUT1 difference"),
    ("echo", "BYTES identity"),
    (
        "sleep",
        "identity after a service time of ms per execution; dist=fixed|uniform|normal|exponential, spin=true burns CPU instead of sleeping",
    ),
    (
        "fail",
        "identity, but a share rate of requests is spoiled: mode=error (the default) answers code (400|404|429|500|503), mode=bad_body success without outputs, mode=wrong_values success with every value changed",
    ),
    (
        "stream",
        "decoupled, gRPC ModelStreamInfer only: responses answers per request, the first first_ms after the execution starts, then every interval_ms; dist and spin as sleep",
    ),
    ("noop", "identity-shaped, no work"),
    (
        "sequence",
        "INT32 INPUT -> OUTPUT, the running sum of the sequence's inputs: Triton's sequence batching (sequence_id, sequence_start, sequence_end parameters; an id without a live sequence is rejected); string_ids=true declares string correlation ids (CORRID TYPE_STRING)",
    ),
    (
        "llm",
        "OpenAI /v1/chat/completions, /v1/completions and /v1/responses, Anthropic /v1/messages, TGI /generate and /generate_stream, SOLIDO /rag/api/prompt and Triton's generate extension /v2/models/NAME[/versions/1]/generate and .../generate_stream, text_input and max_tokens in, text_output out (a request with tools, tool_choice not none, is answered with a call of the first tool whose arguments are the answer's tokens), continuous batching of max_batch sequences per engine (instances engines): first event after ttft_ms + prefill_us_per_token x (prompt tokens - cached tokens), then one event of tokens_per_event tokens every decode step of itl_ms + itl_us_per_sequence (default 0) x sequences in the batch; output_tokens=N caps the answer (default: the request's max_tokens, 16 without one); prompt tokens are whitespace-separated words, or with tokenizer=PATH the tokens of that Hugging Face tokenizer.json; prefix_cache=TOKENS (default 0: no cache) keeps a prefix cache of that many tokens in blocks of block=N tokens (16), least recently used evicted: cached tokens = the prompt's leading full blocks found there x block, answered in usage.prompt_tokens_details.cached_tokens; /metrics has the engine's state under vLLM's names (metrics=sglang: SGLang's), with its TTFT, inter-token and end-to-end histograms; each llm model stands for one GPU of the reference server's own power model, not a measurement: gpu_watts_idle + gpu_watts_per_sequence x sequences holding a slot, integrated into its energy, on a DCGM exporter page at /gpu/metrics",
    ),
    (
        "embeddings",
        "OpenAI /v1/embeddings: a unit vector of dims numbers per input after ms per request and us_per_token (default 0) per word; also a reranker on /v1/ranking, /rerank and /v2/rerank, each (query, passage) pair's words costing us_per_token",
    ),
    (
        "bls",
        "identity after calling the models calls=a+b in turn on its inputs, inside its compute (a Triton Python model's BLS requests); the called models take the same datatype and shape and count the calls in their statistics",
    ),
];

/// The long help of `serve --model`: every kind, what it does and its defaults, read from
/// the same code that parses a definition (a test holds the list to [`KINDS`]).
pub fn kinds_help() -> String {
    let mut text = String::from(
        "A model to serve, NAME=KIND[:key=value,...]; repeatable, e.g. --model slow=sleep:ms=5,instances=4. Without it: identity, add_sub and noop, with the defaults below.\n\nThe kinds, each with every option's default (instances=N runs N executions in parallel):\n",
    );
    for (name, what) in KIND_HELP {
        let Some(kind) = ModelKind::from_name(name) else {
            continue;
        };
        let def = ModelDef::new("m", kind);
        let mut defaults = def.to_string();
        defaults = defaults.split_once(':').map_or("", |(_, o)| o).to_string();
        if !defaults.contains("instances=") {
            defaults += &format!(",instances={}", def.instances);
        }
        text += &format!("\n{name}: {what}.\n  {defaults}\n");
    }
    text + "\nEvery kind but llm and embeddings also takes queue_delay_us=D and preferred_batch=a,b (none by default): dynamic batching up to max_batch, scheduled as Triton does."
}

#[cfg(test)]
mod help_tests {
    use super::*;

    #[test]
    fn kinds_help_names_every_kind_with_its_defaults() {
        let names: Vec<&str> = KIND_HELP.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.join(", "), KINDS);
        let help = kinds_help();
        for needle in [
            "\nsleep: ",
            "datatype=FP32,shape=16,max_batch=8,ms=10,dist=fixed,instances=1\n",
            "\nadd_sub: ",
            "shape=16,max_batch=0,instances=1\n",
            "rate=0.1,code=500",
            "responses=5,first_ms=10,interval_ms=4,dist=fixed",
            "instances=1,max_batch=8,ttft_ms=20,itl_ms=5,prefill_us_per_token=0,tokens_per_event=1",
            "prefix_cache=TOKENS (default 0: no cache)",
            "block=N tokens (16)",
            "tokenizer=PATH",
            "metrics=vllm,gpu_watts_idle=60,gpu_watts_per_sequence=25",
            "the reference server's own power model, not a measurement",
            "ttft_ms + prefill_us_per_token x (prompt tokens - cached tokens)",
            "instances=1,dims=16,ms=1",
        ] {
            assert!(help.contains(needle), "{needle:?} in:\n{help}");
        }
    }
}

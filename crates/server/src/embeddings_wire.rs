//! The embeddings wire format of the `embeddings` kind (`POST /v1/embeddings`): the
//! request — OpenAI's `input` (a string, strings, token ids) or the chat form's `messages`
//! — each input's vector, drawn from its content so that the same input always gets the
//! same one, and the answer. Split from [`super::openai_wire`], which re-exports it.

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};

use super::openai_wire::Message;

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// An embeddings request: OpenAI's `input`, or (vLLM's chat form, AIPerf's
/// `chat_embeddings`) `messages`, embedded as one input of all their text.
#[derive(Debug, Deserialize)]
pub(crate) struct EmbeddingsRequest {
    pub model: String,
    pub(super) input: Option<Value>,
    messages: Option<Vec<Message>>,
    encoding_format: Option<String>,
    dimensions: Option<u64>,
}

/// One input to embed: its token count and a seed drawn from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Input {
    pub tokens: u64,
    seed: u64,
}

/// FNV-1a over bytes, continuing from `hash`.
fn fnv(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

fn input_of(v: &Value) -> Option<Input> {
    match v {
        Value::String(s) => Some(Input {
            tokens: words(s),
            seed: fnv(FNV_START, s.as_bytes()),
        }),
        Value::Array(ids) if ids.iter().all(Value::is_number) => Some(Input {
            tokens: ids.len() as u64,
            seed: fnv(FNV_START, v.to_string().as_bytes()),
        }),
        _ => None,
    }
}

impl EmbeddingsRequest {
    /// The inputs: a string, a list of strings, a list of token ids or a list of such
    /// lists; the error is one sentence for a 400.
    pub(crate) fn inputs(&self) -> Result<Vec<Input>, String> {
        let bad = || {
            "input must be a string, a list of strings or a list of token ids, not empty"
                .to_string()
        };
        let Some(input) = &self.input else {
            return self.messages_input().ok_or_else(bad).map(|one| vec![one]);
        };
        let inputs = match input {
            Value::Array(items) if items.iter().all(Value::is_number) => {
                input_of(input).into_iter().collect()
            }
            Value::Array(items) => (items.iter().map(input_of))
                .collect::<Option<Vec<Input>>>()
                .ok_or_else(bad)?,
            other => input_of(other).into_iter().collect::<Vec<_>>(),
        };
        if inputs.is_empty() || matches!(input, Value::Array(a) if a.is_empty()) {
            return Err(bad());
        }
        Ok(inputs)
    }

    /// The one input of a chat-form request: the text of every message, joined by spaces.
    fn messages_input(&self) -> Option<Input> {
        let contents = self
            .messages
            .iter()
            .flatten()
            .filter_map(|m| m.content.as_ref());
        let texts: Vec<&str> = contents
            .flat_map(|c| match c {
                Value::String(s) => vec![s.as_str()],
                Value::Array(parts) => (parts.iter())
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let text = texts.join(" ");
        (!text.trim().is_empty())
            .then(|| input_of(&Value::from(text)))
            .flatten()
    }

    /// The numbers per vector: the request's `dimensions` (at most the model's `dims`),
    /// else `dims`.
    pub(crate) fn dims(&self, dims: u32) -> Result<u32, String> {
        match self.dimensions {
            None => Ok(dims),
            Some(d) if (1..=u64::from(dims)).contains(&d) => Ok(d as u32),
            Some(d) => Err(format!(
                "dimensions {d} is out of range; this model gives 1 to {dims}"
            )),
        }
    }

    /// Whether the vectors go as base64 of little-endian FP32 (else as JSON numbers).
    pub(crate) fn base64(&self) -> Result<bool, String> {
        match self.encoding_format.as_deref() {
            None | Some("float") => Ok(false),
            Some("base64") => Ok(true),
            Some(other) => Err(format!(
                "encoding_format '{other}' is not known; use float or base64"
            )),
        }
    }
}

/// The vector of an input: `dims` numbers drawn from its seed, of unit length, so the
/// same input always gets the same vector.
pub(crate) fn embedding(input: &Input, dims: u32) -> Vec<f32> {
    let mut state = input.seed;
    let mut next = || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let raw: Vec<f32> = (0..dims)
        .map(|_| (next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect();
    let norm = raw.iter().map(|x| x * x).sum::<f32>().sqrt();
    let scale = if norm > 0.0 { 1.0 / norm } else { 1.0 };
    raw.into_iter().map(|x| x * scale).collect()
}

/// The embeddings answer.
pub(crate) fn embeddings_answer(model: &str, inputs: &[Input], dims: u32, base64: bool) -> Value {
    let data: Vec<Value> = (inputs.iter().enumerate())
        .map(|(index, input)| {
            let vector = embedding(input, dims);
            let encoded = if base64 {
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": encoded})
        })
        .collect();
    let tokens: u64 = inputs.iter().map(|i| i.tokens).sum();
    json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })
}

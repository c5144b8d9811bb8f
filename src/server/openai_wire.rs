//! The OpenAI wire format of the `llm` and `embeddings` kinds (chat, completions, responses
//! and embeddings): requests read with serde (prompt tokens counted by
//! [`super::prompt_tokens`]), how many tokens an answer gets, and the answers written — whole JSON bodies, and
//! for a stream each event's bytes built once per request so that sending an event is a
//! reference-count increment. Free of scheduling and of HTTP, which the OpenAI routes of
//! [`super::http`] add.

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::{json, Value};

use super::def::{LlmTiming, MAX_LLM_TOKENS};
use super::prefix_cache::block_hashes;
use super::prompt_tokens::PromptReader;

/// The tokens an answer has when neither the model nor the request bounds it (as OpenAI's
/// completions default `max_tokens`).
pub const DEFAULT_TOKENS: u32 = 16;

/// The text of one token: one word and a space, so that counting words counts tokens.
pub const TOKEN: &str = "tok ";

/// `/v1/chat/completions`, `/v1/completions` or `/v1/responses`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Completions,
    Responses,
}

impl Api {
    fn object(self, chunk: bool) -> &'static str {
        match (self, chunk) {
            (Api::Chat, false) => "chat.completion",
            (Api::Chat, true) => "chat.completion.chunk",
            (Api::Completions, _) => "text_completion",
            (Api::Responses, _) => "response",
        }
    }
}

/// A chat, completions or responses request; fields it does not know (temperature, ...)
/// are ignored.
#[derive(Debug, Deserialize)]
pub struct GenerateRequest {
    pub model: String,
    messages: Option<Vec<Message>>,
    prompt: Option<Value>,
    /// The Responses API's prompt: a string, or a list of messages.
    input: Option<Value>,
    max_output_tokens: Option<u64>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    min_tokens: Option<u64>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    n: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Message {
    content: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
}

/// What an accepted request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub prompt_tokens: u32,
    /// Tokens generated.
    pub tokens: u32,
    /// "length" when the answer stops at the request's limit, "stop" at its natural end.
    pub finish: &'static str,
    pub stream: bool,
    /// Whether a stream ends with a usage chunk.
    pub usage: bool,
    /// The first this many tokens are reasoning (chat only).
    pub reasoning: u32,
    /// With a prefix cache, the prompt tokens it held (filled in once the engine looked);
    /// `None` without one, and the usage then has no `prompt_tokens_details`.
    pub cached: Option<u32>,
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

impl GenerateRequest {
    /// Whether the client wants a stream.
    pub fn stream(&self) -> bool {
        self.stream == Some(true)
    }

    /// The prompt's tokens counted as the model counts them (words, or its tokenizer),
    /// with its units when the model has a prefix cache (else none).
    fn read_prompt(&self, api: Api, timing: &LlmTiming) -> Result<(u64, Vec<u64>), String> {
        let mut reader = PromptReader::new(timing.tokenizer.as_ref(), timing.prefix_cache > 0);
        match (api, &self.messages, &self.prompt) {
            (Api::Chat, Some(messages), _) => (messages.iter())
                .filter_map(|m| m.content.as_ref())
                .try_for_each(|c| reader.content(c))?,
            (Api::Chat, None, _) => return Err("a chat request needs 'messages'".into()),
            (Api::Completions, _, Some(prompt)) => reader.prompt(prompt)?,
            (Api::Completions, _, None) => {
                return Err("a completions request needs 'prompt'".into())
            }
            (Api::Responses, _, _) => match &self.input {
                Some(input) => reader.input(input)?,
                None => return Err("a responses request needs 'input'".into()),
            },
        }
        Ok((reader.count(), reader.into_units()))
    }

    /// Checks the request and works out its answer, with the names of the prompt's blocks
    /// for the prefix cache (none without one); the error is one sentence for a 400.
    ///
    /// The answer's natural length is the model's `output_tokens` (none: unbounded), and
    /// it stops at the request's `max_completion_tokens` or `max_tokens` if sooner
    /// (finish "length"); `ignore_eos` runs it to that limit; `min_tokens` lengthens it.
    /// With neither length nor limit it has [`DEFAULT_TOKENS`].
    pub fn prepare(&self, api: Api, timing: &LlmTiming) -> Result<(Plan, Vec<u64>), String> {
        let (prompt, units) = self.read_prompt(api, timing)?;
        if self.n.is_some_and(|n| n != 1) {
            return Err("inferperf serve answers one choice per request; n must be 1".into());
        }
        let limit = (self.max_output_tokens)
            .or(self.max_completion_tokens)
            .or(self.max_tokens);
        let limit = match limit {
            Some(l) if l == 0 || l > u64::from(MAX_LLM_TOKENS) => {
                return Err(format!(
                    "max_tokens {l} is out of range; ask for 1 to {MAX_LLM_TOKENS} tokens"
                ))
            }
            l => l.map(|l| l as u32),
        };
        let natural = timing
            .output_tokens
            .filter(|_| self.ignore_eos != Some(true));
        let mut tokens = match (natural, limit) {
            (Some(n), Some(l)) => n.min(l),
            (Some(n), None) => n,
            (None, Some(l)) => l,
            (None, None) => DEFAULT_TOKENS,
        };
        if let Some(min) = self.min_tokens {
            let most = limit.unwrap_or(MAX_LLM_TOKENS);
            if min > u64::from(most) {
                return Err(format!("min_tokens {min} is more than max_tokens {most}"));
            }
            tokens = tokens.max(min as u32);
        }
        let stopped_by_limit = limit == Some(tokens) || (natural.is_none() && limit.is_none());
        let options = self.stream_options.as_ref();
        let plan = Plan {
            prompt_tokens: u32::try_from(prompt).unwrap_or(u32::MAX),
            tokens,
            finish: if stopped_by_limit { "length" } else { "stop" },
            stream: self.stream(),
            // A Responses stream always ends with the usage.
            usage: options.and_then(|o| o.include_usage) == Some(true) || api == Api::Responses,
            reasoning: match api {
                Api::Chat => timing.reasoning_tokens.min(tokens),
                Api::Completions | Api::Responses => 0,
            },
            cached: (timing.prefix_cache > 0).then_some(0),
        };
        let blocks = match timing.prefix_cache {
            0 => Vec::new(),
            _ => block_hashes(&units, timing.block),
        };
        Ok((plan, blocks))
    }
}

fn usage(plan: &Plan) -> Value {
    let (prompt, completion) = (plan.prompt_tokens, plan.tokens);
    let total = u64::from(prompt) + u64::from(completion);
    let mut usage =
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total});
    if plan.reasoning > 0 {
        usage["completion_tokens_details"] = json!({"reasoning_tokens": plan.reasoning});
    }
    if let Some(cached) = plan.cached {
        usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
    }
    usage
}

/// The JSON delta (or message) of tokens `from..to` of an answer whose first `reasoning`
/// tokens are reasoning: `"reasoning_content"` and `"content"` as each has tokens.
fn delta_fields(from: u32, to: u32, reasoning: u32) -> String {
    let thinking = reasoning.clamp(from, to) - from;
    let content = to - from - thinking;
    let mut fields = Vec::new();
    if thinking > 0 {
        let text = TOKEN.repeat(thinking as usize);
        fields.push(format!("\"reasoning_content\":\"{text}\""));
    }
    if content > 0 || thinking == 0 {
        let text = TOKEN.repeat(content as usize);
        fields.push(format!("\"content\":\"{text}\""));
    }
    fields.join(",")
}

/// A Responses API response object: in progress (no output yet), or done — `completed`, or
/// `incomplete` when the answer stopped at `max_output_tokens` — with its text and usage.
fn response_object(id: &str, created: u64, model: Value, plan: &Plan, done: bool) -> Value {
    let status = match (done, plan.finish) {
        (false, _) => "in_progress",
        (true, "length") => "incomplete",
        (true, _) => "completed",
    };
    let mut response = json!({
        "id": id,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": model,
        "output": [],
        "usage": null,
    });
    if done {
        let text = TOKEN.repeat(plan.tokens as usize);
        let content = json!([{"type": "output_text", "text": text, "annotations": []}]);
        let message = json!({"type": "message", "id": format!("msg-{id}"), "status": "completed",
            "role": "assistant", "content": content});
        response["output"] = json!([message]);
        let (input, output) = (plan.prompt_tokens, plan.tokens);
        response["usage"] = json!({"input_tokens": input, "output_tokens": output,
            "total_tokens": u64::from(input) + u64::from(output),
            "output_tokens_details": {"reasoning_tokens": 0}});
    }
    if status == "incomplete" {
        response["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    response
}

/// The whole answer of a request that did not ask for a stream.
pub fn answer(api: Api, id: &str, created: u64, model: &str, plan: &Plan) -> Value {
    if api == Api::Responses {
        return response_object(id, created, model.into(), plan, true);
    }
    let text = TOKEN.repeat(plan.tokens as usize);
    let choice = match api {
        Api::Chat => {
            let mut message = json!({"role": "assistant"});
            let thinking = TOKEN.repeat(plan.reasoning as usize);
            if plan.reasoning > 0 {
                message["reasoning_content"] = thinking.into();
            }
            message["content"] = TOKEN.repeat((plan.tokens - plan.reasoning) as usize).into();
            json!({
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": plan.finish,
            })
        }
        Api::Completions | Api::Responses => json!({
            "index": 0,
            "text": text,
            "logprobs": null,
            "finish_reason": plan.finish,
        }),
    };
    json!({
        "id": id,
        "object": api.object(false),
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(plan),
    })
}

/// A stream's events as bytes: the first, a full one, the last, and what follows the
/// last (the final chunk, the usage chunk if asked for, and `[DONE]`). An answer with
/// reasoning has each of its events apart (`each`), as they differ. With a prefix cache
/// the usage chunk is written at the end ([`Events::write_tail`]), once the cached tokens
/// are known; otherwise the whole tail is built beforehand.
#[derive(Debug, Clone)]
pub struct Events {
    pub first: Bytes,
    pub full: Bytes,
    pub last: Bytes,
    pub tail: Bytes,
    pub each: Option<Vec<Bytes>>,
    /// The usage chunk's head and the plan, when it waits for the cached tokens.
    usage_later: Option<(String, Plan)>,
}

impl Events {
    /// Writes what follows the last event, the usage counting `cached` prompt tokens as
    /// held by the prefix cache (when the model has one).
    pub fn write_tail(&self, out: &mut BytesMut, cached: u32) {
        out.extend_from_slice(&self.tail);
        if let Some((head, plan)) = &self.usage_later {
            let plan = Plan {
                cached: Some(cached),
                ..*plan
            };
            let usage = usage(&plan);
            out.extend_from_slice(format!("{head}],\"usage\":{usage}}}\n\n").as_bytes());
            out.extend_from_slice(b"data: [DONE]\n\n");
        }
    }
}

impl Events {
    /// Event `i` (from 1) of `total`.
    pub fn event(&self, i: u32, total: u32) -> &Bytes {
        if let Some(each) = &self.each {
            if let Some(event) = each.get(i.saturating_sub(1) as usize) {
                return event;
            }
        }
        match i {
            1 => &self.first,
            i if i == total => &self.last,
            _ => &self.full,
        }
    }
}

impl Events {
    /// The events of a stream of `plan.tokens` tokens, `per_event` to an event.
    /// `model_json` is the model's name as a JSON string.
    pub fn new(
        api: Api,
        id: &str,
        created: u64,
        model_json: &str,
        plan: &Plan,
        per_event: u32,
    ) -> Events {
        if api == Api::Responses {
            return Events::responses(id, created, model_json, plan, per_event);
        }
        let object = api.object(true);
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":{model_json},\"choices\":["
        );
        let event = |choice: String| Bytes::from(format!("{head}{choice}]}}\n\n"));
        let reasoning = plan.reasoning;
        let choice = |role: bool, from: u32, to: u32, finish: &str| {
            let text = TOKEN.repeat((to - from) as usize);
            let fields = delta_fields(from, to, reasoning);
            match (api, role) {
                (Api::Completions | Api::Responses, _) => format!(
                    "{{\"index\":0,\"text\":\"{text}\",\"logprobs\":null,\"finish_reason\":{finish}}}"
                ),
                (Api::Chat, true) => format!(
                    "{{\"index\":0,\"delta\":{{\"role\":\"assistant\",{fields}}},\"logprobs\":null,\"finish_reason\":{finish}}}"
                ),
                (Api::Chat, false) => format!(
                    "{{\"index\":0,\"delta\":{{{fields}}},\"logprobs\":null,\"finish_reason\":{finish}}}"
                ),
            }
        };
        let per_event = per_event.max(1);
        let events = plan.tokens.div_ceil(per_event).max(1);
        let last_tokens = plan.tokens - (events - 1) * per_event;
        let mut tail = BytesMut::new();
        let finish = format!("\"{}\"", plan.finish);
        let end = plan.tokens;
        tail.extend_from_slice(&event(choice(false, end, end, &finish)));
        let usage_later = (plan.usage && plan.cached.is_some()).then(|| (head.clone(), *plan));
        if usage_later.is_none() {
            if plan.usage {
                let usage = usage(plan);
                tail.extend_from_slice(format!("{head}],\"usage\":{usage}}}\n\n").as_bytes());
            }
            tail.extend_from_slice(b"data: [DONE]\n\n");
        }
        let each = (reasoning > 0).then(|| {
            (0..events)
                .map(|k| {
                    let from = k * per_event;
                    event(choice(k == 0, from, (from + per_event).min(end), "null"))
                })
                .collect()
        });
        // Without reasoning, a full event's tokens are all content wherever it lies.
        let last_from = end - last_tokens;
        Events {
            first: event(choice(true, 0, per_event.min(end), "null")),
            full: event(choice(false, end, end + per_event, "null")),
            last: event(choice(false, last_from, end, "null")),
            tail: tail.freeze(),
            each,
            usage_later,
        }
    }
}

impl Events {
    /// The typed events of a Responses API stream: `response.created` and
    /// `response.in_progress` before the first text, a `response.output_text.delta` per
    /// event, then `response.output_text.done` and `response.completed` (or
    /// `response.incomplete`) with the whole response and its usage. No `data: [DONE]`.
    fn responses(id: &str, created: u64, model_json: &str, plan: &Plan, per_event: u32) -> Events {
        let model: Value = serde_json::from_str(model_json).unwrap_or_default();
        let typed = |kind: &str, mut data: Value| {
            data["type"] = kind.into();
            format!("event: {kind}\ndata: {data}\n\n")
        };
        let item = format!("msg-{id}");
        let part = json!({"item_id": item, "output_index": 0, "content_index": 0});
        let delta = |tokens: u32| {
            let mut data = part.clone();
            data["delta"] = TOKEN.repeat(tokens as usize).into();
            typed("response.output_text.delta", data)
        };
        let started = response_object(id, created, model.clone(), plan, false);
        let finished = response_object(id, created, model, plan, true);
        let end = match plan.finish {
            "length" => "response.incomplete",
            _ => "response.completed",
        };
        let mut done = part.clone();
        done["text"] = TOKEN.repeat(plan.tokens as usize).into();
        let tail =
            typed("response.output_text.done", done) + &typed(end, json!({"response": finished}));
        let per_event = per_event.max(1);
        let events = plan.tokens.div_ceil(per_event).max(1);
        let head = typed("response.created", json!({"response": started}))
            + &typed("response.in_progress", json!({"response": started}));
        Events {
            first: Bytes::from(head + &delta(per_event.min(plan.tokens))),
            full: Bytes::from(delta(per_event)),
            last: Bytes::from(delta(plan.tokens - (events - 1) * per_event)),
            tail: Bytes::from(tail),
            each: None,
            usage_later: None,
        }
    }
}

/// The event that ends a stream the server cut short.
pub fn error_event(message: &str) -> Bytes {
    let error = json!({"error": {"message": message, "type": "server_error", "code": null}});
    Bytes::from(format!("data: {error}\n\n"))
}

/// An embeddings request.
#[derive(Debug, Deserialize)]
pub struct EmbeddingsRequest {
    pub model: String,
    input: Value,
    encoding_format: Option<String>,
    dimensions: Option<u64>,
}

/// One input to embed: its token count and a seed drawn from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input {
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
    pub fn inputs(&self) -> Result<Vec<Input>, String> {
        let bad = || {
            "input must be a string, a list of strings or a list of token ids, not empty"
                .to_string()
        };
        let inputs = match &self.input {
            Value::Array(items) if items.iter().all(Value::is_number) => {
                input_of(&self.input).into_iter().collect()
            }
            Value::Array(items) => (items.iter().map(input_of))
                .collect::<Option<Vec<Input>>>()
                .ok_or_else(bad)?,
            other => input_of(other).into_iter().collect::<Vec<_>>(),
        };
        if inputs.is_empty() || matches!(&self.input, Value::Array(a) if a.is_empty()) {
            return Err(bad());
        }
        Ok(inputs)
    }

    /// The numbers per vector: the request's `dimensions` (at most the model's `dims`),
    /// else `dims`.
    pub fn dims(&self, dims: u32) -> Result<u32, String> {
        match self.dimensions {
            None => Ok(dims),
            Some(d) if (1..=u64::from(dims)).contains(&d) => Ok(d as u32),
            Some(d) => Err(format!(
                "dimensions {d} is out of range; this model gives 1 to {dims}"
            )),
        }
    }

    /// Whether the vectors go as base64 of little-endian FP32 (else as JSON numbers).
    pub fn base64(&self) -> Result<bool, String> {
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
pub fn embedding(input: &Input, dims: u32) -> Vec<f32> {
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
pub fn embeddings_answer(model: &str, inputs: &[Input], dims: u32, base64: bool) -> Value {
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

#[cfg(test)]
#[path = "openai_wire_tests.rs"]
mod tests;

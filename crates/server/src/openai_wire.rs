//! The OpenAI wire format of the `llm` and `embeddings` kinds (chat, completions, responses
//! and embeddings): requests read with serde (prompt tokens counted by
//! [`super::prompt_tokens`]), how many tokens an answer gets, and the answers written — whole JSON bodies, and
//! for a stream each event's bytes built once per request so that sending an event is a
//! reference-count increment. Free of scheduling and of HTTP, which the OpenAI routes of
//! [`super::http`] add.

#[cfg(test)]
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::{json, Value};

pub(crate) use super::answer_parts::{Events, Plan, TOKEN};
use super::def::{LlmTiming, MAX_LLM_TOKENS};
use super::llm::prefix_cache::block_hashes;
use super::llm::prompt_tokens::PromptReader;

/// The tokens an answer has when neither the model nor the request bounds it (as OpenAI's
/// completions default `max_tokens`).
pub(crate) const DEFAULT_TOKENS: u32 = 16;

/// `/v1/chat/completions`, `/v1/completions`, `/v1/responses`, Anthropic's `/v1/messages`,
/// TGI's `/generate` (and `/generate_stream`), SOLIDO's `/rag/api/prompt` or Triton's
/// `/v2/models/{m}/generate` (and `generate_stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Chat,
    Completions,
    Responses,
    Messages,
    Generate,
    Rag,
    Triton,
}

impl Api {
    fn object(self, chunk: bool) -> &'static str {
        match (self, chunk) {
            (Api::Chat, false) => "chat.completion",
            (Api::Chat, true) => "chat.completion.chunk",
            (Api::Completions | Api::Generate | Api::Rag | Api::Triton, _) => "text_completion",
            (Api::Responses, _) => "response",
            (Api::Messages, _) => "message",
        }
    }
}

/// A chat, completions or responses request; fields it does not know (temperature, ...)
/// are ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct GenerateRequest {
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
    /// Anthropic's top-level system prompt (a string or text blocks).
    system: Option<Value>,
    /// Tool definitions; with any (and `tool_choice` not `"none"`) the answer is a call of
    /// the first.
    tools: Option<Vec<Value>>,
    tool_choice: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Message {
    pub(super) content: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
}

impl GenerateRequest {
    /// Whether the client wants a stream.
    pub(crate) fn stream(&self) -> bool {
        self.stream == Some(true)
    }

    /// A request of a prompt's text alone (TGI's `inputs`, SOLIDO's `query`), read as a
    /// completions prompt.
    pub(crate) fn of_text(model: &str, text: Value, max_tokens: Option<u64>, stream: bool) -> Self {
        GenerateRequest {
            model: model.to_string(),
            messages: None,
            prompt: Some(text),
            input: None,
            max_output_tokens: None,
            max_tokens,
            max_completion_tokens: None,
            min_tokens: None,
            ignore_eos: None,
            stream: Some(stream),
            stream_options: None,
            n: None,
            system: None,
            tools: None,
            tool_choice: None,
        }
    }

    /// The request with `min_tokens` and `ignore_eos` (Triton's generate takes them as
    /// inputs beside the text).
    pub(crate) fn bounded(self, min_tokens: Option<u64>, ignore_eos: Option<bool>) -> Self {
        GenerateRequest {
            min_tokens,
            ignore_eos,
            ..self
        }
    }

    /// The tool the answer calls: the first of the request's tools (its `function.name`,
    /// or Anthropic's `name`), unless there are none or `tool_choice` is `"none"`.
    pub(crate) fn tool_name(&self) -> Option<String> {
        let first = self.tools.as_ref()?.first()?;
        if self.tool_choice.as_ref().and_then(Value::as_str) == Some("none") {
            return None;
        }
        let name = (first.pointer("/function/name").or(first.get("name")))
            .and_then(Value::as_str)
            .unwrap_or("tool");
        Some(name.to_string())
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
            (Api::Messages, Some(messages), _) => {
                if let Some(system) = &self.system {
                    reader.content(system)?;
                }
                (messages.iter())
                    .filter_map(|m| m.content.as_ref())
                    .try_for_each(|c| reader.content(c))?
            }
            (Api::Messages, None, _) => return Err("a messages request needs 'messages'".into()),
            (Api::Generate | Api::Rag | Api::Triton, _, prompt) => {
                reader.prompt(prompt.as_ref().unwrap_or(&Value::Null))?
            }
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
    pub(crate) fn prepare(&self, api: Api, timing: &LlmTiming) -> Result<(Plan, Vec<u64>), String> {
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
        let tool_call =
            self.tool_name().is_some() && matches!(api, Api::Chat | Api::Responses | Api::Messages);
        let plan = Plan {
            prompt_tokens: u32::try_from(prompt).unwrap_or(u32::MAX),
            tokens,
            finish: if stopped_by_limit { "length" } else { "stop" },
            stream: self.stream(),
            // A Responses or Messages stream always ends with the usage.
            usage: options.and_then(|o| o.include_usage) == Some(true)
                || matches!(api, Api::Responses | Api::Messages),
            reasoning: match api {
                Api::Chat if !tool_call => timing.reasoning_tokens.min(tokens),
                _ => 0,
            },
            cached: (timing.prefix_cache > 0).then_some(0),
            tool_call,
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

/// The whole answer of a request that did not ask for a stream (the tests' shorthand of
/// [`answer_calling`]).
#[cfg(test)]
pub(crate) fn answer(api: Api, id: &str, created: u64, model: &str, plan: &Plan) -> Value {
    answer_calling(api, id, created, model, plan, None)
}

/// The whole answer of a request that did not ask for a stream, or with `tool` the call
/// of that tool (chat and responses; the others'
/// answers are their own files').
pub(crate) fn answer_calling(
    api: Api,
    id: &str,
    created: u64,
    model: &str,
    plan: &Plan,
    tool: Option<&str>,
) -> Value {
    if api == Api::Responses {
        return super::responses_wire::response_object(id, created, model.into(), plan, true, tool);
    }
    let text = TOKEN.repeat(plan.tokens as usize);
    let choice = match api {
        Api::Chat if tool.is_some() => {
            let call = tool_call_json(id, tool.unwrap_or_default(), &text);
            let message = json!({"role": "assistant", "content": null, "tool_calls": [call]});
            json!({"index": 0, "message": message, "logprobs": null, "finish_reason": "tool_calls"})
        }
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
        _ => json!({
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

impl Events {
    /// Writes what follows the last event, the usage counting `cached` prompt tokens as
    /// held by the prefix cache (when the model has one).
    pub(crate) fn write_tail(&self, out: &mut BytesMut, cached: u32) {
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
    pub(crate) fn event(&self, i: u32, total: u32) -> &Bytes {
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
    /// `model_json` is the model's name as a JSON string (the tests' shorthand of
    /// [`Events::calling`]).
    #[cfg(test)]
    pub(crate) fn new(
        api: Api,
        id: &str,
        created: u64,
        model_json: &str,
        plan: &Plan,
        per_event: u32,
    ) -> Events {
        Events::calling(api, id, created, model_json, plan, per_event, None)
    }

    /// The events of a stream of `plan.tokens` tokens, `per_event` to an event, or with
    /// `tool` the streamed call of that tool (chat and
    /// responses): its arguments are the answer's tokens, `"tok "` each.
    pub(crate) fn calling(
        api: Api,
        id: &str,
        created: u64,
        model_json: &str,
        plan: &Plan,
        per_event: u32,
        tool: Option<&str>,
    ) -> Events {
        if api == Api::Responses {
            let parts = (id, created, model_json);
            return super::responses_wire::events(parts, plan, per_event, tool);
        }
        let object = api.object(true);
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":{model_json},\"choices\":["
        );
        let event = |choice: String| Bytes::from(format!("{head}{choice}]}}\n\n"));
        let reasoning = plan.reasoning;
        let choice = |role: bool, from: u32, to: u32, finish: &str| {
            let text = TOKEN.repeat((to - from) as usize);
            let fields = match tool {
                Some(name) => tool_delta(id, name, role, &text),
                None => delta_fields(from, to, reasoning),
            };
            match (api, role) {
                (Api::Chat, _) if tool.is_some() && from == to => {
                    r#"{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}"#
                        .to_string()
                }
                (Api::Completions | Api::Responses | Api::Messages | Api::Generate | Api::Rag | Api::Triton, _) => format!(
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
    /// A stream's events made by another wire format's file.
    pub(crate) fn plain(first: String, full: String, last: String, tail: String) -> Events {
        Events {
            first: Bytes::from(first),
            full: Bytes::from(full),
            last: Bytes::from(last),
            tail: Bytes::from(tail),
            each: None,
            usage_later: None,
        }
    }
}

/// A chat tool call, whole: its id, the function's name and its arguments.
fn tool_call_json(id: &str, name: &str, arguments: &str) -> Value {
    json!({"index": 0, "id": format!("call-{id}"), "type": "function",
           "function": {"name": name, "arguments": arguments}})
}

/// The fields of a chat delta carrying a tool call's part: the first names the call, the
/// others add to its arguments.
fn tool_delta(id: &str, name: &str, first: bool, arguments: &str) -> String {
    let call = match first {
        true => tool_call_json(id, name, arguments),
        false => json!({"index": 0, "function": {"arguments": arguments}}),
    };
    let role = if first { "\"content\":null," } else { "" };
    format!("{role}\"tool_calls\":[{call}]")
}

/// The event that ends a stream the server cut short.
pub(crate) fn error_event(message: &str) -> Bytes {
    let error = json!({"error": {"message": message, "type": "server_error", "code": null}});
    Bytes::from(format!("data: {error}\n\n"))
}

#[cfg(test)]
#[path = "openai_wire_tests.rs"]
mod tests;

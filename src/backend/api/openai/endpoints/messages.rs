//! `messages`: Anthropic's `POST /v1/messages`, as AIPerf sends it. The body is the model,
//! the messages (a chat session's history and the prompt; a trace's messages as given),
//! `max_tokens` (the prompt's, else 1024: Anthropic requires one), `stream: true` only when
//! streaming, the system message as the top-level `system`, a trace's tools, then the extra
//! inputs; `anthropic-version: 2023-06-01` is sent unless a header gives one (and
//! `--api-key` is `x-api-key`, see `config::endpoint_options`). An image part of a prompt
//! would be Anthropic's `{"type": "image", "source": {...}}` (see [`super::user_content`]);
//! audio and video it does not take.
//!
//! Streamed answers are typed events: `message_start` (the usage of the prompt),
//! `content_block_delta` with a `text_delta` (output), `thinking_delta` (reasoning) or
//! `input_json_delta` (a tool call's arguments, output as AIPerf counts them), each of
//! which is an answer; `message_delta` (the output's usage) and `message_stop`, the end.
//! The prompt's tokens are `input_tokens` plus the cache's read and created tokens.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{
    chat_messages, insert_tools, with_extras, with_model, BodyInput, EndpointWire, Reading,
};
use crate::backend::api::openai::events::{parse_json, ChunkFacts};
use crate::backend::{ErrorKind, Exchange, Failure, Malformation};

/// Anthropic's `max_tokens` when the prompt asks for no length.
const DEFAULT_MAX_TOKENS: u32 = 1024;
const VERSION: (&str, &str) = ("anthropic-version", "2023-06-01");

pub struct Messages;

impl EndpointWire for Messages {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let (adapter, prompt) = (input.adapter, input.prompt);
        let mut body = with_model(input.model);
        let messages = chat_messages(prompt, input.history, false);
        body.insert("messages".into(), messages);
        let max_tokens = prompt.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        body.insert("max_tokens".into(), max_tokens.into());
        if adapter.llm.output_deterministic && prompt.max_tokens.is_some() {
            body.insert("min_tokens".into(), max_tokens.into());
            body.insert("ignore_eos".into(), true.into());
        }
        if adapter.streaming {
            body.insert("stream".into(), true.into());
        }
        if let Some(system) = prompt.system.as_deref() {
            body.insert("system".into(), system.into());
        }
        insert_tools(&mut body, prompt);
        Ok(with_extras(body, adapter))
    }

    fn read_event(
        &self,
        data: &[u8],
        _reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let event: Event = parse_json(data)?;
        let mut facts = ChunkFacts::default();
        match event.kind.as_deref().unwrap_or_default() {
            "message_start" => {
                let usage = event.message.and_then(|m| m.usage);
                add_usage(&mut facts, usage.as_ref());
            }
            "content_block_delta" => read_delta(event.delta.as_ref(), &mut facts, ex),
            "message_delta" => add_usage(&mut facts, event.usage.as_ref()),
            "message_stop" => facts.ends = true,
            "error" => return Err(stream_error(event.error.as_ref())),
            _ => {}
        }
        Ok(facts)
    }

    fn read_answer(
        &self,
        body: &[u8],
        _reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let answer: Event = parse_json(body)?;
        if answer.kind.as_deref() == Some("error") {
            return Err(stream_error(answer.error.as_ref()));
        }
        let mut facts = ChunkFacts::default();
        read_blocks(
            answer.content.as_deref().unwrap_or_default(),
            &mut facts,
            ex,
        );
        if !facts.content {
            return Err(Failure::bad(
                Malformation::MissingOutput,
                "the answer has no content block with text, thinking or a tool call".to_string(),
            ));
        }
        add_usage(&mut facts, answer.usage.as_ref());
        Ok(facts)
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[VERSION]
    }
}

/// An Anthropic event, or a whole message (`"type": "message"`).
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default, borrow)]
    content: Option<Vec<Block<'a>>>,
    #[serde(default, borrow)]
    error: Option<ErrorObject<'a>>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    cache_read_input_tokens: Option<u32>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct ErrorObject<'a> {
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

fn stream_error(error: Option<&ErrorObject<'_>>) -> Failure {
    let message = error
        .and_then(|e| e.message.as_deref())
        .unwrap_or("no message");
    Failure::new(
        ErrorKind::StreamError,
        format!("the server sent an error: {message}"),
    )
}

/// A delta's text: output (text, a tool call's arguments) or reasoning (thinking).
fn read_delta(delta: Option<&Delta<'_>>, facts: &mut ChunkFacts, ex: &mut Exchange<'_>) {
    let Some(delta) = delta else {
        return;
    };
    let (text, reasoning) = match delta.kind.as_deref().unwrap_or_default() {
        "text_delta" => (delta.text.as_deref(), false),
        "input_json_delta" => (delta.partial_json.as_deref(), false),
        "thinking_delta" => (delta.thinking.as_deref(), true),
        _ => (None, false),
    };
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return;
    };
    facts.content = true;
    if reasoning {
        ex.reasoning(text);
    } else {
        facts.output = true;
        ex.content(text);
    }
}

/// A whole message's blocks, as AIPerf reads them: thinking (with the text as output)
/// first, else the tool calls (their names and inputs alone), else the text.
fn read_blocks(blocks: &[Block<'_>], facts: &mut ChunkFacts, ex: &mut Exchange<'_>) {
    let (mut text, mut thinking, mut tools) = (String::new(), String::new(), String::new());
    for block in blocks {
        match block.kind.as_deref().unwrap_or_default() {
            "text" => text.push_str(block.text.as_deref().unwrap_or_default()),
            "thinking" => thinking.push_str(block.thinking.as_deref().unwrap_or_default()),
            "tool_use" => {
                tools.push_str(block.name.as_deref().unwrap_or_default());
                let input = block.input.as_ref().filter(|i| !is_empty(i));
                if let Some(input) = input {
                    tools.push_str(&input.to_string());
                }
            }
            _ => {}
        }
    }
    let output = match (thinking.is_empty(), tools.is_empty()) {
        (false, _) => {
            ex.reasoning(&thinking);
            facts.content = true;
            text
        }
        (true, false) => tools,
        (true, true) => text,
    };
    if !output.is_empty() {
        facts.content = true;
        facts.output = true;
        ex.content(&output);
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Anthropic's usage: the prompt's tokens are `input_tokens` and the cache's read and
/// created ones; the cache's read ones are the cached tokens.
fn add_usage(facts: &mut ChunkFacts, usage: Option<&Usage>) {
    let Some(usage) = usage else {
        return;
    };
    facts.completion_tokens = usage.output_tokens;
    facts.prompt_tokens = usage.input_tokens.map(|input| {
        let cache = [
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens,
        ];
        cache.into_iter().flatten().fold(input, u32::saturating_add)
    });
    facts.cached_tokens = usage.cache_read_input_tokens;
}

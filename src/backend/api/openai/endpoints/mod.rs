//! One file per endpoint type (AIPerf 0.13's `--endpoint-type` list and GenAI-Perf's
//! `generate`, the facts of each in `config::endpoints`): the body a prompt becomes and how
//! an answer is read — each streamed event and a whole answer — into the facts a connection
//! times and counts ([`ChunkFacts`]). [`wire`] is the table from a type to its file; the connection
//! ([`super::conn`]) and the adapter ([`super::OpenAi`]) ask it and match on no type.
//!
//! A body is built as AIPerf builds it (the existing four keep inferperf's bodies): the
//! type's fields, then every `--extra-inputs` field over them. A prompt's media parts
//! (images, audio, video) follow its text in [`user_content`].

mod chat;
mod chat_embeddings;
mod completions;
mod embeddings;
mod generate;
mod huggingface_generate;
mod messages;
mod rankings;
mod raw;
mod responses;
mod shapes;
mod solido_rag;
mod template;

use serde_json::{Map, Value};

use super::events::{self, ChunkFacts};
use super::OpenAi;
use crate::backend::{Exchange, Failure};
use crate::config::Endpoint;
use crate::data::Prompt;

/// What a body is made from.
pub struct BodyInput<'a> {
    pub adapter: &'a OpenAi,
    pub model: &'a str,
    pub prompt: &'a Prompt,
    /// A chat session's earlier prompts and the answers they got.
    pub history: &'a [(String, String)],
}

/// How answers are read beyond the type: whether it generates text, and the JMESPath of
/// the answer's data (`--extra-inputs response_field:...`) for the types that take one.
#[derive(Clone, Default)]
pub struct Reading {
    pub generates: bool,
    pub field: Option<std::sync::Arc<jmespath::Expression<'static>>>,
}

/// An endpoint type's body and answers.
pub trait EndpointWire: Sync {
    /// The JSON body of a prompt; the error is a sentence on why none can be made.
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String>;

    /// One streamed event's facts, its text handed to `ex`.
    fn read_event(
        &self,
        data: &[u8],
        _reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        events::read_chunk(data, ex)
    }

    /// A whole answer's facts.
    fn read_answer(
        &self,
        body: &[u8],
        reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        events::read_answer(body, reading.generates, ex)
    }

    /// Whether a stream ends with its body (no `data: [DONE]` nor end event is due).
    fn stream_ends_with_body(&self) -> bool {
        false
    }

    /// Headers the type sends unless the user gave one of the same name.
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Whether discovery may send a one-token probe (a type whose bodies are all given
    /// has none to send).
    fn probes(&self) -> bool {
        true
    }
}

/// The wire of each endpoint type.
pub fn wire(endpoint: Endpoint) -> &'static dyn EndpointWire {
    match endpoint {
        Endpoint::Chat => &chat::Chat,
        Endpoint::Completions => &completions::Completions,
        Endpoint::Embeddings => &embeddings::Embeddings,
        Endpoint::Responses => &responses::Responses,
        Endpoint::Messages => &messages::Messages,
        Endpoint::ChatEmbeddings => &chat_embeddings::ChatEmbeddings,
        Endpoint::NimEmbeddings => &embeddings::NimEmbeddings,
        Endpoint::NimRankings => &rankings::NimRankings,
        Endpoint::HfTeiRankings => &rankings::HfTeiRankings,
        Endpoint::CohereRankings => &rankings::CohereRankings,
        Endpoint::HuggingfaceGenerate => &huggingface_generate::HuggingfaceGenerate,
        Endpoint::SolidoRag => &solido_rag::SolidoRag,
        Endpoint::Template => &template::Template,
        Endpoint::Raw => &raw::Raw,
        Endpoint::TritonGenerate => &generate::TritonGenerate,
    }
}

/// The facts of a piece of answer text (an event's or a whole answer's), handed to `ex`:
/// none for no text or an empty one.
pub fn text_facts(text: Option<&str>, ex: &mut Exchange<'_>) -> ChunkFacts {
    match text.filter(|t| !t.is_empty()) {
        Some(text) => {
            ex.content(text);
            ChunkFacts {
                content: true,
                output: true,
                ..ChunkFacts::default()
            }
        }
        None => ChunkFacts::default(),
    }
}

/// The `--extra-inputs` fields over a body, in order (each may replace a field of the
/// type's own, as in AIPerf).
pub fn with_extras(mut body: Map<String, Value>, adapter: &OpenAi) -> Value {
    for (key, value) in &adapter.llm.extra_inputs {
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

/// The content of a prompt's user message: the plain string for text alone, else the
/// list of parts, the text then the images, audio and video ([`super::content`]).
pub fn user_content(prompt: &Prompt) -> Value {
    super::content::content_parts(prompt, super::content::Parts::Chat)
}

/// A chat's messages: the system message, then a user and an assistant message for each
/// earlier turn, then the prompt (or the messages a trace gave, as they are).
pub fn chat_messages(prompt: &Prompt, history: &[(String, String)], system: bool) -> Value {
    if let Some(given) = prompt.messages.as_deref() {
        return given.clone();
    }
    let mut messages = Vec::with_capacity(2 + 2 * history.len());
    if let Some(text) = prompt.system.as_deref().filter(|_| system) {
        messages.push(serde_json::json!({"role": "system", "content": text}));
    }
    for (asked, answered) in history {
        messages.push(serde_json::json!({"role": "user", "content": asked}));
        messages.push(serde_json::json!({"role": "assistant", "content": answered}));
    }
    messages.push(serde_json::json!({"role": "user", "content": user_content(prompt)}));
    Value::Array(messages)
}

/// The fields of a generation (chat, completions, responses), as inferperf has always
/// sent them: the answer's length in `max_field`, with `min_tokens` and `ignore_eos` for
/// `--output-tokens-mean-deterministic`, and `stream` (with `stream_options.include_usage`
/// when `usage_option`) when streaming.
pub fn generation_fields(
    input: &BodyInput<'_>,
    body: &mut Map<String, Value>,
    max_field: &str,
    usage_option: bool,
) {
    let adapter = input.adapter;
    if let Some(n) = input.prompt.max_tokens {
        body.insert(max_field.into(), n.into());
        if adapter.llm.output_deterministic {
            body.insert("min_tokens".into(), n.into());
            body.insert("ignore_eos".into(), true.into());
        }
    }
    if adapter.streaming {
        body.insert("stream".into(), true.into());
        if usage_option {
            body.insert(
                "stream_options".into(),
                serde_json::json!({"include_usage": true}),
            );
        }
    }
}

/// The answer-length field of chat and completions: `max_completion_tokens` with AIPerf's
/// chat (unless `--use-legacy-max-tokens`), else `max_tokens`.
pub fn max_tokens_field(adapter: &OpenAi) -> &'static str {
    match adapter.wire.max_completion_tokens {
        true => "max_completion_tokens",
        false => "max_tokens",
    }
}

/// A body that starts with the model.
pub fn with_model(model: &str) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body
}

/// The tool definitions of a prompt (a trace's `tools`), for the types that send them.
pub fn insert_tools(body: &mut Map<String, Value>, prompt: &Prompt) {
    if let Some(tools) = prompt.tools.as_deref() {
        body.insert("tools".into(), tools.clone());
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

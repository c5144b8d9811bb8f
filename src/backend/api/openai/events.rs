//! Reading OpenAI answers: the few facts inferperf needs from each JSON chunk (an event
//! `inferperf_wire::sse` split out of the body) or whole answer — the text it carries
//! (content and reasoning apart, handed to the exchange to be counted later), the server's
//! `usage`, an error. A chunk that is not JSON, or an answer without
//! the parts its endpoint must have, is a bad response with one sentence saying why. The
//! Responses API's typed events (`response.output_text.delta`, ..., `response.completed`
//! with the usage, and no `data: [DONE]`) are read into the same facts (the event reader
//! gives their end as `[DONE]`), so that a connection reads every endpoint's stream alike.

use std::borrow::Cow;

use serde::Deserialize;

use crate::backend::{ErrorKind, Exchange, Failure, Malformation};

/// The most of an event shown in a message.
const SHOWN: usize = 120;

/// What one chunk (or whole answer) says.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ChunkFacts {
    /// It carries generated text (content or reasoning).
    pub content: bool,
    /// It carries content that is not reasoning (an output token proper).
    pub output: bool,
    /// `usage.completion_tokens` and `usage.prompt_tokens`, when given.
    pub completion_tokens: Option<u32>,
    pub prompt_tokens: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens the server served from
    /// its prefix cache, when given.
    pub cached_tokens: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens`, when given.
    pub reasoning_tokens: Option<u32>,
    /// The event ends the stream (Anthropic's `message_stop`), as `data: [DONE]` does.
    pub ends: bool,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default, borrow)]
    error: Option<ErrorBody<'a>>,
    #[serde(default)]
    data: Option<Vec<serde::de::IgnoredAny>>,
    /// The Responses API: the event's type, its text, a whole answer's output items, the
    /// response an end or failure event carries, an error event's message.
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    output: Option<Vec<OutputItem<'a>>>,
    #[serde(default, borrow)]
    response: Option<ResponseObject<'a>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

/// One item of a Responses answer's `output` (a message, reasoning, or a function call
/// with its name and arguments).
#[derive(Deserialize)]
struct OutputItem<'a> {
    #[serde(default, borrow)]
    content: Option<Vec<Part<'a>>>,
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// A part of an output item: `output_text` or `reasoning_text`, with its text.
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// The response a Responses event carries: its usage, or why it failed.
#[derive(Deserialize)]
struct ResponseObject<'a> {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default, borrow)]
    error: Option<ErrorBody<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Text<'a>>,
    #[serde(default, borrow)]
    message: Option<Text<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Text<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    /// The tool calls of a chat answer (whole, or a chunk's part of each).
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
    /// The one call of OpenAI's older functions API.
    #[serde(default, borrow)]
    function_call: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(default, borrow)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

impl Text<'_> {
    /// The text of the tool calls, as AIPerf counts it: each call's name and arguments, in
    /// order, joined.
    fn tool_text(&self) -> String {
        let calls = self
            .tool_calls
            .iter()
            .flatten()
            .filter_map(|c| c.function.as_ref());
        let functions = calls.chain(self.function_call.as_ref());
        let pieces = functions.flat_map(|f| [f.name.as_deref(), f.arguments.as_deref()]);
        pieces.flatten().collect()
    }
}

/// `usage`, in the chat and completions names or the Responses API's.
#[derive(Deserialize)]
struct Usage {
    #[serde(default, alias = "input_tokens")]
    prompt_tokens: Option<u32>,
    #[serde(default, alias = "output_tokens")]
    completion_tokens: Option<u32>,
    #[serde(default, alias = "output_tokens_details")]
    completion_tokens_details: Option<CompletionDetails>,
    #[serde(default, alias = "input_tokens_details")]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorBody<'a> {
    Object {
        #[serde(default, borrow)]
        message: Option<Cow<'a, str>>,
    },
    Text(#[serde(borrow)] Cow<'a, str>),
}

/// Reads one streamed chunk, handing its text to `ex`.
pub fn read_chunk(data: &[u8], ex: &mut Exchange<'_>) -> Result<ChunkFacts, Failure> {
    let chunk = parse(data)?;
    Ok(facts(&chunk, ex))
}

/// Reads a whole (unstreamed) answer of the endpoint: a generation must have a choice with
/// text, an embedding answer a `data` list.
pub fn read_answer(
    body: &[u8],
    generates: bool,
    ex: &mut Exchange<'_>,
) -> Result<ChunkFacts, Failure> {
    let chunk = parse(body)?;
    let has_text = chunk.choices.as_ref().is_some_and(|c| {
        c.iter().any(|c| {
            let message = c.message.as_ref();
            c.text.is_some()
                || message.is_some_and(|m| m.content.is_some() || !m.tool_text().is_empty())
        })
    }) || output_parts(&chunk)
        .any(|(kind, text)| kind == "output_text" && text.is_some())
        || !function_calls(&chunk).is_empty();
    if generates && !has_text {
        return Err(Failure::bad(
            Malformation::MissingOutput,
            format!("the answer has no choice with text: {}", shown(body)),
        ));
    }
    if !generates && chunk.data.as_ref().is_none_or(|d| d.is_empty()) {
        return Err(Failure::bad(
            Malformation::MissingOutput,
            format!(
                "the answer has no \"data\" list of embeddings: {}",
                shown(body)
            ),
        ));
    }
    Ok(facts(&chunk, ex))
}

/// An event or answer read as `T`; one that is not JSON of that shape is unreadable.
pub fn parse_json<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Result<T, Failure> {
    serde_json::from_slice(data).map_err(|e| {
        Failure::bad(
            Malformation::Unreadable,
            format!("an event is not JSON ({e}): {}", shown(data)),
        )
    })
}

fn parse(data: &[u8]) -> Result<Chunk<'_>, Failure> {
    let chunk: Chunk = parse_json(data)?;
    let failed = chunk.response.as_ref().and_then(|r| r.error.as_ref());
    if let Some(error) = chunk.error.as_ref().or(failed) {
        let message = match error {
            ErrorBody::Object { message } => message.as_deref().unwrap_or("no message"),
            ErrorBody::Text(text) => text,
        };
        return Err(Failure::new(
            ErrorKind::StreamError,
            format!("the server sent an error: {message}"),
        ));
    }
    if chunk.kind.as_deref() == Some("error") {
        let message = chunk.message.as_deref().unwrap_or("no message");
        return Err(Failure::new(
            ErrorKind::StreamError,
            format!("the server sent an error: {message}"),
        ));
    }
    Ok(chunk)
}

/// The (type, text) of every part of a whole Responses answer's output items.
fn output_parts<'c>(chunk: &'c Chunk<'_>) -> impl Iterator<Item = (&'c str, Option<&'c str>)> {
    let items = chunk.output.iter().flatten();
    let parts = items.flat_map(|item| item.content.iter().flatten());
    parts.map(|p| (p.kind.as_deref().unwrap_or(""), p.text.as_deref()))
}

fn facts(chunk: &Chunk<'_>, ex: &mut Exchange<'_>) -> ChunkFacts {
    let mut facts = ChunkFacts::default();
    for choice in chunk.choices.iter().flatten() {
        for text in [choice.delta.as_ref(), choice.message.as_ref()]
            .into_iter()
            .flatten()
        {
            let reasoning = [text.reasoning_content.as_deref(), text.reasoning.as_deref()];
            let mut thought = false;
            for piece in reasoning.into_iter().flatten().filter(|p| !p.is_empty()) {
                facts.content = true;
                thought = true;
                ex.reasoning(piece);
            }
            // AIPerf's precedence: reasoning (with the content), else the tool calls alone
            // (their names and arguments are the output), else the content.
            let tools = if thought {
                String::new()
            } else {
                text.tool_text()
            };
            let content = text.content.as_deref().filter(|p| !p.is_empty());
            let output = match tools.is_empty() {
                false => Some(tools.as_str()),
                true => content,
            };
            if let Some(piece) = output {
                facts.content = true;
                facts.output = true;
                ex.content(piece);
            }
        }
        if let Some(piece) = choice.text.as_deref().filter(|p| !p.is_empty()) {
            facts.content = true;
            facts.output = true;
            ex.content(piece);
        }
    }
    responses_text(chunk, &mut facts, ex);
    let usage = chunk.response.as_ref().and_then(|r| r.usage.as_ref());
    if let Some(usage) = chunk.usage.as_ref().or(usage) {
        facts.completion_tokens = usage.completion_tokens;
        facts.prompt_tokens = usage.prompt_tokens;
        facts.cached_tokens = usage
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens);
        facts.reasoning_tokens = usage
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens);
    }
    facts
}

/// The Responses API's text: an event's delta, or a whole answer's output parts (not the
/// output an end event repeats, whose text came as deltas).
fn responses_text(chunk: &Chunk<'_>, facts: &mut ChunkFacts, ex: &mut Exchange<'_>) {
    // Hands over a text of a kind; whether it was taken.
    let mut take = |kind: &str, text: &str| match kind {
        _ if text.is_empty() => false,
        "output_text" => {
            facts.content = true;
            facts.output = true;
            ex.content(text);
            true
        }
        "reasoning_text" => {
            facts.content = true;
            ex.reasoning(text);
            true
        }
        _ => false,
    };
    match (chunk.kind.as_deref(), chunk.delta.as_deref()) {
        (Some("response.output_text.delta"), Some(text)) => {
            take("output_text", text);
        }
        (Some("response.reasoning_text.delta"), Some(text)) => {
            take("reasoning_text", text);
        }
        // A function call's arguments are output, as AIPerf counts them.
        (Some("response.function_call_arguments.delta"), Some(text)) => {
            take("output_text", text);
        }
        _ => {
            let mut took = false;
            for (kind, text) in output_parts(chunk) {
                took |= take(kind, text.unwrap_or_default());
            }
            // A whole answer of function calls alone: their names and arguments.
            if !took {
                take("output_text", &function_calls(chunk));
            }
        }
    }
}

/// The names and arguments of a whole Responses answer's function calls, joined.
fn function_calls(chunk: &Chunk<'_>) -> String {
    let items = chunk.output.iter().flatten();
    let calls = items.filter(|item| item.kind.as_deref() == Some("function_call"));
    let pieces = calls.flat_map(|call| [call.name.as_deref(), call.arguments.as_deref()]);
    pieces.flatten().collect()
}

/// The start of a chunk, for messages.
pub fn shown(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(&data[..data.len().min(SHOWN)]);
    let more = if data.len() > SHOWN { "…" } else { "" };
    format!("'{}{more}'", text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::AnswerText;

    #[test]
    fn responses_events_and_answers_hand_over_their_text_and_usage() {
        let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
        let mut ex = exchange(&mut gaps, &mut text);
        let delta = br#"{"type":"response.output_text.delta","item_id":"m","delta":"tok tok "}"#;
        let facts = read_chunk(delta, &mut ex).unwrap();
        assert!(facts.content && facts.output);
        let thinking = br#"{"type":"response.reasoning_text.delta","delta":"hm, "}"#;
        let facts = read_chunk(thinking, &mut ex).unwrap();
        assert!(facts.content && !facts.output);
        let created = br#"{"type":"response.created","response":{"status":"in_progress","output":[],"usage":null}}"#;
        assert_eq!(read_chunk(created, &mut ex).unwrap(), ChunkFacts::default());
        // The end event repeats the whole text in its response: counted once, as deltas.
        let completed = br#"{"type":"response.completed","response":{"output":[{"type":"message","content":[{"type":"output_text","text":"tok tok "}]}],"usage":{"input_tokens":5,"output_tokens":20,"output_tokens_details":{"reasoning_tokens":2}}}}"#;
        let facts = read_chunk(completed, &mut ex).unwrap();
        assert!(!facts.content);
        assert_eq!(
            (
                facts.prompt_tokens,
                facts.completion_tokens,
                facts.reasoning_tokens
            ),
            (Some(5), Some(20), Some(2))
        );
        let whole = br#"{"object":"response","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"so "}]},{"type":"message","content":[{"type":"output_text","text":"x"}]}],"usage":{"input_tokens":1,"output_tokens":3}}"#;
        let facts = read_answer(whole, true, &mut ex).unwrap();
        assert!(facts.content && facts.output);
        assert_eq!(facts.completion_tokens, Some(3));
        let kept = ex.text().unwrap();
        assert_eq!(
            (kept.content.as_str(), kept.reasoning.as_str()),
            ("tok tok x", "hm, so ")
        );
        let empty = br#"{"object":"response","output":[{"type":"message","content":[]}]}"#;
        let failure = read_answer(empty, true, &mut ex).unwrap_err();
        assert_eq!(
            failure.kind,
            ErrorKind::BadResponse(Malformation::MissingOutput)
        );
        let failed = br#"{"type":"response.failed","response":{"error":{"code":"x","message":"out of memory"}}}"#;
        let failure = read_chunk(failed, &mut ex).unwrap_err();
        assert_eq!(failure.kind, ErrorKind::StreamError);
        assert!(failure.detail.unwrap().contains("out of memory"));
        let error = br#"{"type":"error","code":"x","message":"overloaded"}"#;
        let failure = read_chunk(error, &mut ex).unwrap_err();
        assert!(failure.detail.unwrap().contains("overloaded"));
    }

    fn exchange<'a>(gaps: &'a mut Vec<u64>, text: &'a mut AnswerText) -> Exchange<'a> {
        Exchange::new(std::time::Instant::now(), gaps).with_text(text)
    }

    #[test]
    fn chunks_hand_over_their_text_and_usage() {
        let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
        let mut ex = exchange(&mut gaps, &mut text);
        let chat = br#"{"choices":[{"index":0,"delta":{"content":"tok tok "}}]}"#;
        let facts = read_chunk(chat, &mut ex).unwrap();
        assert!(facts.content && facts.output);
        let role_only = br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#;
        assert!(!read_chunk(role_only, &mut ex).unwrap().content);
        let thinking = br#"{"choices":[{"delta":{"reasoning_content":"hm, "}}]}"#;
        let facts = read_chunk(thinking, &mut ex).unwrap();
        assert!(facts.content && !facts.output);
        let usage = br#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":20,"completion_tokens_details":{"reasoning_tokens":2}}}"#;
        let facts = read_chunk(usage, &mut ex).unwrap();
        assert_eq!(
            (
                facts.prompt_tokens,
                facts.completion_tokens,
                facts.reasoning_tokens
            ),
            (Some(5), Some(20), Some(2))
        );
        assert!(!facts.content);
        let completion = br#"{"choices":[{"text":"x","finish_reason":null}]}"#;
        assert!(read_chunk(completion, &mut ex).unwrap().content);
        assert_eq!((ex.tokens.content_bytes, ex.tokens.reasoning_bytes), (9, 4));
        let kept = ex.text().unwrap();
        assert_eq!(
            (kept.content.as_str(), kept.reasoning.as_str()),
            ("tok tok x", "hm, ")
        );
    }

    #[test]
    fn bad_chunks_and_answers_say_what_is_wrong() {
        let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
        let ex = &mut exchange(&mut gaps, &mut text);
        let failure = read_chunk(b"{not json", ex).unwrap_err();
        assert_eq!(
            failure.kind,
            ErrorKind::BadResponse(Malformation::Unreadable)
        );
        assert!(failure.detail.unwrap().contains("'{not json'"));
        let failure = read_chunk(br#"{"error":{"message":"overloaded"}}"#, ex).unwrap_err();
        assert_eq!(failure.kind, ErrorKind::StreamError);
        assert!(failure.detail.unwrap().contains("overloaded"));
        let failure = read_answer(br#"{"choices":[]}"#, true, ex).unwrap_err();
        assert_eq!(
            failure.kind,
            ErrorKind::BadResponse(Malformation::MissingOutput)
        );
        let embedding = br#"{"data":[{"embedding":[0.1]}],"usage":{"prompt_tokens":3}}"#;
        assert_eq!(
            read_answer(embedding, false, ex).unwrap().prompt_tokens,
            Some(3)
        );
        let answer =
            br#"{"choices":[{"message":{"content":"a b c"}}],"usage":{"completion_tokens":3}}"#;
        let facts = read_answer(answer, true, ex).unwrap();
        assert_eq!(facts.completion_tokens, Some(3));
        assert_eq!(ex.text().unwrap().content, "a b c");
    }
}

//! Reading OpenAI answers: server-sent events split out of the body as it arrives, and the
//! few facts inferperf needs from each JSON chunk or whole answer — the text it carries
//! (content and reasoning apart, handed to the exchange to be counted later), the server's
//! `usage`, an error. A chunk that is not JSON, or an answer without
//! the parts its endpoint must have, is a bad response with one sentence saying why.

use std::borrow::Cow;

use bytes::{Buf, BytesMut};
use serde::Deserialize;

use crate::backend::{ErrorKind, Exchange, Failure, Malformation};

/// The most of an event shown in a message.
const SHOWN: usize = 120;

/// Events split out of a body that arrives in parts.
#[derive(Debug, Default)]
pub struct EventReader {
    pending: BytesMut,
}

impl EventReader {
    /// Empties the reader and gives its memory back: a stream's events are read into a
    /// buffer that lives only as long as the stream (a burst grows it to a whole answer,
    /// and thousands of connections waiting for their next answer should not each keep
    /// one).
    pub fn clear(&mut self) {
        self.pending = BytesMut::new();
    }

    /// The buffer the next part of the body goes into.
    pub fn buffer(&mut self) -> &mut BytesMut {
        &mut self.pending
    }

    /// The `data` of the next whole event, when one has arrived (its data lines joined by
    /// newlines; an event without data — a comment, a keep-alive — gives an empty one).
    pub fn next_event(&mut self) -> Option<Vec<u8>> {
        let (end, separator) = blank_line(&self.pending)?;
        let mut data: Vec<u8> = Vec::new();
        // Read in place and advance past it (splitting the buffer would share it, and a
        // shared buffer cannot be reused for the next event).
        for line in self.pending[..end].split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(value) = line.strip_prefix(b"data:") {
                if !data.is_empty() {
                    data.push(b'\n');
                }
                data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
            }
        }
        self.pending.advance(end + separator);
        Some(data)
    }

    /// Bytes that came after the last whole event.
    pub fn leftover(&self) -> &[u8] {
        &self.pending
    }
}

/// Where the first blank line is: (offset, length of the line breaks that make it).
fn blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    let at = buf.windows(2).position(|w| w == b"\n\n" || w == b"\r\r");
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n");
    match (at, crlf) {
        (Some(a), Some(c)) if c < a => Some((c, 4)),
        (Some(a), _) => Some((a, 2)),
        (None, Some(c)) => Some((c, 4)),
        (None, None) => None,
    }
}

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
    /// `usage.completion_tokens_details.reasoning_tokens`, when given.
    pub reasoning_tokens: Option<u32>,
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
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
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

/// The end of a stream.
pub fn is_done(data: &[u8]) -> bool {
    data.trim_ascii() == b"[DONE]"
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
        c.iter()
            .any(|c| c.text.is_some() || c.message.as_ref().is_some_and(|m| m.content.is_some()))
    });
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

fn parse(data: &[u8]) -> Result<Chunk<'_>, Failure> {
    let chunk: Chunk = serde_json::from_slice(data).map_err(|e| {
        Failure::bad(
            Malformation::Unreadable,
            format!("an event is not JSON ({e}): {}", shown(data)),
        )
    })?;
    if let Some(error) = &chunk.error {
        let message = match error {
            ErrorBody::Object { message } => message.as_deref().unwrap_or("no message"),
            ErrorBody::Text(text) => text,
        };
        return Err(Failure::new(
            ErrorKind::StreamError,
            format!("the server sent an error: {message}"),
        ));
    }
    Ok(chunk)
}

fn facts(chunk: &Chunk<'_>, ex: &mut Exchange<'_>) -> ChunkFacts {
    let mut facts = ChunkFacts::default();
    for choice in chunk.choices.iter().flatten() {
        for text in [choice.delta.as_ref(), choice.message.as_ref()]
            .into_iter()
            .flatten()
        {
            let reasoning = [text.reasoning_content.as_deref(), text.reasoning.as_deref()];
            for piece in reasoning.into_iter().flatten().filter(|p| !p.is_empty()) {
                facts.content = true;
                ex.reasoning(piece);
            }
            if let Some(piece) = text.content.as_deref().filter(|p| !p.is_empty()) {
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
    if let Some(usage) = &chunk.usage {
        facts.completion_tokens = usage.completion_tokens;
        facts.prompt_tokens = usage.prompt_tokens;
        facts.reasoning_tokens = usage
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens);
    }
    facts
}

/// The start of a chunk, for messages.
fn shown(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(&data[..data.len().min(SHOWN)]);
    let more = if data.len() > SHOWN { "…" } else { "" };
    format!("'{}{more}'", text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::AnswerText;

    #[test]
    fn events_are_split_however_the_body_arrives() {
        let body = b"data: {\"a\":1}\n\n: keep-alive\n\nevent: x\r\ndata: two\r\ndata: lines\r\n\r\ndata: [DONE]\n\n";
        for step in [1, 3, body.len()] {
            let mut reader = EventReader::default();
            let mut events = Vec::new();
            for part in body.chunks(step) {
                reader.buffer().extend_from_slice(part);
                while let Some(event) = reader.next_event() {
                    events.push(String::from_utf8(event).unwrap());
                }
            }
            assert_eq!(
                events,
                ["{\"a\":1}", "", "two\nlines", "[DONE]"],
                "step {step}"
            );
            assert!(reader.leftover().is_empty());
        }
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
        assert!(is_done(b" [DONE] "));
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

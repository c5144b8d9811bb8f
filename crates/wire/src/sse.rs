//! Server-sent events (the `text/event-stream` body an LLM server streams its answer in)
//! split out of a body that arrives in parts: each event's `data` lines joined, comments
//! and keep-alives given as empty events, and the OpenAI Responses API's end events
//! followed by a `[DONE]` it does not send, so that every endpoint's stream ends alike.
//! The client's OpenAI connection reads with it; what a chunk's JSON says is the client's.

use bytes::{Buf, BytesMut};

/// Events split out of a body that arrives in parts.
#[derive(Debug, Default)]
pub struct EventReader {
    pending: BytesMut,
    /// The last event ended a Responses API stream: `[DONE]` is next.
    ended: bool,
}

/// The Responses API's events that end a stream (with the usage in their `response`).
const RESPONSE_ENDS: [&str; 2] = ["response.completed", "response.incomplete"];

impl EventReader {
    /// Empties the reader and gives its memory back: a stream's events are read into a
    /// buffer that lives only as long as the stream (a burst grows it to a whole answer,
    /// and thousands of connections waiting for their next answer should not each keep
    /// one).
    pub fn clear(&mut self) {
        self.pending = BytesMut::new();
        self.ended = false;
    }

    /// The buffer the next part of the body goes into.
    pub fn buffer(&mut self) -> &mut BytesMut {
        &mut self.pending
    }

    /// The `data` of the next whole event, when one has arrived (its data lines joined by
    /// newlines; an event without data — a comment, a keep-alive — gives an empty one).
    pub fn next_event(&mut self) -> Option<Vec<u8>> {
        if std::mem::take(&mut self.ended) {
            return Some(b"[DONE]".to_vec());
        }
        let (end, separator) = blank_line(&self.pending)?;
        let mut data: Vec<u8> = Vec::new();
        let mut name: &[u8] = b"";
        // Read in place and advance past it (splitting the buffer would share it, and a
        // shared buffer cannot be reused for the next event).
        for line in self.pending[..end].split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(value) = line.strip_prefix(b"data:") {
                if !data.is_empty() {
                    data.push(b'\n');
                }
                data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
            } else if let Some(value) = line.strip_prefix(b"event:") {
                name = value.trim_ascii();
            }
        }
        self.ended = ends_response(name, &data);
        self.pending.advance(end + separator);
        Some(data)
    }

    /// Bytes that came after the last whole event.
    pub fn leftover(&self) -> &[u8] {
        &self.pending
    }
}

/// Whether an event ends a Responses API stream: named so by its `event:` line or, without
/// one, by the `type` its data starts with (as OpenAI writes it). A chat or completions
/// chunk is told apart by its first bytes.
fn ends_response(name: &[u8], data: &[u8]) -> bool {
    match name {
        b"" => {
            let typed = data.strip_prefix(b"{\"type\":\"").unwrap_or_default();
            RESPONSE_ENDS
                .iter()
                .any(|end| typed.starts_with(end.as_bytes()) && typed.get(end.len()) == Some(&b'"'))
        }
        name => RESPONSE_ENDS.iter().any(|end| name == end.as_bytes()),
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

/// The end of a stream.
pub fn is_done(data: &[u8]) -> bool {
    data.trim_ascii() == b"[DONE]"
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_responses_stream_ends_at_its_end_event() {
        let body = concat!(
            "event: response.created\ndata: {\"type\":\"response.created\"}\n\n",
            "event: response.output_text.delta\ndata: {\"delta\":\"a\"}\n\n",
            "event: response.completed\ndata: {\"response\":{}}\n\n",
            "data: {\"type\":\"response.incomplete\",\"response\":{}}\n\n",
            "data: {\"type\":\"response.output_text.delta\"}\n\n",
        );
        let mut reader = EventReader::default();
        reader.buffer().extend_from_slice(body.as_bytes());
        let events: Vec<String> = std::iter::from_fn(|| reader.next_event())
            .map(|e| String::from_utf8(e).unwrap())
            .collect();
        let done = |i: usize| is_done(events[i].as_bytes());
        assert_eq!(events.len(), 7, "{events:?}");
        assert!(!done(0) && !done(1) && !done(2) && done(3), "{events:?}");
        assert!(
            !done(4) && done(5) && !done(6),
            "without an event line, by its type"
        );
        assert!(is_done(b" [DONE] "));
    }
}

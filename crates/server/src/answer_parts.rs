//! What the OpenAI-style wire formats share about an answer: its plan (how many tokens,
//! why it ends, whether it streams), the bytes of its stream, and the text of a token.
//! Apart from the formats so that each (chat and completions, responses, embeddings) builds
//! on these without building on another.

use bytes::Bytes;

/// The text of one token: one word and a space, so that counting words counts tokens.
pub(crate) const TOKEN: &str = "tok ";

/// What an accepted request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
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
    /// The answer is a call of the request's first tool, its arguments the answer's text.
    pub tool_call: bool,
}

/// A stream's events as bytes: the first, a full one, the last, and what follows the
/// last (the final chunk, the usage chunk if asked for, and `[DONE]`). An answer with
/// reasoning has each of its events apart (`each`), as they differ. With a prefix cache
/// the usage chunk is written at the end ([`Events::write_tail`]), once the cached tokens
/// are known; otherwise the whole tail is built beforehand.
#[derive(Debug, Clone)]
pub(crate) struct Events {
    pub first: Bytes,
    pub full: Bytes,
    pub last: Bytes,
    pub tail: Bytes,
    pub each: Option<Vec<Bytes>>,
    /// The usage chunk's head and the plan, when it waits for the cached tokens.
    pub(super) usage_later: Option<(String, Plan)>,
}

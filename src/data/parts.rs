//! What a prompt carries beyond its one text, as AIPerf's datasets give it: more texts (a
//! line's `texts`, `--prompt-batch-size`), media by URL or data URL (`image(s)`,
//! `audio(s)`, `video(s)`, a public dataset's pictures), a trace's `tools`, a line's `extra`
//! body fields and the conversation's context message (`--user-context-prompt-length`).
//! Protocol-free: the OpenAI adapter renders them as AIPerf's requests carry them.

use std::sync::Arc;

use serde_json::{Map, Value};

/// A prompt's content beyond its text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parts {
    /// Texts after the prompt's `text`, each its own text part (or prompt, or input).
    pub texts: Vec<String>,
    /// Image URLs or data URLs.
    pub images: Vec<String>,
    /// Audio as AIPerf writes it: `FORMAT,BASE64`, or a data URL.
    pub audios: Vec<String>,
    /// Video URLs or data URLs.
    pub videos: Vec<String>,
    /// The body's `tools` (a trace line's).
    pub tools: Option<Value>,
    /// Fields merged into the body last (a line's `extra`), as AIPerf merges them.
    pub extra: Map<String, Value>,
    /// A user message before the turns, after the system message.
    pub user_context: Option<Arc<str>>,
}

impl Parts {
    /// Whether there is nothing beyond the text.
    pub fn is_empty(&self) -> bool {
        *self == Parts::default()
    }

    /// Whether the prompt's content is more than one text (a list of parts in a chat).
    pub fn has_content_parts(&self) -> bool {
        !(self.texts.is_empty()
            && self.images.is_empty()
            && self.audios.is_empty()
            && self.videos.is_empty())
    }

    /// `Some` unless empty, shared.
    pub fn shared(self) -> Option<Arc<Parts>> {
        (!self.is_empty()).then(|| Arc::new(self))
    }
}

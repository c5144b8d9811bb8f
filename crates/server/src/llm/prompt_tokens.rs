//! How the `llm` and `embeddings` kinds count a prompt's tokens: by default one token per
//! whitespace-separated word, or — with an `llm` model's `tokenizer=PATH` — with a Hugging
//! Face `tokenizer.json`, encoded as a load tester's client counts (no special tokens, no
//! chat template), so that the server's `usage` is the client's truth. Token ids given as
//! numbers count one each, and media parts (images, audio, video) by the cost model of
//! [`super::media_tokens`]. Besides the count, a prompt's token units can be gathered for
//! the prefix cache ([`super::prefix_cache`]): the token ids, or each word's hash.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

/// A Hugging Face tokenizer an `llm` model counts with, named by the file it came from
/// (compared and printed by that name).
#[derive(Clone)]
pub struct ServerTokenizer {
    path: String,
    tokenizer: Arc<tokenizers::Tokenizer>,
}

impl ServerTokenizer {
    /// Reads a `tokenizer.json`, or the one in a folder; the error is one sentence.
    pub fn load(path: &str) -> Result<ServerTokenizer, String> {
        let given = Path::new(path);
        let file = if given.is_dir() {
            given.join("tokenizer.json")
        } else {
            given.to_path_buf()
        };
        if !file.is_file() {
            return Err(format!(
                "no such file: {}; give a Hugging Face tokenizer.json or the folder holding one",
                file.display()
            ));
        }
        let tokenizer = tokenizers::Tokenizer::from_file(&file).map_err(|e| {
            let e = e.to_string().replace('\n', " ");
            format!(
                "{} is not a Hugging Face tokenizer.json ({e})",
                file.display()
            )
        })?;
        Ok(ServerTokenizer {
            path: path.to_string(),
            tokenizer: Arc::new(tokenizer),
        })
    }

    /// The path it was loaded from, as given.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Debug for ServerTokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServerTokenizer({})", self.path)
    }
}

impl PartialEq for ServerTokenizer {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

/// Counts a prompt piece by piece, gathering its token units when asked to.
#[derive(Debug)]
pub(crate) struct PromptReader<'a> {
    tokenizer: Option<&'a ServerTokenizer>,
    /// The units so far, when gathered.
    units: Option<Vec<u64>>,
    count: u64,
}

fn word_unit(word: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    word.hash(&mut hasher);
    hasher.finish()
}

impl<'a> PromptReader<'a> {
    /// A reader counting words, or with the tokenizer; `gather` keeps the units too.
    pub(crate) fn new(tokenizer: Option<&'a ServerTokenizer>, gather: bool) -> PromptReader<'a> {
        PromptReader {
            tokenizer,
            units: gather.then(Vec::new),
            count: 0,
        }
    }

    /// The tokens counted so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The units gathered (empty when not asked for).
    pub(crate) fn into_units(self) -> Vec<u64> {
        self.units.unwrap_or_default()
    }

    /// Counts a text.
    pub(crate) fn text(&mut self, text: &str) -> Result<(), String> {
        match self.tokenizer {
            Some(t) => {
                let encoding = (t.tokenizer.encode_fast(text, false))
                    .map_err(|e| format!("the tokenizer could not encode the prompt: {e}"))?;
                let ids = encoding.get_ids();
                self.count += ids.len() as u64;
                if let Some(units) = &mut self.units {
                    units.extend(ids.iter().map(|&id| u64::from(id)));
                }
            }
            None => match &mut self.units {
                Some(units) => {
                    let before = units.len();
                    units.extend(text.split_whitespace().map(word_unit));
                    self.count += (units.len() - before) as u64;
                }
                None => self.count += text.split_whitespace().count() as u64,
            },
        }
        Ok(())
    }

    /// Counts token ids given as numbers, one each.
    pub(crate) fn ids(&mut self, ids: &[Value]) {
        self.count += ids.len() as u64;
        if let Some(units) = &mut self.units {
            // Apart from word hashes in practice: ids are small, hashes spread over u64.
            units.extend(ids.iter().map(|v| v.as_u64().unwrap_or(u64::MAX)));
        }
    }

    /// A chat message's content: a string, or a list of parts whose `text` counts and whose
    /// media count by [`super::media_tokens`]'s model.
    pub(crate) fn content(&mut self, content: &Value) -> Result<(), String> {
        match content {
            Value::Null => Ok(()),
            Value::String(s) => self.text(s),
            Value::Array(parts) => parts.iter().try_for_each(|p| self.part(p)),
            _ => Err("a message's content must be a string or a list of content parts".into()),
        }
    }

    /// One content part: its text, or a medium's tokens (other parts count nothing).
    fn part(&mut self, part: &Value) -> Result<(), String> {
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            return self.text(text);
        }
        if let Some(cost) = super::media_tokens::part_cost(part)? {
            self.count += cost.tokens;
            if let Some(units) = &mut self.units {
                // The medium's tokens as units named by its content: the same image again
                // is a prefix the cache can hold.
                units.extend((0..cost.tokens).map(|i| cost.content.wrapping_add(i)));
            }
        }
        Ok(())
    }

    /// A Responses `input`: a string, or a list of items, each a string or a message whose
    /// content counts as a chat message's.
    pub(crate) fn input(&mut self, input: &Value) -> Result<(), String> {
        let bad = || "input must be a string or a list of messages".to_string();
        match input {
            Value::String(s) => self.text(s),
            Value::Array(items) => items.iter().try_for_each(|v| match v {
                Value::String(s) => self.text(s),
                Value::Object(message) => {
                    self.content(message.get("content").unwrap_or(&Value::Null))
                }
                _ => Err(bad()),
            }),
            _ => Err(bad()),
        }
    }

    /// A completions prompt: a string, a list of strings, a list of token ids or a list of
    /// such lists.
    pub(crate) fn prompt(&mut self, prompt: &Value) -> Result<(), String> {
        let bad =
            || "prompt must be a string, a list of strings or a list of token ids".to_string();
        let mut one = |v: &Value| match v {
            Value::String(s) => self.text(s),
            Value::Number(_) => {
                self.ids(std::slice::from_ref(v));
                Ok(())
            }
            Value::Array(ids) if ids.iter().all(Value::is_number) => {
                self.ids(ids);
                Ok(())
            }
            _ => Err(bad()),
        };
        match prompt {
            Value::Array(items) => items.iter().try_for_each(one),
            Value::String(_) => one(prompt),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn media_parts_count_by_the_cost_model_with_units_named_by_their_bytes() {
        let mut png = Vec::new();
        image::RgbImage::new(64, 32)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        use base64::Engine as _;
        let url = format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&png)
        );
        let image = json!({"type": "image_url", "image_url": {"url": url}});
        let content = json!([{"type": "text", "text": "a b c"}, image, image]);
        let mut r = PromptReader::new(None, true);
        r.content(&content).unwrap();
        assert_eq!(
            r.count(),
            3 + 2 * 2,
            "three words and two images of 2 patches"
        );
        let units = r.into_units();
        assert_eq!(units.len(), 7);
        assert_eq!(units[3..5], units[5..7], "the same image, the same units");
    }

    #[test]
    fn words_count_as_before_and_gather_their_hashes() {
        let mut r = PromptReader::new(None, false);
        r.content(&json!([{"type": "text", "text": "a b"}, {"type": "image"}]))
            .unwrap();
        r.prompt(&json!(["c d e", [1, 2]])).unwrap();
        assert_eq!(r.count(), 7);
        assert!(r.into_units().is_empty());
        let mut g = PromptReader::new(None, true);
        g.text("x y x").unwrap();
        let units = g.into_units();
        assert_eq!(units.len(), 3);
        assert_eq!(units[0], units[2]);
        assert_ne!(units[0], units[1]);
        let mut bad = PromptReader::new(None, true);
        let image = json!({"type": "image_url", "image_url": {"url": "https://x/a.png"}});
        assert!(
            bad.content(&json!([image])).is_err(),
            "a medium the server cannot read"
        );
        assert!(bad.prompt(&json!({"no": 1})).is_err());
        assert!(bad.content(&json!(3)).is_err());
        assert!(bad.input(&json!(3)).is_err());
    }
}

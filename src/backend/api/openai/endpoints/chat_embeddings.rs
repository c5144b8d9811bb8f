//! `chat_embeddings`: `POST /v1/embeddings` with a chat body (vLLM's way to embed
//! multimodal input), as AIPerf sends it: the model, the messages (the system message, the
//! prompt with its media parts), `"stream": false`, the answer's length when the prompt
//! has one, then the extra inputs. Answers are OpenAI's embeddings.

use serde_json::Value;

use super::{chat_messages, max_tokens_field, with_extras, with_model, BodyInput, EndpointWire};

pub struct ChatEmbeddings;

impl EndpointWire for ChatEmbeddings {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let mut body = with_model(input.model);
        let messages = chat_messages(input.prompt, &[], true);
        body.insert("messages".into(), messages);
        body.insert("stream".into(), false.into());
        if let Some(n) = input.prompt.max_tokens {
            body.insert(max_tokens_field(input.adapter).into(), n.into());
        }
        Ok(with_extras(body, input.adapter))
    }
}

//! `chat`: `POST /v1/chat/completions`. The body is the model, the messages (the system
//! message, a chat session's history, the prompt; or the messages a trace gave), a trace's
//! tools, the answer's length and the stream fields, then the extra inputs. Answers are
//! OpenAI's chunks ([`super::events`]): content, reasoning, and tool calls, whose name and
//! arguments are output as AIPerf counts them.

use serde_json::Value;

use super::{
    chat_messages, generation_fields, insert_tools, max_tokens_field, with_extras, with_model,
    BodyInput, EndpointWire,
};

pub struct Chat;

impl EndpointWire for Chat {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let mut body = with_model(input.model);
        let messages = chat_messages(input.prompt, input.history, true);
        body.insert("messages".into(), messages);
        insert_tools(&mut body, input.prompt);
        generation_fields(input, &mut body, max_tokens_field(input.adapter), true);
        Ok(with_extras(body, input.adapter))
    }
}

//! `completions`: `POST /v1/completions`. The body is the model, the prompt (after the
//! system message and a newline, when there is one), the answer's length and the stream
//! fields, then the extra inputs; answers are OpenAI's text completions.

use serde_json::Value;

use super::{
    generation_fields, max_tokens_field, with_extras, with_model, BodyInput, EndpointWire,
};

pub struct Completions;

impl EndpointWire for Completions {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let prompt = input.prompt;
        let mut body = with_model(input.model);
        let text = match &prompt.system {
            Some(system) => format!("{system}\n{}", prompt.text),
            None => prompt.text.clone(),
        };
        body.insert("prompt".into(), text.into());
        generation_fields(input, &mut body, max_tokens_field(input.adapter), true);
        Ok(with_extras(body, input.adapter))
    }
}

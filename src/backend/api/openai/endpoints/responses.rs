//! `responses`: `POST /v1/responses`. The body is the model, the prompt as `input`, a
//! trace's tools, the answer's length as `max_output_tokens` and `stream` (the Responses
//! API ends every stream with its usage unasked), then the extra inputs. Answers are its
//! typed events ([`super::events`]): text deltas, reasoning deltas and function-call
//! argument deltas, the last counted as output as AIPerf counts them.

use serde_json::Value;

use super::{generation_fields, insert_tools, with_extras, with_model, BodyInput, EndpointWire};

pub struct Responses;

impl EndpointWire for Responses {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let mut body = with_model(input.model);
        body.insert(
            "input".into(),
            crate::backend::api::openai::content::responses_input(input.prompt),
        );
        insert_tools(&mut body, input.prompt);
        generation_fields(input, &mut body, "max_output_tokens", false);
        Ok(with_extras(body, input.adapter))
    }
}

//! `embeddings` and `nim_embeddings`: `POST /v1/embeddings`. OpenAI's body is the model and
//! the prompt as `input` (a string, as inferperf has always sent it); NIM's is AIPerf's,
//! `input` a list of the prompt's texts (its images join there: each input the text, a
//! space and the image's data URL, or the images alone). Then the extra inputs. Answers
//! are a `data` list of embeddings; no tokens are generated.

use serde_json::Value;

use super::{with_extras, with_model, BodyInput, EndpointWire};

pub struct Embeddings;

impl EndpointWire for Embeddings {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let mut body = with_model(input.model);
        body.insert("input".into(), input.prompt.text.as_str().into());
        Ok(with_extras(body, input.adapter))
    }
}

pub struct NimEmbeddings;

impl EndpointWire for NimEmbeddings {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let mut body = with_model(input.model);
        let texts: Vec<&str> = [input.prompt.text.as_str()]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect();
        body.insert("input".into(), texts.into());
        Ok(with_extras(body, input.adapter))
    }
}

//! `solido_rag`: SOLIDO's RAG service, `POST /rag/api/prompt`, as AIPerf sends it:
//! `{"query": [the prompt's text], "filters": {"family": "Solido", "tool": "SDE"},
//! "inference_model": the model}`, then the extra inputs. An answer's text is its
//! `content` (beside its `sources`), whole or in each streamed event; a stream ends with its
//! body (or `data: [DONE]`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{text_facts, with_extras, BodyInput, EndpointWire, Reading};
use crate::backend::api::openai::events::{parse_json, shown, ChunkFacts};
use crate::backend::{Exchange, Failure, Malformation};

pub struct SolidoRag;

impl EndpointWire for SolidoRag {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let texts: Vec<&str> = [input.prompt.text.as_str()]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect();
        let mut body = Map::new();
        body.insert("query".into(), texts.into());
        body.insert("filters".into(), json!({"family": "Solido", "tool": "SDE"}));
        body.insert("inference_model".into(), input.model.into());
        Ok(with_extras(body, input.adapter))
    }

    fn read_event(
        &self,
        data: &[u8],
        _: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let answer: Answer = parse_json(data)?;
        Ok(text_facts(answer.content.as_deref(), ex))
    }

    fn read_answer(
        &self,
        body: &[u8],
        _: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let answer: Answer = parse_json(body)?;
        let facts = text_facts(answer.content.as_deref(), ex);
        if !facts.content {
            return Err(Failure::bad(
                Malformation::MissingOutput,
                format!("the answer has no content: {}", shown(body)),
            ));
        }
        Ok(facts)
    }

    fn stream_ends_with_body(&self) -> bool {
        true
    }
}

#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

//! The rankings types, as AIPerf sends them: a query and the passages to rank (the prompt's
//! text and its passages, made by `--rankings-*`), then the extra inputs; no stream, no
//! answer length. `nim_rankings` (`POST /v1/ranking`): `{"model", "query": {"text"},
//! "passages": [{"text"}, ...]}`, answered with a `rankings` list. `hf_tei_rankings`
//! (`POST /rerank`, Hugging Face TEI): `{"query", "texts"}` without a model, answered with
//! a list (or `results`). `cohere_rankings` (`POST /v2/rerank`): `{"model", "query",
//! "documents"}`, answered with `results`. An answer without its list is a bad response.

use serde_json::{json, Map, Value};

use super::{with_extras, with_model, BodyInput, EndpointWire, Reading};
use crate::backend::api::openai::events::{parse_json, shown, ChunkFacts};
use crate::backend::{Exchange, Failure, Malformation};
use crate::data::Prompt;

pub struct NimRankings;
pub struct HfTeiRankings;
pub struct CohereRankings;

/// The query and passages of a prompt, or why it has none.
fn query_and_passages(prompt: &Prompt) -> Result<(&str, &[String]), String> {
    match prompt.passages.as_deref() {
        Some(passages) => Ok((prompt.text.as_str(), passages)),
        None => Err(format!(
            "a rankings request is a query and passages, and the prompt '{}' is a text alone: use synthetic prompts (their shape is --rankings-passages-mean and the other --rankings-* flags)",
            shown_text(&prompt.text)
        )),
    }
}

fn shown_text(text: &str) -> String {
    text.chars().take(40).collect()
}

/// The answer's list at `field` (the whole answer when it is a list and `top` allows).
fn read_list(body: &[u8], field: &str, top: bool) -> Result<ChunkFacts, Failure> {
    let answer: Value = parse_json(body)?;
    let list = match &answer {
        Value::Array(list) if top => Some(list),
        other => other.get(field).and_then(Value::as_array),
    };
    match list {
        Some(list) if !list.is_empty() => Ok(ChunkFacts::default()),
        _ => Err(Failure::bad(
            Malformation::MissingOutput,
            format!(
                "the answer has no \"{field}\" list of scores: {}",
                shown(body)
            ),
        )),
    }
}

impl EndpointWire for NimRankings {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let (query, passages) = query_and_passages(input.prompt)?;
        let mut body = with_model(input.model);
        body.insert("query".into(), json!({ "text": query }));
        let passages: Vec<Value> = passages.iter().map(|p| json!({ "text": p })).collect();
        body.insert("passages".into(), passages.into());
        Ok(with_extras(body, input.adapter))
    }

    fn read_answer(
        &self,
        body: &[u8],
        _: &Reading,
        _: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        read_list(body, "rankings", false)
    }
}

impl EndpointWire for HfTeiRankings {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let (query, passages) = query_and_passages(input.prompt)?;
        let mut body = Map::new();
        body.insert("query".into(), query.into());
        body.insert("texts".into(), passages.into());
        Ok(with_extras(body, input.adapter))
    }

    fn read_answer(
        &self,
        body: &[u8],
        _: &Reading,
        _: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        read_list(body, "results", true)
    }
}

impl EndpointWire for CohereRankings {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let (query, passages) = query_and_passages(input.prompt)?;
        let mut body = with_model(input.model);
        body.insert("query".into(), query.into());
        body.insert("documents".into(), passages.into());
        Ok(with_extras(body, input.adapter))
    }

    fn read_answer(
        &self,
        body: &[u8],
        _: &Reading,
        _: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        read_list(body, "results", false)
    }
}

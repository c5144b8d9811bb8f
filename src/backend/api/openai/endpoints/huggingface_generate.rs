//! `huggingface_generate`: Hugging Face TGI's `POST /generate`, and `POST /generate_stream`
//! when streaming, as AIPerf sends them: `{"inputs": the prompt's text, "parameters":
//! {"max_new_tokens": N, ...the extra inputs}}` (the extra inputs go inside `parameters`).
//! A whole answer's text is `generated_text` (of the object, or of the list's first); a
//! stream's is each event's `token.text` (never the final event's `generated_text`, which
//! repeats them all). A TGI stream ends with its body, without `data: [DONE]`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{text_facts, BodyInput, EndpointWire, Reading};
use crate::backend::api::openai::events::{parse_json, shown, ChunkFacts};
use crate::backend::{ErrorKind, Exchange, Failure, Malformation};

pub struct HuggingfaceGenerate;

impl EndpointWire for HuggingfaceGenerate {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let (adapter, prompt) = (input.adapter, input.prompt);
        let mut parameters = Map::new();
        if let Some(n) = prompt.max_tokens {
            parameters.insert("max_new_tokens".into(), n.into());
        }
        for (key, value) in &adapter.llm.extra_inputs {
            parameters.insert(key.clone(), value.clone());
        }
        let mut body = Map::new();
        body.insert("inputs".into(), prompt.text.as_str().into());
        body.insert("parameters".into(), parameters.into());
        Ok(Value::Object(body))
    }

    fn read_event(
        &self,
        data: &[u8],
        _: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let event: Event = parse_json(data)?;
        failed(event.error.as_deref())?;
        let text = event.token.and_then(|t| t.text);
        Ok(text_facts(text.as_deref(), ex))
    }

    fn read_answer(
        &self,
        body: &[u8],
        _: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let answer: Answer = parse_json(body)?;
        let first = match answer {
            Answer::List(mut list) if !list.is_empty() => list.swap_remove(0),
            Answer::List(_) => Event::default(),
            Answer::One(one) => one,
        };
        failed(first.error.as_deref())?;
        let Some(text) = first.generated_text.filter(|t| !t.is_empty()) else {
            return Err(Failure::bad(
                Malformation::MissingOutput,
                format!("the answer has no generated_text: {}", shown(body)),
            ));
        };
        ex.content(&text);
        Ok(ChunkFacts {
            content: true,
            output: true,
            ..ChunkFacts::default()
        })
    }

    fn stream_ends_with_body(&self) -> bool {
        true
    }
}

fn failed(error: Option<&str>) -> Result<(), Failure> {
    match error {
        Some(message) => Err(Failure::new(
            ErrorKind::StreamError,
            format!("the server sent an error: {message}"),
        )),
        None => Ok(()),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Answer<'a> {
    #[serde(borrow)]
    List(Vec<Event<'a>>),
    One(Event<'a>),
}

#[derive(Deserialize, Default)]
struct Event<'a> {
    #[serde(default, borrow)]
    token: Option<Token<'a>>,
    #[serde(default, borrow)]
    generated_text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    error: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Token<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

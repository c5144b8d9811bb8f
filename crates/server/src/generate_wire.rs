//! The `llm` kind's answers in two more wire formats: Hugging Face TGI's (`POST /generate`:
//! `{"generated_text", "details"}`; `POST /generate_stream`: an event per step with its
//! `token.text`, then a final event with the EOS token, the whole `generated_text` and the
//! `details`; no `data: [DONE]`, the stream ends with the body) and SOLIDO RAG's
//! (`POST /rag/api/prompt`: `{"content", "sources"}`, or streamed as events of `content`,
//! the last with the `sources`), and Triton's generate extension (`POST
//! /v2/models/{m}[/versions/{v}]/generate`: `{"text_input", "max_tokens"}` in,
//! `{"model_name", "model_version", "text_output"}` out; `generate_stream`: one such object
//! per step with that step's text, no `data: [DONE]`; errors `{"error": "..."}`), so that a
//! client of Triton's LLM routes (GenAI-Perf's `generate`) is measured against the same
//! engine as the others. All read a prompt's text as the completions API does.

use bytes::Bytes;
use serde_json::{json, Value};

use super::openai_wire::{Events, GenerateRequest, Plan, TOKEN};

/// TGI's words for why the answer stopped.
fn finish(plan: &Plan) -> &'static str {
    match plan.finish {
        "length" => "length",
        _ => "eos_token",
    }
}

fn details(plan: &Plan) -> Value {
    json!({"finish_reason": finish(plan), "generated_tokens": plan.tokens, "seed": null})
}

/// TGI's whole answer.
pub(crate) fn tgi_answer(plan: &Plan) -> Value {
    json!({"generated_text": TOKEN.repeat(plan.tokens as usize), "details": details(plan)})
}

/// TGI's stream: an event per step of `per_event` tokens.
pub(crate) fn tgi_events(plan: &Plan, per_event: u32) -> Events {
    let event = |index: u32, tokens: u32| {
        let token = json!({"id": index, "text": TOKEN.repeat(tokens as usize), "logprob": 0.0,
            "special": false});
        let data = json!({"index": index, "token": token, "generated_text": null, "details": null});
        format!("data:{data}\n\n")
    };
    let eos = json!({"id": 0, "text": "", "logprob": 0.0, "special": true});
    let whole = TOKEN.repeat(plan.tokens as usize);
    let last_data = json!({"index": plan.tokens + 1, "token": eos, "generated_text": whole,
        "details": details(plan)});
    let per_event = per_event.max(1);
    let events = plan.tokens.div_ceil(per_event).max(1);
    Events::plain(
        event(1, per_event.min(plan.tokens)),
        event(2, per_event),
        event(events, plan.tokens - (events - 1) * per_event),
        format!("data:{last_data}\n\n"),
    )
}

fn sources() -> Value {
    json!([{"title": "inferperf", "score": 1.0}])
}

/// SOLIDO RAG's whole answer.
pub(crate) fn rag_answer(plan: &Plan) -> Value {
    json!({"content": TOKEN.repeat(plan.tokens as usize), "sources": sources()})
}

/// SOLIDO RAG's stream: `content` per event, then the sources with no content.
pub(crate) fn rag_events(plan: &Plan, per_event: u32) -> Events {
    let event = |tokens: u32| {
        let data = json!({"content": TOKEN.repeat(tokens as usize)});
        format!("data: {data}\n\n")
    };
    let per_event = per_event.max(1);
    let events = plan.tokens.div_ceil(per_event).max(1);
    let end = json!({"content": "", "sources": sources()});
    Events::plain(
        event(per_event.min(plan.tokens)),
        event(per_event),
        event(plan.tokens - (events - 1) * per_event),
        format!("data: {end}\n\n"),
    )
}

/// A TGI request (`{"inputs", "parameters": {"max_new_tokens"}}`) for `model`, the server's
/// first `llm` model (TGI's routes name none); the error is a sentence for a 400.
pub(crate) fn tgi_request(
    body: &Value,
    model: &str,
    stream: bool,
) -> Result<GenerateRequest, String> {
    let inputs = body.get("inputs").and_then(Value::as_str);
    let inputs = inputs.ok_or("a generate request needs 'inputs' (a string)")?;
    let max = body
        .pointer("/parameters/max_new_tokens")
        .and_then(Value::as_u64);
    Ok(GenerateRequest::of_text(model, inputs.into(), max, stream))
}

/// A SOLIDO RAG request (`{"query": [texts], "inference_model"}`), streamed when the client
/// accepts events or asks `"stream": true`.
pub(crate) fn rag_request(body: &Value, accepts_events: bool) -> Result<GenerateRequest, String> {
    let model = body.get("inference_model").and_then(Value::as_str);
    let model = model.ok_or("a RAG request needs 'inference_model' (the model's name)")?;
    let query = match body.get("query") {
        Some(q @ Value::String(_)) => q.clone(),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            let texts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            Value::from(texts.join(" "))
        }
        _ => return Err("a RAG request needs 'query', a list of texts".into()),
    };
    let stream = accepts_events || body.get("stream").and_then(Value::as_bool) == Some(true);
    let max = body.get("max_tokens").and_then(Value::as_u64);
    Ok(GenerateRequest::of_text(model, query, max, stream))
}

/// A Triton generate route: the model, its version (empty: none named) and whether it is
/// `generate_stream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TritonRoute<'a> {
    pub model: &'a str,
    pub version: &'a str,
    pub stream: bool,
}

/// The Triton generate route of a path: `/v2/models/{m}/generate[_stream]` or
/// `/v2/models/{m}/versions/{v}/generate[_stream]`.
pub(crate) fn triton_route(path: &str) -> Option<TritonRoute<'_>> {
    let rest = path.strip_prefix("/v2/models/")?;
    let (rest, stream) = match rest.strip_suffix("/generate_stream") {
        Some(rest) => (rest, true),
        None => (rest.strip_suffix("/generate")?, false),
    };
    let (model, version) = match rest.split_once("/versions/") {
        Some((model, version)) => (model, version),
        None => (rest, ""),
    };
    let bad = |part: &str| part.contains('/');
    if model.is_empty()
        || bad(model)
        || bad(version)
        || (rest.contains("/versions/") && version.is_empty())
    {
        return None;
    }
    Some(TritonRoute {
        model,
        version,
        stream,
    })
}

/// A Triton generate request: the inputs by name at the top level (`text_input`, and
/// `max_tokens`, `min_tokens`, `ignore_eos` when given), or the numbers in `parameters`;
/// streamed on the `generate_stream` route. The error is a sentence for a 400.
pub(crate) fn triton_request(
    body: &Value,
    model: &str,
    stream: bool,
) -> Result<GenerateRequest, String> {
    let Some(fields) = body.as_object() else {
        return Err("a generate request is a JSON object of the model's inputs by name".into());
    };
    let text = fields.get("text_input").and_then(Value::as_str);
    let text = text.ok_or("a generate request needs 'text_input' (a string)")?;
    let given = |name: &str| {
        (fields.get(name))
            .or_else(|| body.pointer(&format!("/parameters/{name}")))
            .filter(|v| !v.is_null())
    };
    let count = |name: &str| match given(name) {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) => Ok(Some(n)),
            None => Err(format!("'{name}' is {value}, not a whole number of tokens")),
        },
    };
    let ignore_eos = match given("ignore_eos") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return Err(format!("'ignore_eos' is {other}, not true or false")),
    };
    let request = GenerateRequest::of_text(model, text.into(), count("max_tokens")?, stream);
    Ok(request.bounded(count("min_tokens")?, ignore_eos))
}

/// Triton's whole answer: the model's name and version and the text.
pub(crate) fn triton_answer(model: &str, plan: &Plan) -> Value {
    let text = TOKEN.repeat(plan.tokens as usize);
    json!({"model_name": model, "model_version": "1", "text_output": text})
}

/// Triton's stream: an event per step of `per_event` tokens; the body ends after the last.
pub(crate) fn triton_events(model: &str, plan: &Plan, per_event: u32) -> Events {
    let event = |tokens: u32| {
        let text = TOKEN.repeat(tokens as usize);
        let data = json!({"model_name": model, "model_version": "1", "text_output": text});
        format!("data: {data}\n\n")
    };
    let per_event = per_event.max(1);
    let events = plan.tokens.div_ceil(per_event).max(1);
    Events::plain(
        event(per_event.min(plan.tokens)),
        event(per_event),
        event(plan.tokens - (events - 1) * per_event),
        String::new(),
    )
}

/// The event that ends a Triton stream the server cut short: Triton's `{"error": "..."}`.
pub(crate) fn triton_error_event(message: &str) -> Bytes {
    Bytes::from(format!("data: {}\n\n", json!({ "error": message })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triton_routes_name_the_model_and_maybe_its_version() {
        let route = |model, version, stream| {
            Some(TritonRoute {
                model,
                version,
                stream,
            })
        };
        assert_eq!(
            triton_route("/v2/models/llm/generate"),
            route("llm", "", false)
        );
        assert_eq!(
            triton_route("/v2/models/llm/versions/1/generate_stream"),
            route("llm", "1", true)
        );
        for other in [
            "/v2/models/llm/infer",
            "/v2/models//generate",
            "/v2/models/a/b/generate",
            "/v2/models/llm/versions//generate",
            "/generate",
            "/v2/models/llm",
        ] {
            assert_eq!(triton_route(other), None, "{other}");
        }
    }

    #[test]
    fn a_triton_request_reads_the_text_and_the_bounds() {
        let body =
            json!({"text_input": "a b c", "max_tokens": 4, "stream": true, "temperature": 0.1});
        assert!(triton_request(&body, "m", true).is_ok());
        let nested = json!({"text_input": "a", "parameters": {"max_tokens": 2}});
        assert!(triton_request(&nested, "m", false).is_ok());
        for (bad, says) in [
            (json!({"max_tokens": 4}), "needs 'text_input'"),
            (json!({"text_input": 3}), "needs 'text_input'"),
            (json!([1]), "a JSON object"),
            (
                json!({"text_input": "a", "max_tokens": "many"}),
                "not a whole number",
            ),
            (
                json!({"text_input": "a", "ignore_eos": 1}),
                "not true or false",
            ),
        ] {
            let error = triton_request(&bad, "m", false).err().unwrap();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn triton_answers_and_events_carry_text_output() {
        let plan = Plan {
            prompt_tokens: 3,
            tokens: 5,
            finish: "length",
            stream: true,
            usage: false,
            reasoning: 0,
            cached: None,
            tool_call: false,
        };
        let whole = triton_answer("m", &plan);
        assert_eq!(whole["text_output"], "tok tok tok tok tok ");
        assert_eq!(
            (&whole["model_name"], &whole["model_version"]),
            (&json!("m"), &json!("1"))
        );
        let events = triton_events("m", &plan, 2);
        let data = |b: &Bytes| {
            let text = std::str::from_utf8(b).unwrap();
            let json = text.strip_prefix("data: ").unwrap().trim_end();
            serde_json::from_str::<Value>(json).unwrap()["text_output"].clone()
        };
        assert_eq!(data(&events.first), "tok tok ");
        assert_eq!(data(&events.last), "tok ");
        assert!(events.tail.is_empty(), "no data: [DONE]");
        let error = triton_error_event("stopped");
        assert_eq!(&error[..], b"data: {\"error\":\"stopped\"}\n\n");
    }
}

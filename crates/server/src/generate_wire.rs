//! The `llm` kind's answers in two more wire formats: Hugging Face TGI's (`POST /generate`:
//! `{"generated_text", "details"}`; `POST /generate_stream`: an event per step with its
//! `token.text`, then a final event with the EOS token, the whole `generated_text` and the
//! `details`; no `data: [DONE]`, the stream ends with the body) and SOLIDO RAG's
//! (`POST /rag/api/prompt`: `{"content", "sources"}`, or streamed as events of `content`,
//! the last with the `sources`). Both read a prompt's text as the completions API does.

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

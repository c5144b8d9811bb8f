//! The Responses API's answers of the `llm` kind (`POST /v1/responses`): the response
//! object, whole or as typed events, its output a message of `output_text` — or, when the
//! request has tools (and `tool_choice` is not `"none"`), a `function_call` of the first
//! tool whose arguments are the answer's tokens, streamed as
//! `response.function_call_arguments.delta` events. Kept apart from [`super::openai_wire`],
//! which dispatches to it.

use serde_json::{json, Value};

use super::answer_parts::{Events, Plan, TOKEN};

/// A Responses API response object: in progress (no output yet), or done — `completed`, or
/// `incomplete` when the answer stopped at `max_output_tokens` — with its output and usage.
pub(crate) fn response_object(
    id: &str,
    created: u64,
    model: Value,
    plan: &Plan,
    done: bool,
    tool: Option<&str>,
) -> Value {
    let status = match (done, plan.finish) {
        (false, _) => "in_progress",
        (true, "length") => "incomplete",
        (true, _) => "completed",
    };
    let mut response = json!({
        "id": id,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": model,
        "output": [],
        "usage": null,
    });
    if done {
        let text = TOKEN.repeat(plan.tokens as usize);
        let item = match tool {
            Some(name) => function_call(id, name, &text),
            None => {
                let content = json!([{"type": "output_text", "text": text, "annotations": []}]);
                json!({"type": "message", "id": format!("msg-{id}"), "status": "completed",
                    "role": "assistant", "content": content})
            }
        };
        response["output"] = json!([item]);
        let (input, output) = (plan.prompt_tokens, plan.tokens);
        response["usage"] = json!({"input_tokens": input, "output_tokens": output,
            "total_tokens": u64::from(input) + u64::from(output),
            "output_tokens_details": {"reasoning_tokens": 0}});
    }
    if status == "incomplete" {
        response["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    response
}

/// A function call item: the tool's name and the arguments.
fn function_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": format!("fc-{id}"), "call_id": format!("call-{id}"),
        "name": name, "arguments": arguments, "status": "completed"})
}

/// The typed events of a Responses API stream: `response.created` and
/// `response.in_progress` before the first text, a `response.output_text.delta` per event
/// (`response.function_call_arguments.delta` for a tool call, after the call's
/// `response.output_item.added`), then `response.output_text.done` (or
/// `response.function_call_arguments.done`) and `response.completed` (or
/// `response.incomplete`) with the whole response and its usage. No `data: [DONE]`.
pub(crate) fn events(
    (id, created, model_json): (&str, u64, &str),
    plan: &Plan,
    per_event: u32,
    tool: Option<&str>,
) -> Events {
    let model: Value = serde_json::from_str(model_json).unwrap_or_default();
    let typed = |kind: &str, mut data: Value| {
        data["type"] = kind.into();
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let (item, kind) = match tool {
        Some(_) => (format!("fc-{id}"), "response.function_call_arguments"),
        None => (format!("msg-{id}"), "response.output_text"),
    };
    let part = match tool {
        Some(_) => json!({"item_id": item, "output_index": 0}),
        None => json!({"item_id": item, "output_index": 0, "content_index": 0}),
    };
    let delta = |tokens: u32| {
        let mut data = part.clone();
        data["delta"] = TOKEN.repeat(tokens as usize).into();
        typed(&format!("{kind}.delta"), data)
    };
    let started = response_object(id, created, model.clone(), plan, false, tool);
    let finished = response_object(id, created, model, plan, true, tool);
    let end = match plan.finish {
        "length" => "response.incomplete",
        _ => "response.completed",
    };
    let whole = TOKEN.repeat(plan.tokens as usize);
    let mut done = part.clone();
    done[if tool.is_some() { "arguments" } else { "text" }] = whole.as_str().into();
    let tail = typed(&format!("{kind}.done"), done) + &typed(end, json!({"response": finished}));
    let per_event = per_event.max(1);
    let events = plan.tokens.div_ceil(per_event).max(1);
    let mut head = typed("response.created", json!({"response": started}))
        + &typed("response.in_progress", json!({"response": started}));
    if let Some(name) = tool {
        let mut added = function_call(id, name, "");
        added["status"] = "in_progress".into();
        head += &typed(
            "response.output_item.added",
            json!({"output_index": 0, "item": added}),
        );
    }
    Events::plain(
        head + &delta(per_event.min(plan.tokens)),
        delta(per_event),
        delta(plan.tokens - (events - 1) * per_event),
        tail,
    )
}

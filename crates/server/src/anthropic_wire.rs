//! Anthropic's Messages API of the `llm` kind (`POST /v1/messages`): the whole message, or
//! its stream of typed events — `message_start` (with the prompt's `input_tokens`), one
//! `content_block_start`, `ping`, a `content_block_delta` per event (`text_delta`, or
//! `input_json_delta` when the request has tools and the answer is a `tool_use` of the
//! first, its arguments the answer's tokens), `content_block_stop`, `message_delta` (with
//! the `stop_reason` and `output_tokens`) and `message_stop`. Prompt tokens are the words
//! of `system` and of every message's content; the prefix cache's tokens are not reported.

use serde_json::{json, Value};

use super::openai_wire::{Events, Plan, TOKEN};

/// Why the answer stopped, in Anthropic's words.
fn stop_reason(plan: &Plan, tool: Option<&str>) -> &'static str {
    match (tool, plan.finish) {
        (Some(_), _) => "tool_use",
        (None, "length") => "max_tokens",
        (None, _) => "end_turn",
    }
}

/// The content block of the answer: its text, or the call of `tool` with the text as the
/// one field of its input.
fn block(id: &str, tool: Option<&str>, text: &str) -> Value {
    match tool {
        Some(name) => json!({"type": "tool_use", "id": format!("toolu-{id}"), "name": name,
            "input": {"text": text.trim_end()}}),
        None => json!({"type": "text", "text": text}),
    }
}

/// The whole message of a request that did not ask for a stream.
pub(crate) fn answer(id: &str, model: &str, plan: &Plan, tool: Option<&str>) -> Value {
    let text = TOKEN.repeat(plan.tokens as usize);
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block(id, tool, &text)],
        "stop_reason": stop_reason(plan, tool),
        "stop_sequence": null,
        "usage": {"input_tokens": plan.prompt_tokens, "output_tokens": plan.tokens},
    })
}

fn typed(kind: &str, mut data: Value) -> String {
    data["type"] = kind.into();
    format!("event: {kind}\ndata: {data}\n\n")
}

/// A stream of `plan.tokens` tokens, `per_event` to an event.
pub(crate) fn events(
    id: &str,
    model_json: &str,
    plan: &Plan,
    per_event: u32,
    tool: Option<&str>,
) -> Events {
    let model: Value = serde_json::from_str(model_json).unwrap_or_default();
    let message = json!({"id": id, "type": "message", "role": "assistant", "content": [],
        "model": model, "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": plan.prompt_tokens, "output_tokens": 1}});
    let start = match tool {
        Some(name) => {
            json!({"type": "tool_use", "id": format!("toolu-{id}"), "name": name, "input": {}})
        }
        None => json!({"type": "text", "text": ""}),
    };
    let head = typed("message_start", json!({"message": message}))
        + &typed(
            "content_block_start",
            json!({"index": 0, "content_block": start}),
        )
        + &typed("ping", json!({}));
    let delta = |tokens: u32| {
        let text = TOKEN.repeat(tokens as usize);
        let delta = match tool {
            Some(_) => json!({"type": "input_json_delta", "partial_json": text}),
            None => json!({"type": "text_delta", "text": text}),
        };
        typed("content_block_delta", json!({"index": 0, "delta": delta}))
    };
    let end = json!({"delta": {"stop_reason": stop_reason(plan, tool), "stop_sequence": null},
        "usage": {"output_tokens": plan.tokens}});
    let tail = typed("content_block_stop", json!({"index": 0}))
        + &typed("message_delta", end)
        + &typed("message_stop", json!({}));
    let per_event = per_event.max(1);
    let events = plan.tokens.div_ceil(per_event).max(1);
    Events::plain(
        head + &delta(per_event.min(plan.tokens)),
        delta(per_event),
        delta(plan.tokens - (events - 1) * per_event),
        tail,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(tokens: u32) -> Plan {
        Plan {
            prompt_tokens: 5,
            tokens,
            finish: "length",
            stream: true,
            usage: true,
            reasoning: 0,
            cached: None,
            tool_call: false,
        }
    }

    fn parsed(bytes: &[u8]) -> Vec<Value> {
        let text = std::str::from_utf8(bytes).unwrap();
        let data = text.split("\n\n").filter(|e| !e.is_empty());
        data.map(|e| serde_json::from_str(e.split_once("data: ").unwrap().1).unwrap())
            .collect()
    }

    #[test]
    fn a_stream_is_anthropics_events_with_the_usage() {
        let stream = events("m1", "\"m\"", &plan(3), 2, None);
        let mut all = parsed(stream.event(1, 2));
        all.extend(parsed(stream.event(2, 2)));
        all.extend(parsed(&stream.tail));
        let kinds: Vec<&str> = all.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(all[0]["message"]["usage"]["input_tokens"], 5);
        assert_eq!(
            all[3]["delta"],
            json!({"type": "text_delta", "text": "tok tok "})
        );
        assert_eq!(all[4]["delta"]["text"], "tok ");
        assert_eq!(all[6]["usage"]["output_tokens"], 3);
        assert_eq!(all[6]["delta"]["stop_reason"], "max_tokens");
        let tools = events("m2", "\"m\"", &plan(1), 1, Some("get_weather"));
        let first = parsed(&tools.first);
        assert_eq!(first[1]["content_block"]["name"], "get_weather");
        assert_eq!(first[3]["delta"]["partial_json"], "tok ");
        let whole = answer("m3", "m", &plan(2), Some("f"));
        assert_eq!(whole["content"][0]["input"], json!({"text": "tok tok"}));
        assert_eq!(whole["stop_reason"], "tool_use");
    }
}

//! Unit tests of the OpenAI wire format: prompt tokens, how many tokens an answer gets,
//! the events of a stream and the embeddings.

use super::*;
use crate::embeddings_wire::{embedding, embeddings_answer, EmbeddingsRequest};

fn timing(output_tokens: Option<u32>) -> LlmTiming {
    let Some(crate::def::ModelKind::Llm(defaults)) = crate::def::ModelKind::from_name("llm") else {
        unreachable!("llm is a kind")
    };
    LlmTiming {
        output_tokens,
        ..defaults
    }
}

fn request(body: Value) -> GenerateRequest {
    serde_json::from_value(body).unwrap()
}

fn plan(api: Api, body: Value, output_tokens: Option<u32>) -> Result<Plan, String> {
    request(body)
        .prepare(api, &timing(output_tokens))
        .map(|(plan, _)| plan)
}

#[test]
fn prompt_tokens_are_words_of_every_message_or_prompt() {
    let chat = json!({"model": "m", "messages": [
        {"role": "system", "content": "you are  terse"},
        {"role": "user", "content": [{"type": "text", "text": "two words"}, {"type": "input_file"}]},
        {"role": "assistant", "content": null},
    ]});
    assert_eq!(plan(Api::Chat, chat, None).unwrap().prompt_tokens, 5);
    let cases = [
        (json!("one two three"), 3),
        (json!(["a b", "c"]), 3),
        (json!([1, 2, 3, 4]), 4),
        (json!([[1, 2], [3]]), 3),
        (json!(""), 0),
    ];
    for (prompt, expected) in cases {
        let body = json!({"model": "m", "prompt": prompt});
        let got = plan(Api::Completions, body, None).unwrap().prompt_tokens;
        assert_eq!(got, expected, "{prompt}");
    }
}

#[test]
fn answer_length_follows_model_and_request() {
    let body = |extra: Value| {
        let mut b = json!({"model": "m", "prompt": "x"});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let tokens = |extra: Value, output: Option<u32>| {
        let p = plan(Api::Completions, body(extra), output).unwrap();
        (p.tokens, p.finish)
    };
    assert_eq!(tokens(json!({}), None), (16, "length"));
    assert_eq!(tokens(json!({"max_tokens": 7}), None), (7, "length"));
    assert_eq!(
        tokens(json!({"max_tokens": 7, "max_completion_tokens": 9}), None),
        (9, "length")
    );
    assert_eq!(tokens(json!({}), Some(5)), (5, "stop"));
    assert_eq!(tokens(json!({"max_tokens": 10}), Some(5)), (5, "stop"));
    assert_eq!(tokens(json!({"max_tokens": 3}), Some(5)), (3, "length"));
    assert_eq!(
        tokens(json!({"max_tokens": 10, "ignore_eos": true}), Some(5)),
        (10, "length")
    );
    assert_eq!(
        tokens(json!({"max_tokens": 10, "min_tokens": 8}), Some(5)),
        (8, "stop")
    );
    let refused = [
        json!({"max_tokens": 0}),
        json!({"max_tokens": 5, "min_tokens": 6}),
        json!({"n": 2}),
    ];
    for extra in refused {
        let err = plan(Api::Completions, body(extra.clone()), None).unwrap_err();
        assert!(!err.contains('\n') && err.len() > 10, "{extra}: {err}");
    }
    assert!(plan(Api::Chat, json!({"model": "m", "prompt": "x"}), None).is_err());
    assert!(plan(
        Api::Completions,
        json!({"model": "m", "messages": []}),
        None
    )
    .is_err());
    assert!(serde_json::from_value::<GenerateRequest>(json!({"prompt": "x"})).is_err());
    assert!(
        serde_json::from_value::<GenerateRequest>(json!({"model": "m", "max_tokens": -1})).is_err()
    );
}

/// The JSON objects of a stream's `data:` lines, and whether it ends with `[DONE]`.
fn parse_events(bytes: &[u8]) -> (Vec<Value>, bool) {
    let text = std::str::from_utf8(bytes).unwrap();
    let mut events = Vec::new();
    let mut done = false;
    for event in text.split_terminator("\n\n") {
        let data = event.strip_prefix("data: ").unwrap();
        if data == "[DONE]" {
            done = true;
        } else {
            events.push(serde_json::from_str(data).unwrap());
        }
    }
    (events, done)
}

#[test]
fn stream_events_are_valid_chunks() {
    let body = json!({"model": "m", "messages": [], "max_tokens": 7, "stream": true,
                      "stream_options": {"include_usage": true}});
    let p = plan(Api::Chat, body, None).unwrap();
    assert!(p.stream && p.usage);
    let events = Events::new(Api::Chat, "cmpl-3", 17, "\"m\\\"q\"", &p, 3);
    let (first, _) = parse_events(&events.first);
    assert_eq!(first[0]["id"], "cmpl-3");
    assert_eq!(first[0]["model"], "m\"q");
    assert_eq!(first[0]["object"], "chat.completion.chunk");
    assert_eq!(first[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first[0]["choices"][0]["delta"]["content"], "tok tok tok ");
    assert_eq!(first[0]["choices"][0]["finish_reason"], Value::Null);
    let (full, _) = parse_events(&events.full);
    assert_eq!(
        full[0]["choices"][0]["delta"],
        json!({"content": "tok tok tok "})
    );
    let (last, _) = parse_events(&events.last);
    assert_eq!(last[0]["choices"][0]["delta"], json!({"content": "tok "}));
    let (tail, done) = parse_events(&events.tail);
    assert!(done);
    assert_eq!(tail.len(), 2);
    assert_eq!(tail[0]["choices"][0]["finish_reason"], "length");
    assert_eq!(tail[0]["choices"][0]["delta"]["content"], "");
    assert_eq!(tail[1]["choices"], json!([]));
    assert_eq!(
        tail[1]["usage"],
        json!({"prompt_tokens": 0, "completion_tokens": 7, "total_tokens": 7})
    );

    let body = json!({"model": "m", "prompt": "a", "max_tokens": 2, "stream": true});
    let p = plan(Api::Completions, body, None).unwrap();
    let events = Events::new(Api::Completions, "cmpl-4", 17, "\"m\"", &p, 1);
    let (first, _) = parse_events(&events.first);
    assert_eq!(first[0]["object"], "text_completion");
    assert_eq!(first[0]["choices"][0]["text"], "tok ");
    let (tail, done) = parse_events(&events.tail);
    assert!(done);
    assert_eq!(tail.len(), 1, "no usage chunk unless asked");
    assert_eq!(tail[0]["choices"][0]["text"], "");
}

#[test]
fn whole_answers_carry_text_and_usage() {
    let p = plan(
        Api::Chat,
        json!({"model": "m", "messages": [{"content": "a b"}], "max_tokens": 3}),
        None,
    )
    .unwrap();
    let a = answer(Api::Chat, "cmpl-1", 5, "m", &p);
    assert_eq!(a["object"], "chat.completion");
    assert_eq!(a["choices"][0]["message"]["content"], "tok tok tok ");
    assert_eq!(a["choices"][0]["finish_reason"], "length");
    assert_eq!(
        a["usage"],
        json!({"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5})
    );
    let a = answer(Api::Completions, "cmpl-2", 5, "m", &p);
    assert_eq!(a["object"], "text_completion");
    assert_eq!(a["choices"][0]["text"], "tok tok tok ");
}

fn embeddings_request(body: Value) -> EmbeddingsRequest {
    serde_json::from_value(body).unwrap()
}

#[test]
fn embeddings_are_unit_vectors_fixed_by_their_input() {
    let req = embeddings_request(json!({"model": "e", "input": ["a b c", "d", "a b c"]}));
    let inputs = req.inputs().unwrap();
    assert_eq!(
        inputs.iter().map(|i| i.tokens).collect::<Vec<_>>(),
        [3, 1, 3]
    );
    let vectors: Vec<Vec<f32>> = inputs.iter().map(|i| embedding(i, 8)).collect();
    assert_eq!(vectors[0], vectors[2]);
    assert_ne!(vectors[0], vectors[1]);
    for v in &vectors {
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5, "{v:?}");
    }
    let answer = embeddings_answer("e", &inputs, 8, false);
    assert_eq!(answer["data"].as_array().unwrap().len(), 3);
    assert_eq!(answer["data"][1]["index"], 1);
    assert_eq!(answer["usage"]["prompt_tokens"], 7);
    let encoded = embeddings_answer("e", &inputs[..1], 8, true);
    let text = encoded["data"][0]["embedding"].as_str().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap();
    assert_eq!(bytes.len(), 32);

    assert_eq!(
        embeddings_request(json!({"model": "e", "input": [5, 6]}))
            .inputs()
            .unwrap()
            .len(),
        1
    );
    for bad in [json!([]), json!(3), json!([["a"]]), json!({"x": 1})] {
        let req = embeddings_request(json!({"model": "e", "input": bad}));
        assert!(req.inputs().is_err(), "{:?}", req.input);
    }
    let req = embeddings_request(json!({"model": "e", "input": "x", "dimensions": 4}));
    assert_eq!(req.dims(16), Ok(4));
    assert!(req.dims(2).is_err());
    let req = embeddings_request(json!({"model": "e", "input": "x", "encoding_format": "int8"}));
    assert!(req.base64().is_err());
}

#[test]
fn a_responses_request_counts_its_input_and_honours_max_output_tokens() {
    let text = json!({"model": "m", "input": "one two three", "max_output_tokens": 4});
    let limited = plan(Api::Responses, text, Some(9)).unwrap();
    assert_eq!(
        (limited.prompt_tokens, limited.tokens, limited.finish),
        (3, 4, "length")
    );
    assert!(
        limited.usage,
        "a Responses stream always ends with its usage"
    );
    let messages = json!({"model": "m", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a b"}]},
        {"role": "user", "content": "c"},
    ]});
    assert_eq!(
        plan(Api::Responses, messages, None).unwrap().prompt_tokens,
        3
    );
    let missing = plan(Api::Responses, json!({"model": "m"}), None);
    assert!(missing.unwrap_err().contains("needs 'input'"));
}

#[test]
fn a_responses_stream_is_typed_events_ending_with_the_usage() {
    let body = json!({"model": "m", "input": "a b", "max_output_tokens": 3, "stream": true});
    let three = plan(Api::Responses, body, None).unwrap();
    let events = Events::new(Api::Responses, "r1", 7, "\"m\"", &three, 1);
    let mut bytes = BytesMut::new();
    for i in 1..=3 {
        bytes.extend_from_slice(events.event(i, 3));
    }
    bytes.extend_from_slice(&events.tail);
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let parsed: Vec<(String, Value)> = (text.split("\n\n").filter(|e| !e.is_empty()))
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            (name.strip_prefix("event: ").unwrap().to_string(), data)
        })
        .collect();
    let names: Vec<&str> = parsed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.incomplete",
        ]
    );
    assert!(parsed
        .iter()
        .all(|(name, data)| data["type"] == name.as_str()));
    assert_eq!(parsed[2].1["delta"], TOKEN);
    let end = &parsed[6].1["response"];
    assert_eq!(end["usage"]["output_tokens"], 3);
    assert_eq!(end["usage"]["input_tokens"], 2);
    assert_eq!(end["output"][0]["content"][0]["text"], TOKEN.repeat(3));
    assert!(!text.contains("[DONE]"));
    let whole = answer(Api::Responses, "r1", 7, "m", &three);
    assert_eq!(whole["object"], "response");
    assert_eq!(whole["output"][0]["content"][0]["type"], "output_text");
}

#[test]
fn with_a_prefix_cache_usage_gives_the_cached_tokens() {
    let mut cached = timing(None);
    cached.prefix_cache = 1024;
    let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
    let body = json!({"model": "m", "prompt": words.join(" "), "max_tokens": 2, "stream": true,
                      "stream_options": {"include_usage": true}});
    let (p, blocks) = request(body).prepare(Api::Completions, &cached).unwrap();
    assert_eq!((p.prompt_tokens, p.cached, blocks.len()), (40, Some(0), 2));
    let events = Events::new(Api::Completions, "cmpl-5", 17, "\"m\"", &p, 1);
    let mut tail = BytesMut::new();
    events.write_tail(&mut tail, 32);
    let (tail, done) = parse_events(&tail);
    assert!(done);
    let usage = &tail[1]["usage"];
    assert_eq!(usage["prompt_tokens_details"], json!({"cached_tokens": 32}));
    assert_eq!(usage["prompt_tokens"], 40);
    let whole = Plan {
        cached: Some(16),
        stream: false,
        ..p
    };
    let a = answer(Api::Completions, "cmpl-6", 5, "m", &whole);
    assert_eq!(a["usage"]["prompt_tokens_details"]["cached_tokens"], 16);
    // Without a cache: no details, no blocks.
    let body = json!({"model": "m", "prompt": words.join(" ")});
    let (p, blocks) = request(body)
        .prepare(Api::Completions, &timing(None))
        .unwrap();
    assert_eq!((p.cached, blocks.len()), (None, 0));
    let a = answer(Api::Completions, "cmpl-7", 5, "m", &p);
    assert!(a["usage"].get("prompt_tokens_details").is_none(), "{a}");
}

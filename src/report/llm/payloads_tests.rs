//! Tests of the request bodies of an LLM run and GenAI-Perf's inputs.json.

use super::*;
use crate::data::{Entry, Prompt};
use crate::report::llm::test_llm_config;

#[test]
fn bodies_are_the_adapters_or_the_users_and_inputs_json_wraps_them() {
    let cfg = test_llm_config(&["--streaming"]);
    let entry = |prompt: Prompt| Entry {
        inputs: Vec::new(),
        timestamp_ms: None,
        expected: None,
        origin: "test".into(),
        prompt: Some(prompt),
        stream: None,
    };
    let generated = Prompt {
        text: "hello there".into(),
        input_tokens: 2,
        max_tokens: Some(5),
        body: None,
    };
    let given = Prompt {
        body: Some("{\"model\":\"x\",\"messages\":[]}".into()),
        ..generated.clone()
    };
    let dataset = Dataset {
        tokenizer: None,
        entries: vec![entry(generated.clone()), entry(given)],
    };
    let payloads = Payloads::of(&cfg, &dataset);
    let expected = OpenAi::for_config(&cfg)
        .unwrap()
        .body("test-model", &generated)
        .to_string();
    assert_eq!(payloads.body(0), expected);
    assert_eq!(payloads.body(1), "{\"model\":\"x\",\"messages\":[]}");
    assert_eq!(
        payloads.body(9),
        "",
        "an index past the dataset has no body"
    );
    let inputs = payloads.inputs_json().pretty();
    assert!(inputs.starts_with("{\n  \"data\": [\n    {\n      \"payload\": [\n        {\n"));
    let value: serde_json::Value = serde_json::from_str(&inputs).unwrap();
    assert_eq!(
        value["data"][0]["payload"][0]["messages"][0]["content"],
        "hello there"
    );
    assert_eq!(value["data"][0]["payload"][0]["stream"], true);
    assert_eq!(value["data"][1]["payload"][0]["model"], "x");
}

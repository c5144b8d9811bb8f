//! Tests of the request bodies of an LLM run and GenAI-Perf's inputs.json.

use super::*;

#[test]
fn inputs_json_wraps_each_body() {
    let payloads = Payloads::from_bodies(vec![
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}],\"stream\":true}".into(),
        "{\"model\":\"x\",\"messages\":[]}".into(),
    ]);
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

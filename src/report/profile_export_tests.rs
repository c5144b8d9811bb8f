//! Tests of perf_analyzer's profile export: the layout, every answered request with its
//! answer times, window boundaries, and the inputs as sent (LLM bodies, tensors by name).

use super::*;
use crate::backend::{ErrorKind, TokenSource, Tokens};
use crate::data::{Dataset, Entry};
use crate::measure::level::LevelEnd;
use crate::measure::request_log::WallClock;
use crate::measure::sample::Sample;
use crate::report::llm::{test_llm_settings, test_llm_window};
use std::time::{Duration, Instant};

/// A level at concurrency 2 with two answered requests (one streamed in three answers,
/// one in one piece) and a failed one, the epoch anchored at 1 s.
fn logged_level() -> LevelResult {
    let t = Instant::now();
    let ms = Duration::from_millis;
    let mut log = RequestLog::new(WallClock::at(t, 1_000_000_000));
    let mut streamed = Sample::once(t, t + ms(1), t + ms(31));
    streamed.first = t + ms(11);
    streamed.answers = 3;
    streamed.gaps = 2;
    streamed.request = 1;
    streamed.tokens = Tokens {
        output: 6,
        input: 50,
        source: TokenSource::Usage,
        unstreamed: false,
        ..Default::default()
    };
    log.add(&streamed, &[8_000_000, 12_000_000]);
    log.add(&Sample::once(t, t + ms(2), t + ms(40)), &[]);
    log.add(&Sample::failed(t, t, t + ms(5), ErrorKind::Timeout), &[]);
    log.close_window(t, t + ms(50));
    LevelResult {
        level: LoadLevel::Concurrency(2),
        merged: test_llm_window(),
        windows: Vec::new(),
        end: LevelEnd::Stable,
        notes: Vec::new(),
        requests: Some(log),
        slices: Default::default(),
    }
}

fn export(r: &LevelResult) -> String {
    let settings = test_llm_settings(&["--streaming"]);
    let payloads = Payloads::from_bodies(vec!["{\"a\":1}".into(), "{\"b\":2}".into()]);
    let mut out = Vec::new();
    write_profile_export(
        &mut out,
        &settings,
        r,
        &RequestInputs::of_payloads(&payloads),
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_export_lists_every_answered_request_in_perf_analyzers_layout() {
    let text = export(&logged_level());
    assert!(
        text.starts_with(
            "{\"experiments\":[{\"experiment\":{\"mode\":\"concurrency\",\"value\":2},\"requests\":[{\"timestamp\":1001000000,\"request_inputs\":{\"payload\":\"{\\\"b\\\":2}\"},\"response_timestamps\":[1011000000,1019000000,1031000000],\"response_outputs\":[],\"output_tokens\":6,\"input_tokens\":50}"
        ),
        "{text}"
    );
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let experiment = &value["experiments"][0];
    let requests = experiment["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2, "the failed request is left out");
    assert_eq!(requests[1]["timestamp"], 1_002_000_000u64);
    assert_eq!(requests[1]["request_inputs"]["payload"], "{\"a\":1}");
    assert_eq!(
        requests[1]["response_timestamps"],
        serde_json::json!([1_040_000_000u64])
    );
    assert_eq!(
        experiment["window_boundaries"],
        serde_json::json!([1_000_000_000u64, 1_050_000_000u64])
    );
    assert_eq!(value["service_kind"], "openai");
    assert_eq!(value["endpoint"], "v1/chat/completions");
    assert!(value["version"].as_str().unwrap().starts_with("inferperf "));
    assert!(!text.contains('\n'), "compact, as perf_analyzer writes it");
}

#[test]
fn a_rate_level_is_a_request_rate_experiment_and_no_log_means_no_requests() {
    let mut level = logged_level();
    level.level = LoadLevel::Rate(10.0);
    level.requests = None;
    let value: serde_json::Value = serde_json::from_str(&export(&level)).unwrap();
    assert_eq!(
        value["experiments"][0]["experiment"],
        serde_json::json!({"mode": "request_rate", "value": 10.0})
    );
    assert_eq!(value["experiments"][0]["requests"], serde_json::json!([]));
    assert_eq!(
        value["experiments"][0]["window_boundaries"],
        serde_json::json!([])
    );
}

#[test]
fn a_tensor_request_lists_its_inputs_by_name_as_perf_analyzer_writes_them() {
    use inferperf_wire::model::DataType;
    use inferperf_wire::Tensor;
    let tensor = |name: &str, datatype, shape: Vec<i64>, data: Vec<u8>| Tensor {
        name: name.into(),
        datatype,
        shape,
        data: data.into(),
    };
    let floats: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let mut text = 3u32.to_le_bytes().to_vec();
    text.extend_from_slice(b"abc");
    let entry = Entry {
        inputs: vec![
            tensor(
                "SCALAR",
                DataType::Int32,
                vec![1],
                7i32.to_le_bytes().to_vec(),
            ),
            tensor("FLOATS", DataType::Fp32, vec![1, 2], floats),
            tensor("TEXT", DataType::Bytes, vec![1], text),
            tensor("BAD", DataType::Bytes, vec![1], vec![1, 0, 0, 0, 0xff]),
        ],
        timestamp_ms: None,
        expected: None,
        origin: "test".into(),
        prompt: None,
        stream: None,
        turn: None,
    };
    let settings = crate::results::test_settings(&["-m", "m"]);
    let dataset = Dataset {
        tokenizer: None,
        marker_tokens: 0,
        entries: vec![entry],
    };
    let bodies = || Payloads::from_bodies(Vec::new());
    let sent = Sent {
        dataset: &dataset,
        bodies: &bodies,
    };
    let inputs = RequestInputs::of(&settings, &sent);
    assert_eq!(
        inputs.get(0),
        r#"{"SCALAR":7,"FLOATS":[1.5,-2.0],"TEXT":"abc","BAD":null}"#
    );
    assert_eq!(
        inputs.get(5),
        "{}",
        "an index past the dataset has no inputs"
    );
}

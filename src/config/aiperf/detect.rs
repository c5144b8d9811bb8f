//! AIPerf's reading of an `--input-file` given without `--custom-dataset-type`: the format is
//! the one whose shape the first record has (a `"type"` naming a format wins), and a record
//! that fits several formats is refused, as AIPerf 0.13 refuses it. Checked against AIPerf
//! 0.13's own loaders, record by record (the table in the tests).

use std::io::{BufRead, Read};
use std::path::Path;

use serde_json::{Map, Value};

use inferperf_wire::error::{RunError, RunResult};

/// The formats a record's `"type"` may name, as AIPerf spells them.
const TYPE_NAMES: [&str; 8] = [
    "single_turn",
    "multi_turn",
    "mooncake_trace",
    "random_pool",
    "raw_payload",
    "bailian_trace",
    "burst_gpt_trace",
    "sagemaker_data_capture",
];

/// BurstGPT's CSV columns that make a file a BurstGPT trace.
const BURST_GPT_COLUMNS: [&str; 3] = ["Timestamp", "Request tokens", "Response tokens"];

/// The format of the file, by its first record; `None` when no format fits (reading the
/// file as single_turn then says what is wrong with it) or the file cannot be read here.
pub(super) fn dataset_type(path: &Path) -> RunResult<Option<&'static str>> {
    let Some(first) = first_line(path) else {
        return Ok(None);
    };
    let record = match serde_json::from_str::<Value>(&first) {
        Ok(Value::Object(record)) => record,
        Ok(_) => return Ok(None),
        Err(_) => return Ok(burst_gpt_header(&first).then_some("burst_gpt_trace")),
    };
    let matches = formats_of(&record);
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        several => Err(RunError::bad_option(format!(
            "--input-file {}: its first record fits several of AIPerf's formats ({}), as AIPerf 0.13 also finds: give --custom-dataset-type.",
            path.display(),
            several.join(" and ")
        ))),
    }
}

/// The formats whose shape the record has.
fn formats_of(record: &Map<String, Value>) -> Vec<&'static str> {
    let named = record.get("type").and_then(Value::as_str);
    if let Some(name) = named.and_then(|n| TYPE_NAMES.iter().find(|t| **t == n)) {
        return vec![name];
    }
    // A "type" that names no format (Bailian's "text") rules out the formats whose type
    // field is their own name.
    let untyped = named.is_none();
    let has = |key: &str| record.get(key).is_some_and(|v| !v.is_null());
    let mut formats = Vec::new();
    let modalities = [
        "text", "texts", "image", "images", "audio", "audios", "video", "videos",
    ];
    if untyped && !has("turns") && modalities.iter().any(|k| has(k)) {
        formats.push("single_turn");
    }
    if untyped && record.get("turns").is_some_and(Value::is_array) {
        formats.push("multi_turn");
    }
    if untyped && is_mooncake(record) {
        formats.push("mooncake_trace");
    }
    let messages = record.get("messages").is_some_and(Value::is_array);
    let data_list = record.get("data").is_some_and(Value::is_array);
    if messages && !has("conversation_id") && !data_list {
        formats.push("raw_payload");
    }
    if ["chat_id", "parent_chat_id", "turn"].iter().all(|k| has(k)) {
        formats.push("bailian_trace");
    }
    if record.contains_key("captureData") && record.contains_key("eventMetadata") {
        formats.push("sagemaker_data_capture");
    }
    formats
}

/// Mooncake's rule: exactly one of its four inputs, and hash ids only with a length.
fn is_mooncake(record: &Map<String, Value>) -> bool {
    let has = |key: &str| record.get(key).is_some_and(|v| !v.is_null());
    let inputs = ["input_length", "text_input", "messages", "payload"];
    let given = inputs.iter().filter(|k| has(k)).count();
    given == 1 && (!has("hash_ids") || has("input_length"))
}

fn burst_gpt_header(line: &str) -> bool {
    let columns: Vec<&str> = line.split(',').map(str::trim).collect();
    BURST_GPT_COLUMNS.iter().all(|c| columns.contains(c))
}

/// The first non-empty line of a file (a folder or an unreadable file: none).
fn first_line(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if file.metadata().ok()?.is_dir() {
        return None;
    }
    let mut reader = std::io::BufReader::new(file).take(1 << 20);
    let mut line = String::new();
    while reader.read_line(&mut line).ok()? > 0 {
        if !line.trim().is_empty() {
            return Some(line.trim().to_string());
        }
        line.clear();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each record with what AIPerf 0.13's loaders say of it (their `can_load`).
    #[test]
    fn records_fit_the_formats_aiperf_finds() {
        let cases = [
            (json!({"text": "hi"}), vec!["single_turn"]),
            (json!({"texts": ["a", "b"]}), vec!["single_turn"]),
            (json!({"image": "x.png"}), vec!["single_turn"]),
            (json!({"text": "hi", "timestamp": 5}), vec!["single_turn"]),
            (json!({"turns": [{"text": "a"}]}), vec!["multi_turn"]),
            (
                json!({"input_length": 10, "output_length": 4}),
                vec!["mooncake_trace"],
            ),
            (
                json!({"timestamp": 0, "input_length": 10, "hash_ids": [1]}),
                vec!["mooncake_trace"],
            ),
            (json!({"text_input": "hi"}), vec!["mooncake_trace"]),
            (
                json!({"messages": [{"role": "user", "content": "hi"}], "model": "m"}),
                vec!["mooncake_trace", "raw_payload"],
            ),
            (
                json!({"payload": {"prompt": "x"}, "timestamp": 3}),
                vec!["mooncake_trace"],
            ),
            (
                json!({"chat_id": 1, "parent_chat_id": -1, "turn": 1, "timestamp": 0.5,
                       "input_length": 10, "output_length": 3, "type": "text"}),
                vec!["bailian_trace"],
            ),
            (
                json!({"captureData": {}, "eventMetadata": {}}),
                vec!["sagemaker_data_capture"],
            ),
            (json!({"foo": 1}), vec![]),
            (
                json!({"type": "random_pool", "text": "hi"}),
                vec!["random_pool"],
            ),
        ];
        for (record, expected) in cases {
            let Value::Object(record) = record else {
                unreachable!()
            };
            assert_eq!(formats_of(&record), expected, "{record:?}");
        }
    }

    #[test]
    fn a_file_is_read_by_its_first_record() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let trace = write("t.jsonl", "\n{\"timestamp\": 0, \"input_length\": 9}\n");
        assert_eq!(dataset_type(&trace).unwrap(), Some("mooncake_trace"));
        let csv = write(
            "b.csv",
            "Timestamp,Model,Request tokens,Response tokens\n1,x,2,3\n",
        );
        assert_eq!(dataset_type(&csv).unwrap(), Some("burst_gpt_trace"));
        let both = write(
            "p.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n",
        );
        let refused = dataset_type(&both).unwrap_err().to_string();
        assert!(
            refused.contains("(mooncake_trace and raw_payload)"),
            "{refused}"
        );
        assert_eq!(dataset_type(&dir.path().join("missing")).unwrap(), None);
    }
}

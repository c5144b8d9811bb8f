//! NVIDIA's SPEED-Bench JSON Lines (`qualitative.jsonl`, `throughput_*.jsonl`, as its
//! prepare script writes them): each line `{"question_id", "category", "messages": [{"role",
//! "content"}]}` is a conversation whose messages are its turns, each sent with the answers
//! before it. A per-category type (speed_bench_coding, ..._throughput_1k_mixed) keeps that
//! category's lines, as AIPerf's loaders do.

use serde_json::Value;

use super::formats::objects;
use super::turn_fields::bad;
use super::{Content, Record};
use crate::config::workload::FileFormat;
use inferperf_wire::error::{RunError, RunResult};

/// The text AIPerf refuses: the published file's stand-in for withheld prompts.
const PLACEHOLDER: &str =
    "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH";

/// The conversations of a SPEED-Bench file, of the type's category if it has one.
pub fn read(file: &str, text: &str, format: FileFormat) -> RunResult<Vec<Record>> {
    let category = format.speed_bench_category();
    let mut records = Vec::new();
    let mut session = 0u32;
    for line in objects(file, text) {
        let (origin, map) = line?;
        let Some(found) = map.get("category").and_then(Value::as_str) else {
            return Err(bad(
                &origin,
                "no \"category\"; a SPEED-Bench line has question_id, category and messages",
            ));
        };
        if category.is_some_and(|c| c != found) {
            continue;
        }
        let Some(messages) = map
            .get("messages")
            .and_then(Value::as_array)
            .filter(|m| !m.is_empty())
        else {
            return Err(bad(&origin, "no \"messages\" list"));
        };
        let several = messages.len() > 1;
        for (k, message) in messages.iter().enumerate() {
            let content = message
                .get("content")
                .and_then(Value::as_str)
                .map(str::trim);
            let Some(content) = content.filter(|c| !c.is_empty() && *c != PLACEHOLDER) else {
                return Err(bad(
                    &origin,
                    format_args!("message {k} has no content (the published file's placeholder is not a prompt: run SPEED-Bench's prepare script)"),
                ));
            };
            records.push(Record {
                session: several.then_some(session),
                content: Content::Text(content.to_string()),
                ..Record::new(format!("{origin} message {k}"))
            });
        }
        session += several as u32;
    }
    if records.is_empty() {
        return Err(RunError::bad_option(format!(
            "--input-file {file} has no line of category {}: check the file and --custom-dataset-type {}.",
            category.unwrap_or("(any)"),
            format.name()
        )));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(category: &str, messages: &[&str]) -> String {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| serde_json::json!({"role": "user", "content": m}))
            .collect();
        serde_json::json!({"question_id": "0123456789abcdef0123456789abcdef", "category": category, "messages": messages})
            .to_string()
    }

    #[test]
    fn a_category_keeps_its_lines_and_messages_are_turns() {
        let text = [
            line("coding", &["write a sort", "now in C"]),
            line("math", &["2+2?"]),
        ]
        .join("\n");
        let all = read(
            "q",
            &text,
            FileFormat::SpeedBench("speed_bench_qualitative"),
        )
        .unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(
            (all[0].session, all[1].session, all[2].session),
            (Some(0), Some(0), None)
        );
        let math = read("q", &text, FileFormat::SpeedBench("speed_bench_math")).unwrap();
        assert_eq!(math.len(), 1);
        assert_eq!(math[0].content, Content::Text("2+2?".into()));
        let tier = FileFormat::SpeedBench("speed_bench_throughput_2k_low_entropy");
        assert_eq!(tier.speed_bench_category(), Some("low_entropy"));
        let message = read("q", &text, tier).unwrap_err().to_string();
        assert!(
            message.contains("no line of category low_entropy"),
            "{message}"
        );
        let withheld = line("qa", &[PLACEHOLDER]);
        let message = read("q", &withheld, FileFormat::SpeedBench("speed_bench_qa"))
            .unwrap_err()
            .to_string();
        assert!(message.contains("placeholder"), "{message}");
    }
}

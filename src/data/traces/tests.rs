//! The AIPerf formats read from files in the form AIPerf's own examples have, and every
//! bad line refused with its file, line and fault.

use std::path::PathBuf;

use super::*;
use crate::config::workload::{SharedPrefixes, TraceSlice};
use crate::config::{Endpoint, PromptSource};
use crate::data::tokenizer::{builtin, Counter};

fn llm() -> OpenAiConfig {
    OpenAiConfig {
        endpoint: Endpoint::Chat,
        input_tokens_mean: 20,
        input_tokens_stddev: 0.0,
        output_tokens_mean: Some(7),
        output_tokens_stddev: 0.0,
        output_deterministic: false,
        extra_inputs: Vec::new(),
        prompt_source: PromptSource::Synthetic,
        num_prompts: 3,
        artifact_dir: None,
        tokenizer: None,
        tokenizer_revision: None,
        use_server_token_count: false,
        cache_bust: None,
        apply_chat_template: false,
    }
}

fn file(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("in.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn counter() -> Counter {
    builtin(false).unwrap()
}

fn load(text: &str, format: FileFormat, workload: &WorkloadConfig) -> RunResult<Vec<Entry>> {
    let dir = tempfile::tempdir().unwrap();
    let trace = read(&file(&dir, text), format, &ReadOptions::of(workload, 1))?;
    entries(&trace, workload, &llm(), 1, counter().as_ref())
}

fn refusal(text: &str, format: FileFormat) -> String {
    let dir = tempfile::tempdir().unwrap();
    let options = ReadOptions {
        block_size: Some(16),
        ..ReadOptions::default()
    };
    read(&file(&dir, text), format, &options)
        .unwrap_err()
        .to_string()
}

#[test]
fn single_turn_lines_as_aiperf_writes_them() {
    let text = concat!(
        "{\"text\": \"What is deep learning?\"}\n",
        "{\"texts\": [\"Who are you?\", \"Hello world\"], \"output_length\": 12}\n",
        "{\"timestamp\": 1000, \"text\": \"What is AI?\"}\n",
    );
    let entries = load(text, FileFormat::SingleTurn, &WorkloadConfig::default()).unwrap();
    let prompts: Vec<&Prompt> = entries.iter().map(|e| e.prompt.as_ref().unwrap()).collect();
    assert_eq!(prompts[0].text, "What is deep learning?");
    assert_eq!(
        prompts[0].max_tokens,
        Some(7),
        "the run's --output-tokens-mean"
    );
    assert_eq!(prompts[1].text, "Who are you?");
    let parts = prompts[1]
        .parts
        .as_ref()
        .expect("its second text is a part of its own");
    assert_eq!(parts.texts, ["Hello world"]);
    let both = counter().count("Who are you?").unwrap() + counter().count("Hello world").unwrap();
    assert_eq!(prompts[1].input_tokens, both, "every text part counts");
    assert_eq!(prompts[1].max_tokens, Some(12));
    assert_eq!(entries[2].timestamp_ms, Some(1000.0));
    let tokens = counter().count("What is deep learning?").unwrap();
    assert_eq!(prompts[0].input_tokens, tokens);
    assert!(entries.iter().all(|e| e.turn.is_none()));
}

#[test]
fn multi_turn_sessions_become_numbered_turns() {
    let text = concat!(
        "{\"session_id\": \"a\", \"turns\": [{\"text\": \"Hello\", \"delay\": 0}, {\"text\": \"Hi there\", \"delay\": 1000}]}\n",
        "{\"session_id\": \"b\", \"turns\": [{\"timestamp\": 0, \"text\": \"What is deep learning?\"}, {\"timestamp\": 1000, \"text\": \"Who are you?\"}, {\"text\": \"x\", \"output_length\": 3}]}\n",
    );
    let entries = load(text, FileFormat::MultiTurn, &WorkloadConfig::default()).unwrap();
    let turns: Vec<Turn> = entries.iter().map(|e| e.turn.unwrap()).collect();
    assert_eq!(
        turns
            .iter()
            .map(|t| (t.session, t.number, t.of))
            .collect::<Vec<_>>(),
        [(0, 0, 2), (0, 1, 2), (1, 0, 3), (1, 1, 3), (1, 2, 3)]
    );
    assert_eq!(turns[1].delay_ms, Some(1000.0));
    assert_eq!(entries[3].timestamp_ms, Some(1000.0));
    assert_eq!(entries[4].prompt.as_ref().unwrap().max_tokens, Some(3));
}

/// AIPerf groups single_turn and mooncake_trace lines by `session_id`, in order of each
/// session's first line: a session's lines become its turns, together where its first is.
#[test]
fn lines_of_a_session_id_become_its_turns_where_its_first_line_is() {
    let text = concat!(
        "{\"session_id\": \"a\", \"timestamp\": 0, \"text\": \"one\"}\n",
        "{\"session_id\": 7, \"timestamp\": 5, \"text\": \"two\"}\n",
        "{\"timestamp\": 6, \"text\": \"alone\"}\n",
        "{\"session_id\": \"a\", \"timestamp\": 10, \"text\": \"three\"}\n",
        "{\"session_id\": 7, \"delay\": 3, \"text\": \"four\"}\n",
    );
    let entries = load(text, FileFormat::SingleTurn, &WorkloadConfig::default()).unwrap();
    let texts: Vec<&str> = (entries.iter())
        .map(|e| e.prompt.as_ref().unwrap().text.as_str())
        .collect();
    assert_eq!(texts, ["one", "three", "two", "four", "alone"]);
    let turns: Vec<Option<(u32, u32, bool)>> = (entries.iter())
        .map(|e| e.turn.map(|t| (t.session, t.number, t.history)))
        .collect();
    let sent_as_given = [
        Some((0, 0, false)),
        Some((0, 1, false)),
        Some((1, 0, false)),
        Some((1, 1, false)),
        None,
    ];
    assert_eq!(turns, sent_as_given);
    assert_eq!(entries[3].turn.unwrap().delay_ms, Some(3.0));
    let trace = concat!(
        "{\"session_id\": \"s\", \"timestamp\": 0, \"input_length\": 8}\n",
        "{\"timestamp\": 1, \"input_length\": 8}\n",
        "{\"session_id\": \"s\", \"delay\": 2, \"input_length\": 8}\n",
        "{\"session_id\": \"m\", \"timestamp\": 3, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n",
    );
    let entries = load(trace, FileFormat::MooncakeTrace, &WorkloadConfig::default()).unwrap();
    let turns: Vec<Option<(u32, u32, bool)>> = (entries.iter())
        .map(|e| e.turn.map(|t| (t.session, t.number, t.history)))
        .collect();
    let chats = [
        Some((0, 0, true)),
        Some((0, 1, true)),
        None,
        Some((1, 0, false)),
    ];
    assert_eq!(turns, chats, "a recorded `messages` turn is sent as given");
    let refused = refusal(
        "{\"session_id\": [1], \"text\": \"x\"}\n",
        FileFormat::SingleTurn,
    );
    assert!(
        refused.contains("line 1: \"session_id\" must be a string or a number"),
        "{refused}"
    );
}

#[test]
fn mooncake_hash_ids_share_their_blocks_text() {
    let text = concat!(
        "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n",
        "{\"timestamp\": 5, \"input_length\": 38, \"output_length\": 4, \"hash_ids\": [1, 2, 9]}\n",
        "{\"timestamp\": 9, \"input_length\": 20, \"hash_ids\": [4, 5]}\n",
        "{\"timestamp\": 9, \"text_input\": \"Hello world\", \"output_length\": 2}\n",
        "{\"timestamp\": 12, \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}\n",
        "{\"timestamp\": 20, \"payload\": {\"model\": \"m\", \"prompt\": \"Hello\", \"max_tokens\": 50}}\n",
    );
    let workload = WorkloadConfig {
        block_size: Some(16),
        ..WorkloadConfig::default()
    };
    let entries = load(text, FileFormat::MooncakeTrace, &workload).unwrap();
    let prompts: Vec<&Prompt> = entries.iter().map(|e| e.prompt.as_ref().unwrap()).collect();
    assert_eq!(prompts[0].input_tokens, 40);
    assert_eq!(prompts[1].input_tokens, 38);
    assert_eq!(prompts[2].input_tokens, 20);
    let (first, second) = (&prompts[0].text, &prompts[1].text);
    let common: String = first
        .chars()
        .zip(second.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let shared = common.rsplit_once(' ').map_or("", |(head, _)| head);
    let tokens = counter().count(shared).unwrap();
    assert!(
        (31..=33).contains(&tokens),
        "two shared blocks of 16 tokens, then the third blocks differ: {tokens} in common"
    );
    let word = |t: &str| t.split(' ').next().unwrap().to_string();
    assert_ne!(word(&prompts[2].text), word(first), "other ids, other text");
    assert_eq!(prompts[3].text, "Hello world");
    assert_eq!(prompts[3].max_tokens, Some(2));
    let messages = prompts[4].messages.as_deref().unwrap();
    assert_eq!(messages[0]["content"], "Hi");
    assert_eq!(prompts[4].text, "Hi");
    assert!(prompts[5]
        .body
        .as_ref()
        .unwrap()
        .contains("\"max_tokens\":50"));
    assert_eq!(prompts[5].max_tokens, Some(50));
    assert_eq!(entries[5].timestamp_ms, Some(20.0));
}

#[test]
fn sharegpt_pairs_are_turns_and_answers_their_lengths() {
    let text = r#"[
        {"id": "x", "conversations": [
            {"from": "human", "value": "What is deep learning?"},
            {"from": "gpt", "value": "A kind of machine learning."},
            {"from": "human", "value": "And AI?"},
            {"from": "gpt", "value": "The wider field."}]},
        {"id": "y", "conversations": [{"from": "human", "value": "alone"}]},
        {"id": "z", "conversations": [
            {"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]}
    ]"#;
    let entries = load(text, FileFormat::ShareGpt, &WorkloadConfig::default()).unwrap();
    assert_eq!(entries.len(), 3, "the lone human turn is skipped");
    assert_eq!(
        entries[0].turn.map(|t| (t.session, t.number, t.of)),
        Some((0, 0, 2))
    );
    assert_eq!(entries[1].turn.map(|t| t.number), Some(1));
    assert!(entries[2].turn.is_none(), "one pair: a single request");
    let answer = counter().count("A kind of machine learning.").unwrap();
    assert_eq!(entries[0].prompt.as_ref().unwrap().max_tokens, Some(answer));
}

#[test]
fn inputs_json_payloads_replay_as_sent() {
    let text = r#"{"data": [
        {"session_id": "s0", "payloads": [{"model": "m", "messages": [{"role": "user", "content": "a b"}], "max_tokens": 5}]},
        {"session_id": "s1", "payloads": [
            {"model": "m", "messages": [{"role": "user", "content": "one"}]},
            {"model": "m", "messages": [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}, {"role": "user", "content": "three"}]}]}
    ]}"#;
    let entries = load(text, FileFormat::InputsJson, &WorkloadConfig::default()).unwrap();
    assert_eq!(entries.len(), 3);
    assert!(entries[0].turn.is_none());
    assert_eq!(entries[2].turn.map(|t| (t.session, t.number)), Some((1, 1)));
    let sent: Value =
        serde_json::from_str(entries[2].prompt.as_ref().unwrap().body.as_ref().unwrap()).unwrap();
    assert_eq!(sent["messages"][2]["content"], "three");
    assert_eq!(entries[0].prompt.as_ref().unwrap().max_tokens, Some(5));
}

#[test]
fn bad_lines_name_the_file_the_line_and_the_fault() {
    let cases: [(&str, FileFormat, &str); 11] = [
        ("{\"text\": \"a\"}\nnot json\n", FileFormat::SingleTurn, "line 2: not JSON"),
        ("{\"session_id\": \"a\", \"turns\": []}\n", FileFormat::MultiTurn, "line 1: a session without turns"),
        ("{\"timestamp\": 5, \"output_length\": 3}\n", FileFormat::MooncakeTrace, "line 1: no \"input_length\""),
        (
            "{\"timestamp\": 5, \"text_input\": \"a\"}\n{\"timestamp\": 4, \"text_input\": \"b\"}\n",
            FileFormat::MooncakeTrace,
            "line 2: timestamp 4 ms is before",
        ),
        (
            "{\"input_length\": 40, \"hash_ids\": [1, 2]}\n",
            FileFormat::MooncakeTrace,
            "line 1: input_length 40 does not fit its 2 hash_ids of 16 tokens",
        ),
        (
            "{\"input_length\": 16, \"hash_ids\": [1, 2]}\n",
            FileFormat::MooncakeTrace,
            "more than 16 and at most 32",
        ),
        ("{\"text\": \"a\", \"timestamp\": 1, \"delay\": 2}\n", FileFormat::SingleTurn, "cannot both be given"),
        (
            "{\"session_id\": \"a\", \"turns\": [{\"text\": \"a\"}, {\"text\": \"b\", \"delay\": 1e23}]}\n",
            FileFormat::MultiTurn,
            "line 1 turn 1: \"delay\" is 1e23 ms: give milliseconds from 0 to 86400000 (a day)",
        ),
        ("{\"image\": \"x.png\"}\n", FileFormat::SingleTurn, "line 1: cannot read the media file"),
        ("{\"output_length\": 3}\n", FileFormat::SingleTurn, "line 1: no \"text\""),
        ("[{\"conversations\": []}]", FileFormat::ShareGpt, "holds no requests"),
    ];
    for (text, format, expected) in cases {
        let message = refusal(text, format);
        assert!(message.contains(expected), "{message}");
        assert!(message.contains("in.jsonl"), "{message}");
    }
}

#[test]
fn the_slice_keeps_its_window_scales_time_and_drops_long_requests() {
    let text = concat!(
        "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n",
        "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 5}\n",
        "{\"timestamp\": 2000, \"input_length\": 90, \"output_length\": 20}\n",
        "{\"timestamp\": 3000, \"input_length\": 10, \"output_length\": 5}\n",
        "{\"timestamp\": 4000, \"input_length\": 10, \"output_length\": 5}\n",
    );
    let workload = WorkloadConfig {
        slice: TraceSlice {
            start_ms: Some(1000.0),
            end_ms: Some(3000.0),
            speedup: 2.0,
            max_context: Some(100),
        },
        ..WorkloadConfig::default()
    };
    let entries = load(text, FileFormat::MooncakeTrace, &workload).unwrap();
    let times: Vec<f64> = entries.iter().map(|e| e.timestamp_ms.unwrap()).collect();
    assert_eq!(
        times,
        [500.0, 1500.0],
        "both ends kept, 2x faster, the long one dropped"
    );
    let (_, dropped) = slice::select(
        load(text, FileFormat::MooncakeTrace, &WorkloadConfig::default()).unwrap(),
        &workload.slice,
    );
    assert_eq!(
        dropped,
        slice::Dropped {
            outside: 2,
            too_long: 1
        }
    );
}

#[test]
fn a_replay_spans_at_most_a_day_after_its_speed_up() {
    let text = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 4}\n{\"timestamp\": 1e300, \"input_length\": 10, \"output_length\": 4}\n";
    let message = load(text, FileFormat::MooncakeTrace, &WorkloadConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("run from 0 to 1e300 ms, more than a day (86400000 ms) of replay"),
        "{message}"
    );
    // Two days, replayed twice as fast: one day.
    let two_days = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 4}\n{\"timestamp\": 172800000, \"input_length\": 10, \"output_length\": 4}\n";
    let workload = |speedup| WorkloadConfig {
        slice: TraceSlice {
            speedup,
            ..TraceSlice::default()
        },
        ..WorkloadConfig::default()
    };
    assert!(load(two_days, FileFormat::MooncakeTrace, &workload(1.0)).is_err());
    let entries = load(two_days, FileFormat::MooncakeTrace, &workload(2.0)).unwrap();
    assert_eq!(entries[1].timestamp_ms, Some(86_400_000.0));
}

/// A workload of 2 shared prefixes of 32 tokens, and `prompts` synthetic prompts.
fn two_prefixes_of_32(prompts: usize) -> (WorkloadConfig, OpenAiConfig) {
    let workload = WorkloadConfig {
        prefixes: Some(SharedPrefixes {
            tokens: 32,
            count: 2,
        }),
        ..WorkloadConfig::default()
    };
    let mut llm = llm();
    llm.num_prompts = prompts;
    (workload, llm)
}

#[test]
fn shared_prefixes_and_a_system_prompt_are_exact() {
    let counter = counter();
    let (workload, llm) = two_prefixes_of_32(20);
    let sources = prompts::Sources {
        input_data: &crate::config::InputData::Random,
        workload: &workload,
    };
    let entries = prompts::build(&sources, &llm, 3, counter.as_ref()).unwrap();
    let mut starts: Vec<String> = entries
        .iter()
        .map(|e| {
            let p = e.prompt.as_ref().unwrap();
            assert_eq!(p.input_tokens, 52, "32 prefix tokens and 20 of its own");
            p.text.split(' ').next().unwrap().to_string()
        })
        .collect();
    starts.sort();
    starts.dedup();
    assert_eq!(
        starts.len(),
        2,
        "every prompt starts with one of the 2 prefixes"
    );
    let workload = WorkloadConfig {
        system_prompt_tokens: Some(40),
        ..WorkloadConfig::default()
    };
    let sources = prompts::Sources {
        workload: &workload,
        ..sources
    };
    let mut entries = prompts::build(&sources, &llm, 3, counter.as_ref()).unwrap();
    prompts::add_system_prompt(&mut entries, 40, &llm, 3, counter.as_ref()).unwrap();
    let system = entries[0].prompt.as_ref().unwrap().system.clone().unwrap();
    assert_eq!(counter.count(&system).unwrap(), 40);
    for e in &entries {
        let p = e.prompt.as_ref().unwrap();
        assert_eq!(p.system.as_deref(), Some(&*system));
        assert_eq!(p.input_tokens, 60);
    }
}

#[test]
fn joined_blocks_and_prefixes_keep_their_lengths_where_a_space_costs_a_token() {
    let counter = crate::data::tokenizer::test_counters::bytes();
    let text = concat!(
        "{\"timestamp\": 0, \"input_length\": 40, \"hash_ids\": [1, 2, 3]}\n",
        "{\"timestamp\": 5, \"input_length\": 38, \"hash_ids\": [1, 2, 9]}\n",
        "{\"timestamp\": 9, \"input_length\": 64, \"hash_ids\": [1, 7, 8, 6]}\n",
    );
    let workload = WorkloadConfig {
        block_size: Some(16),
        ..WorkloadConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let options = ReadOptions {
        block_size: Some(16),
        ..ReadOptions::default()
    };
    let trace = read(&file(&dir, text), FileFormat::MooncakeTrace, &options).unwrap();
    let entries = entries(&trace, &workload, &llm(), 1, &counter).unwrap();
    let texts: Vec<&str> = entries
        .iter()
        .map(|e| e.prompt.as_ref().unwrap().text.as_str())
        .collect();
    for (text, length) in texts.iter().zip([40, 38, 64]) {
        assert_eq!(text.len(), length, "{text:?}");
    }
    // Blocks begin where the trace's do: 1 and 2 are the first 32 tokens of both.
    assert_eq!(texts[0][..32], texts[1][..32]);
    assert_ne!(texts[0][33..38], texts[1][33..38]);
    assert_eq!(texts[0][..16], texts[2][..16]);
    assert_ne!(texts[0][16..32], texts[2][16..32]);

    let (workload, llm) = two_prefixes_of_32(10);
    let sources = prompts::Sources {
        input_data: &crate::config::InputData::Random,
        workload: &workload,
    };
    for e in prompts::build(&sources, &llm, 3, &counter).unwrap() {
        let p = e.prompt.unwrap();
        assert_eq!((p.input_tokens, p.text.len()), (52, 52), "{:?}", p.text);
    }
}

//! Sessions replayed at their trace's times (`--fixed-schedule`), against the embedded
//! server's `llm` kind: mooncake_trace and single_turn lines grouped into sessions by
//! `session_id` (AIPerf's grouping, lines of a session anywhere in the file), each session
//! starting at its first turn's timestamp and each later turn at its own timestamp or its
//! delay after the answer before it; a mooncake session's turns carry their history, a
//! single_turn session's are sent as given. The server's own token counts are the truth.

use std::path::Path;

use crate::common;

fn write_lines(dir: &Path, name: &str, lines: &[serde_json::Value]) -> String {
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let path = dir.join(name);
    std::fs::write(&path, text.join("\n")).unwrap();
    path.to_str().unwrap().to_string()
}

async fn replay(
    file: &str,
    format: &str,
    tokenizer: &Path,
) -> inferperf::measure::level::LevelResult {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let extra = [
        "--input-file",
        file,
        "--custom-dataset-type",
        format,
        "--isl-block-size",
        "16",
        "--fixed-schedule",
    ];
    let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), &extra);
    common::profile(&flags).await.remove(0)
}

/// Two sessions whose lines are interleaved with each other and with a request of no
/// session: "a" at timestamps 0, 150, 300 ms; "b" from 50 ms, its later turns 40 ms after
/// each answer. Every line is 16 tokens asking 4: a session's turn k sends 16 + 20 (k - 1)
/// tokens (the prompts and 4-token answers before it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mooncake_trace_of_sessions_replays_each_turn_at_its_time_with_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let line = |session: Option<&str>, at: Option<u32>, delay: Option<u32>, id: u64| {
        let mut line =
            serde_json::json!({"input_length": 16, "output_length": 4, "hash_ids": [id]});
        if let Some(s) = session {
            line["session_id"] = s.into();
        }
        if let Some(t) = at {
            line["timestamp"] = t.into();
        }
        if let Some(d) = delay {
            line["delay"] = d.into();
        }
        line
    };
    let lines = [
        line(Some("a"), Some(0), None, 1),
        line(Some("b"), Some(50), None, 2),
        line(None, Some(60), None, 3),
        line(Some("a"), Some(150), None, 4),
        line(Some("b"), None, Some(40), 5),
        line(Some("b"), None, Some(40), 6),
        line(Some("a"), Some(300), None, 7),
    ];
    let file = write_lines(dir.path(), "sessions.jsonl", &lines);
    let level = replay(&file, "mooncake_trace", &tokenizer).await;
    let merged = &level.merged;
    assert_eq!(merged.ok, 7, "{:?}", merged.errors);
    let tokens = merged.tokens.as_ref().unwrap();
    assert_eq!(tokens.input_tokens.sum(), 2 * (16 + 36 + 56) + 16);
    assert_eq!(
        tokens.usage_input_tokens.sum(),
        tokens.input_tokens.sum(),
        "the server was sent the same conversations"
    );
    let turns = merged.turns.as_ref().unwrap();
    let count = |turn: u16| turns.by_turn.get(&turn).map_or(0, |t| t.ok);
    assert_eq!((count(1), count(2), count(3)), (3, 2, 2));
    // Session a's last turn is due 300 ms after the first send, answered within ~10 ms.
    let span = merged.last_done.unwrap() - merged.first_send.unwrap();
    assert!(
        span.as_millis() >= 300 && span.as_millis() < 400,
        "the replay took {span:?}"
    );
    let lag_p99_ms = merged.send_lag.percentile(99.0) / 1e6;
    assert!(lag_p99_ms < 5.0, "turns {lag_p99_ms} ms late at p99");
}

/// single_turn lines of one `session_id` wait for each other but are sent as given: the
/// server counts each line's own words, and no turn carries another's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_turn_lines_of_a_session_go_in_order_without_history() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let line = |session: &str, at: u32, words: usize| {
        let text = vec![format!("{session}w"); words].join(" ");
        serde_json::json!({"session_id": session, "timestamp": at, "text": text, "output_length": 3})
    };
    let lines = [
        line("x", 0, 5),
        line("y", 10, 7),
        line("x", 20, 9),
        line("y", 30, 11),
    ];
    let file = write_lines(dir.path(), "single.jsonl", &lines);
    let level = replay(&file, "single_turn", &tokenizer).await;
    let merged = &level.merged;
    assert_eq!(merged.ok, 4, "{:?}", merged.errors);
    let tokens = merged.tokens.as_ref().unwrap();
    assert_eq!(tokens.usage_input_tokens.sum(), 5 + 7 + 9 + 11);
    let turns = merged.turns.as_ref().unwrap();
    assert_eq!(turns.by_turn.get(&2).map(|t| t.ok), Some(2));
}

/// A multi_turn file's session without a first timestamp is refused under a fixed schedule,
/// in one sentence naming the file and the session, before any load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_turn_session_without_a_first_timestamp_is_refused_under_a_fixed_schedule() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let session = |id: &str, first: Option<u32>| {
        let mut turn = serde_json::json!({"text": "hello there", "output_length": 2});
        if let Some(t) = first {
            turn["timestamp"] = t.into();
        }
        serde_json::json!({"session_id": id, "turns": [turn, {"text": "and then", "delay": 5}]})
    };
    let file = write_lines(
        dir.path(),
        "multi.jsonl",
        &[session("s0", Some(0)), session("s1", None)],
    );
    let args = [
        "profile",
        "-m",
        "chat",
        "--endpoint-type",
        "chat",
        "-u",
        &addr,
        "--input-file",
        &file,
        "--custom-dataset-type",
        "multi_turn",
        "--fixed-schedule",
    ];
    let out = common::run_cli(&args).await;
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("first turn's \"timestamp\""), "{stderr}");
    assert!(stderr.contains("multi.jsonl line 2 turn 0"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

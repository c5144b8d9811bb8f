//! LLM workloads as real traffic, against the embedded server's `llm` kind: AIPerf's trace
//! files replayed at their own times (a slice of them, faster, with over-long requests
//! dropped), prompts made of a trace's hash-id blocks of exactly their length, and bad
//! files refused — the whole file checked before anything is sent.

use std::path::{Path, PathBuf};

use crate::common;

/// A mooncake trace of `n` requests `gap_ms` apart, each of 48 tokens in three 16-token
/// blocks whose first two are shared by all, asking 4 tokens; request 7 is 400 tokens long.
fn mooncake_trace(dir: &Path, n: usize, gap_ms: usize) -> PathBuf {
    let lines: Vec<String> = (0..n)
        .map(|i| {
            let (length, ids) = match i {
                7 => (400, (0..25).map(|k| 1000 + k).collect::<Vec<_>>()),
                _ => (48, vec![1, 2, 100 + i]),
            };
            serde_json::json!({
                "timestamp": i * gap_ms, "input_length": length, "output_length": 4, "hash_ids": ids
            })
            .to_string()
        })
        .collect();
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_slice_replays_at_its_times_faster_without_its_long_requests() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let trace = mooncake_trace(dir.path(), 40, 20);
    let extra = [
        "--input-file",
        trace.to_str().unwrap(),
        "--custom-dataset-type",
        "mooncake_trace",
        "--isl-block-size",
        "16",
        "--fixed-schedule",
        "--fixed-schedule-start-offset",
        "100",
        "--fixed-schedule-end-offset",
        "600",
        "--replay-speedup",
        "2",
        "--max-context-length",
        "200",
    ];
    let results = common::profile(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    let level = &results[0].merged;
    // Timestamps 100..=600 ms: requests 5..=30, 26 of them; request 7 is too long.
    assert_eq!(level.ok, 25, "{:?}", level.errors);
    let tokens = level.tokens.as_ref().unwrap();
    assert_eq!(
        (tokens.input_tokens.min(), tokens.input_tokens.max()),
        (48.0, 48.0)
    );
    assert_eq!(
        tokens.usage_input_tokens.sum(),
        25 * 48,
        "the server counted the same"
    );
    // 24 gaps of 10 ms (20 ms at twice the speed): the replay spans 240 ms.
    let span = level.last_done.unwrap() - level.first_send.unwrap();
    assert!(
        span.as_millis() >= 240 && span.as_millis() < 400,
        "the slice took {span:?}"
    );
    let lag_p99_ms = level.send_lag.percentile(99.0) / 1e6;
    assert!(lag_p99_ms < 5.0, "sends {lag_p99_ms} ms late at p99");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_file_is_refused_by_line_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "single_turn",
            "{\"text\": \"a\"}\n{\"text\": \"b\"\n",
            "line 2: not JSON",
        ),
        (
            "multi_turn",
            "{\"session_id\": \"s\", \"turns\": []}\n",
            "line 1: a session without turns",
        ),
        (
            "mooncake_trace",
            "{\"timestamp\": 3, \"output_length\": 5}\n",
            "line 1: no \"input_length\"",
        ),
        (
            "mooncake_trace",
            "{\"timestamp\": 30, \"input_length\": 5}\n{\"timestamp\": 10, \"input_length\": 5}\n",
            "line 2: timestamp 10 ms is before",
        ),
        (
            "mooncake_trace",
            "{\"input_length\": 5000, \"hash_ids\": [1, 2]}\n",
            "input_length 5000 does not fit its 2 hash_ids of 512 tokens",
        ),
    ];
    for (format, text, expected) in cases {
        let path = dir.path().join(format!("{format}.jsonl"));
        std::fs::write(&path, text).unwrap();
        // Nothing listens on port 9: a file read after connecting would fail on the URL.
        let args = [
            "profile",
            "-m",
            "chat",
            "--endpoint-type",
            "chat",
            "-u",
            "127.0.0.1:9",
            "--input-file",
            path.to_str().unwrap(),
            "--custom-dataset-type",
            format,
        ];
        let out = common::run_cli(&args).await;
        let stderr = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{format}: {stderr}");
        assert!(stderr.contains(expected), "{format}: {stderr}");
        assert!(stderr.contains(path.to_str().unwrap()), "{stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one sentence: {stderr}"
        );
    }
}

/// The first command: AIPerf's multi_turn file, its sessions played two at a time,
/// each turn carrying the prompts before it and the answers the server gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_turn_file_plays_its_sessions_with_their_history() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    // Turn k of every session has k + 2 words and asks 5 tokens.
    let lines: Vec<String> = (0..4)
        .map(|s| {
            let turns: Vec<_> = (0..3)
                .map(|k| {
                    let words = vec![format!("s{s}t{k}"); k + 2].join(" ");
                    serde_json::json!({"text": words, "output_length": 5, "delay": 10})
                })
                .collect();
            serde_json::json!({"session_id": format!("session-{s}"), "turns": turns}).to_string()
        })
        .collect();
    let file = dir.path().join("conversations.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let extra = [
        "--input-file",
        file.to_str().unwrap(),
        "--custom-dataset-type",
        "multi_turn",
        "--session-concurrency",
        "2",
        "--request-count",
        "12",
    ];
    let results = common::profile(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    let level = &results[0].merged;
    assert_eq!(level.ok, 12, "{:?}", level.errors);
    let tokens = level.tokens.as_ref().unwrap();
    // Turn 1: 2 words; turn 2: 2 + 5 + 3; turn 3: 2 + 5 + 3 + 5 + 4 — in every session (a
    // slot may start a session again before another's last turn: the 12 turns are counted
    // as they are sent, so which sessions they come from varies).
    let turns = level.turns.as_ref().unwrap();
    for (turn, words) in [(1, 2.0), (2, 10.0), (3, 19.0)] {
        let isl = &turns.by_turn[&turn].input_tokens;
        assert_eq!((isl.min(), isl.max()), (words, words), "turn {turn}");
    }
    assert_eq!(
        tokens.usage_input_tokens.sum(),
        tokens.input_tokens.sum(),
        "the server was sent the same conversations"
    );
}

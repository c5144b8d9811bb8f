//! Multi-turn chat sessions against the embedded server's `llm` kind, which counts a
//! request's prompt as the words of all its messages and answers `tok` words: with a
//! word-level tokenizer every count has a known truth. Each turn carries the earlier
//! prompts and the answers the server gave, so turn k's input length is k prompts and k−1
//! answers; the server's own count agrees; the figures by turn reach the console and
//! results.json; a turn that fails ends its session and its later turns are not sent.

use std::path::Path;

use crate::common;

use inferperf::backend::ErrorKind;

/// A sessions run of `sessions` × `turns` turns of `words`-word prompts and 5-word answers.
fn sessions_run(
    addr: &str,
    tokenizer: &Path,
    sessions: &str,
    turns: &str,
    words: &str,
) -> Vec<String> {
    [
        "-m",
        "chat",
        "-u",
        addr,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--tokenizer",
        tokenizer.to_str().unwrap(),
        "--session-concurrency",
        "2",
        "--conversation-num",
        sessions,
        "--session-turns-mean",
        turns,
        "--synthetic-input-tokens-mean",
        words,
        "--output-tokens-mean",
        "5",
        "--output-tokens-mean-deterministic",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_carries_the_conversation_so_far() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let results_file = dir.path().join("results.json");
    let mut args = sessions_run(&addr, &tokenizer, "4", "3", "8");
    args.extend(["--request-count", "12", "--results-file"].map(String::from));
    args.push(results_file.to_str().unwrap().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut line = vec!["profile"];
    line.extend(&args);
    let out = common::run_cli(&line).await;
    let stdout = common::stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        common::stderr(&out)
    );
    assert!(
        stdout.contains("By turn (multi-turn sessions):"),
        "{stdout}"
    );
    assert!(stdout.contains("Turns not sent (an earlier turn of their session failed): 0"));
    let file = common::assert_valid(&results_file);
    let merged = &file["levels"][0]["merged"];
    assert_eq!(merged["ok"], 12, "4 sessions of 3 turns");
    let by_turn = merged["turns"]["by_turn"].as_array().unwrap();
    assert_eq!(by_turn.len(), 3);
    for (k, turn) in by_turn.iter().enumerate() {
        assert_eq!(turn["turn"], k + 1);
        assert_eq!(turn["ok"], 4, "every session's turn {}", k + 1);
        // Turn k carries k−1 prompts of 8 words and the server's 5-word answers, then its own.
        let isl = (8 * (k + 1) + 5 * k) as f64;
        assert_eq!(
            turn["input_tokens"]["mean"].as_f64(),
            Some(isl),
            "turn {}",
            k + 1
        );
        assert!(turn["first_response"]["count"].as_u64() == Some(4));
    }
    let tokens = &merged["tokens"];
    assert_eq!(
        tokens["usage_input_tokens"]["sum"], tokens["input_tokens"]["sum"],
        "the server counted the same conversation as sent"
    );
    assert_eq!(tokens["input_tokens"]["sum"], 4 * (8 + 21 + 34));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_ends_its_session() {
    // Prefill takes 10 ms a prompt word: turn k of 1-word prompts and 5-word answers has
    // 6k − 5 words, so its first token comes at 15, 75, 135 ms — turn 3 misses the 100 ms
    // timeout, and turn 4 is never sent.
    let server =
        common::start_server(&["chat=llm:ttft_ms=5,itl_ms=1,prefill_us_per_token=10000"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let mut args = sessions_run(&addr, &tokenizer, "4", "4", "1");
    args.extend(["--request-count", "12", "--request-timeout", "0.1"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let results = common::profile(&args).await;
    let w = &results[0].merged;
    assert_eq!(w.ok, 8, "turns 1 and 2 of each session");
    assert_eq!(
        w.errors.get(&ErrorKind::Timeout),
        Some(&4),
        "{:?}",
        w.errors
    );
    let turns = w.turns.as_ref().expect("figures by turn");
    assert_eq!(turns.not_sent, 4, "each session's turn 4");
    assert_eq!((turns.by_turn[&3].ok, turns.by_turn[&3].failed), (0, 4));
    assert!(!turns.by_turn.contains_key(&4));
    let ttft = |k: u16| turns.by_turn[&k].first_response.mean() / 1e6;
    assert!(ttft(2) > ttft(1) + 40.0, "{} then {} ms", ttft(1), ttft(2));
}

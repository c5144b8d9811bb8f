//! AIPerf's datasets and dataset flags as real traffic, against the embedded server's `llm`
//! kind, whose own counts are the truth: every custom dataset type inferperf reads beyond
//! the first five (random_pool, raw_payload, bailian_trace, burst_gpt_trace,
//! sagemaker_data_capture, speed_bench_*), AIPerf's turn fields (texts, images, extra),
//! the synthetic prompt flags (--seq-dist, --random-range-ratio, --system-prompt,
//! --user-context-prompt-length, --prompt-batch-size, --prompt-corpus, sampling), and
//! public datasets read from a Hugging Face cache made here (HF_HUB_OFFLINE=1). Each
//! request's input length is held to the server's count of what it was sent, and each
//! answer to the length it was asked for.

use std::path::Path;

use inferperf::measure::level::LevelResult;
use serde_json::{json, Value};

use crate::common;

/// The server's model: 1 ms to the first token and between tokens, answers as long as asked.
const MODEL: &str = "chat=llm:ttft_ms=1,itl_ms=1";
/// Requests a run sends before measuring: one probe of the model and endpoint.
const PROBES: u64 = 1;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn lines(values: &[Value]) -> String {
    values
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `n` words.
fn words(n: usize) -> String {
    vec!["tok"; n].join(" ")
}

/// Profiles `extra` against a new server; the level and the server's count of answers to
/// it (less the one short probe every run sends before measuring).
async fn run(extra: &[&str]) -> (LevelResult, u64) {
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), extra);
    let level = common::profile(&flags).await.remove(0);
    (level, common::served(&server, "chat") - PROBES)
}

/// The level sent `n` requests, all answered, and each one's input length is the server's
/// count of what it was sent, its answer as long as asked. Returns the input lengths'
/// (sum, min, max).
fn assert_truth(level: &LevelResult, served: u64, n: u64) -> (u128, f64, f64) {
    let merged = &level.merged;
    assert_eq!(merged.ok, n, "{:?}", merged.errors);
    assert_eq!(served, n, "the server answered every request");
    let tokens = merged.tokens.as_ref().unwrap();
    assert_eq!(tokens.usage_input_tokens.count(), n);
    assert_eq!(
        tokens.usage_prompt_diff.max(),
        0.0,
        "each request's input length is the server's"
    );
    assert_eq!(tokens.usage_input_tokens.sum(), tokens.input_tokens.sum());
    assert_eq!(tokens.osl_mismatch, 0, "each answer is as long as asked");
    assert_eq!(tokens.asked_tokens, tokens.asked_produced);
    let input = &tokens.input_tokens;
    (input.sum(), input.min(), input.max())
}

fn count_flags<'a>(n: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut flags = vec!["--concurrency", "1", "--request-count", n];
    flags.extend_from_slice(rest);
    flags
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_pool_folder_merges_a_line_of_each_pool_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let query = |i: usize| json!({"text": format!("{} q{i}", words(2))});
    let passage = |i: usize| json!({"texts": [format!("{} p{i}", words(4))]});
    write(
        dir.path(),
        "pools/a_queries.jsonl",
        &lines(&[query(1), query(2), query(3)]),
    );
    write(
        dir.path(),
        "pools/b_passages.jsonl",
        &lines(&[passage(1), passage(2)]),
    );
    let pools = dir.path().join("pools");
    let extra = [
        "--input-file",
        pools.to_str().unwrap(),
        "--custom-dataset-type",
        "random-pool",
    ];
    let mut flags = count_flags("6", &extra);
    flags.extend(["--conversation-num", "6", "--osl", "3"]);
    let (level, served) = run(&flags).await;
    let (sum, min, max) = assert_truth(&level, served, 6);
    assert_eq!((sum, min, max), (6 * 8, 8.0, 8.0), "3 + 5 words a request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_payload_bodies_go_byte_for_byte_and_a_folder_is_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let body = |n: usize, max: u32| {
        format!(
            r#"{{"model":"chat",  "messages":[{{"role":"user","content":"{}"}}], "max_tokens": {max}, "stream": true, "stream_options": {{"include_usage": true}}}}"#,
            words(n)
        )
    };
    let file = write(
        dir.path(),
        "raw.jsonl",
        &[body(3, 2), body(5, 4), body(7, 6)].join("\n"),
    );
    let extra = [
        "--input-file",
        file.as_str(),
        "--custom-dataset-type",
        "raw_payload",
    ];
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let tokenizer = common::word_tokenizer(dir.path());
    let flags = common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &count_flags("3", &extra),
    );
    let cfg = common::config(&flags);
    let prepared = inferperf::commands::profile::prepare(&cfg).await.unwrap();
    let inferperf::backend::Payload::Http(sent) = &prepared.requests[1].payload else {
        panic!("an HTTP request");
    };
    assert!(sent.ends_with(body(5, 4).as_bytes()), "sent as the line is");
    let level = common::profile(&flags).await.remove(0);
    // Two runs' probes: prepare's above and the profile's.
    let (sum, _, _) = assert_truth(&level, common::served(&server, "chat") - 2 * PROBES, 3);
    assert_eq!(sum, 3 + 5 + 7);
    let tokens = level.merged.tokens.as_ref().unwrap();
    assert_eq!(
        tokens.output_tokens.sum(),
        2 + 4 + 6,
        "each body's max_tokens"
    );
    // A folder: each file a session whose lines carry their own history.
    let turn = |history: &[&str], max: u32| {
        let messages: Vec<Value> = history
            .iter()
            .map(|t| json!({"role": "user", "content": t}))
            .collect();
        json!({"model": "chat", "messages": messages, "max_tokens": max, "stream": true,
               "stream_options": {"include_usage": true}})
    };
    let (a, b) = (words(2), words(3));
    write(
        dir.path(),
        "sessions/one.jsonl",
        &lines(&[turn(&[&a], 2), turn(&[&a, &b], 2)]),
    );
    write(
        dir.path(),
        "sessions/two.jsonl",
        &lines(&[turn(&[&b], 2), turn(&[&b, &a], 2)]),
    );
    let folder = dir.path().join("sessions");
    let extra = [
        "--input-file",
        folder.to_str().unwrap(),
        "--custom-dataset-type",
        "raw_payload",
    ];
    let (level, served) = run(&count_flags("4", &extra)).await;
    let (sum, _, _) = assert_truth(&level, served, 4);
    assert_eq!(sum, 2 + 5 + 3 + 5, "each line as authored");
    let turns = level.merged.turns.as_ref().expect("played as sessions");
    assert_eq!(turns.by_turn.get(&2).map(|t| t.ok), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bailian_and_burst_gpt_traces_send_their_lengths_at_their_times() {
    let dir = tempfile::tempdir().unwrap();
    let bailian = lines(&[
        json!({"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.0, "input_length": 20, "output_length": 4, "type": "text", "turn": 1, "hash_ids": [1, 2]}),
        json!({"chat_id": 9, "parent_chat_id": -1, "timestamp": 0.02, "input_length": 25, "output_length": 3, "type": "text", "turn": 1, "hash_ids": [5, 6]}),
        json!({"chat_id": 2, "parent_chat_id": 1, "timestamp": 0.1, "input_length": 30, "output_length": 2, "type": "text", "turn": 2, "hash_ids": [1, 3]}),
    ]);
    let file = write(dir.path(), "bailian.jsonl", &bailian);
    let extra = [
        "--input-file",
        &file,
        "--custom-dataset-type",
        "bailian_trace",
        "--fixed-schedule",
    ];
    let (level, served) = run(&extra).await;
    let (sum, _, max) = assert_truth(&level, served, 3);
    // Chat 2 follows chat 1 with its history: 20 + 4 answered + 30.
    assert_eq!((sum, max), (20 + 25 + 54, 54.0));
    let span = level.merged.last_done.unwrap() - level.merged.first_send.unwrap();
    assert!(
        span.as_millis() >= 100,
        "the last turn went at 100 ms: {span:?}"
    );
    let csv = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0.0,gpt-4,12,3,15,Conversation log\n0.01,gpt-4,30,0,30,Conversation log\n0.05,gpt-4,8,5,13,API log\n";
    let file = write(dir.path(), "burst.csv", csv);
    let extra = [
        "--input-file",
        &file,
        "--custom-dataset-type",
        "burst_gpt_trace",
        "--fixed-schedule",
    ];
    let (level, served) = run(&extra).await;
    let (sum, min, max) = assert_truth(&level, served, 2);
    assert_eq!(
        (sum, min, max),
        (20, 8.0, 12.0),
        "the failed row is skipped"
    );
    assert_eq!(level.merged.tokens.as_ref().unwrap().output_tokens.sum(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sagemaker_captures_and_speed_bench_rows_replay_their_messages() {
    let dir = tempfile::tempdir().unwrap();
    let event = |time: &str, n: usize, max: u32| {
        let body = json!({"messages": [{"role": "system", "content": words(2)}, {"role": "user", "content": words(n)}], "max_tokens": max});
        json!({"captureData": {"endpointInput": {"observedContentType": "application/json", "mode": "INPUT", "data": body.to_string(), "encoding": "JSON"},
               "endpointOutput": {"observedContentType": "application/json", "mode": "OUTPUT", "data": "{\"usage\":{\"prompt_tokens\":12}}", "encoding": "JSON"}},
               "eventMetadata": {"eventId": "e", "inferenceTime": time}, "eventVersion": "0"})
    };
    write(
        dir.path(),
        "capture/2026/04/29/00/a.jsonl",
        &lines(&[event("2026-04-29T00:03:18.05Z", 4, 3)]),
    );
    write(
        dir.path(),
        "capture/2026/04/29/00/b.jsonl",
        &lines(&[event("2026-04-29T00:03:18Z", 6, 2)]),
    );
    let folder = dir.path().join("capture");
    let extra = [
        "--input-file",
        folder.to_str().unwrap(),
        "--custom-dataset-type",
        "sagemaker_data_capture",
        "--fixed-schedule",
    ];
    let (level, served) = run(&extra).await;
    let (sum, _, _) = assert_truth(&level, served, 2);
    assert_eq!(sum, (2 + 4) + (2 + 6));
    assert_eq!(level.merged.tokens.as_ref().unwrap().output_tokens.sum(), 5);
    let row = |category: &str, messages: &[usize]| {
        let messages: Vec<Value> = messages
            .iter()
            .map(|n| json!({"role": "user", "content": words(*n)}))
            .collect();
        json!({"question_id": "0123456789abcdef0123456789abcdef", "category": category, "messages": messages})
    };
    let file = write(
        dir.path(),
        "qualitative.jsonl",
        &lines(&[
            row("math", &[9]),
            row("coding", &[3, 4]),
            row("coding", &[5]),
        ]),
    );
    let extra = [
        "--input-file",
        &file,
        "--custom-dataset-type",
        "speed-bench-coding",
        "--osl",
        "2",
    ];
    let (level, served) = run(&count_flags("3", &extra)).await;
    let (sum, _, _) = assert_truth(&level, served, 3);
    // The coding rows only; the second message follows the first and its 2-token answer.
    assert_eq!(sum, 3 + (3 + 2 + 4) + 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_turn_texts_images_and_extra_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    // A 1×1 PNG: the embedded server reads its size and counts it one token (a 32×32 patch).
    let mut png = Vec::new();
    image::RgbImage::new(1, 1)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    std::fs::write(dir.path().join("dot.png"), png).unwrap();
    let file = write(
        dir.path(),
        "turns.jsonl",
        &lines(&[
            json!({"texts": [words(3), words(4)], "image": "dot.png", "output_length": 2, "extra": {"temperature": 0.5}}),
            json!({"text": words(5), "images": ["dot.png"], "output_length": 3}),
        ]),
    );
    let extra = [
        "--input-file",
        file.as_str(),
        "--custom-dataset-type",
        "single_turn",
    ];
    let flags = count_flags("2", &extra);
    let (level, served) = run(&flags).await;
    assert_eq!(
        (level.merged.ok, served),
        (2, 2),
        "{:?}",
        level.merged.errors
    );
    let tokens = level.merged.tokens.as_ref().unwrap();
    // The client counts the text parts (as AIPerf does); the server adds a token per image.
    assert_eq!(tokens.input_tokens.sum(), 3 + 4 + 5);
    assert_eq!(tokens.usage_input_tokens.sum(), 3 + 4 + 5 + 2);
    let cfg = common::config(&common::chat_flags("127.0.0.1:9", "builtin", &flags));
    let file = inferperf::data::load_dataset_file(&cfg.data.workload, 0)
        .unwrap()
        .unwrap();
    let parts = &file.records[0].parts;
    assert!(parts.images[0].starts_with("data:image/png;base64,iVBORw0KGgo"));
    assert_eq!(parts.extra["temperature"], json!(0.5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequence_distribution_and_a_range_ratio_shape_every_request() {
    let flags = count_flags(
        "30",
        &[
            "--seq-dist",
            "10,3:50;20,5:50",
            "--num-dataset-entries",
            "30",
        ],
    );
    let (level, served) = run(&flags).await;
    let (sum, min, max) = assert_truth(&level, served, 30);
    assert_eq!((min, max), (10.0, 20.0), "both pairs drawn");
    let tokens = level.merged.tokens.as_ref().unwrap();
    let long = (sum - 300) / 10;
    assert_eq!(
        tokens.output_tokens.sum(),
        3 * (30 - long) + 5 * long,
        "each pair's OSL"
    );
    let flags = count_flags(
        "40",
        &["--isl", "20", "--osl", "4", "--random-range-ratio", "0.5"],
    );
    let (level, served) = run(&flags).await;
    let (_, min, max) = assert_truth(&level, served, 40);
    assert!(min >= 10.0 && max <= 30.0 && min < max, "{min}..{max}");
    let tokens = level.merged.tokens.as_ref().unwrap();
    assert!(tokens.output_tokens.min() >= 2.0 && tokens.output_tokens.max() <= 6.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_context_and_batched_texts_are_counted_in_every_request() {
    let flags = count_flags(
        "8",
        &[
            "--isl",
            "10",
            "--osl",
            "2",
            "--system-prompt",
            "Be brief.",
            "--user-context-prompt-length",
            "7",
            "--prompt-batch-size",
            "2",
            "--prompt-corpus",
            "coding",
            "--num-dataset-entries",
            "4",
            "--dataset-sampling-strategy",
            "shuffle",
        ],
    );
    let (level, served) = run(&flags).await;
    let (sum, min, max) = assert_truth(&level, served, 8);
    assert_eq!(
        (min, max),
        (29.0, 29.0),
        "2 system words, 7 of context, two texts of 10"
    );
    assert_eq!(sum, 8 * 29);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_dataset_flags_and_types_are_one_sentence_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "in.jsonl", "{\"text\": \"a b\"}\n");
    let cases: [(&[&str], &str); 7] = [
        (
            &[
                "--input-file",
                &file,
                "--custom-dataset-type",
                "baseten_trace",
            ],
            "Parquet or Arrow",
        ),
        (
            &["--input-file", &file, "--custom-dataset-type", "weka-trace"],
            "subagents",
        ),
        (&["--public-dataset", "librispeech"], "audio input"),
        (
            &[
                "--input-file",
                &file,
                "--custom-dataset-type",
                "single_turn",
                "--seq-dist",
                "10,2:100",
            ],
            "--seq-dist shapes synthetic prompts",
        ),
        (&["--random-range-ratio", "0.2"], "give both"),
        (&["--seq-dist", "10,2:60;20,4:30"], "add up to 90"),
        (&["--ignore-trace-delays"], "applies to the recorded delays"),
    ];
    for (extra, expected) in cases {
        let mut args = vec![
            "profile",
            "-m",
            "chat",
            "--endpoint-type",
            "chat",
            "-u",
            "127.0.0.1:9",
        ];
        args.extend_from_slice(extra);
        let out = common::run_cli(&args).await;
        let stderr = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one sentence: {stderr}"
        );
    }
    let completions = [
        "profile",
        "-m",
        "chat",
        "--endpoint-type",
        "completions",
        "-u",
        "127.0.0.1:9",
        "--system-prompt",
        "x",
    ];
    let out = common::run_cli(&completions).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(common::stderr(&out).contains("only chat and responses requests carry"));
}

//! Token counting against the embedded server's `llm` kind, whose every count has a known
//! truth: the server counts prompts and answers as whitespace-separated words, in its
//! `usage` and at its `POST /tokenize`, so a tokenizer that makes one token of every word
//! must agree with it exactly. Synthetic prompts of exactly the asked length; answers
//! counted from their text (never one token per event), also when an event carries several
//! tokens; reasoning answers with their time to first output token; streams whose tokens
//! arrive coalesced; answers shorter than asked; and the warnings the console gives.

use crate::common;

use inferperf::backend::TokenSource;

fn chat<'a>(addr: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-m",
        "chat",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
        "-u",
        addr,
    ];
    args.extend_from_slice(extra);
    args
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthetic_prompts_have_exactly_the_asked_tokens() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    for (counter, mean) in [(Some(tokenizer.to_str().unwrap()), "32"), (None, "200")] {
        let mut flags = vec![
            "--streaming",
            "--concurrency-range",
            "2",
            "--request-count",
            "20",
            "--synthetic-input-tokens-mean",
            mean,
            "--output-tokens-mean",
            "5",
            "--output-tokens-mean-deterministic",
        ];
        if let Some(path) = counter {
            flags.extend(["--tokenizer", path]);
        }
        let results = common::profile(&chat(&addr, &flags)).await;
        let tokens = results[0].merged.tokens.as_ref().unwrap();
        let asked: u64 = mean.parse().unwrap();
        let isl = &tokens.input_tokens;
        assert_eq!(
            (isl.min(), isl.max()),
            (asked as f64, asked as f64),
            "{counter:?}"
        );
        // The server counted the same words: no difference at all.
        assert_eq!(tokens.usage_input_tokens.sum(), u128::from(20 * asked));
        assert_eq!(tokens.usage_prompt_diff.max(), 0.0);
        assert_eq!(tokens.usage_completion_diff.max(), 0.0);
        let with = tokens.counted_with.as_deref().unwrap();
        let expected = if counter.is_some() {
            "tokenizer.json"
        } else {
            "tokenize endpoint"
        };
        assert!(with.contains(expected), "{with}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_the_answer_text_is_counted_also_several_tokens_per_event() {
    let server = common::start_server(&["chat=llm:ttft_ms=5,itl_ms=4,tokens_per_event=4"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    // No stream_options: the server sends no usage, so the tokenizer counts the text.
    let body = r#"{"model":"chat","messages":[{"role":"user","content":"one two three"}],"max_tokens":20,"stream":true}"#;
    std::fs::write(&input, format!(r#"{{"data":[{{"payload":[{body}]}}]}}"#)).unwrap();
    let flags = [
        "--streaming",
        "--input-data",
        input.to_str().unwrap(),
        "--concurrency-range",
        "1",
        "--request-count",
        "6",
    ];
    let results = common::profile(&chat(&addr, &flags)).await;
    let w = &results[0].merged;
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(tokens.main_source(), TokenSource::Tokenizer);
    assert_eq!(tokens.by_tokenizer, 6);
    assert_eq!(
        tokens.output_tokens.sum(),
        6 * 20,
        "every token, not one per event"
    );
    assert_eq!(tokens.input_tokens.sum(), 6 * 3, "the prompt's words");
    assert_eq!(w.responses.sum(), 6 * 5, "five events of four tokens");
    // Four steps of 4 ms carry the 19 tokens after the first.
    let itl = ms(tokens.inter_token.mean());
    assert!(
        (itl - 16.0 / 19.0).abs() < 16.0 / 19.0 * 0.2,
        "ITL {itl} ms"
    );
    assert_eq!(tokens.coalesced, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_tokens_are_counted_apart_with_the_first_output_token() {
    let server = common::start_server(&["chat=llm:ttft_ms=20,itl_ms=5,reasoning_tokens=4"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    for usage in [true, false] {
        let mut flags = vec![
            "--streaming",
            "--concurrency-range",
            "2",
            "--request-count",
            "10",
            "--output-tokens-mean",
            "12",
            "--output-tokens-mean-deterministic",
            "--synthetic-input-tokens-mean",
            "8",
            "--tokenizer",
            tokenizer.to_str().unwrap(),
        ];
        if !usage {
            flags.extend(["--extra-inputs", "stream_options:{\"include_usage\":false}"]);
        }
        let results = common::profile(&chat(&addr, &flags)).await;
        let w = &results[0].merged;
        let tokens = w.tokens.as_ref().unwrap();
        let source = if usage {
            TokenSource::Usage
        } else {
            TokenSource::Tokenizer
        };
        assert_eq!(tokens.main_source(), source);
        assert_eq!(
            tokens.output_tokens.sum(),
            10 * 12,
            "reasoning is output too"
        );
        assert_eq!(tokens.reasoning_tokens.sum(), 10 * 4);
        // The first output token is the fifth token: four decode steps after the first.
        let ttft = ms(w.first_response.mean());
        let ttfo = ms(tokens.first_output.mean());
        assert!((ttft - 20.0).abs() < 4.0, "TTFT {ttft} ms");
        assert!(
            (ttfo - ttft - 20.0).abs() < 4.0,
            "TTFO {ttfo} ms after TTFT {ttft} ms"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_read_together_are_flagged_not_timed() {
    // A decode step of 10 us: the client reads many events at once, and an inter-token
    // latency from them would be near zero.
    let server = common::start_server(&["chat=llm:ttft_ms=5,itl_ms=0.01"]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--streaming",
        "--concurrency-range",
        "2",
        "--request-count",
        "10",
        "--output-tokens-mean",
        "200",
        "--output-tokens-mean-deterministic",
    ];
    let results = common::profile(&chat(&addr, &flags)).await;
    let tokens = results[0].merged.tokens.as_ref().unwrap();
    assert_eq!(tokens.output_tokens.sum(), 10 * 200);
    assert_eq!(tokens.coalesced, 10, "every stream came in bursts");
    assert_eq!(tokens.inter_token.count(), 0, "kept out of ITL");
    assert_eq!(
        tokens.per_user_milli.count(),
        0,
        "kept out of tokens/s per user"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_says_what_counted_and_what_disagrees() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1,output_tokens=6"]).await;
    let addr = server.http_addr.to_string();
    let flags = [
        "--streaming",
        "--concurrency-range",
        "2",
        "--request-count",
        "10",
        "--output-tokens-mean",
        "12",
        "--tokenizer",
        "builtin",
    ];
    let out = common::run_cli(&chat(&addr, &flags)).await;
    let text = common::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", common::stderr(&out));
    assert!(
        text.contains("Tokens counted with the builtin tokenizer"),
        "{text}"
    );
    // The server stops at 6 of the 12 tokens asked.
    assert!(
        text.contains("10 of 10 requests produced an output length more than 5% off"),
        "{text}"
    );
    assert!(
        text.contains("--output-tokens-mean-deterministic"),
        "{text}"
    );
    // o200k_base does not count "tok tok tok " as three tokens, as the server does.
    assert!(text.contains("[WARNING] more than 2%"), "{text}");
}

#[tokio::test]
async fn a_tokenizer_that_cannot_be_had_is_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"a tokenizer\"}").unwrap();
    let junk = junk.to_str().unwrap();
    let cases = [
        ("./no/such/tokenizer.json", "no such file or folder"),
        (junk, "not a Hugging Face tokenizer.json"),
    ];
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    for (tokenizer, expected) in cases {
        let out = common::run_cli(&chat(&addr, &["--tokenizer", tokenizer])).await;
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains(expected), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let cache = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(chat(&addr, &["--tokenizer", "org/not-cached"]))
        .env("HF_HUB_CACHE", cache.path())
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .await
        .unwrap();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("not in the Hugging Face cache"), "{err}");
    assert!(
        err.contains(cache.path().to_str().unwrap()),
        "says where it looked: {err}"
    );
    // A hub that cannot be reached, and one that has no such revision: the embedded
    // server stands in for the hub (it answers 404 to the hub's paths), so nothing leaves
    // the machine.
    let local_hub = format!("http://{addr}");
    let hubs = [
        ("http://127.0.0.1:1", "could not be reached"),
        (local_hub.as_str(), "at revision v9"),
    ];
    for (hub, expected) in hubs {
        let flags = [
            "--tokenizer",
            "org/not-cached",
            "--tokenizer-revision",
            "v9",
        ];
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
            .args(chat(&addr, &flags))
            .env("HF_HUB_CACHE", cache.path())
            .env("HF_ENDPOINT", hub)
            .env_remove("HF_HUB_OFFLINE")
            .output()
            .await
            .unwrap();
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{hub}: {err}");
        assert!(err.contains(expected), "{hub}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

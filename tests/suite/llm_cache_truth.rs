//! The LLM workloads against the truth of the embedded server's prefix cache (`prefix_cache`
//! blocks of 16 words, prefill paid only for uncached tokens): a shared-prefix run whose
//! cached share is the prefix's share of the prompt, a trace whose server-side hits are what
//! its `hash_ids` imply, sessions whose later turns' TTFT falls as the model's formula says
//! once their history is cached, and cancelled requests the server counts as abandoned.

use crate::common;
use crate::server_util::Http;

use inferperf_server::RunningServer;

/// A counter of the server's `/metrics` page, for model `chat`.
pub(crate) async fn server_metric(server: &RunningServer, name: &str) -> f64 {
    let answer = Http::new(server.http_addr).get("/metrics").await;
    let page = String::from_utf8(answer.body.to_vec()).unwrap();
    let start = format!("{name}{{model_name=\"chat\"}} ");
    let line = page.lines().find(|l| l.starts_with(&start));
    let line = line.unwrap_or_else(|| panic!("no {start:?} in\n{page}"));
    line[start.len()..].parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_prefix_is_served_from_cache_in_its_share_of_the_prompt() {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,prefix_cache=100000"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let extra = [
        "--prefix-prompt-length",
        "160",
        "--num-prefix-prompts",
        "2",
        "--synthetic-input-tokens-mean",
        "40",
        "--output-tokens-mean",
        "4",
        "--concurrency-range",
        "2",
        "--warmup-request-count",
        "6",
        "--request-count",
        "60",
    ];
    let results = common::profile(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    let w = &results[0].merged;
    assert_eq!(w.ok, 60);
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(
        tokens.input_tokens.min(),
        200.0,
        "160 shared and 40 of its own"
    );
    let share = inferperf::report::llm::cache_read_pct(w).unwrap();
    println!("shared prefix: {share:.2}% of prompt tokens cached; the prefix is 80%");
    assert!(
        (share - 80.0).abs() <= 2.0,
        "cached {share}% of prompt tokens; the prefix is 80% of each prompt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traces_server_hits_are_what_its_hash_ids_imply() {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,prefix_cache=100000"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    // Conversations of a root, a branch and a leaf block, some sharing a root or a branch.
    let ids: Vec<Vec<u64>> = (0..24u64)
        .map(|i| vec![i % 3, 10 + i % 6, 100 + i])
        .collect();
    let lines: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(i, ids)| {
            serde_json::json!({"timestamp": i * 25, "input_length": 48, "output_length": 2, "hash_ids": ids})
                .to_string()
        })
        .collect();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, lines.join("\n")).unwrap();
    // Each request hits the longest run of its leading ids an earlier request had.
    let implied = 16 * implied_hit_blocks(&ids);
    let extra = [
        "--input-file",
        trace.to_str().unwrap(),
        "--custom-dataset-type",
        "mooncake_trace",
        "--isl-block-size",
        "16",
        "--fixed-schedule",
    ];
    let results = common::profile(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    let w = &results[0].merged;
    assert_eq!(w.ok, 24);
    let hits = server_metric(&server, "vllm:prefix_cache_hits_total").await as u64;
    println!("trace: server hits {hits} tokens, hash_ids imply {implied}");
    assert_eq!(
        hits, implied,
        "the server's hits against the trace's hash_ids"
    );
    let cached = w.tokens.as_ref().unwrap().usage_cached_tokens.sum() as u64;
    assert_eq!(cached, implied, "the answers' cached_tokens");
}

/// The longest run of leading ids an earlier request had, for each request, in blocks.
fn implied_hit_blocks(ids: &[Vec<u64>]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    let mut implied = 0u64;
    for ids in ids {
        let hit = (1..=ids.len())
            .take_while(|&n| seen.contains(&ids[..n]))
            .count();
        implied += hit as u64;
        for n in 1..=ids.len() {
            seen.insert(ids[..n].to_vec());
        }
    }
    implied
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synthesized_traces_hits_follow_its_stretched_prefixes() {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,prefix_cache=100000"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    // A root and a branch block shared, a leaf of its own; 48 tokens, 2 asked.
    let ids: Vec<Vec<u64>> = (0..24u64)
        .map(|i| vec![i % 3, 10 + i % 6, 100 + i])
        .collect();
    let lines: Vec<String> = (ids.iter().enumerate())
        .map(|(i, ids)| {
            serde_json::json!({"timestamp": i * 100, "input_length": 48, "output_length": 2, "hash_ids": ids})
                .to_string()
        })
        .collect();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let extra = [
        "--input-file",
        trace.to_str().unwrap(),
        "--custom-dataset-type",
        "mooncake_trace",
        "--isl-block-size",
        "16",
        "--fixed-schedule",
        "--synthesis-prefix-len-multiplier",
        "2",
        "--synthesis-prompt-len-multiplier",
        "2",
        "--synthesis-output-len-multiplier",
        "3",
        "--synthesis-speedup-ratio",
        "4",
    ];
    let results = common::profile(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    let w = &results[0].merged;
    assert_eq!(w.ok, 24);
    // Each shared block became two, still shared; the leaf's 16 tokens 32 of its own.
    let tokens = w.tokens.as_ref().unwrap();
    assert_eq!(tokens.input_tokens.min(), 96.0);
    assert_eq!(tokens.input_tokens.max(), 96.0);
    assert_eq!(tokens.output_tokens.mean(), 6.0);
    let implied = 2 * 16 * implied_hit_blocks(&ids);
    let hits = server_metric(&server, "vllm:prefix_cache_hits_total").await as u64;
    println!(
        "synthesized trace: server hits {hits} tokens, the stretched hash_ids imply {implied}"
    );
    assert_eq!(hits, implied, "the server's hits against the rebuilt trace");
    // 2.3 s of trace, four times as fast: the last send at 575 ms.
    let span = w.span().unwrap().as_secs_f64();
    assert!(
        (0.575..1.5).contains(&span),
        "sends and answers spanned {span:.3} s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_turns_ttft_falls_as_the_cached_history_says() {
    let (ttft_ms, prefill_us) = (5.0, 400.0);
    let server = common::start_server(&[
        "chat=llm:ttft_ms=5,itl_ms=1,prefill_us_per_token=400,prefix_cache=100000",
    ])
    .await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let extra = [
        "--session-concurrency",
        "1",
        "--conversation-num",
        "3",
        "--session-turns-mean",
        "3",
        "--synthetic-input-tokens-mean",
        "100",
        "--output-tokens-mean",
        "20",
        "--output-tokens-mean-deterministic",
        "--request-count",
        "9",
    ];
    let results = common::profile(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    let turns = results[0].merged.turns.as_ref().unwrap();
    // Turn k sends the history (all of turn k-1's prompt, cached by whole blocks of 16) and
    // the answer and the new prompt, which are not.
    let isl = [100.0, 220.0, 340.0];
    for (k, figures) in turns.by_turn.values().enumerate() {
        assert_eq!(figures.input_tokens.mean(), isl[k], "turn {}", k + 1);
        let cached = if k == 0 {
            0.0
        } else {
            (isl[k - 1] / 16.0f64).floor() * 16.0
        };
        let formula = ttft_ms + prefill_us * (isl[k] - cached) / 1000.0;
        let uncached = ttft_ms + prefill_us * isl[k] / 1000.0;
        let measured = figures.first_response.mean() / 1e6;
        println!(
            "turn {}: TTFT {measured:.2} ms, formula {formula:.2} ms, uncached {uncached:.2} ms",
            k + 1
        );
        // Within the client's own few milliseconds of the formula, and nearer to it than to
        // the uncached prefill (a loaded machine adds to the client's part, never takes).
        let slack = ((uncached - formula) / 2.0).max(10.0);
        assert!(
            measured > formula - 2.0 && measured < formula + slack,
            "turn {}: TTFT {measured} ms, the formula {formula} ms (uncached {uncached} ms)",
            k + 1
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_counts_the_cancelled_requests_as_abandoned() {
    let server = common::start_server(&["chat=llm:ttft_ms=30,itl_ms=5"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let extra = [
        "--output-tokens-mean",
        "20",
        "--output-tokens-mean-deterministic",
        "--concurrency-range",
        "4",
        "--request-count",
        "100",
        "--request-cancellation-rate",
        "25",
        "--request-cancellation-delay",
        "0.05",
    ];
    let results = common::profile(&common::chat_flags(
        &addr,
        tokenizer.to_str().unwrap(),
        &extra,
    ))
    .await;
    let w = &results[0].merged;
    assert!(w.cancelled > 5, "{} cancelled", w.cancelled);
    // The server notices a reader gone at its sequence's next event.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let abandoned = server_metric(&server, "inferperf:requests_abandoned_total").await as u64;
    println!(
        "cancelled {} of 100; the server counted {abandoned} abandoned",
        w.cancelled
    );
    assert_eq!(abandoned, w.cancelled, "the server's abandoned requests");
}

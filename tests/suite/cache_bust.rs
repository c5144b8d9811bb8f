//! AIPerf's `--cache-bust` against the truth of the embedded server's prefix cache (blocks
//! of 16 words): a marker at the start of the shared system prompt leaves the server
//! nothing to reuse, one at its end leaves the whole blocks before it, a warm-up-only
//! marker keeps the warm-up's blocks apart from the measured requests', a session keeps one
//! marker on all its turns (its history still cached, no other session's), and the marker's
//! word is taken from the synthetic text so the input is as long as asked.

use crate::common;
use crate::llm_cache_truth::server_metric;

/// The server's prefix-cache hits, in tokens.
const HITS: &str = "vllm:prefix_cache_hits_total";

/// The server's prefix-cache hits (tokens) after ten requests of a 160-word shared system
/// prompt and 40 words of their own, one at a time, marked at `place`; and the input
/// lengths' least and most.
async fn hits_after(place: &str, more: &[&str]) -> (u64, f64, f64) {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,prefix_cache=100000"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let mut extra = vec![
        "--shared-system-prompt-length",
        "160",
        "--synthetic-input-tokens-mean",
        "40",
        "--output-tokens-mean",
        "2",
        "--concurrency-range",
        "1",
        "--request-count",
        "10",
        "--cache-bust",
        place,
    ];
    extra.extend_from_slice(more);
    let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), &extra);
    let results = common::profile(&flags).await;
    let w = &results[0].merged;
    assert_eq!(w.ok, 10, "{place}");
    let tokens = w.tokens.as_ref().unwrap();
    let hits = server_metric(&server, HITS).await as u64;
    (hits, tokens.input_tokens.min(), tokens.input_tokens.max())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marker_first_in_the_system_prompt_leaves_the_server_nothing_to_reuse() {
    let (hits, least, most) = hits_after("system_prefix", &[]).await;
    assert_eq!(hits, 0, "each request's marker comes before all it shares");
    assert_eq!(
        (least, most),
        (200.0, 200.0),
        "the marker's word is one of the 200"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marker_last_in_the_system_prompt_leaves_its_whole_blocks_before_it() {
    let (hits, least, most) = hits_after("system_suffix", &[]).await;
    // 159 shared words, then the marker: 9 whole blocks of 16 for each request but the first.
    assert_eq!(hits, 9 * 9 * 16);
    assert_eq!((least, most), (200.0, 200.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_marker_keeps_the_warm_ups_blocks_from_the_measured_requests() {
    let (hits, least, _) =
        hits_after("warmup_isolation_system", &["--warmup-request-count", "3"]).await;
    // The warm-up's second and third requests reuse the first's 10 blocks ("[warmup]" and
    // 159 words of the 160); the first measured request finds none of its own, the nine
    // after it 10 blocks each. Without the marker the warm-up would have warmed all ten.
    assert_eq!(hits, 2 * 160 + 9 * 160);
    assert_eq!(least, 200.0, "no marker in a measured request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_one_marker_on_all_its_turns() {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,prefix_cache=100000"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let extra = [
        "--conversation-num",
        "3",
        "--conversation-turn-mean",
        "2",
        "--synthetic-input-tokens-mean",
        "32",
        "--output-tokens-mean",
        "16",
        "--concurrency",
        "1",
        "--cache-bust",
        "first_turn_prefix",
    ];
    let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), &extra);
    let results = common::profile(&flags).await;
    let w = &results[0].merged;
    assert_eq!(w.ok, 6);
    let hits = server_metric(&server, HITS).await as u64;
    // A second turn resends its first turn's 33 words (marker and 32) and the 16-word
    // answer: the first turn's two whole blocks are cached, nothing of another session.
    assert_eq!(hits, 3 * 2 * 16, "hits of the three second turns");
}

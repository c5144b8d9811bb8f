//! AIPerf's `--apply-chat-template` against the embedded server, with a word-level
//! tokenizer whose tokenizer_config.json holds a template that writes each message as
//! `role: content` and ends with `assistant:` (one word each): a prompt's input is counted
//! as rendered, the template's words are taken from synthetic prompts so the input is as
//! long as asked, a session's later turn is its whole conversation rendered, and a
//! tokenizer without a template counts the text alone.

use crate::common;

const TEMPLATE: &str = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}";

/// The input lengths' least and most, and what the run printed.
async fn input_lengths(templated: bool, extra: &[&str]) -> (f64, f64) {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    common::word_tokenizer(dir.path());
    if templated {
        let config = serde_json::json!({"bos_token": "<s>", "chat_template": TEMPLATE});
        std::fs::write(dir.path().join("tokenizer_config.json"), config.to_string()).unwrap();
    }
    let mut flags = vec![
        "--synthetic-input-tokens-mean",
        "40",
        "--output-tokens-mean",
        "4",
        "--concurrency-range",
        "1",
        "--apply-chat-template",
    ];
    flags.extend_from_slice(extra);
    let folder = dir.path().to_str().unwrap();
    let results = common::profile(&common::chat_flags(&addr, folder, &flags)).await;
    let tokens = results[0].merged.tokens.clone().unwrap();
    (tokens.input_tokens.min(), tokens.input_tokens.max())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_is_counted_as_rendered_and_as_long_as_asked() {
    // 38 words of its own, "user:" and "assistant:".
    let count = ["--request-count", "4"];
    assert_eq!(input_lengths(true, &count).await, (40.0, 40.0));
    // With a 20-word system prompt: "system:" too, taken from the prompt as well.
    let system = [
        "--request-count",
        "4",
        "--shared-system-prompt-length",
        "20",
    ];
    assert_eq!(input_lengths(true, &system).await, (60.0, 60.0));
    // No template beside the tokenizer: the text alone, as asked.
    assert_eq!(input_lengths(false, &count).await, (40.0, 40.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_turn_is_its_whole_conversation_rendered() {
    let sessions = ["--conversation-num", "2", "--conversation-turn-mean", "2"];
    // Turn 1: 40 words, "user:", "assistant:" (a session's prompts keep their length).
    // Turn 2: both prompts and the 4-word answer, three role words and "assistant:".
    assert_eq!(input_lengths(true, &sessions).await, (42.0, 88.0));
}

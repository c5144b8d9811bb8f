//! The prompts of an LLM run: synthetic (prompts of a drawn number of tokens — exactly that
//! many as the run's tokenizer counts them — and answers of a drawn `max_tokens`, as
//! GenAI-Perf and AIPerf make them), read from a JSON Lines file of texts, or whole request
//! bodies from perf_analyzer's OpenAI input format (`{"data": [{"payload": [{...}]}]}`),
//! which are sent as given. Every prompt's input length is the run's tokenizer's count of
//! its text (the message content, without a chat template). Prompts know no protocol; the
//! OpenAI adapter turns each into a request body.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde_json::Value;

use super::entry::{Entry, Prompt};
pub use super::prompt_maker::PromptMaker;
use super::prompt_maker::{count_given, max_tokens};
use super::tokenizer::TokenCount;
use crate::config::workload::WorkloadConfig;
use crate::config::{InputData, OpenAiConfig, PromptSource};
use inferperf_wire::error::{RunError, RunResult};

/// Where an LLM run's prompts come from, beyond the API's prompt settings.
pub struct Sources<'a> {
    pub input_data: &'a InputData,
    pub workload: &'a WorkloadConfig,
}

/// The entries of an LLM run, in the order they are sent: read from `input_data` when it
/// is a file, else from the prompt source (synthetic prompts
/// drawn with `seed`).
pub fn build(
    sources: &Sources,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<Vec<Entry>> {
    let entries = match (sources.input_data, &llm.prompt_source) {
        (InputData::Json(files), _) => {
            let mut entries = Vec::new();
            for file in files {
                entries.extend(read_payloads(file, counter)?);
            }
            entries
        }
        (InputData::Directory(dir), _) => {
            return Err(RunError::bad_option(format!(
                "--input-data {}: an OpenAI run takes perf_analyzer's OpenAI JSON file ({{\"data\": [{{\"payload\": [{{...}}]}}]}}) or --prompt-source file, not a directory.",
                dir.display()
            )))
        }
        (_, PromptSource::File(path)) => read_texts(path, llm, seed, counter)?,
        (_, PromptSource::Synthetic) => synthetic(llm, sources.workload, seed, counter)?,
    };
    if entries.is_empty() {
        return Err(RunError::bad_option(
            "The prompt source gives no prompts: give at least one.",
        ));
    }
    Ok(entries)
}

/// One system message of `tokens` tokens, the same before every prompt (those sent as
/// given keep theirs); each prompt's input length counts it.
pub(super) fn add_system_prompt(
    entries: &mut [Entry],
    tokens: u32,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<()> {
    let mut maker = PromptMaker::new(llm, seed ^ SYSTEM_SEED, counter);
    let (text, counted) = maker.counted_text_of(tokens)?;
    let shared: std::sync::Arc<str> = text.into();
    for prompt in entries.iter_mut().filter_map(|e| e.prompt.as_mut()) {
        if prompt.body.is_none() && prompt.messages.is_none() {
            prompt.system = Some(shared.clone());
            prompt.input_tokens += counted;
        }
    }
    Ok(())
}

/// Draws the system prompt apart from the prompts, so that adding it changes none of them.
const SYSTEM_SEED: u64 = 0x5157_u64;

pub(super) fn entry(prompt: Prompt, origin: String) -> Entry {
    Entry {
        inputs: Vec::new(),
        timestamp_ms: None,
        expected: None,
        origin,
        prompt: Some(prompt),
        stream: None,
        turn: None,
    }
}

/// `--num-prompts` prompts of exactly the drawn number of tokens each (see [`exact_text`]),
/// each after one of the shared prefixes when the workload has them.
fn synthetic(
    llm: &OpenAiConfig,
    workload: &WorkloadConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<Vec<Entry>> {
    let mut maker = PromptMaker::new(llm, seed, counter).shaped(&workload.dataset);
    let prefixes = match workload.prefixes {
        Some(p) => (0..p.count)
            .map(|_| maker.text_of(p.tokens))
            .collect::<RunResult<Vec<_>>>()?,
        None => Vec::new(),
    };
    let entries = (0..llm.num_prompts)
        .map(|i| {
            let tokens = maker.draw_input();
            let text = match (prefixes.len(), workload.prefixes) {
                (0, _) | (_, None) => maker.text_of(tokens)?,
                (k, Some(p)) => {
                    let own = maker.continuation(tokens)?;
                    let prefix = &prefixes[maker.pick(k)];
                    maker.join_exact(prefix, &own, tokens, p.tokens + tokens)?
                }
            };
            let prompt = Prompt {
                input_tokens: maker.count(&text, "a synthetic prompt")?,
                text,
                max_tokens: maker.max_tokens(),
                ..Prompt::default()
            };
            Ok(entry(prompt, format!("synthetic prompt {i}")))
        })
        .collect::<RunResult<Vec<_>>>()?;
    maker.warn_inexact(entries.len());
    Ok(entries)
}

/// A JSON Lines file of `{"text": "..."}` (or `"text_input"`) objects.
fn read_texts(
    path: &Path,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<Vec<Entry>> {
    let shown = path.display();
    let content = std::fs::read_to_string(path)
        .map_err(|e| RunError::bad_option(format!("Cannot read --input-file {shown}: {e}.")))?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut entries = Vec::new();
    for (number, line) in content.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            RunError::bad_option(format!(
                "--input-file {shown} line {}: not JSON ({e}); each line must be {{\"text\": \"...\"}}.",
                number + 1
            ))
        })?;
        let text = ["text", "text_input"]
            .iter()
            .find_map(|key| value.get(key).and_then(Value::as_str))
            .ok_or_else(|| {
                RunError::bad_option(format!(
                    "--input-file {shown} line {}: no \"text\" string; each line must be {{\"text\": \"...\"}}.",
                    number + 1
                ))
            })?;
        let prompt = Prompt {
            text: text.to_string(),
            input_tokens: count_given(counter, text, &format!("{shown} line {}", number + 1))?,
            max_tokens: max_tokens(&mut rng, llm),
            body: None,
            system: None,
            messages: None,
            ..Prompt::default()
        };
        entries.push(entry(prompt, format!("{shown} line {}", number + 1)));
    }
    Ok(entries)
}

/// perf_analyzer's OpenAI input format: each `data` entry holds `"payload": [{body}]`.
fn read_payloads(path: &Path, counter: &dyn TokenCount) -> RunResult<Vec<Entry>> {
    let shown = path.display();
    let not_format = |what: &str| {
        RunError::bad_option(format!(
            "--input-data {shown} is not perf_analyzer's OpenAI format ({what}): it must be {{\"data\": [{{\"payload\": [{{request body}}]}}, ...]}}."
        ))
    };
    let content = std::fs::read_to_string(path)
        .map_err(|e| RunError::bad_option(format!("Cannot read --input-data {shown}: {e}.")))?;
    let root: Value =
        serde_json::from_str(&content).map_err(|e| not_format(&format!("not JSON: {e}")))?;
    let data = root
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| not_format("no \"data\" list"))?;
    data.iter()
        .enumerate()
        .map(|(i, item)| {
            let body = item
                .get("payload")
                .and_then(Value::as_array)
                .and_then(|p| p.first())
                .filter(|b| b.is_object())
                .ok_or_else(|| not_format(&format!("data[{i}] has no \"payload\" object")))?;
            let text = prompt_text(body);
            let prompt = Prompt {
                input_tokens: count_given(counter, &text, &format!("{shown} data[{i}]"))?,
                max_tokens: body_max_tokens(body),
                body: Some(body.to_string()),
                system: None,
                messages: None,
                media: None,
                parts: None,
                text,
                ..Prompt::default()
            };
            Ok(entry(prompt, format!("{shown} data[{i}]")))
        })
        .collect()
}

/// The answer's length a request body asks for (`max_tokens` or `max_completion_tokens`).
pub(crate) fn body_max_tokens(body: &Value) -> Option<u32> {
    ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| body.get(k).and_then(Value::as_u64))
        .map(|n| n.min(u32::MAX as u64) as u32)
}

/// The text a request body asks about: its messages' contents, prompt or input.
pub(crate) fn prompt_text(body: &Value) -> String {
    let strings = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    };
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        let contents = messages.iter().filter_map(|m| m.get("content"));
        return contents.flat_map(strings).collect::<Vec<_>>().join(" ");
    }
    ["prompt", "input"]
        .iter()
        .find_map(|k| body.get(k))
        .map(|v| strings(v).join(" "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Endpoint;
    use crate::data::prompt_maker::{exact_text, vocabulary};
    use crate::data::tokenizer::test_counters::bytes;

    fn llm() -> OpenAiConfig {
        OpenAiConfig {
            endpoint: Endpoint::Chat,
            input_tokens_mean: 200,
            input_tokens_stddev: 20.0,
            output_tokens_mean: Some(20),
            output_tokens_stddev: 0.0,
            output_deterministic: false,
            extra_inputs: Vec::new(),
            prompt_source: PromptSource::Synthetic,
            num_prompts: 50,
            artifact_dir: None,
            tokenizer: None,
            tokenizer_revision: None,
            use_server_token_count: false,
            cache_bust: None,
            apply_chat_template: false,
        }
    }

    #[test]
    fn synthetic_prompts_have_exactly_the_drawn_token_counts() {
        let builtin = crate::data::tokenizer::builtin(false).unwrap();
        for counter in [&bytes() as &dyn TokenCount, builtin.as_ref()] {
            let entries = synthetic(&llm(), &WorkloadConfig::default(), 7, counter).unwrap();
            assert_eq!(entries.len(), 50);
            let prompts: Vec<&Prompt> =
                entries.iter().map(|e| e.prompt.as_ref().unwrap()).collect();
            for p in &prompts {
                assert_eq!(counter.count(&p.text).unwrap(), p.input_tokens);
            }
            let lengths: Vec<u32> = prompts.iter().map(|p| p.input_tokens).collect();
            let mean = lengths.iter().sum::<u32>() as f64 / lengths.len() as f64;
            assert!((mean - 200.0).abs() < 10.0, "{mean}");
            assert!(lengths.iter().any(|&n| n != 200), "the stddev varies them");
            assert_eq!(prompts[0].max_tokens, Some(20));
            let again = synthetic(&llm(), &WorkloadConfig::default(), 7, counter).unwrap();
            assert_eq!(
                again[3].prompt, entries[3].prompt,
                "a seed gives the same prompts"
            );
            let mut firsts: Vec<&str> = prompts
                .iter()
                .map(|p| p.text.split(' ').next().unwrap())
                .collect();
            firsts.sort();
            firsts.dedup();
            assert_eq!(firsts.len(), 50, "every prompt begins with its own word");
        }
    }

    #[test]
    fn a_prompt_of_every_length_is_exact() {
        let builtin = crate::data::tokenizer::builtin(false).unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let vocabulary = vocabulary(&mut rng);
        for tokens in [1, 2, 3, 5, 17, 32, 200, 511] {
            let (text, counted) =
                exact_text(builtin.as_ref(), &mut rng, &vocabulary, 9, tokens).unwrap();
            assert_eq!(
                (counted, builtin.count(&text).unwrap()),
                (tokens, tokens),
                "{text}"
            );
        }
    }

    #[test]
    fn perf_analyzer_payloads_are_kept_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.json");
        let body = r#"{"model":"m","messages":[{"role":"user","content":"two words"}],"max_tokens":9,"stream":true}"#;
        std::fs::write(&path, format!(r#"{{"data":[{{"payload":[{body}]}}]}}"#)).unwrap();
        let entries = read_payloads(&path, &bytes()).unwrap();
        let prompt = entries[0].prompt.as_ref().unwrap();
        assert_eq!(prompt.input_tokens, 9, "two words: 9 bytes");
        assert_eq!(prompt.max_tokens, Some(9));
        let sent: Value = serde_json::from_str(prompt.body.as_ref().unwrap()).unwrap();
        assert_eq!(sent, serde_json::from_str::<Value>(body).unwrap());
        std::fs::write(&path, r#"{"data":[{"text_input":["x"]}]}"#).unwrap();
        let message = read_payloads(&path, &bytes()).unwrap_err().to_string();
        assert!(message.contains("data[0] has no \"payload\""), "{message}");
    }

    #[test]
    fn a_text_file_gives_one_prompt_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(&path, "{\"text\": \"a b c\"}\n\n{\"text\": \"d\"}\n").unwrap();
        let entries = read_texts(&path, &llm(), 0, &bytes()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].prompt.as_ref().unwrap().input_tokens, 5);
        std::fs::write(&path, "{\"nope\": 1}\n").unwrap();
        let message = read_texts(&path, &llm(), 0, &bytes())
            .unwrap_err()
            .to_string();
        assert!(message.contains("line 1: no \"text\""), "{message}");
    }
}

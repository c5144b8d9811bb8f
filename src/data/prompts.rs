//! The prompts of an LLM run: synthetic (prompts of a drawn number of words, answers of a
//! drawn `max_tokens`, as GenAI-Perf makes them), read from a JSON Lines file of texts, or
//! whole request bodies from perf_analyzer's OpenAI input format (`{"data": [{"payload":
//! [{...}]}]}`), which are sent as given. Prompts know no protocol; the OpenAI adapter
//! turns each into a request body.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use serde_json::Value;

use super::entry::{Entry, Prompt};
use crate::config::{Config, InputData, LlmConfig, PromptSource};
use crate::error::{RunError, RunResult};

/// Distinct words synthetic prompts draw from.
const VOCABULARY: usize = 1000;
const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "da", "fe", "go", "hu", "ji", "po", "re", "zu",
];

/// The entries of an LLM run, in the order they are sent.
pub fn build(cfg: &Config, llm: &LlmConfig) -> RunResult<Vec<Entry>> {
    let entries = match (&cfg.input_data, &llm.prompt_source) {
        (InputData::Json(files), _) => {
            let mut entries = Vec::new();
            for file in files {
                entries.extend(read_payloads(file)?);
            }
            entries
        }
        (InputData::Directory(dir), _) => {
            return Err(RunError::bad_option(format!(
                "--input-data {}: an OpenAI run takes perf_analyzer's OpenAI JSON file ({{\"data\": [{{\"payload\": [{{...}}]}}]}}) or --prompt-source file, not a directory.",
                dir.display()
            )))
        }
        (_, PromptSource::File(path)) => read_texts(path, llm, cfg.seed)?,
        (_, PromptSource::Synthetic) => synthetic(llm, cfg.seed),
    };
    if entries.is_empty() {
        return Err(RunError::bad_option(
            "The prompt source gives no prompts: give at least one.",
        ));
    }
    Ok(entries)
}

fn entry(prompt: Prompt, origin: String) -> Entry {
    Entry {
        inputs: Vec::new(),
        timestamp_ms: None,
        expected: None,
        origin,
        prompt: Some(prompt),
        stream: None,
    }
}

/// `--num-prompts` prompts of about `--synthetic-input-tokens-mean` words each.
fn synthetic(llm: &LlmConfig, seed: u64) -> Vec<Entry> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let vocabulary = vocabulary(&mut rng);
    (0..llm.num_prompts)
        .map(|i| {
            let words = draw(&mut rng, llm.input_tokens_mean, llm.input_tokens_stddev);
            let text: Vec<&str> = (0..words)
                .map(|_| vocabulary[rng.random_range(0..vocabulary.len())].as_str())
                .collect();
            let prompt = Prompt {
                text: text.join(" "),
                input_tokens: words,
                max_tokens: max_tokens(&mut rng, llm),
                body: None,
            };
            entry(prompt, format!("synthetic prompt {i}"))
        })
        .collect()
}

/// Pseudo-words of two to four syllables.
fn vocabulary(rng: &mut SmallRng) -> Vec<String> {
    (0..VOCABULARY)
        .map(|_| {
            let syllables = rng.random_range(2..=4);
            (0..syllables)
                .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
                .collect()
        })
        .collect()
}

/// A whole number drawn from Normal(mean, stddev), at least 1.
fn draw(rng: &mut SmallRng, mean: u32, stddev: f64) -> u32 {
    if stddev <= 0.0 {
        return mean.max(1);
    }
    let normal = Normal::new(mean as f64, stddev).expect("stddev was checked to be finite");
    normal.sample(rng).round().clamp(1.0, u32::MAX as f64) as u32
}

fn max_tokens(rng: &mut SmallRng, llm: &LlmConfig) -> Option<u32> {
    llm.output_tokens_mean
        .map(|mean| draw(rng, mean, llm.output_tokens_stddev))
}

/// Words of a text: inferperf's token count when the server gives none.
pub fn word_count(text: &str) -> u32 {
    text.split_whitespace().count() as u32
}

/// A JSON Lines file of `{"text": "..."}` (or `"text_input"`) objects.
fn read_texts(path: &Path, llm: &LlmConfig, seed: u64) -> RunResult<Vec<Entry>> {
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
            input_tokens: word_count(text),
            max_tokens: max_tokens(&mut rng, llm),
            body: None,
        };
        entries.push(entry(prompt, format!("{shown} line {}", number + 1)));
    }
    Ok(entries)
}

/// perf_analyzer's OpenAI input format: each `data` entry holds `"payload": [{body}]`.
fn read_payloads(path: &Path) -> RunResult<Vec<Entry>> {
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
                input_tokens: word_count(&text),
                max_tokens: ["max_tokens", "max_completion_tokens"]
                    .iter()
                    .find_map(|k| body.get(k).and_then(Value::as_u64))
                    .map(|n| n.min(u32::MAX as u64) as u32),
                body: Some(body.to_string()),
                text,
            };
            Ok(entry(prompt, format!("{shown} data[{i}]")))
        })
        .collect()
}

/// The text a request body asks about: its messages' contents, prompt or input.
fn prompt_text(body: &Value) -> String {
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

    fn llm() -> LlmConfig {
        LlmConfig {
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
        }
    }

    #[test]
    fn synthetic_prompts_have_the_asked_lengths() {
        let entries = synthetic(&llm(), 7);
        assert_eq!(entries.len(), 50);
        let words: Vec<u32> = entries
            .iter()
            .map(|e| word_count(&e.prompt.as_ref().unwrap().text))
            .collect();
        let mean = words.iter().sum::<u32>() as f64 / words.len() as f64;
        assert!((mean - 200.0).abs() < 10.0, "{mean}");
        assert!(words.iter().any(|&w| w != 200), "the stddev varies them");
        let first = entries[0].prompt.as_ref().unwrap();
        assert_eq!(first.input_tokens, words[0]);
        assert_eq!(first.max_tokens, Some(20));
        let again = synthetic(&llm(), 7);
        assert_eq!(
            again[3].prompt, entries[3].prompt,
            "a seed gives the same prompts"
        );
    }

    #[test]
    fn perf_analyzer_payloads_are_kept_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.json");
        let body = r#"{"model":"m","messages":[{"role":"user","content":"two words"}],"max_tokens":9,"stream":true}"#;
        std::fs::write(&path, format!(r#"{{"data":[{{"payload":[{body}]}}]}}"#)).unwrap();
        let entries = read_payloads(&path).unwrap();
        let prompt = entries[0].prompt.as_ref().unwrap();
        assert_eq!(prompt.input_tokens, 2);
        assert_eq!(prompt.max_tokens, Some(9));
        let sent: Value = serde_json::from_str(prompt.body.as_ref().unwrap()).unwrap();
        assert_eq!(sent, serde_json::from_str::<Value>(body).unwrap());
        std::fs::write(&path, r#"{"data":[{"text_input":["x"]}]}"#).unwrap();
        let message = read_payloads(&path).unwrap_err().to_string();
        assert!(message.contains("data[0] has no \"payload\""), "{message}");
    }

    #[test]
    fn a_text_file_gives_one_prompt_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(&path, "{\"text\": \"a b c\"}\n\n{\"text\": \"d\"}\n").unwrap();
        let entries = read_texts(&path, &llm(), 0).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].prompt.as_ref().unwrap().input_tokens, 3);
        std::fs::write(&path, "{\"nope\": 1}\n").unwrap();
        let message = read_texts(&path, &llm(), 0).unwrap_err().to_string();
        assert!(message.contains("line 1: no \"text\""), "{message}");
    }
}

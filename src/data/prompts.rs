//! The prompts of an LLM run: synthetic (prompts of a drawn number of tokens — exactly that
//! many as the run's tokenizer counts them — and answers of a drawn `max_tokens`, as
//! GenAI-Perf and AIPerf make them), read from a JSON Lines file of texts, or whole request
//! bodies from perf_analyzer's OpenAI input format (`{"data": [{"payload": [{...}]}]}`),
//! which are sent as given. Every prompt's input length is the run's tokenizer's count of
//! its text (the message content, without a chat template). Prompts know no protocol; the
//! OpenAI adapter turns each into a request body.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use serde_json::Value;

use super::entry::{Entry, Prompt};
use super::tokenizer::{CounterInfo, TokenCount};
use crate::config::workload::WorkloadConfig;
use crate::config::{InputData, OpenAiConfig, PromptSource};
use crate::error::{RunError, RunResult};

/// Distinct words synthetic prompts draw from.
const VOCABULARY: usize = 1000;
const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "da", "fe", "go", "hu", "ji", "po", "re", "zu",
];

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
    let text = maker.text_of(tokens)?;
    let counted = maker.count(&text, "the shared system prompt")?;
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
    let mut maker = PromptMaker::new(llm, seed, counter);
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

/// Makes the texts of a run's prompts: exactly so many tokens of pseudo-words (each text's
/// first word its own), drawn lengths, and counts by the run's tokenizer.
pub struct PromptMaker<'a> {
    llm: &'a OpenAiConfig,
    rng: SmallRng,
    vocabulary: Vec<String>,
    counter: &'a dyn TokenCount,
    made: usize,
    inexact: usize,
}

impl<'a> PromptMaker<'a> {
    pub fn new(llm: &'a OpenAiConfig, seed: u64, counter: &'a dyn TokenCount) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let vocabulary = vocabulary(&mut rng);
        PromptMaker {
            llm,
            rng,
            vocabulary,
            counter,
            made: 0,
            inexact: 0,
        }
    }

    /// A new text of `tokens` tokens (as near as the tokenizer allows).
    pub fn text_of(&mut self, tokens: u32) -> RunResult<String> {
        let number = self.made;
        self.made += 1;
        self.exact(number, tokens)
    }

    /// The text of a trace's block `id`, of `tokens` tokens.
    pub fn block_text(&mut self, id: u64, tokens: u32) -> RunResult<String> {
        self.exact(id.min(usize::MAX as u64) as usize, tokens)
    }

    /// A new text of `tokens` tokens that follows another after a space, the space counted
    /// in: `head + " " + it` has `tokens` more than `head` wherever the tokenizer's counts
    /// add up (a byte-level one counts the space; most BPE ones fold it into the word).
    pub fn continuation(&mut self, tokens: u32) -> RunResult<String> {
        let number = self.made;
        self.made += 1;
        self.exact_after_space(number, tokens)
    }

    /// The text of a trace's block `id` that follows another block, as [`Self::continuation`].
    pub fn block_continuation(&mut self, id: u64, tokens: u32) -> RunResult<String> {
        self.exact_after_space(id.min(usize::MAX as u64) as usize, tokens)
    }

    /// `head + " " + tail` where `tail` is a continuation of `tokens` tokens made from
    /// `number`, checked whole against `total`: when the tokenizer counts the joined text
    /// otherwise (its counts do not add up across the join), the tail is made once more,
    /// longer or shorter by what was missed, and the nearer of the two is kept.
    pub fn join_exact(
        &mut self,
        head: &str,
        tail: &str,
        tail_tokens: u32,
        total: u32,
    ) -> RunResult<String> {
        let joined = format!("{head} {tail}");
        let counted = self.count(&joined, "a synthetic prompt")?;
        if counted == total || head.is_empty() {
            return Ok(joined);
        }
        let wanted = (tail_tokens as i64 + total as i64 - counted as i64).max(1) as u32;
        let number = self.made;
        self.made += 1;
        let again = format!("{head} {}", self.exact_after_space(number, wanted)?);
        let recounted = self.count(&again, "a synthetic prompt")?;
        if recounted == total {
            return Ok(again);
        }
        self.inexact += 1;
        Ok(if total.abs_diff(recounted) < total.abs_diff(counted) {
            again
        } else {
            joined
        })
    }

    fn exact(&mut self, number: usize, tokens: u32) -> RunResult<String> {
        let (text, counted) = exact_text(
            self.counter,
            &mut self.rng,
            &self.vocabulary,
            number,
            tokens,
        )?;
        self.inexact += (counted != tokens) as usize;
        Ok(text)
    }

    fn exact_after_space(&mut self, number: usize, tokens: u32) -> RunResult<String> {
        let after_space = AfterSpace(self.counter);
        let (text, counted) = exact_text(
            &after_space,
            &mut self.rng,
            &self.vocabulary,
            number,
            tokens,
        )?;
        self.inexact += (counted != tokens) as usize;
        Ok(text)
    }

    /// A prompt length drawn from `--synthetic-input-tokens-mean`/`-stddev`.
    pub fn draw_input(&mut self) -> u32 {
        draw(
            &mut self.rng,
            self.llm.input_tokens_mean,
            self.llm.input_tokens_stddev,
        )
    }

    /// One of `k` choices, at random.
    pub fn pick(&mut self, k: usize) -> usize {
        self.rng.random_range(0..k)
    }

    /// The answer's length to ask for, drawn from `--output-tokens-mean`/`-stddev`.
    pub fn max_tokens(&mut self) -> Option<u32> {
        max_tokens(&mut self.rng, self.llm)
    }

    /// The tokens of a text, as the run's tokenizer counts them.
    pub fn count(&self, text: &str, origin: &str) -> RunResult<u32> {
        count_given(self.counter, text, origin)
    }

    /// Says how many texts could not be made of exactly their number of tokens.
    pub fn warn_inexact(&self, of: usize) {
        if self.inexact > 0 {
            println!(
                "Warning: {} of {of} synthetic texts could not be made of exactly the drawn number of tokens with {}; their input length is the tokenizer's count of what was sent.",
                self.inexact,
                self.counter.info().describe()
            );
        }
    }
}

/// A counter that counts a text as it costs after a separating space: `count(" " + text)`.
struct AfterSpace<'a>(&'a dyn TokenCount);

impl TokenCount for AfterSpace<'_> {
    fn count(&self, text: &str) -> Result<u32, String> {
        self.0.count(&format!(" {text}"))
    }

    fn info(&self) -> &CounterInfo {
        self.0.info()
    }
}

/// Pieces tried, in turn, to add exactly one token to a text that is short of its length.
const FILLERS: [&str; 8] = [" a", "a", " the", ".", " x", "x", " ", ","];
/// Fillers appended at most, past the words (a tokenizer that merges every filler into the
/// text before it gives up here, with the count it reached).
const MOST_FILLERS: usize = 64;

/// A text of `tokens` tokens as `counter` counts them, and the count reached (equal unless
/// the tokenizer makes that impossible): the most words of a random text that stay within
/// the count (found by bisection), then one-token fillers up to it. Its first word is made
/// from the prompt's number, so that prompts differ from their first tokens on.
pub(super) fn exact_text(
    counter: &dyn TokenCount,
    rng: &mut SmallRng,
    vocabulary: &[String],
    number: usize,
    tokens: u32,
) -> RunResult<(String, u32)> {
    let count = |text: &str| {
        counter.count(text).map_err(|e| {
            RunError::failed(format!(
                "Counting a synthetic prompt's tokens with {} failed: {e}.",
                counter.info().describe()
            ))
        })
    };
    let mut words = vec![leading_word(number)];
    words.extend(
        (1..tokens.max(1)).map(|_| vocabulary[rng.random_range(0..vocabulary.len())].clone()),
    );
    // The most words whose text is within the count: count(words[..n]) grows with n (none
    // when even the leading word is longer than the whole prompt).
    let (mut low, mut high) = (0usize, words.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        if count(&words[..mid].join(" "))? <= tokens {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    let mut text = words[..low].join(" ");
    let mut counted = count(&text)?;
    let mut added = 0;
    while counted < tokens && added < MOST_FILLERS {
        let mut grew = false;
        for filler in FILLERS {
            let candidate = format!("{text}{filler}");
            if count(&candidate)? == counted + 1 {
                text = candidate;
                counted += 1;
                grew = true;
                break;
            }
        }
        added += 1;
        if !grew {
            break;
        }
    }
    Ok((text, counted))
}

/// A word no other prompt of the run begins with: the prompt's number in syllables.
fn leading_word(number: usize) -> String {
    let mut word = String::new();
    let mut n = number;
    loop {
        word.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
        if n == 0 {
            break;
        }
    }
    word.push_str("zo");
    word
}

/// Pseudo-words of two to four syllables.
pub(super) fn vocabulary(rng: &mut SmallRng) -> Vec<String> {
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
pub(super) fn draw(rng: &mut SmallRng, mean: u32, stddev: f64) -> u32 {
    if stddev <= 0.0 {
        return mean.max(1);
    }
    let normal = Normal::new(mean as f64, stddev).expect("stddev was checked to be finite");
    normal.sample(rng).round().clamp(1.0, u32::MAX as f64) as u32
}

pub(super) fn max_tokens(rng: &mut SmallRng, llm: &OpenAiConfig) -> Option<u32> {
    llm.output_tokens_mean
        .map(|mean| draw(rng, mean, llm.output_tokens_stddev))
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
                text,
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

/// The tokens of a prompt read from a file.
fn count_given(counter: &dyn TokenCount, text: &str, origin: &str) -> RunResult<u32> {
    counter.count(text).map_err(|e| {
        RunError::failed(format!(
            "Counting the tokens of {origin} with {} failed: {e}.",
            counter.info().describe()
        ))
    })
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
    use crate::data::tokenizer::CounterInfo;

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
        }
    }

    /// One token per byte, as the e2e tests' tokenizer.
    struct Bytes(CounterInfo);

    impl TokenCount for Bytes {
        fn count(&self, text: &str) -> Result<u32, String> {
            Ok(text.len() as u32)
        }
        fn info(&self) -> &CounterInfo {
            &self.0
        }
    }

    fn bytes() -> Bytes {
        Bytes(CounterInfo {
            kind: "file",
            name: "bytes".into(),
            approximate: false,
        })
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

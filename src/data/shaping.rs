//! What AIPerf's dataset flags do to a run's entries once they are made: `--system-prompt`
//! before every conversation (before a conversation's own system message), a context
//! message of `--user-context-prompt-length` tokens per conversation, more texts per
//! synthetic request (`--prompt-batch-size`), and the order conversations are drawn in
//! (`--dataset-sampling-strategy`). Each prompt's input length counts what it gains.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use super::entry::Entry;
use super::parts::Parts;
use super::prompts::PromptMaker;
use super::sessions::spans;
use super::tokenizer::TokenCount;
use crate::config::datasets::{DatasetSettings, Sampling};
use crate::config::OpenAiConfig;
use inferperf_wire::error::RunResult;

/// Seeds of the context prompts, the batch texts and the sampling, apart from the prompts'.
const CONTEXT_SEED: u64 = 0xC0_7E87;
const BATCH_SEED: u64 = 0xBA_7C4;
const SAMPLING_SEED: u64 = 0x5A_3913;
/// Conversations laid out at least, for random and shuffled orders, so that the order
/// changes from pass to pass as AIPerf's samplers change it.
const LEAST_DRAWS: usize = 1000;

/// Where a run's entries come from, for the flags that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Synthetic,
    /// AIPerf's random_pool, whose conversations are shuffled unless told otherwise.
    Pool,
    Dataset,
}

/// Applies the flags' changes to entries from `origin`.
pub fn apply(
    entries: Vec<Entry>,
    settings: &DatasetSettings,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
    origin: Origin,
) -> RunResult<Vec<Entry>> {
    let synthetic = origin == Origin::Synthetic;
    let mut entries = entries;
    if let Some(n) = settings.texts_per_request.filter(|&n| n > 1 && synthetic) {
        add_texts(&mut entries, n - 1, settings, llm, seed, counter)?;
    }
    if let Some(tokens) = settings.user_context_tokens {
        add_context(&mut entries, tokens, settings, llm, seed, counter)?;
    }
    if let Some(system) = &settings.system_prompt {
        add_system(&mut entries, system, counter)?;
    }
    // AIPerf's preferred order: random_pool shuffled, every other source in order.
    let preferred = match origin {
        Origin::Pool => Sampling::Shuffle,
        _ => Sampling::Sequential,
    };
    Ok(sample(
        entries,
        settings.sampling.unwrap_or(preferred),
        seed,
    ))
}

fn parts_of(entry: &mut Entry) -> Option<(&mut super::entry::Prompt, Parts)> {
    let prompt = entry.prompt.as_mut()?;
    let parts = prompt.parts.as_deref().cloned().unwrap_or_default();
    Some((prompt, parts))
}

/// `more` texts of drawn lengths after each synthetic prompt's own.
fn add_texts(
    entries: &mut [Entry],
    more: u32,
    settings: &DatasetSettings,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<()> {
    let mut maker = PromptMaker::new(llm, seed ^ BATCH_SEED, counter).shaped(settings);
    for entry in entries.iter_mut() {
        let Some((prompt, mut parts)) = parts_of(entry) else {
            continue;
        };
        for _ in 0..more {
            let tokens = maker.draw_input();
            let _ = maker.max_tokens();
            let (text, counted) = maker.counted_text_of(tokens)?;
            prompt.input_tokens += counted;
            parts.texts.push(text);
        }
        prompt.parts = parts.shared();
    }
    maker.warn_inexact(entries.len() * more as usize);
    Ok(())
}

/// A context message of `tokens` tokens of its own for each conversation.
fn add_context(
    entries: &mut [Entry],
    tokens: u32,
    settings: &DatasetSettings,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<()> {
    let mut maker =
        PromptMaker::new(llm, seed ^ CONTEXT_SEED, counter).with_corpus(settings.corpus);
    for span in spans(entries) {
        let (text, counted) = maker.counted_text_of(tokens)?;
        let shared: Arc<str> = text.into();
        for entry in &mut entries[span] {
            let Some((prompt, mut parts)) = parts_of(entry) else {
                continue;
            };
            parts.user_context = Some(shared.clone());
            prompt.input_tokens += counted;
            prompt.parts = parts.shared();
        }
    }
    Ok(())
}

/// `--system-prompt` before every conversation: a conversation's own system message (or a
/// recorded first system message) follows it after a blank line; bodies sent as given keep
/// theirs, as AIPerf leaves them.
fn add_system(entries: &mut [Entry], system: &str, counter: &dyn TokenCount) -> RunResult<()> {
    let count = |text: &str| super::prompt_maker::count_given(counter, text, "the system prompt");
    let alone = count(system)?;
    for prompt in entries.iter_mut().filter_map(|e| e.prompt.as_mut()) {
        if prompt.body.is_some() {
            continue;
        }
        if let Some(messages) = &prompt.messages {
            let mut messages = Value::clone(messages);
            let own = merge_into_messages(&mut messages, system);
            let added = match own {
                Some(own) => count(&format!("{system}\n\n{own}"))? as i64 - count(&own)? as i64,
                None => alone as i64,
            };
            prompt.input_tokens = (prompt.input_tokens as i64 + added).max(0) as u32;
            prompt.messages = Some(Arc::new(messages));
            continue;
        }
        let merged = match &prompt.system {
            Some(own) => {
                let merged = format!("{system}\n\n{own}");
                prompt.input_tokens = prompt.input_tokens + count(&merged)? - count(own)?;
                merged
            }
            None => {
                prompt.input_tokens += alone;
                system.to_string()
            }
        };
        prompt.system = Some(merged.into());
    }
    Ok(())
}

/// Puts `system` in recorded chat messages: before the text of a leading string system
/// message (returned), as a leading text part of a list one, else as a new first message.
fn merge_into_messages(messages: &mut Value, system: &str) -> Option<String> {
    let list = messages.as_array_mut()?;
    let first_is_system = list.first().is_some_and(|m| m["role"] == "system");
    if !first_is_system {
        list.insert(0, serde_json::json!({"role": "system", "content": system}));
        return None;
    }
    match &mut list[0]["content"] {
        Value::String(own) => {
            let before = own.clone();
            *own = format!("{system}\n\n{own}");
            Some(before)
        }
        Value::Array(parts) => {
            parts.insert(0, serde_json::json!({"type": "text", "text": system}));
            Some(String::new())
        }
        other => {
            *other = Value::String(system.to_string());
            Some(String::new())
        }
    }
}

/// The conversations in the order `sampling` draws them: as they are, with replacement,
/// or shuffled anew each pass; a drawn conversation's turns stay together, each draw its
/// own session. Random and shuffled orders are laid out for at least [`LEAST_DRAWS`]
/// conversations (whole passes, for shuffle), after which they repeat.
fn sample(entries: Vec<Entry>, sampling: Sampling, seed: u64) -> Vec<Entry> {
    let sessions = spans(&entries);
    if sampling == Sampling::Sequential || sessions.len() < 2 {
        return entries;
    }
    let mut rng = SmallRng::seed_from_u64(seed ^ SAMPLING_SEED);
    let n = sessions.len();
    let draws = LEAST_DRAWS.max(n).div_ceil(n) * n;
    let order: Vec<usize> = match sampling {
        Sampling::Random => (0..draws).map(|_| rng.random_range(0..n)).collect(),
        _ => (0..draws / n)
            .flat_map(|_| {
                let mut pass: Vec<usize> = (0..n).collect();
                pass.shuffle(&mut rng);
                pass
            })
            .collect(),
    };
    let mut sampled = Vec::with_capacity(order.len());
    for (draw, k) in order.into_iter().enumerate() {
        for entry in &entries[sessions[k].clone()] {
            let mut entry = entry.clone();
            if let Some(turn) = entry.turn.as_mut() {
                turn.session = draw as u32;
            }
            sampled.push(entry);
        }
    }
    sampled
}

#[cfg(test)]
#[path = "shaping_tests.rs"]
mod tests;

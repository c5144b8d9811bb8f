//! The tokens a request carries beyond its prompt's text — `--cache-bust`'s trajectory
//! marker, counted with the run's tokenizer (the mean over a few markers, as their digests
//! differ), and the chat template's wrapping (`--apply-chat-template`) — taken from the
//! synthetic text they join (the marker from the shared system prompt when it goes there,
//! the rest from each single-turn synthetic prompt), so that what is sent is as long as
//! the flags ask; the marker's are added to every prompt's input count. A warm-up-only
//! marker is in no measured request and counts nothing.

use serde_json::json;

use crate::config::cache_bust::BustKind;
use crate::config::{DataConfig, OpenAiConfig};
use inferperf_wire::error::{RunError, RunResult};

use super::tokenizer::TokenCount;

/// How many markers are counted for the mean.
const SAMPLES: u64 = 8;

/// The tokens of one trajectory marker (0: the run's requests carry none).
pub fn tokens(llm: &OpenAiConfig, counter: &dyn TokenCount) -> RunResult<u32> {
    let Some(bust) = llm.cache_bust.filter(|b| b.kind == BustKind::Trajectory) else {
        return Ok(0);
    };
    let mut total = 0u64;
    for n in 1..=SAMPLES {
        // Digests spread over the 48 bits, as the sender's are.
        let digest = format!("{:012x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16);
        let text = bust.sent_text(&digest).unwrap_or_default();
        let count = counter.count(&text).map_err(|why| {
            RunError::failed(format!(
                "The tokenizer cannot count the --cache-bust marker: {why}."
            ))
        })?;
        total += count as u64;
    }
    Ok(((total + SAMPLES / 2) / SAMPLES) as u32)
}

/// The tokens the synthetic text is shortened by, so that what is sent is as long as the
/// flags ask: the `--cache-bust` marker's, and the chat template's (`--apply-chat-template`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Room {
    pub marker: u32,
    pub template: u32,
}

/// The settings the prompts are made with, shorter where the marker or the template joins
/// synthetic text (`None`: nothing to shorten). `synthetic`: the prompts are made here.
/// The marker shortens the shared system prompt when it goes there; the rest shortens each
/// single-turn synthetic prompt.
pub fn make_room(
    llm: &OpenAiConfig,
    data: &DataConfig,
    synthetic: bool,
    room: Room,
) -> Option<(OpenAiConfig, DataConfig)> {
    if room.marker == 0 && room.template == 0 {
        return None;
    }
    let mut data = data.clone();
    let mut llm = llm.clone();
    let mut from_prompts = room.template;
    match (llm.cache_bust, data.workload.system_prompt_tokens) {
        (Some(bust), Some(tokens)) if bust.system && room.marker > 0 => {
            data.workload.system_prompt_tokens = Some(tokens.saturating_sub(room.marker).max(1));
        }
        _ => from_prompts += room.marker,
    }
    let single_turn = data.sessions.as_ref().is_none_or(|s| s.synthetic.is_none());
    if synthetic && single_turn {
        llm.input_tokens_mean = llm.input_tokens_mean.saturating_sub(from_prompts).max(1);
    }
    Some((llm, data))
}

/// Adds the marker's tokens to the input of every prompt made into a body here (a body
/// given as it is carries no marker).
pub fn count_in(entries: &mut [super::Entry], marker: u32) {
    if marker == 0 {
        return;
    }
    for prompt in entries.iter_mut().filter_map(|e| e.prompt.as_mut()) {
        if prompt.body.is_none() {
            prompt.input_tokens += marker;
        }
    }
}

/// The tokens a chat template adds around a user message (and a system message when
/// `system`), measured on a sample: what synthetic prompts are shortened by.
pub fn template_overhead(counter: &dyn TokenCount, system: bool) -> RunResult<u32> {
    const USER: &str = "Could you write a short function that reverses a string?";
    const SYSTEM: &str = "You are a helpful assistant.";
    let mut messages = Vec::new();
    let mut bare = 0;
    let count = |text: &str| counter.count(text).map_err(unreadable);
    if system {
        messages.push(json!({"role": "system", "content": SYSTEM}));
        bare += count(SYSTEM)?;
    }
    messages.push(json!({"role": "user", "content": USER}));
    bare += count(USER)?;
    match counter.count_chat(&messages) {
        Some(templated) => Ok(templated.map_err(unreadable)?.saturating_sub(bare)),
        None => Ok(0),
    }
}

/// Recounts each chat prompt's input through the template (`marker`: the cache-bust
/// marker's tokens, which the rendered text leaves out).
pub fn count_templated(
    entries: &mut [super::Entry],
    counter: &dyn TokenCount,
    marker: u32,
) -> RunResult<()> {
    for prompt in entries.iter_mut().filter_map(|e| e.prompt.as_mut()) {
        if prompt.body.is_some() {
            continue;
        }
        match counter.count_chat(&super::chat_template::prompt_messages(prompt)) {
            Some(templated) => prompt.input_tokens = templated.map_err(unreadable)? + marker,
            None => return Ok(()),
        }
    }
    Ok(())
}

fn unreadable(why: String) -> RunError {
    RunError::bad_option(format!(
        "--apply-chat-template: the tokenizer's chat template cannot render a prompt ({why}): drop --apply-chat-template, or mend the template."
    ))
}

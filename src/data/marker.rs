//! The tokens of `--cache-bust`'s trajectory marker in the prompts' input: counted with
//! the run's tokenizer (the mean over a few markers, as their digests differ), taken from
//! the synthetic text the marker joins — the shared system prompt when the marker goes
//! there, else each single-turn synthetic prompt — so that what is sent is as long as
//! the flags ask, and added to every prompt's input count. A warm-up-only marker is in no
//! measured request and counts nothing.

use crate::config::cache_bust::BustKind;
use crate::config::{DataConfig, OpenAiConfig};
use crate::error::{RunError, RunResult};

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

/// The settings the prompts are made with, `marker` tokens shorter where the marker joins
/// synthetic text (`None`: nothing to shorten). `synthetic`: the prompts are made here.
pub fn make_room(
    llm: &OpenAiConfig,
    data: &DataConfig,
    synthetic: bool,
    marker: u32,
) -> Option<(OpenAiConfig, DataConfig)> {
    let bust = llm.cache_bust.filter(|_| marker > 0)?;
    let mut data = data.clone();
    let mut llm = llm.clone();
    match data.workload.system_prompt_tokens {
        Some(tokens) if bust.system => {
            data.workload.system_prompt_tokens = Some(tokens.saturating_sub(marker).max(1));
        }
        _ if synthetic && data.sessions.as_ref().is_none_or(|s| s.synthetic.is_none()) => {
            llm.input_tokens_mean = llm.input_tokens_mean.saturating_sub(marker).max(1);
        }
        _ => return None,
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

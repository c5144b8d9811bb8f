//! A trace's `hash_ids`: ids of its prompt's fixed-size token blocks. Each id stands for one
//! block of text, made once, so that requests sharing leading ids share those blocks' text
//! and a trace's prefix reuse reaches the server as it happened. A prompt of `L` tokens
//! with `K` ids has `K-1` whole blocks and a last one of `L - (K-1)·B` tokens (1 to `B`), as
//! AIPerf builds them.

use std::collections::HashMap;

use super::{Content, Record};
use crate::data::prompt_maker::Place;
use crate::data::prompts::PromptMaker;
use inferperf_wire::error::{RunError, RunResult};

/// Checks that every record's `input_length` fits its hash ids: more than `(K-1)·B` tokens
/// and at most `K·B`.
pub fn check_fit(records: &[Record], block: u32) -> RunResult<()> {
    for record in records {
        let Content::Length { tokens, hash_ids } = &record.content else {
            continue;
        };
        let k = hash_ids.len() as u64;
        if k == 0 {
            continue;
        }
        let (low, high) = ((k - 1) * block as u64, k * block as u64);
        let tokens = *tokens as u64;
        if tokens <= low || tokens > high {
            return Err(RunError::bad_option(format!(
                "--input-file {}: input_length {tokens} does not fit its {k} hash_ids of {block} tokens (it must be more than {low} and at most {high}); check the trace, or give its block size with --isl-block-size.",
                record.origin
            )));
        }
    }
    Ok(())
}

/// The text of each hash id's block (and of each shorter last block), made on first use:
/// a prompt's first block alone, every later one as it follows a block after a space, the
/// space counted in its tokens, so that the prompt's count is its `input_length` and its
/// blocks begin where the trace's do.
pub struct BlockTexts {
    block: u32,
    made: HashMap<BlockKey, String>,
}

/// A block's text by its id, its tokens and whether it begins the prompt.
type BlockKey = (u64, u32, bool);

impl BlockTexts {
    pub fn new(block: u32) -> BlockTexts {
        BlockTexts {
            block,
            made: HashMap::new(),
        }
    }

    /// The prompt of `tokens` tokens whose blocks are `hash_ids` (checked by [`check_fit`]).
    pub fn prompt(
        &mut self,
        maker: &mut PromptMaker,
        tokens: u32,
        hash_ids: &[u64],
    ) -> RunResult<String> {
        let last = tokens - (hash_ids.len() as u32 - 1) * self.block;
        let mut keys = Vec::with_capacity(hash_ids.len());
        for (i, &id) in hash_ids.iter().enumerate() {
            let size = if i + 1 == hash_ids.len() {
                last
            } else {
                self.block
            };
            let key = (id, size, i == 0);
            if let std::collections::hash_map::Entry::Vacant(slot) = self.made.entry(key) {
                let place = if i == 0 {
                    Place::First
                } else {
                    Place::AfterSpace
                };
                slot.insert(maker.block_text(id, size, place)?);
            }
            keys.push(key);
        }
        let Some((tail, head)) = keys.split_last() else {
            return Ok(String::new());
        };
        if head.is_empty() {
            return Ok(self.made[tail].clone());
        }
        let head: Vec<&str> = head.iter().map(|k| self.made[k].as_str()).collect();
        maker.join_exact(&head.join(" "), &self.made[tail], last, tokens)
    }
}

//! A trace rebuilt as AIPerf's synthesizer rebuilds it (`--synthesis-*`), on its records
//! before any prompt is made. A request's prefix is the run of leading hash ids that some
//! other block of the trace shares; the tokens after it are its own prompt. The prefix is
//! stretched (each block split into whole blocks, the fraction as new blocks) or cut, the
//! prompt scaled and given new blocks of its own, each request's blocks moved at random to
//! one of several prefix trees, the clock sped up and the answers scaled. Requests longer
//! than `--synthesis-max-isl` are dropped first, answers capped to `--synthesis-max-osl`
//! last.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Content, Record};
use crate::config::synthesis::Synthesis;
use inferperf_wire::error::{RunError, RunResult};

/// Mixed into the run's seed for the draws of prefix trees.
const TREE_SEED: u64 = 0x5917_4e51_5000_0001;

/// What the caps did, for the run's notes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capped {
    pub dropped_long_inputs: usize,
    pub capped_answers: usize,
}

/// The records rebuilt by `synthesis`, blocks of `block` tokens.
pub fn apply(
    mut records: Vec<Record>,
    synthesis: &Synthesis,
    block: u32,
    seed: u64,
) -> RunResult<(Vec<Record>, Capped)> {
    let mut capped = Capped::default();
    if let Some(most) = synthesis.max_isl {
        let before = records.len();
        records.retain(|r| !matches!(r.content, Content::Length { tokens, .. } if tokens > most));
        capped.dropped_long_inputs = before - records.len();
    }
    if synthesis.rebuilds() {
        rebuild(&mut records, synthesis, block, seed)?;
    }
    if let Some(most) = synthesis.max_osl {
        for length in records.iter_mut().filter_map(|r| r.output_length.as_mut()) {
            if *length > most {
                *length = most;
                capped.capped_answers += 1;
            }
        }
    }
    Ok((records, capped))
}

/// The synthesizer's pass over every record: blocks, lengths, timestamps and answers.
fn rebuild(records: &mut [Record], s: &Synthesis, block: u32, seed: u64) -> RunResult<()> {
    let mut blocks = Blocks::of(records, s.prefix_len);
    let mut rebuilt = Vec::with_capacity(records.len());
    for record in records.iter() {
        rebuilt.push(match &record.content {
            Content::Length { tokens, hash_ids } if !hash_ids.is_empty() => {
                Some(blocks.rebuild(record, *tokens, hash_ids, s, block)?)
            }
            _ => None,
        });
    }
    let mut trees = SmallRng::seed_from_u64(seed ^ TREE_SEED);
    let tree_span = blocks.next;
    for (record, rebuilt) in records.iter_mut().zip(rebuilt) {
        if let Some((tokens, mut hash_ids)) = rebuilt {
            let tree = trees.random_range(0..s.prefix_roots.max(1)) as u64;
            spread(&mut hash_ids, tree, tree_span, &record.origin)?;
            let tokens = s.max_isl.map_or(tokens, |most| tokens.min(most));
            hash_ids.truncate(tokens.div_ceil(block).max(1) as usize);
            record.content = Content::Length { tokens, hash_ids };
        }
        if let Some(at) = &mut record.timestamp_ms {
            *at = (*at / s.speedup).trunc();
        }
        if let Some(length) = &mut record.output_length {
            // Halves to even, as Python's round.
            let scaled = (*length as f64 * s.output_len).round_ties_even();
            let scaled = scaled.min(u32::MAX as f64) as u32;
            *length = scaled.max(1);
        }
    }
    Ok(())
}

/// The trace's blocks: which ids are shared, and the next id free for a new block.
struct Blocks {
    shared: HashMap<u64, u32>,
    /// Whole blocks each prefix block becomes (the multiplier's whole part, at least 1).
    stretch: u64,
    next: u64,
}

impl Blocks {
    fn of(records: &[Record], prefix_len: f64) -> Blocks {
        let mut counts: HashMap<u64, u32> = HashMap::new();
        for record in records {
            if let Content::Length { hash_ids, .. } = &record.content {
                for id in hash_ids {
                    *counts.entry(*id).or_default() += 1;
                }
            }
        }
        counts.retain(|_, n| *n > 1);
        let stretch = (prefix_len.max(1.0) as u64).max(1);
        let highest = counts.keys().copied().max().unwrap_or(0);
        let next = highest.saturating_add(1).saturating_mul(stretch);
        Blocks {
            shared: counts,
            stretch,
            next,
        }
    }

    /// One request's tokens and blocks: its shared prefix stretched or cut, its own prompt
    /// scaled into new blocks.
    fn rebuild(
        &mut self,
        record: &Record,
        tokens: u32,
        hash_ids: &[u64],
        s: &Synthesis,
        block: u32,
    ) -> RunResult<(u32, Vec<u64>)> {
        let prefix: Vec<u64> = (hash_ids.iter())
            .take_while(|id| self.shared.contains_key(id))
            .copied()
            .collect();
        let block = block as u64;
        let prefix_tokens = prefix.len() as u64 * block;
        // A request made wholly of shared blocks may end in a short one (the same prompt
        // sent twice): kept as it is, it keeps its shortfall, where AIPerf's synthesizer
        // stops; stretched or cut, its blocks are whole.
        let short = match s.prefix_len == 1.0 {
            true => prefix_tokens.saturating_sub(tokens as u64),
            false => 0,
        };
        let prompt_tokens = (tokens as u64).saturating_sub(prefix_tokens);
        let mut ids = self.scaled_prefix(&prefix, s.prefix_len, &record.origin)?;
        let new_prefix_tokens = (ids.len() as u64 * block).saturating_sub(short);
        // One token at least: a prompt scaled to nothing is still a request.
        let least = u64::from(ids.is_empty());
        let new_prompt_tokens = ((prompt_tokens as f64 * s.prompt_len) as u64).max(least);
        let own = new_prompt_tokens.div_ceil(block);
        ids.extend(self.take(own));
        let total = new_prefix_tokens + new_prompt_tokens;
        let total = u32::try_from(total).map_err(|_| too_long(&record.origin, total))?;
        Ok((total, ids))
    }

    /// The shared prefix, each block split into `stretch` blocks and the fraction as new
    /// ones, or cut to its first `len·factor` blocks (one at least).
    fn scaled_prefix(&mut self, prefix: &[u64], factor: f64, origin: &str) -> RunResult<Vec<u64>> {
        if prefix.is_empty() || factor == 1.0 {
            return Ok(prefix.to_vec());
        }
        if factor < 1.0 {
            let keep = ((prefix.len() as f64 * factor) as usize).max(1);
            return Ok(prefix[..keep].to_vec());
        }
        let mut ids = Vec::with_capacity((prefix.len() as f64 * factor).ceil() as usize);
        for id in prefix {
            let first = id
                .checked_mul(self.stretch)
                .ok_or_else(|| too_large(origin, *id))?;
            ids.extend((0..self.stretch).map(|j| first + j));
        }
        let wanted = (prefix.len() as f64 * factor).ceil() as u64;
        ids.extend(self.take(wanted.saturating_sub(ids.len() as u64)));
        Ok(ids)
    }

    /// `n` new ids, never used before.
    fn take(&mut self, n: u64) -> std::ops::Range<u64> {
        let start = self.next;
        self.next = self.next.saturating_add(n);
        start..self.next
    }
}

/// Moves a request's blocks to prefix tree `tree` (tree 0 keeps them).
fn spread(ids: &mut [u64], tree: u64, span: u64, origin: &str) -> RunResult<()> {
    if tree == 0 {
        return Ok(());
    }
    let offset = tree.checked_mul(span.saturating_add(1));
    for id in ids.iter_mut() {
        *id = offset
            .and_then(|o| id.checked_add(o))
            .ok_or_else(|| too_large(origin, *id))?;
    }
    Ok(())
}

fn too_large(origin: &str, id: u64) -> RunError {
    RunError::bad_option(format!(
        "--input-file {origin}: hash id {id} is too large to rebuild with --synthesis-prefix-len-multiplier or --synthesis-prefix-root-multiplier: number the trace's blocks from 0, or drop those flags."
    ))
}

fn too_long(origin: &str, tokens: u64) -> RunError {
    RunError::bad_option(format!(
        "--input-file {origin}: the rebuilt request would be {tokens} tokens long: give smaller --synthesis-prefix-len-multiplier or --synthesis-prompt-len-multiplier (or cap it with --synthesis-max-isl)."
    ))
}

#[cfg(test)]
#[path = "synthesis_tests.rs"]
mod tests;

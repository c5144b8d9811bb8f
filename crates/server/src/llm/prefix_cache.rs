//! The `llm` kind's prefix cache, as vLLM's automatic prefix caching keeps one: a prompt's
//! tokens are cut into full blocks of `block` tokens (a last partial block is never cached),
//! each block named by a chained hash of the previous block's name and its own tokens, so
//! two prompts share a block only when everything before it is the same too. A request's
//! cached tokens are its leading blocks found in the cache times the block size; after its
//! prefill its blocks go in. The cache holds `capacity / block` blocks and evicts the least
//! recently used first. A prompt's blocks are used from its last to its first, so that its
//! first block is the most recent and a full cache drops prompts from their tails (a tail
//! without its head is never a hit). The cache knows no sequences: a running sequence's
//! blocks may be evicted too (the model keeps no KV, only the timing a cache gives).
//!
//! Kept apart from [`super`] so that the engines' scheduling and the cache's
//! bookkeeping can each be read (and tested) alone.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

/// The tokens in a block when the model does not say (vLLM's default).
pub(crate) const DEFAULT_BLOCK: u32 = 16;

/// The names of a prompt's full blocks, each the hash of the previous one's name and its
/// own `block` token units (ids, or the hashes of words).
pub(crate) fn block_hashes(units: &[u64], block: u32) -> Vec<u64> {
    let block = block.max(1) as usize;
    let mut previous = 0u64;
    (units.chunks_exact(block))
        .map(|tokens| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            previous.hash(&mut hasher);
            tokens.hash(&mut hasher);
            previous = hasher.finish();
            previous
        })
        .collect()
}

/// Blocks by name with the time each was last used, least recently used evicted first.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    /// Most blocks held.
    capacity: usize,
    /// Each held block's last use.
    used: HashMap<u64, u64>,
    /// The held blocks by last use, oldest first.
    by_use: BTreeMap<u64, u64>,
    clock: u64,
}

impl PrefixCache {
    /// A cache of `capacity_tokens` tokens in blocks of `block` tokens (whole blocks only).
    pub(crate) fn new(capacity_tokens: u32, block: u32) -> PrefixCache {
        PrefixCache {
            capacity: (capacity_tokens / block.max(1)) as usize,
            used: HashMap::new(),
            by_use: BTreeMap::new(),
            clock: 0,
        }
    }

    /// The most blocks the cache holds.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The blocks it holds now.
    pub(crate) fn len(&self) -> usize {
        self.used.len()
    }

    /// Forgets every block (vLLM's and SGLang's cache reset).
    pub(crate) fn clear(&mut self) {
        self.used.clear();
        self.by_use.clear();
    }

    /// How many of the prompt's leading blocks are held; those count as used now.
    pub(crate) fn lookup(&mut self, blocks: &[u64]) -> usize {
        let hits = blocks
            .iter()
            .take_while(|b| self.used.contains_key(b))
            .count();
        self.touch_all(&blocks[..hits]);
        hits
    }

    /// Puts the prompt's blocks in (or marks them used), then evicts the least recently
    /// used past the capacity.
    pub(crate) fn insert(&mut self, blocks: &[u64]) {
        if self.capacity == 0 {
            return;
        }
        self.touch_all(blocks);
        while self.used.len() > self.capacity {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            self.used.remove(&oldest);
        }
    }

    /// Marks the blocks used, the last first, so the first is the most recent.
    fn touch_all(&mut self, blocks: &[u64]) {
        for &block in blocks.iter().rev() {
            self.clock += 1;
            if let Some(old) = self.used.insert(block, self.clock) {
                self.by_use.remove(&old);
            }
            self.by_use.insert(self.clock, block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(range: std::ops::Range<u64>) -> Vec<u64> {
        range.collect()
    }

    #[test]
    fn blocks_are_whole_and_chained() {
        let a = block_hashes(&units(0..40), 16);
        assert_eq!(a.len(), 2, "40 tokens make two full blocks");
        // The same second block after a different first one is another block.
        let mut other = units(100..116);
        other.extend(16..32);
        let b = block_hashes(&other, 16);
        assert_ne!(a[1], b[1]);
        assert_eq!(block_hashes(&units(0..32), 16), a);
        assert!(block_hashes(&units(0..15), 16).is_empty());
    }

    #[test]
    fn only_leading_blocks_hit() {
        let mut cache = PrefixCache::new(1024, 16);
        let first = block_hashes(&units(0..64), 16);
        assert_eq!(cache.lookup(&first), 0);
        cache.insert(&first);
        assert_eq!(cache.len(), 4);
        // Shares 48 leading tokens, then differs: three blocks hit.
        let mut shared = units(0..48);
        shared.extend(500..530);
        assert_eq!(cache.lookup(&block_hashes(&shared, 16)), 3);
        // Differs in its first token: nothing hits, though later tokens match.
        let mut head = units(0..64);
        head[0] = 999;
        assert_eq!(cache.lookup(&block_hashes(&head, 16)), 0);
    }

    #[test]
    fn the_least_recently_used_go_first_tails_before_heads() {
        // Room for four blocks.
        let mut cache = PrefixCache::new(64 + 10, 16);
        assert_eq!(cache.capacity(), 4);
        let a = block_hashes(&units(0..64), 16);
        let b = block_hashes(&units(1000..1032), 16);
        cache.insert(&a);
        cache.insert(&b);
        // b's two blocks pushed out a's two tail blocks; a's head stays.
        assert_eq!(cache.len(), 4);
        assert_eq!(cache.lookup(&a), 2);
        assert_eq!(cache.lookup(&b), 2);
        // A prompt of 64 new tokens evicts everything older.
        let c = block_hashes(&units(5000..5064), 16);
        cache.insert(&c);
        assert_eq!((cache.lookup(&a), cache.lookup(&b)), (0, 0));
        assert_eq!(cache.lookup(&c), 4);
    }

    #[test]
    fn a_use_refreshes_a_block() {
        let mut cache = PrefixCache::new(32, 16);
        let a = block_hashes(&units(0..16), 16);
        let b = block_hashes(&units(100..116), 16);
        let c = block_hashes(&units(200..216), 16);
        cache.insert(&a);
        cache.insert(&b);
        assert_eq!(cache.lookup(&a), 1);
        cache.insert(&c);
        assert_eq!((cache.lookup(&a), cache.lookup(&b)), (1, 0));
    }

    #[test]
    fn a_prompt_longer_than_the_cache_keeps_its_head() {
        let mut cache = PrefixCache::new(32, 16);
        let long = block_hashes(&units(0..80), 16);
        cache.insert(&long);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.lookup(&long), 2);
        let mut none = PrefixCache::new(0, 16);
        none.insert(&long);
        assert_eq!(none.len(), 0);
        assert_eq!(none.lookup(&long), 0);
    }
}

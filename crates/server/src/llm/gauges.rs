//! What an `llm` model's engines show on `/metrics` beyond the model's token counters: the
//! prefix cache's lookups and hits (counted as each request takes its slot), the requests
//! running and waiting, the cache's fill and the answers that stopped at their limit. A
//! child of [`super`], split off so the engines' scheduling reads alone; it reaches the
//! pool's insides as its parent's own code would.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Relaxed, Release};

use super::{lock, Engines, Pool, Seq};
use crate::stats::add;

/// What the engines counted beyond the model's token counters, for `/metrics`.
#[derive(Debug, Default)]
pub(super) struct EngineCounts {
    /// Prompt tokens looked up in the prefix cache (every prompt, cache or not).
    pub(super) queried: AtomicU64,
    /// Of those, tokens found.
    pub(super) hit: AtomicU64,
    /// Requests answered in full that stopped at their limit.
    pub(super) length: AtomicU64,
}

/// One `llm` model's numbers for `/metrics`: its name, whose names it takes, what the
/// OpenAI route counted, the engines' state and timings.
pub(crate) struct ModelNumbers {
    pub name: String,
    pub names: crate::def::EngineNames,
    pub tokens: crate::stats::TokenCounts,
    pub gauges: EngineGauges,
    pub timings: std::sync::Arc<super::engine_timings::EngineTimings>,
}

/// The engines' state now, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct EngineGauges {
    /// Sequences holding a slot (in prefill or decoding).
    pub running: u64,
    /// Requests waiting for a slot (those whose client left not counted).
    pub waiting: u64,
    /// Prompt tokens looked up in the prefix cache, cumulative.
    pub cache_queries: u64,
    /// Prompt tokens found there, cumulative.
    pub cache_hits: u64,
    /// The share of the prefix cache's blocks in use, 0 to 1 (0 without a cache).
    pub cache_usage: f64,
    /// Requests answered in full that stopped at their limit, cumulative.
    pub finished_length: u64,
}

impl Pool {
    /// The prompt tokens of the sequence the prefix cache holds (counted as queried and
    /// hit), told to its reader.
    pub(super) fn look_up(&self, seq: &Seq) -> u32 {
        let prompt = seq.ask.prompt_tokens;
        let blocks = match &self.cache {
            Some(cache) => lock(cache).lookup(&seq.blocks) as u64,
            None => 0,
        };
        let cached = (blocks * u64::from(self.block)).min(u64::from(prompt)) as u32;
        add(&self.counts.queried, u64::from(prompt));
        add(&self.counts.hit, u64::from(cached));
        seq.progress.cached.store(cached, Release);
        cached
    }

    /// Puts a prefilled prompt's blocks in the prefix cache.
    pub(super) fn remember(&self, blocks: &[u64]) {
        if let Some(cache) = &self.cache {
            lock(cache).insert(blocks);
        }
    }
}

impl Engines {
    /// Empties the prefix cache, if the model has one (`POST /reset_prefix_cache`).
    pub(crate) fn reset_prefix_cache(&self) {
        if let Some(cache) = &self.pool.cache {
            lock(cache).clear();
        }
    }

    /// The engines' timing histograms.
    pub(crate) fn timings(&self) -> std::sync::Arc<super::engine_timings::EngineTimings> {
        self.pool.timings.clone()
    }

    /// The GPU the model stands for, as the power model has it now.
    pub(crate) fn gpu(&self) -> crate::gpu_power::GpuReading {
        let state = lock(&self.pool.state);
        state
            .power
            .reading(std::time::Instant::now(), self.pool.slots)
    }

    /// The engines' state now and their counts.
    pub(crate) fn gauges(&self) -> EngineGauges {
        let pool = &*self.pool;
        let (free, waiting) = {
            let state = lock(&pool.state);
            let free: u64 = state.free.iter().map(|&f| u64::from(f)).sum();
            let here = |seq: &&Seq| !seq.progress.gone.load(Relaxed);
            (free, state.waiting.iter().filter(here).count() as u64)
        };
        let cache_usage = pool.cache.as_ref().map_or(0.0, |cache| {
            let cache = lock(cache);
            cache.len() as f64 / cache.capacity().max(1) as f64
        });
        let read = |c: &AtomicU64| c.load(Relaxed);
        EngineGauges {
            running: pool.slots.saturating_sub(free),
            waiting,
            cache_queries: read(&pool.counts.queried),
            cache_hits: read(&pool.counts.hit),
            cache_usage,
            finished_length: read(&pool.counts.length),
        }
    }
}

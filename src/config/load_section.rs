//! The load section of the configuration: the load plan (its mode, levels and search),
//! how the load is sent (client threads, slack, the in-flight cap), and this process's part
//! of it (shards, sequences). The drivers and the profiler take this section; the flags of
//! each load mode are read in `load.rs`.

use std::time::Duration;

use super::load::{LoadLevel, LoadMode, RateRange};
use super::sequence::SequenceConfig;
use super::shard::ShardPlan;
use super::ConcurrencyRange;

/// The settings of the load box: the load plan (its mode, levels and search), how the
/// load is sent (client threads, slack, the in-flight cap), and this process's part of it.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Which load the levels apply (concurrency uses `concurrency`).
    pub mode: LoadMode,
    pub concurrency: ConcurrencyRange,
    /// `--max-concurrency`: the in-flight cap of the open-loop modes.
    pub max_concurrency: Option<u32>,
    /// `--seed` of the Poisson schedule (and of synthetic prompts).
    pub seed: u64,
    /// Threads the load is sent from (`--client-threads`).
    pub client_threads: usize,
    /// How late an open-loop send may go to share a wake-up (`--send-slack`).
    pub send_slack: Duration,
    pub warmup_request_count: u64,
    /// The warm-up before the first level, when one is asked.
    pub warm_up: Option<super::warm_up::WarmUp>,
    /// `--request-count`: exactly this many requests in one window.
    pub request_count: Option<u64>,
    /// AIPerf's `--conversation-num`: this many sessions, each played whole, in one window.
    pub session_count: Option<u64>,
    /// `--binary-search`: bisect the range instead of walking it.
    pub binary_search: bool,
    /// `--async` was given (reported in the settings; the driver is always asynchronous).
    pub async_mode: bool,
    /// This process's part of a sharded run (`--shard`, MPI, an Indexed Job).
    pub shard: Option<ShardPlan>,
    /// How sequences are played when the model is a sequence model.
    pub sequence: SequenceConfig,
    /// `--session-concurrency`: sessions in flight (also the concurrency range's one value).
    pub session_concurrency: Option<u32>,
    /// AIPerf's shapes of the measured load: ramps, prefill limit, rate series, user-centric
    /// rate, slices and failure threshold (see `config::load_modes`).
    pub modes: super::load_modes::LoadModes,
}

impl LoadConfig {
    /// The levels of the sweep, in order (unbounded when the range's end is 0).
    pub fn levels(&self) -> Box<dyn Iterator<Item = LoadLevel>> {
        match &self.mode {
            LoadMode::Concurrency => {
                Box::new(self.concurrency_levels().map(LoadLevel::Concurrency))
            }
            LoadMode::RequestRate { range, .. } => {
                let RateRange { start, end, step } = *range;
                let rates = (0u64..).map(move |i| start + i as f64 * step);
                if end == 0.0 {
                    Box::new(rates.map(LoadLevel::Rate))
                } else {
                    let last = end + step * 1e-9;
                    Box::new(rates.take_while(move |&r| r <= last).map(LoadLevel::Rate))
                }
            }
            LoadMode::Intervals { gaps } => {
                let total: Duration = gaps.iter().sum();
                let rate = gaps.len() as f64 / total.as_secs_f64().max(1e-9);
                Box::new(std::iter::once(LoadLevel::Rate(rate)))
            }
            LoadMode::FixedSchedule => Box::new(std::iter::once(LoadLevel::Rate(0.0))),
            LoadMode::Periodic(range) => {
                Box::new(std::iter::once(LoadLevel::Concurrency(range.end)))
            }
            LoadMode::Timeline { .. } => Box::new(std::iter::empty()),
        }
    }

    /// The concurrency values of the sweep, in order. An open end (0) sweeps on until the
    /// latency limit stops it; the iterator is then unbounded.
    pub fn concurrency_levels(&self) -> Box<dyn Iterator<Item = u32>> {
        let ConcurrencyRange { start, end, step } = self.concurrency;
        let values = (0u32..).map(move |i| start.saturating_add(i.saturating_mul(step)));
        if end == 0 {
            Box::new(values)
        } else {
            Box::new(values.take_while(move |&c| c <= end))
        }
    }

    /// Highest concurrency the sweep can reach, if bounded.
    pub fn max_concurrency(&self) -> Option<u32> {
        let ConcurrencyRange { start, end, step } = self.concurrency;
        (end != 0).then(|| start + (end - start) / step * step)
    }
}

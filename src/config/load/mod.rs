//! The load section of the configuration: the load plan (its mode, levels and search),
//! how the load is sent (client threads, slack, the in-flight cap), and this process's part
//! of it (shards, sequences). The drivers and the profiler take this section; the flags of
//! each load mode are read in `load.rs`.
//!
//! The flags it is read from, one file each: the levels (`levels.rs`: concurrency and rate
//! ranges, periodic and timeline loads), how open-loop requests arrive and are cancelled
//! (`arrival.rs`), load over time (`timeline.rs`, `rate_series.rs`), AIPerf's other load
//! modes (`aiperf_modes.rs`) and the warm-up (`warm_up.rs`).

pub(super) mod aiperf_modes;
pub(super) mod arrival;
pub(super) mod levels;
pub mod rate_series;
pub(super) mod timeline;
pub(super) mod warm_up;

use std::time::Duration;

use crate::cli::ProfileArgs;
use crate::config::parse::parse_client_threads;
use crate::config::sequence::{self, SequenceConfig};
use crate::config::shard::{self, ShardPlan};
use crate::config::{bounds, request_options, sessions, ConcurrencyRange};
use inferperf_wire::error::RunResult;
use levels::{LoadLevel, LoadMode, RateRange};

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
    pub warm_up: Option<warm_up::WarmUp>,
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
    pub modes: aiperf_modes::LoadModes,
}

impl LoadConfig {
    /// The load's flags, with the levels read before (`mode`, `concurrency`) and
    /// `--session-concurrency` from the dataset's session flags.
    pub(in crate::config) fn parse(
        args: &ProfileArgs,
        mode: LoadMode,
        mut concurrency: ConcurrencyRange,
        session_concurrency: Option<u32>,
    ) -> RunResult<LoadConfig> {
        let warmup_request_count = bounds::warmup_requests(args.warmup_request_count)?;
        let client_threads = request_options::cap_client_threads(
            parse_client_threads(args.client_threads)?,
            &args.pa,
        )?;
        let send_slack = bounds::send_slack(args.send_slack)?;
        sessions::apply_concurrency(session_concurrency, args, &mode, &mut concurrency)?;
        let warm_up = warm_up::parse(args, &mode, &concurrency)?;
        Ok(LoadConfig {
            mode,
            concurrency,
            max_concurrency: args.max_concurrency.filter(|&n| n > 0),
            seed: args.seed.unwrap_or(0),
            client_threads,
            send_slack,
            warmup_request_count,
            warm_up,
            request_count: (args.request_count > 0).then_some(args.request_count),
            session_count: args.sessions.conversation_num.filter(|&n| n > 0),
            binary_search: args.binary_search,
            async_mode: args.async_mode,
            shard: shard::parse_shard(args)?,
            sequence: sequence::parse(&args.sequence)?,
            session_concurrency,
            modes: aiperf_modes::LoadModes::default(),
        })
    }

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

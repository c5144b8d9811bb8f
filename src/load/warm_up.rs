//! The warm-up before the first level. Its requests go out through a driver of their own —
//! a closed loop, an open loop or sessions, as the warm-up's shape asks — which is stopped
//! and dropped before measuring starts: no warm-up request can be folded into a window or
//! counted among the sends of one, whatever the run's load mode (the measured driver has
//! sent nothing yet). What it sent is said in one sentence.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::driver::Driver;
use super::interrupt::Interrupt;
use super::sequences::SequencePlan;
use super::sessions::SessionPlan;
use crate::backend::replicas::Replicas;
use crate::config::{
    ConcurrencyRange, LoadConfig, LoadLevel, LoadMode, RateRange, WarmUp, WarmUpShape,
};
use crate::data::Dataset;
use crate::measure::sample::Drained;
use crate::measure::window::WindowStats;
use inferperf_wire::error::RunResult;

/// How often the warm-up looks at its driver.
const POLL: Duration = Duration::from_millis(2);

/// What the warm-up is sent over.
pub struct WarmUpRun<'a> {
    pub load: &'a LoadConfig,
    pub warm_up: &'a WarmUp,
    pub replicas: Arc<Replicas>,
    pub dataset: &'a Dataset,
    pub sessions: Option<Arc<SessionPlan>>,
    pub sequences: Option<Arc<SequencePlan>>,
    /// The request timeout: the longest wait for the last answers.
    pub timeout: Duration,
}

impl WarmUpRun<'_> {
    /// Sends the warm-up and forgets its answers; the sentence that says what it sent.
    pub async fn run(self, interrupt: &Interrupt) -> RunResult<String> {
        let started = Instant::now();
        let (load, level) = self.warm_up_load();
        let mut driver = Driver::new(&load, self.replicas.clone(), self.sessions.clone());
        driver.set_sequences(self.sequences.clone());
        driver.set_budgets(self.warm_up.requests, self.warm_up.sessions);
        // AIPerf's warm-up ramps (its own, else the run's), from the warm-up's start.
        let mut ramps = super::ramps::LevelRamps::of(&load, level);
        let first = ramps.as_ref().map_or(level, |r| r.first_level(level));
        driver.apply(&load, self.dataset, first)?;
        if let Some(ramps) = &mut ramps {
            ramps.start();
        }
        let mut tally = WindowStats::new(1);
        let mut scratch = Drained::default();
        let deadline = self.warm_up.duration.map(|d| started + d);
        while !driver.finished() && !interrupt.is_raised() {
            if deadline.is_some_and(|end| Instant::now() >= end) {
                break;
            }
            tokio::time::sleep(POLL).await;
            if let Some(ramps) = &mut ramps {
                ramps.follow(&mut driver);
            }
            driver.fold_until(Instant::now(), &mut tally, &mut scratch, None);
        }
        let grace = match interrupt.is_raised() {
            true => super::driver::INTERRUPTED_GRACE,
            false => self.warm_up.grace.unwrap_or(self.timeout).min(self.timeout),
        };
        driver.settle(grace).await;
        driver.fold_until(Instant::now(), &mut tally, &mut scratch, None);
        driver.stop(Duration::ZERO).await;
        Ok(self.sentence(&tally, started.elapsed()))
    }

    /// The run's load section with the warm-up's shape, and the level it applies.
    fn warm_up_load(&self) -> (LoadConfig, LoadLevel) {
        let mut load = self.load.clone();
        load.modes = self.load.modes.for_warm_up();
        // Sessions are kept in flight, not sent at a rate.
        let shape = match (self.warm_up.shape, &self.sessions) {
            (WarmUpShape::Rate { cap, .. }, Some(_)) => WarmUpShape::Concurrency(cap.unwrap_or(1)),
            (shape, _) => shape,
        };
        match shape {
            WarmUpShape::Concurrency(n) => {
                load.mode = LoadMode::Concurrency;
                load.concurrency = ConcurrencyRange {
                    start: n,
                    end: n,
                    step: 1,
                };
                (load, LoadLevel::Concurrency(n))
            }
            WarmUpShape::Rate {
                rate,
                distribution,
                cap,
            } => {
                load.mode = LoadMode::RequestRate {
                    range: RateRange {
                        start: rate,
                        end: rate,
                        step: 1.0,
                    },
                    distribution,
                };
                load.max_concurrency = cap;
                (load, LoadLevel::Rate(rate))
            }
        }
    }

    fn sentence(&self, tally: &WindowStats, took: Duration) -> String {
        let failed = tally.error_count();
        let failures = match failed {
            0 => String::new(),
            n => format!(", {n} failed"),
        };
        format!(
            "Warm-up: {} requests answered{failures} in {:.2} s before measuring; they are in no figure.",
            tally.ok,
            took.as_secs_f64()
        )
    }
}

//! Follows a load plan over time (`--ramp`, `--load-steps`) once: the open loop's schedule
//! or the closed loop's concurrency moves along the plan, and the answers are cut into the
//! 1-second [`Bucket`]s of `measure::timeline`. After the plan ends, buckets go on while
//! answers are still arriving (up to the request timeout), so a backlog's tail shows.

use super::answer_tokens::AnswerCounting;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::driver::Driver;
use super::plan::Plan;
use super::profiler::{check_reachable, Interrupt, FOLD_EVERY};
use crate::backend::replicas::Replicas;
use crate::backend::Target;
use crate::config::{Timeline, TimelineKind};
use crate::data::Dataset;
use crate::measure::distribution::Compaction;
use crate::measure::sample::Drained;
use crate::measure::timeline::{Bucket, TimelineOutcome, BUCKET};
use crate::measure::window::WindowStats;
use inferperf_wire::error::{RunError, RunResult};

/// How often a closed loop looks at the plan for a new concurrency.
const FOLLOW_EVERY: Duration = Duration::from_millis(5);

/// Runs the `--ramp` / `--load-steps` plan of `sections.load` once, handing each bucket to
/// `on_bucket` as it closes.
pub async fn run_timeline(
    sections: Plan<'_>,
    replicas: Arc<Replicas>,
    dataset: Arc<Dataset>,
    interrupt: Arc<Interrupt>,
    on_bucket: impl FnMut(&Bucket),
) -> TimelineOutcome {
    let target = replicas.first().target.clone();
    let replica_count = replicas.len();
    let mut outcome = TimelineOutcome {
        buckets: Vec::new(),
        total: sections.window(replica_count),
        error: None,
    };
    let Some(plan) = sections.load.mode.timeline() else {
        outcome.error = Some(RunError::failed("internal: no load plan to follow"));
        return outcome;
    };
    let kept = sections.measure.kept_percentiles(sections.llm.is_some());
    let mut run = TimelineRun {
        sections,
        replica_count,
        plan,
        driver: Driver::new(sections.load, replicas, None),
        target,
        interrupt,
        concurrency: 0,
        current: sections.window(replica_count),
        scratch: Drained::default(),
        folded_at: Instant::now(),
        compaction: Compaction::percentiles(&kept),
        counting: AnswerCounting::for_run(&sections, &dataset),
    };
    if let Err(e) = run.run(&dataset, on_bucket, &mut outcome).await {
        outcome.error = Some(e);
    }
    run.driver
        .stop(super::profiler::stop_grace(&run.target, &run.interrupt))
        .await;
    outcome
}

/// The state of one run of a plan.
struct TimelineRun<'a> {
    /// The load and measure sections, and what the command handed down.
    sections: Plan<'a>,
    /// How many servers the load is spread over.
    replica_count: usize,
    plan: &'a Timeline,
    driver: Driver,
    target: Arc<Target>,
    interrupt: Arc<Interrupt>,
    /// The closed loop's current number of slots.
    concurrency: usize,
    /// The bucket in progress, and the samples on their way into it.
    current: WindowStats,
    scratch: Drained,
    folded_at: Instant,
    /// What a bucket keeps once reported (its histograms were handed to `on_bucket`, which
    /// writes them into the results file).
    compaction: Compaction,
    /// The run's tokenizer, counting answers as they are folded.
    counting: Option<AnswerCounting>,
}

impl TimelineRun<'_> {
    async fn run(
        &mut self,
        dataset: &Dataset,
        mut on_bucket: impl FnMut(&Bucket),
        outcome: &mut TimelineOutcome,
    ) -> RunResult<()> {
        let total = self.plan.total();
        let drain_limit = total + self.target.peer.timeout + BUCKET;
        let start = Instant::now();
        self.driver.stamp_counters(&mut WindowStats::new(1));
        self.driver.start_timeline(self.sections.load, dataset)?;
        self.concurrency = self.plan.value_at(Duration::ZERO) as usize;
        let mut from = Duration::ZERO;
        loop {
            let after_end = from >= total;
            let to = if after_end {
                from + BUCKET
            } else {
                (from + BUCKET).min(total)
            };
            if !after_end && to == total {
                // The last bucket of the plan: stop the closed loop from sending more.
                self.follow_until(start, to).await;
                self.driver.set_concurrency(0);
            } else {
                self.follow_until(start, to).await;
            }
            let end = (start + to).min(Instant::now());
            let mut bucket = self.cut(start, from, end - start, after_end);
            check_reachable(&self.target, &bucket.stats)?;
            on_bucket(&bucket);
            outcome.total.merge(&bucket.stats);
            bucket.stats.compact(&self.compaction);
            outcome.buckets.push(bucket);
            from = to;
            if self.interrupt.is_raised() || self.idle(from >= total) || from >= drain_limit {
                return Ok(());
            }
        }
    }

    /// After the plan's end, whether nothing is left: no request in flight and no answer
    /// that arrived after the last cut (the last answers may land just after it, and must
    /// get a bucket of their own rather than be lost).
    fn idle(&mut self, plan_over: bool) -> bool {
        if !plan_over || self.driver.in_flight() > 0 {
            return false;
        }
        self.fold(Instant::now());
        self.current.completed() == 0
    }

    /// Waits until `to` after `start`, moving a closed loop's concurrency along the plan;
    /// after the plan's end, only until the last answer is in.
    async fn follow_until(&mut self, start: Instant, to: Duration) {
        let total = self.plan.total();
        loop {
            let now = start.elapsed();
            if now >= to || self.interrupt.is_raised() {
                return;
            }
            if now >= total {
                if self.driver.in_flight() == 0 {
                    return;
                }
                self.interrupt.sleep((to - now).min(FOLLOW_EVERY)).await;
            } else if self.plan.kind == TimelineKind::Concurrency {
                let wanted = self.plan.value_at(now) as usize;
                if wanted != self.concurrency {
                    self.driver.set_concurrency(wanted);
                    self.concurrency = wanted;
                }
                self.interrupt.sleep((to - now).min(FOLLOW_EVERY)).await;
            } else {
                self.interrupt.sleep((to - now).min(FOLD_EVERY)).await;
            }
            if self.folded_at.elapsed() >= FOLD_EVERY {
                self.fold(Instant::now());
            }
        }
    }

    /// Adds the answers that arrived by `until` to the bucket in progress.
    fn fold(&mut self, until: Instant) {
        self.folded_at = Instant::now();
        self.driver.fold_until(
            until,
            &mut self.current,
            &mut self.scratch,
            self.counting.as_ref(),
        );
    }

    /// The bucket `[from, to)` of the plan: every answer that arrived by `to`.
    fn cut(&mut self, start: Instant, from: Duration, to: Duration, after_end: bool) -> Bucket {
        self.fold(start + to);
        let mut stats =
            std::mem::replace(&mut self.current, self.sections.window(self.replica_count));
        stats.duration = to.saturating_sub(from).max(Duration::from_nanos(1));
        stats.windows = 1;
        stats.bounds = Some((start + from, start + to));
        self.driver.stamp_counters(&mut stats);
        let target = if after_end {
            0.0
        } else {
            self.plan.mean_over(from, to)
        };
        Bucket {
            start: from,
            target,
            after_end,
            stats,
        }
    }
}

//! The measurement loop: for each load level, cut back-to-back windows from the driver's
//! samples until the stability rule is met (or `-r` windows pass), then merge the last
//! windows into the level's result. A linear sweep stops at `-l`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::level::{LevelEnd, LevelResult, LoadLevel};
use super::sample::{ErrorKind, Sample};
use super::stability::{merge_last, StabilityRule, Verdict};
use super::window::WindowStats;
use crate::backend::Target;
use crate::config::{Config, MeasurementMode};
use crate::data::Dataset;
use crate::error::{RunError, RunResult};
use crate::load::concurrency::ClosedLoop;

/// How often count windows and request-count runs look at the number of finished requests.
const POLL: Duration = Duration::from_millis(2);

/// Set by Ctrl-C: the current window ends early and the sweep stops; reports are written.
#[derive(Debug, Default)]
pub struct Interrupt {
    raised: AtomicBool,
    notify: Notify,
}

impl Interrupt {
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Sleeps for `duration`, or less if interrupted.
    async fn sleep(&self, duration: Duration) {
        if self.is_raised() {
            return;
        }
        let notified = self.notify.notified();
        tokio::select! {
            _ = tokio::time::sleep(duration) => {}
            _ = notified => {}
        }
    }
}

/// What a sweep measured, and the error that cut it short, if any.
#[derive(Debug, Default)]
pub struct SweepOutcome {
    pub results: Vec<LevelResult>,
    pub error: Option<RunError>,
}

/// Runs the sweep of one configuration against one target.
pub struct Profiler<'a> {
    cfg: &'a Config,
    target: Arc<Target>,
    driver: ClosedLoop,
    rule: StabilityRule,
    interrupt: Arc<Interrupt>,
}

impl<'a> Profiler<'a> {
    pub fn new(
        cfg: &'a Config,
        target: Arc<Target>,
        dataset: Arc<Dataset>,
        interrupt: Arc<Interrupt>,
    ) -> Self {
        let rule = StabilityRule {
            threshold: cfg.stability_percentage / 100.0,
            percentile: cfg.percentile,
            latency_limit_us: cfg.latency_threshold_ms.map(|ms| ms * 1000.0),
        };
        Profiler {
            cfg,
            driver: ClosedLoop::new(target.clone(), dataset),
            target,
            rule,
            interrupt,
        }
    }

    /// Measures every level of the sweep, handing each result to `on_level` as it is done.
    /// Levels finished before a failure are kept.
    pub async fn sweep(mut self, mut on_level: impl FnMut(&LevelResult)) -> SweepOutcome {
        let mut outcome = SweepOutcome::default();
        if let Err(e) = self.sweep_levels(&mut on_level, &mut outcome.results).await {
            outcome.error = Some(e);
        }
        self.driver.stop().await;
        outcome
    }

    async fn sweep_levels(
        &mut self,
        on_level: &mut impl FnMut(&LevelResult),
        results: &mut Vec<LevelResult>,
    ) -> RunResult<()> {
        self.warm_up().await;
        for concurrency in self.cfg.concurrency_levels() {
            if self.interrupt.is_raised() {
                break;
            }
            let result = self.measure_level(concurrency).await?;
            on_level(&result);
            let end = result.end;
            results.push(result);
            if matches!(end, LevelEnd::OverLatencyLimit | LevelEnd::Interrupted) {
                break;
            }
        }
        Ok(())
    }

    /// Sends `--warmup-request-count` requests at the first level and forgets them.
    async fn warm_up(&mut self) {
        let count = self.cfg.warmup_request_count;
        if count == 0 {
            return;
        }
        self.driver.set_budget(Some(count));
        self.driver
            .set_concurrency(self.cfg.concurrency.start as usize);
        while !self.driver.all_finished() && !self.interrupt.is_raised() {
            tokio::time::sleep(POLL).await;
        }
        self.driver.set_budget(None);
        self.driver.drain_until(Instant::now(), &mut Vec::new());
    }

    async fn measure_level(&mut self, concurrency: u32) -> RunResult<LevelResult> {
        let level = LoadLevel::Concurrency(concurrency);
        if let Some(count) = self.cfg.request_count {
            return self.measure_request_count(level, concurrency, count).await;
        }
        self.driver.set_concurrency(concurrency as usize);
        let mut window_start = Instant::now();
        // Answers that belong to the previous level do not count here.
        self.driver.drain_until(window_start, &mut Vec::new());
        let mut windows: Vec<WindowStats> = Vec::new();
        let end = loop {
            self.wait_window(window_start).await;
            let boundary = Instant::now();
            let window = self.cut_window(window_start, boundary);
            window_start = boundary;
            self.check_reachable(&window)?;
            windows.push(window);
            if self.interrupt.is_raised() {
                break LevelEnd::Interrupted;
            }
            match self.rule.judge(&windows) {
                Verdict::Stable => break LevelEnd::Stable,
                Verdict::OverLatencyLimit => break LevelEnd::OverLatencyLimit,
                Verdict::Measuring if windows.len() >= self.cfg.max_trials as usize => {
                    break LevelEnd::Unstable
                }
                Verdict::Measuring => {}
            }
        };
        Ok(LevelResult {
            level,
            merged: merge_last(&windows, self.cfg.batch_size),
            windows,
            end,
        })
    }

    /// `--request-count`: exactly `count` requests, one window from the first send to the
    /// last answer.
    async fn measure_request_count(
        &mut self,
        level: LoadLevel,
        concurrency: u32,
        count: u64,
    ) -> RunResult<LevelResult> {
        self.driver.set_budget(Some(count));
        let start = Instant::now();
        self.driver.set_concurrency(concurrency as usize);
        while !self.driver.all_finished() && !self.interrupt.is_raised() {
            tokio::time::sleep(POLL).await;
        }
        self.driver.set_budget(None);
        let window = self.cut_window(start, Instant::now());
        self.check_reachable(&window)?;
        let end = if self.interrupt.is_raised() {
            LevelEnd::Interrupted
        } else {
            LevelEnd::SingleWindow
        };
        Ok(LevelResult {
            level,
            merged: merge_last(std::slice::from_ref(&window), self.cfg.batch_size),
            windows: vec![window],
            end,
        })
    }

    /// Waits for the end of a window: its length in time mode; enough finished requests in
    /// count mode (bounded, so a silent server cannot hang the run).
    async fn wait_window(&self, start: Instant) {
        match self.cfg.measurement_mode {
            MeasurementMode::TimeWindows => {
                self.interrupt.sleep(self.cfg.measurement_interval).await
            }
            MeasurementMode::CountWindows => {
                let cap = self.cfg.measurement_interval.max(self.target.timeout * 2);
                let wanted = self.cfg.measurement_request_count as usize;
                while self.driver.pending_samples() < wanted
                    && start.elapsed() < cap
                    && !self.interrupt.is_raised()
                {
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }

    fn cut_window(&self, start: Instant, boundary: Instant) -> WindowStats {
        let mut samples: Vec<Sample> = Vec::new();
        self.driver.drain_until(boundary, &mut samples);
        let duration = match self.cfg.request_count {
            // A request-count window spans the first send to the last answer.
            Some(_) => span(&samples).unwrap_or(boundary - start),
            None => boundary - start,
        };
        WindowStats::from_samples(&samples, duration, self.cfg.batch_size)
    }

    /// A window in which nothing succeeded and every failure was a refused or broken
    /// connection means the server is gone: stop with a sentence that says so.
    fn check_reachable(&self, window: &WindowStats) -> RunResult<()> {
        let unreachable =
            |k: &ErrorKind| matches!(k, ErrorKind::Connection | ErrorKind::GrpcCode(14));
        if window.ok == 0 && window.error_count() > 0 && window.errors.keys().all(unreachable) {
            return Err(RunError::failed(format!(
                "The server at {} stopped answering: all {} requests of the last window failed to connect. Is it still running?",
                self.target.authority,
                window.error_count()
            )));
        }
        Ok(())
    }
}

/// From the first send to the last answer among the samples.
fn span(samples: &[Sample]) -> Option<Duration> {
    let first = samples.iter().map(|s| s.sent).min()?;
    let last = samples.iter().map(|s| s.done).max()?;
    Some(
        last.saturating_duration_since(first)
            .max(Duration::from_nanos(1)),
    )
}

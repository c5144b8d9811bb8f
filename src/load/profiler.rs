//! The measurement loop: for each load level (a concurrency or a request rate), cut
//! back-to-back windows from the driver's samples until the stability rule is met (or `-r`
//! windows pass), then merge the last windows into the level's result. The levels come from
//! the configured search: linear (stopping at `-l` or a missed `--slo`) or bisection.

use super::answer_tokens::AnswerCounting;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::driver::Driver;
pub use super::interrupt::Interrupt;
use super::plan::Plan;
use super::progress::{LevelStart, Place, Progress, WindowDone};
use super::ramps::LevelRamps;
use super::search::Search;
use super::ties::{Alone, Ties};
use crate::backend::replicas::Replicas;
use crate::backend::{hooks, ErrorKind, Target};
use crate::config::shard::ShardPlan;
use crate::config::{ControlCall, LoadConfig, LoadLevel, LoadMode, MeasurementMode};
use crate::data::Dataset;
use crate::measure::distribution::Compaction;
use crate::measure::level::{LevelEnd, LevelResult};
use crate::measure::monitors::Monitors;
use crate::measure::request_log::{RequestLog, WallClock};
use crate::measure::sample::Drained;
use crate::measure::slices::Slices;
use crate::measure::stability::{merge_last, StabilityRule, Verdict, STABILITY_WINDOWS};
use crate::measure::window::WindowStats;
use inferperf_wire::error::{RunError, RunResult};

/// How often count windows and request-count runs look at the number of finished requests.
const POLL: Duration = Duration::from_millis(2);
/// How often the finished requests of a window in progress are added to it, so that the
/// slots' buffers hold at most this much of the run however long the window is.
pub(crate) const FOLD_EVERY: Duration = Duration::from_millis(100);

pub use super::driver::INTERRUPTED_GRACE;

#[path = "profiler_shapes.rs"]
mod shapes;

/// What the run's levels measured, and the error that cut it short, if any.
#[derive(Debug, Default)]
pub struct LevelsOutcome {
    pub results: Vec<LevelResult>,
    pub error: Option<RunError>,
}

/// Runs the levels of one configuration against one target.
pub struct Profiler<'a> {
    plan: Plan<'a>,
    /// How many servers the load is spread over (each window has a share for each).
    replica_count: usize,
    target: Arc<Target>,
    dataset: Arc<Dataset>,
    driver: Driver,
    rule: StabilityRule,
    interrupt: Arc<Interrupt>,
    monitors: Monitors,
    /// The level measured last, if any.
    previous: Option<LoadLevel>,
    /// Samples on their way from the slots' buffers into a window.
    scratch: Drained,
    /// The anchor of wall-clock times, when every request is logged (see [`Plan::logs_requests`]).
    wall_clock: Option<WallClock>,
    /// Every request of the level being measured, when they are logged.
    request_log: Option<RequestLog>,
    /// What a window keeps once it will only be reported: while its level is measured, its
    /// histograms too when a results file is written (the level is not recorded yet).
    compaction: Compaction,
    /// The live display, told of each level and window cut (none: nothing is computed for it).
    progress: Option<Box<dyn Progress>>,
    /// The other shards of the run, which start and end each level together with this one.
    ties: Arc<dyn Ties>,
    /// What the next level's result says besides the driver's notes (a late start).
    pending_notes: Vec<String>,
    /// The run's tokenizer, counting answers as they are folded into windows.
    counting: Option<AnswerCounting>,
    /// The servers, the sessions and the sequences the run plays: the warm-up's own driver
    /// plays them too.
    replicas: Arc<Replicas>,
    /// The warm-up's own requests, when they differ from the measured ones.
    warm_up_replicas: Option<Arc<Replicas>>,
    sessions: Option<Arc<super::sessions::SessionPlan>>,
    sequences: Option<Arc<super::sequences::SequencePlan>>,
    /// AIPerf's `--server-profiler`: the engine's profiler started after the warm-up and
    /// stopped once the levels are measured.
    server_profiler: Option<(ControlCall, ControlCall)>,
    /// AIPerf's ramps of the level being measured, its slices, and the sentence of a
    /// `--failed-request-threshold` that stopped the run.
    ramps: Option<LevelRamps>,
    slices: Option<Slices>,
    failed_stop: Option<String>,
}

impl<'a> Profiler<'a> {
    pub fn new(
        plan: Plan<'a>,
        replicas: Arc<Replicas>,
        dataset: Arc<Dataset>,
        interrupt: Arc<Interrupt>,
    ) -> Self {
        let target = replicas.first().target.clone();
        let rule = StabilityRule::for_run(plan.measure);
        // Discovery's handshakes are not the run's.
        for replica in &replicas.list {
            if let Some(tls) = &replica.target.peer.tls {
                let _ = tls.take_handshakes();
            }
        }
        let counting = AnswerCounting::for_run(&plan, &dataset);
        // Refused in the preparation when the load mode cannot play them.
        let sessions = super::sessions::SessionPlan::for_run(plan.load, &dataset)
            .unwrap_or(None)
            .map(Arc::new);
        Profiler {
            plan,
            replica_count: replicas.len(),
            driver: Driver::new(plan.load, replicas.clone(), sessions.clone()),
            replicas,
            warm_up_replicas: None,
            sessions,
            sequences: None,
            server_profiler: None,
            target,
            dataset,
            rule,
            interrupt,
            monitors: Monitors::default(),
            previous: None,
            scratch: Drained::default(),
            wall_clock: plan.logs_requests().then(WallClock::now),
            request_log: None,
            compaction: plan.compaction(),
            progress: None,
            ties: Arc::new(Alone),
            pending_notes: Vec::new(),
            counting,
            ramps: None,
            slices: None,
            failed_stop: None,
        }
    }

    /// Sends the warm-up's requests from `replicas` (`None`: the measured ones).
    pub fn with_warm_up_replicas(mut self, replicas: Option<Arc<Replicas>>) -> Self {
        self.warm_up_replicas = replicas;
        self
    }

    /// Plays sequences of `plan` on a sequence model.
    pub fn with_sequences(mut self, plan: Option<Arc<super::sequences::SequencePlan>>) -> Self {
        self.driver.set_sequences(plan.clone());
        self.sequences = plan;
        self
    }

    /// Starts the engine's profiler before the first level and stops it after the last.
    pub fn with_server_profiler(mut self, calls: Option<(ControlCall, ControlCall)>) -> Self {
        self.server_profiler = calls;
        self
    }

    /// Starts and ends each level together with the run's other shards.
    pub fn with_ties(mut self, ties: Arc<dyn Ties>) -> Self {
        self.ties = ties;
        self
    }

    /// Tells `progress` of each level as it starts and of each window as it is cut.
    pub fn with_progress(mut self, progress: Box<dyn Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Adds the CPU, server-statistics and metrics monitors to every window.
    pub fn with_monitors(mut self, monitors: Monitors) -> Self {
        self.monitors = monitors;
        self
    }

    /// Measures every level of the run, handing each result to `on_level` as it is done.
    /// Levels finished before a failure are kept.
    pub async fn measure_levels(mut self, mut on_level: impl FnMut(&LevelResult)) -> LevelsOutcome {
        let mut outcome = LevelsOutcome::default();
        if let Err(e) = self.each_level(&mut on_level, &mut outcome.results).await {
            outcome.error = Some(e);
        }
        let grace = match self.failed_stop {
            Some(_) => INTERRUPTED_GRACE,
            None => stop_grace(&self.target, &self.interrupt),
        };
        self.driver.stop(grace).await;
        if let Some((_, stop)) = &self.server_profiler {
            let stopped = hooks::post(&self.target, stop, "--server-profiler").await;
            if let Err(error) = stopped {
                eprintln!("Warning: the engine's profiler may still run: {error}");
            }
        }
        outcome
    }

    async fn each_level(
        &mut self,
        on_level: &mut impl FnMut(&LevelResult),
        results: &mut Vec<LevelResult>,
    ) -> RunResult<()> {
        if let Some(note) = self.driver.open_pools().await {
            self.pending_notes.push(note);
        }
        self.warm_up().await?;
        if let Some((start, _)) = &self.server_profiler {
            hooks::post(&self.target, start, "--server-profiler").await?;
        }
        let late = self.ties.first_window(&self.interrupt).await?;
        self.pending_notes.extend(late);
        let mut search = Search::of(self.plan.load);
        while let Some(level) = search.next(results.last()) {
            if self.interrupt.is_raised() {
                break;
            }
            let max_windows = self.max_windows();
            if let Some(progress) = &mut self.progress {
                progress.level_started(&LevelStart {
                    place: Place::of(&self.plan, results.len() + 1),
                    level,
                    max_windows,
                });
            }
            let measured = self.measure_level(level).await;
            // The display is cleared before the level's report is printed (or an error).
            if let Some(progress) = &mut self.progress {
                progress.level_finished();
            }
            let mut result = measured?;
            on_level(&result);
            // The per-request exports were written by `on_level`: one level's requests are
            // held at a time. So was the results file's record of the level, with every
            // histogram: the windows keep only what the console and CSV show (those compacted
            // during the level let their encoded histograms go).
            if !self.plan.keeps_requests() {
                result.requests = None;
            }
            let reported = Compaction::percentiles(&self.compaction.percentiles);
            for window in &mut result.windows {
                window.compact(&reported);
            }
            results.push(result);
            if let Some(why) = &self.failed_stop {
                return Err(RunError::failed(why.clone()));
            }
        }
        Ok(())
    }

    /// The warm-up, when one is asked: sent by a driver of its own and forgotten (see
    /// [`super::warm_up`]); what it sent is noted on the first level.
    async fn warm_up(&mut self) -> RunResult<()> {
        let Some(warm_up) = &self.plan.load.warm_up else {
            return Ok(());
        };
        let run = super::warm_up::WarmUpRun {
            load: self.plan.load,
            warm_up,
            replicas: (self.warm_up_replicas.clone()).unwrap_or_else(|| self.replicas.clone()),
            dataset: &self.dataset,
            sessions: self.sessions.clone(),
            sequences: self.sequences.clone(),
            timeout: self.target.peer.timeout,
        };
        let note = run.run(&self.interrupt).await?;
        self.pending_notes.push(note);
        Ok(())
    }

    async fn measure_level(&mut self, level: LoadLevel) -> RunResult<LevelResult> {
        let load = self.plan.load;
        if load.request_count.is_some() || load.session_count.is_some() {
            let share = |count: u64| load.shard.as_ref().map_or(count, |s| s.count_share(count));
            self.driver
                .set_budgets(load.request_count.map(share), load.session_count.map(share));
            return self.measure_until_done(level).await;
        }
        if single_window(self.plan.load) {
            return self.measure_until_done(level).await;
        }
        if let Some(duration) = self.plan.measure.benchmark_duration {
            return self.measure_for(level, duration).await;
        }
        if self.previous.is_some_and(|p| is_lighter(level, p)) {
            // A search stepping down: let the heavier level's backlog drain first.
            self.driver.settle(self.target.peer.timeout).await;
        }
        self.previous = Some(level);
        self.driver.apply(self.plan.load, &self.dataset, level)?;
        let slots = self.slots_of(level);
        let connecting = self.await_slots(slots).await;
        self.pending_notes.extend(connecting);
        let mut short_windows = Vec::new();
        let mut window_start = Instant::now();
        self.request_log = self.wall_clock.map(RequestLog::new);
        // Answers that belong to the previous level do not count here.
        self.driver
            .drain_until(window_start, &mut Drained::default());
        self.driver.stamp_counters(&mut WindowStats::new(1));
        self.monitors.restart(window_start).await;
        let mut windows: Vec<WindowStats> = Vec::new();
        let end = loop {
            let mut window = self.plan.window(self.replica_count);
            self.wait_window(window_start, &mut window).await;
            let boundary = Instant::now();
            self.cut_window(window_start, boundary, &mut window);
            self.monitors.stamp(&mut window, boundary).await;
            window_start = boundary;
            self.check_reachable(&window)?;
            short_windows.push(self.connected_slots(slots) < slots);
            windows.push(window);
            if let Some(progress) = &mut self.progress {
                if let Some(done) = WindowDone::of(self.plan.measure, &windows) {
                    progress.window_cut(&done);
                }
            }
            // Only the last windows are judged and merged; older ones keep their figures.
            if let Some(old) = windows.len().checked_sub(STABILITY_WINDOWS + 1) {
                windows[old].compact(&self.compaction);
                release_freed_memory();
            }
            let interrupted = self.interrupt.is_raised();
            let mut local = self.local_end(&windows, interrupted);
            // A window some slots missed measured less load than asked: never stable.
            let judged = short_windows.len().saturating_sub(STABILITY_WINDOWS);
            if local == Some(LevelEnd::Stable) && short_windows[judged..].contains(&true) {
                local = (windows.len() >= self.plan.measure.max_trials as usize)
                    .then_some(LevelEnd::Unstable);
            }
            // Alone, this shard's view decides; sharded under MPI, every rank's does.
            let agreed = self.ties.agree(local.is_some(), interrupted).await?;
            if agreed.any_interrupted {
                break LevelEnd::Interrupted;
            }
            if let (true, Some(end)) = (agreed.all_done, local) {
                break end;
            }
        };
        let short = short_windows.iter().filter(|s| **s).count();
        if short > 0 {
            self.pending_notes.push(format!(
                "{short} of the {} windows ended with fewer than {slots} slots connected: they measured less load than asked, so they are never called stable; lower the concurrency or raise the server's connection limit.",
                windows.len()
            ));
        }
        Ok(LevelResult {
            level,
            merged: merge_last(&windows, self.plan.batch_size),
            windows,
            end,
            notes: self.level_notes(level),
            requests: self.request_log.take(),
            slices: Default::default(),
        })
    }

    /// The closed loop's slots at `level` in this process (0 for other loads).
    fn slots_of(&self, level: LoadLevel) -> usize {
        let mine = self
            .plan
            .load
            .shard
            .as_ref()
            .map_or(level, |s| s.level_share(level));
        match (mine, &self.driver) {
            (LoadLevel::Concurrency(c), Driver::Closed(_)) => c as usize,
            _ => 0,
        }
    }

    fn connected_slots(&mut self, slots: usize) -> usize {
        self.driver
            .closed_loop()
            .map_or(slots, |closed| closed.connected_slots(slots))
    }

    /// Waits until every slot of the level has its connection (opened in parallel, a few
    /// hundred at a time), so that measuring starts with the asked load in flight; gives up
    /// after the request timeout. Says how long it took when that was long, or how many
    /// slots were missing.
    async fn await_slots(&mut self, slots: usize) -> Option<String> {
        let started = Instant::now();
        let limit = self.target.peer.timeout;
        let mut connected = self.connected_slots(slots);
        while connected < slots && started.elapsed() < limit && !self.interrupt.is_raised() {
            tokio::time::sleep(POLL).await;
            connected = self.connected_slots(slots);
        }
        let took = started.elapsed().as_secs_f64();
        if connected < slots && !self.interrupt.is_raised() {
            return Some(format!(
                "Only {connected} of the {slots} slots had a connection {took:.1} s after the level started; measuring began anyway."
            ));
        }
        // Thousands of connections opened for this level: how long they took, always.
        (took >= 1.0 || (slots >= 1000 && took >= 0.01)).then(|| {
            format!("The {slots} slots took {took:.2} s to connect; measuring began once all had.")
        })
    }

    /// How the level would end after `windows` if this shard decided alone, or `None` to
    /// measure on.
    fn local_end(&self, windows: &[WindowStats], interrupted: bool) -> Option<LevelEnd> {
        if interrupted {
            return Some(LevelEnd::Interrupted);
        }
        match self.rule.judge(windows) {
            Verdict::Stable => Some(LevelEnd::Stable),
            Verdict::OverLatencyLimit => Some(LevelEnd::OverLatencyLimit),
            Verdict::MissedSlo => Some(LevelEnd::MissedSlo),
            Verdict::Measuring if windows.len() >= self.plan.measure.max_trials as usize => {
                let merged = merge_last(windows, self.plan.batch_size);
                if self.rule.misses_slo(&merged) {
                    Some(LevelEnd::MissedSlo)
                } else {
                    Some(LevelEnd::Unstable)
                }
            }
            Verdict::Measuring => None,
        }
    }

    /// The driver's notes on a level, after what this shard ran of it and any note left
    /// for the level.
    fn level_notes(&mut self, level: LoadLevel) -> Vec<String> {
        let mut notes = std::mem::take(&mut self.pending_notes);
        if let Some(shard) = self.plan.load.shard.as_ref().filter(|s| s.count > 1) {
            notes.push(match shard.level_share(level) {
                LoadLevel::Concurrency(mine) => format!(
                    "{} it kept {mine} of the level's requests in flight; merge the shards' results for the whole.",
                    ShardPlan::part_note_prefix(shard.index, shard.count)
                ),
                LoadLevel::Rate(rate) => format!(
                    "{} it sent one request in {} of the {} req/s stream ({:.1} req/s); merge the shards' results for the whole.",
                    ShardPlan::part_note_prefix(shard.index, shard.count),
                    shard.count,
                    crate::config::format_rate(rate),
                    rate / shard.count as f64
                ),
            });
        }
        notes.extend(self.driver.notes());
        notes.extend(self.handshake_note());
        notes
    }

    /// How many TLS connections the level opened and their median handshake (opened
    /// before measuring, or on reconnection: never part of a request's latency).
    fn handshake_note(&self) -> Option<String> {
        let (count, median) = self.target.peer.tls.as_ref()?.take_handshakes()?;
        Some(format!(
            "TLS: {count} connection(s) opened with a handshake, median {:.2} ms; handshakes are not part of any request's latency.",
            median.as_secs_f64() * 1e3
        ))
    }

    /// A finite load in one window from the first send to the last answer: the budgets the
    /// driver was given (`--request-count`, `--conversation-num`), or the whole
    /// `--fixed-schedule`.
    async fn measure_until_done(&mut self, level: LoadLevel) -> RunResult<LevelResult> {
        let start = Instant::now();
        self.driver.stamp_counters(&mut WindowStats::new(1));
        self.request_log = self.wall_clock.map(RequestLog::new);
        self.monitors.restart(start).await;
        self.apply_level(level)?;
        self.start_shapes(start);
        let mut window = self.plan.window(self.replica_count);
        // AIPerf's --benchmark-duration beside a count: whichever bound comes first ends it.
        let deadline = self.plan.measure.benchmark_duration.map(|d| start + d);
        while !self.driver.finished() && !self.interrupt.is_raised() {
            if deadline.is_some_and(|end| Instant::now() >= end) {
                self.await_grace(&mut window).await;
                break;
            }
            tokio::time::sleep(POLL).await;
            self.follow_ramps();
            self.fold(Instant::now(), &mut window);
            if self.over_failure_threshold(level, &window) {
                break;
            }
        }
        self.driver.set_budgets(None, None);
        let boundary = Instant::now();
        self.cut_window(start, boundary, &mut window);
        self.monitors.stamp(&mut window, boundary).await;
        self.check_reachable(&window)?;
        Ok(self.single_window_result(level, window))
    }

    /// The result of a level measured in one window (ended early when interrupted).
    fn single_window_result(&mut self, level: LoadLevel, window: WindowStats) -> LevelResult {
        let end = match self.interrupt.is_raised() || self.failed_stop.is_some() {
            true => LevelEnd::Interrupted,
            false => LevelEnd::SingleWindow,
        };
        let last = window.bounds.map_or_else(Instant::now, |b| b.1);
        let slices = self
            .slices
            .take()
            .map_or_else(Default::default, |s| s.finish(last));
        let mut notes = self.level_notes(level);
        notes.extend(self.plan.load.modes.notes.iter().cloned());
        notes.extend(self.failed_stop.iter().cloned());
        self.ramps = None;
        LevelResult {
            level,
            merged: merge_last(std::slice::from_ref(&window), self.plan.batch_size),
            windows: vec![window],
            end,
            notes,
            requests: self.request_log.take(),
            slices,
        }
    }

    /// AIPerf's `--benchmark-duration`: the level as one time window of `duration`, without
    /// stability check; a request counts when its answer arrives within it.
    async fn measure_for(
        &mut self,
        level: LoadLevel,
        duration: Duration,
    ) -> RunResult<LevelResult> {
        self.apply_level(level)?;
        let first = self.ramps.as_ref().map_or(level, |r| r.first_level(level));
        let slots = self.slots_of(first);
        let connecting = self.await_slots(slots).await;
        self.pending_notes.extend(connecting);
        let start = Instant::now();
        self.request_log = self.wall_clock.map(RequestLog::new);
        self.driver.drain_until(start, &mut Drained::default());
        self.driver.stamp_counters(&mut WindowStats::new(1));
        self.monitors.restart(start).await;
        self.start_shapes(start);
        let mut window = self.plan.window(self.replica_count);
        let end = start + duration;
        loop {
            let now = Instant::now();
            if now >= end || self.interrupt.is_raised() {
                break;
            }
            let step = self.follow_ramps().map_or(FOLD_EVERY, |at| at - now);
            let wait = (end - now).min(FOLD_EVERY).min(step.max(POLL));
            self.interrupt.sleep(wait).await;
            self.fold(Instant::now(), &mut window);
            if self.over_failure_threshold(level, &window) {
                break;
            }
        }
        if self.failed_stop.is_none() {
            self.await_grace(&mut window).await;
        }
        let boundary = Instant::now();
        self.cut_window(start, boundary, &mut window);
        self.monitors.stamp(&mut window, boundary).await;
        self.check_reachable(&window)?;
        Ok(self.single_window_result(level, window))
    }

    /// AIPerf's `--benchmark-grace-period`: no send after the duration, and the answers
    /// still due counted until the last arrives or the grace ends (at most the request
    /// timeout); those not in by then are left out.
    async fn await_grace(&mut self, window: &mut WindowStats) {
        self.driver.stop_sending();
        let timeout = self.target.peer.timeout;
        let grace = self
            .plan
            .measure
            .benchmark_grace
            .unwrap_or(timeout)
            .min(timeout);
        let until = Instant::now() + grace;
        while self.driver.in_flight() > 0 && !self.interrupt.is_raised() {
            let now = Instant::now();
            if now >= until {
                break;
            }
            self.interrupt.sleep((until - now).min(POLL)).await;
            self.fold(Instant::now(), window);
        }
    }

    /// Waits for the end of a window — its length in time mode; enough finished requests in
    /// count mode (bounded, so a silent server cannot hang the run) — adding the requests
    /// that finish meanwhile to `window`.
    async fn wait_window(&mut self, start: Instant, window: &mut WindowStats) {
        match self.plan.measure.measurement_mode {
            MeasurementMode::TimeWindows => {
                let end = start + self.plan.measure.measurement_interval;
                loop {
                    let now = Instant::now();
                    if now >= end || self.interrupt.is_raised() {
                        break;
                    }
                    self.interrupt.sleep((end - now).min(FOLD_EVERY)).await;
                    self.fold(Instant::now(), window);
                }
            }
            MeasurementMode::CountWindows => {
                let cap = self
                    .plan
                    .measure
                    .measurement_interval
                    .max(self.target.peer.timeout * 2);
                let wanted = self.plan.measure.measurement_request_count;
                loop {
                    self.fold(Instant::now(), window);
                    if window.completed() >= wanted
                        || start.elapsed() >= cap
                        || self.interrupt.is_raised()
                    {
                        break;
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }

    /// Adds the requests finished by `until` to `window`.
    fn fold(&mut self, until: Instant, window: &mut WindowStats) {
        self.driver
            .fold_until(until, window, &mut self.scratch, self.counting.as_ref());
        if let Some(log) = &mut self.request_log {
            log.add_drained(&self.scratch);
        }
        if let Some(slices) = &mut self.slices {
            slices.add_drained(&self.scratch);
        }
    }

    /// Closes `window` at `boundary`: its last requests, its length and the send counters.
    fn cut_window(&mut self, start: Instant, boundary: Instant, window: &mut WindowStats) {
        self.fold(boundary, window);
        let single = finite(self.plan.load);
        window.duration = match single {
            // A finite run's window spans the first send to the last answer.
            true => window.span().unwrap_or(boundary - start),
            false => boundary - start,
        };
        window.windows = 1;
        window.bounds = Some((start, boundary));
        self.driver.stamp_counters(window);
        if let Some(log) = &mut self.request_log {
            log.close_window(start, boundary);
        }
    }

    fn check_reachable(&self, window: &WindowStats) -> RunResult<()> {
        check_reachable(&self.target, window)
    }

    /// The most windows a level may take: `-r`, or one for a run of one window.
    fn max_windows(&self) -> u32 {
        let single = finite(self.plan.load);
        if single || self.plan.measure.benchmark_duration.is_some() {
            1
        } else {
            self.plan.measure.max_trials
        }
    }
}

/// A window in which nothing succeeded and every failure was a refused or broken
/// connection means the server is gone: stop with a sentence that says so.
pub fn check_reachable(target: &Target, window: &WindowStats) -> RunResult<()> {
    let unreachable = |k: &ErrorKind| matches!(k, ErrorKind::Connection | ErrorKind::GrpcCode(14));
    if window.ok == 0 && window.error_count() > 0 && window.errors.keys().all(unreachable) {
        return Err(RunError::failed(format!(
            "The server at {} stopped answering: all {} requests of the last window failed to connect. Is it still running?",
            target.peer.authority,
            window.error_count()
        )));
    }
    Ok(())
}

/// How long requests still in flight at the end may take to finish: their timeout, but
/// hardly any time after Ctrl-C (the reports are due within a second).
pub fn stop_grace(target: &Target, interrupt: &Interrupt) -> Duration {
    if interrupt.is_raised() {
        INTERRUPTED_GRACE
    } else {
        target.peer.timeout + Duration::from_secs(1)
    }
}

/// Whether each level is one finite window from the first send to the last answer: a count
/// of requests or sessions, a fixed schedule replayed once, or the sets of a periodic run.
fn finite(load: &LoadConfig) -> bool {
    load.request_count.is_some() || load.session_count.is_some() || single_window(load)
}

/// Whether the run is one finite window from the first send to the last answer: a fixed
/// schedule replayed once, or the sets of a periodic run.
fn single_window(load: &LoadConfig) -> bool {
    matches!(load.mode, LoadMode::FixedSchedule | LoadMode::Periodic(_))
}

/// True when `level` puts less load on the server than `than`.
fn is_lighter(level: LoadLevel, than: LoadLevel) -> bool {
    match (level, than) {
        (LoadLevel::Concurrency(a), LoadLevel::Concurrency(b)) => a < b,
        (LoadLevel::Rate(a), LoadLevel::Rate(b)) => a < b,
        _ => false,
    }
}

/// Hands the pages freed by compacting a window back to the kernel. glibc's malloc keeps
/// them otherwise: at c=1000 the resident memory crept up ~1.5 MiB/min over 5-s windows while
/// the live heap stayed flat (valgrind massif), as each window's histograms were freed and
/// new ones grown. One call per window end; it takes well under a millisecond.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's arenas to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

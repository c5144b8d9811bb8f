//! The profiler's view of a load driver — closed loop, open loop, periodic sets of
//! streams, or multi-turn sessions — applied level by level, with the samples and send counters that windows are
//! cut from.

use super::answer_tokens::AnswerCounting;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::client_threads::ClientThreads;
use super::closed_loop::ClosedLoop;
use super::curve::RateCurve;
use super::gate::CallGates;
use super::open_loop::OpenLoop;
use super::periodic::PeriodicLoop;
use super::schedule::Schedule;
use super::sessions::{OpenSessions, ScheduledSessions, SessionLoop, SessionPlan};
use crate::backend::replicas::Replicas;
use crate::backend::{Request, Target};
use crate::config::{ArrivalPattern, LoadConfig, LoadLevel, LoadMode, PeriodicRange};
use crate::data::Dataset;
use crate::measure::sample::Drained;
use crate::measure::window::WindowStats;
use inferperf_wire::error::{RunError, RunResult};

/// What the requests in flight get to finish once the run is interrupted.
pub const INTERRUPTED_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Open-loop counters as last read, so that each window gets its own deltas.
#[derive(Debug, Default, Clone, Copy)]
pub struct CounterMark {
    sent: u64,
    cap_waits: u64,
    cap_wait_ns: u64,
}

/// What a periodic run starts from, and the run once started.
pub struct Periodic {
    target: Arc<Target>,
    requests: Arc<Vec<Request>>,
    threads: Arc<ClientThreads>,
    range: PeriodicRange,
    running: Option<PeriodicLoop>,
}

/// The driver a run uses.
pub enum Driver {
    Closed(ClosedLoop),
    Open {
        driver: OpenLoop,
        mark: CounterMark,
    },
    Periodic(Box<Periodic>),
    Sessions(SessionLoop),
    /// Sessions at their trace's timestamps (`--fixed-schedule`).
    ScheduledSessions(ScheduledSessions),
    /// Sessions started by a clock: AIPerf's users sharing a rate (`--user-centric-rate`),
    /// or a request rate's ticks, each one turn.
    OpenSessions(OpenSessions),
}

impl Driver {
    /// The driver of `load` over `replicas` (periodic concurrency: the first server
    /// only, which the configuration makes the only one); `sessions`: the run's multi-turn
    /// sessions, when it has some.
    pub fn new(
        load: &LoadConfig,
        replicas: Arc<Replicas>,
        sessions: Option<Arc<SessionPlan>>,
    ) -> Driver {
        // A rate's in-flight cap that `--concurrency-ramp-duration` raises from 1.
        let ramp = load.modes.run.concurrency_ramp.is_some();
        let open = load.mode.is_open_loop() && sessions.is_none();
        let ramped_cap = load.max_concurrency.filter(|_| ramp && open);
        let gates = CallGates::for_load(&load.modes, ramped_cap);
        let mut driver = Driver::build(load, replicas, sessions);
        match &mut driver {
            Driver::Closed(d) => d.set_gates(gates),
            Driver::Open { driver, .. } => driver.set_gates(gates),
            Driver::Sessions(d) => d.set_gates(gates),
            Driver::ScheduledSessions(d) => d.set_gates(gates),
            Driver::OpenSessions(d) => {
                d.set_gates(gates);
                d.set_cap(load.max_concurrency, ramp);
            }
            Driver::Periodic(_) => {}
        }
        driver
    }

    fn build(
        load: &LoadConfig,
        replicas: Arc<Replicas>,
        sessions: Option<Arc<SessionPlan>>,
    ) -> Driver {
        let threads = ClientThreads::start(load.client_threads);
        if let Some(plan) = sessions {
            let users = load.modes.user_centric;
            return match load.mode {
                LoadMode::FixedSchedule if users.is_none() => {
                    Driver::ScheduledSessions(ScheduledSessions::new(replicas, threads, plan))
                }
                LoadMode::Concurrency if users.is_none() => {
                    Driver::Sessions(SessionLoop::new(replicas, threads, plan))
                }
                _ => Driver::OpenSessions(OpenSessions::new(replicas, threads, plan, users)),
            };
        }
        if let LoadMode::Periodic(range) = load.mode {
            let first = replicas.first();
            return Driver::Periodic(Box::new(Periodic {
                target: first.target.clone(),
                requests: first.requests.clone(),
                threads,
                range,
                running: None,
            }));
        }
        if load.mode.is_open_loop() {
            let cap = load.max_concurrency.map(|c| c as usize);
            Driver::Open {
                driver: OpenLoop::new(replicas, cap, threads, load.send_slack),
                mark: CounterMark::default(),
            }
        } else {
            Driver::Closed(ClosedLoop::new(replicas, threads))
        }
    }

    /// Makes the closed or open loop play sequences of `plan` (a sequence model).
    pub fn set_sequences(&mut self, plan: Option<Arc<super::sequences::SequencePlan>>) {
        match self {
            Driver::Closed(closed) => closed.set_sequences(plan),
            Driver::Open { driver, .. } => driver.set_sequences(plan),
            _ => {}
        }
    }

    /// Puts the level's load on the server.
    pub fn apply(
        &mut self,
        load: &LoadConfig,
        dataset: &Dataset,
        level: LoadLevel,
    ) -> RunResult<()> {
        let level = load.shard.as_ref().map_or(level, |s| s.level_share(level));
        match (self, level) {
            (Driver::Closed(closed), LoadLevel::Concurrency(c)) => {
                closed.set_concurrency(c as usize);
                Ok(())
            }
            (Driver::Sessions(sessions), LoadLevel::Concurrency(c)) => {
                sessions.set_concurrency(c as usize);
                Ok(())
            }
            (Driver::ScheduledSessions(sessions), LoadLevel::Rate(_)) => {
                sessions.start();
                Ok(())
            }
            (Driver::OpenSessions(sessions), LoadLevel::Rate(rate)) => {
                let ticks = match sessions.at_rate() {
                    true => Some(schedule_for(load, dataset, rate)?),
                    false => None,
                };
                sessions.start(ticks);
                Ok(())
            }
            (Driver::Open { driver, .. }, LoadLevel::Rate(rate)) => {
                driver.start(schedule_for(load, dataset, rate)?);
                Ok(())
            }
            (Driver::Periodic(p), LoadLevel::Concurrency(_)) => {
                let run = PeriodicLoop::start(
                    p.target.clone(),
                    p.requests.clone(),
                    p.threads.clone(),
                    p.range,
                );
                p.running = Some(run);
                Ok(())
            }
            _ => Err(RunError::failed(
                "internal: the level does not fit the load driver",
            )),
        }
    }

    /// Starts following the `--ramp` / `--load-steps` plan: the open loop's whole schedule,
    /// or the closed loop's first concurrency (the caller moves it on with
    /// [`Driver::set_concurrency`]).
    pub fn start_timeline(&mut self, load: &LoadConfig, dataset: &Dataset) -> RunResult<()> {
        match self {
            Driver::Open { driver, .. } => driver.start(schedule_for(load, dataset, 0.0)?),
            Driver::Closed(closed) => {
                let first = load
                    .mode
                    .timeline()
                    .map_or(0.0, |p| p.value_at(Default::default()));
                closed.set_concurrency(first as usize);
            }
            _ => {
                return Err(RunError::failed(
                    "internal: periodic concurrency and sessions have no load plan",
                ))
            }
        }
        Ok(())
    }

    /// `--request-count`: the closed loop's slots, or the open loop's next schedule, send
    /// `count` requests in all and stop (`None`: no end).
    pub fn set_budget(&mut self, count: Option<u64>) {
        match self {
            Driver::Closed(closed) => closed.set_budget(count),
            Driver::Open { driver, .. } => driver.set_budget(count),
            Driver::Sessions(sessions) => sessions.set_budget(count),
            Driver::OpenSessions(users) => users.set_budgets(count, None),
            Driver::Periodic(_) | Driver::ScheduledSessions(_) => {}
        }
    }

    /// A request budget and AIPerf's session budget (`--conversation-num`,
    /// `--num-warmup-sessions`): the sessions driver starts at most `sessions` sessions, each
    /// played whole, and at most `requests` turns; the other drivers send single requests,
    /// each a session of one turn, so the smaller count is their budget.
    pub fn set_budgets(&mut self, requests: Option<u64>, sessions: Option<u64>) {
        match self {
            Driver::Sessions(driver) => {
                driver.set_budget(requests);
                driver.set_session_budget(sessions);
            }
            Driver::OpenSessions(users) => users.set_budgets(requests, sessions),
            _ => {
                let smaller = match (requests, sessions) {
                    (Some(r), Some(s)) => Some(r.min(s)),
                    (r, s) => r.or(s),
                };
                self.set_budget(smaller);
            }
        }
    }

    /// Before the first level: the open loop's `--max-concurrency` connections are opened
    /// (see [`OpenLoop::open_pools`]); what to say about it, when there is something to say.
    pub async fn open_pools(&mut self) -> Option<String> {
        if let Driver::ScheduledSessions(sessions) = self {
            let (opened, tried) = sessions.open_ahead().await;
            return (opened < tried).then(|| format!(
                "Only {opened} of {tried} connections opened before the first session; the others open when a session needs them."
            ));
        }
        let Driver::Open { driver, .. } = self else {
            return None;
        };
        let (connected, asked, took) = driver.open_pools().await?;
        let took = took.as_secs_f64();
        if connected < asked {
            return Some(format!(
                "Only {connected} of the {asked} connections of --max-concurrency opened before the first send ({took:.2} s); the others open when a request needs them."
            ));
        }
        (asked >= 1000 || took >= 1.0).then(|| {
            format!("The {asked} connections of --max-concurrency took {took:.2} s to open, before the first send.")
        })
    }

    /// Moves a closed loop to `concurrency` slots (other drivers ignore it).
    pub fn set_concurrency(&mut self, concurrency: usize) {
        match self {
            Driver::Closed(closed) => closed.set_concurrency(concurrency),
            Driver::Sessions(sessions) => sessions.set_concurrency(concurrency),
            _ => {}
        }
    }

    /// A ramp's step of the concurrency (`--concurrency-ramp-duration`): the slots of a
    /// closed loop or of sessions, or the in-flight cap of a rate or of users.
    pub fn ramp_concurrency(&mut self, concurrency: u32) {
        match self {
            Driver::OpenSessions(users) => users.raise_cap(concurrency),
            Driver::Open { driver, .. } => {
                if let Some(gate) = driver.gates().and_then(|g| g.requests.as_ref()) {
                    gate.raise_to(concurrency as usize);
                }
            }
            _ => self.set_concurrency(concurrency as usize),
        }
    }

    /// A ramp's step of `--prefill-concurrency`.
    pub fn raise_prefill(&mut self, limit: u32) {
        if let Some(gate) = self.gates().and_then(|g| g.prefill.as_ref()) {
            gate.raise_to(limit as usize);
        }
    }

    /// The limits the driver's requests pass, if any.
    pub fn gates(&self) -> Option<&Arc<CallGates>> {
        match self {
            Driver::Closed(d) => d.gates(),
            Driver::Open { driver, .. } => driver.gates(),
            Driver::Sessions(d) => d.gates(),
            Driver::ScheduledSessions(d) => d.gates(),
            Driver::OpenSessions(d) => d.gates(),
            Driver::Periodic(_) => None,
        }
    }

    /// Requests sent and not answered yet.
    pub fn in_flight(&self) -> u64 {
        match self {
            Driver::Closed(d) => d.in_flight(),
            Driver::Open { driver, .. } => driver.in_flight(),
            Driver::Periodic(p) => p.running.as_ref().map_or(0, PeriodicLoop::in_flight),
            Driver::Sessions(d) => d.in_flight(),
            Driver::ScheduledSessions(d) => d.in_flight(),
            Driver::OpenSessions(d) => d.in_flight(),
        }
    }

    /// Sends nothing more; the requests in flight go on.
    pub fn stop_sending(&mut self) {
        match self {
            Driver::Open { driver, .. } => driver.halt(),
            Driver::Closed(closed) => closed.set_concurrency(0),
            Driver::Sessions(sessions) => sessions.set_concurrency(0),
            Driver::ScheduledSessions(_) => {}
            Driver::OpenSessions(users) => users.stop_sending(),
            Driver::Periodic(p) => p.running.iter_mut().for_each(PeriodicLoop::stop),
        }
    }

    /// Stops sending and waits (up to `limit`) until every request in flight is answered,
    /// so that a backlog left by a heavier level does not weigh on a lighter one.
    pub async fn settle(&mut self, limit: std::time::Duration) {
        self.stop_sending();
        let started = Instant::now();
        while self.in_flight() > 0 && started.elapsed() < limit {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        match self {
            Driver::Closed(d) => d.drain_until(boundary, out),
            Driver::Open { driver, .. } => driver.drain_until(boundary, out),
            Driver::Sessions(d) => d.drain_until(boundary, out),
            Driver::ScheduledSessions(d) => d.drain_until(boundary, out),
            Driver::OpenSessions(d) => d.drain_until(boundary, out),
            Driver::Periodic(p) => {
                if let Some(run) = &p.running {
                    run.drain_until(boundary, out);
                }
            }
        }
    }

    /// Adds the requests finished by `until` to `window`; `scratch` carries them over and
    /// keeps its capacity for the next call.
    /// Adds the requests finished by `until` to `window`, their answers' tokens counted by
    /// `counting` first.
    pub fn fold_until(
        &self,
        until: Instant,
        window: &mut WindowStats,
        scratch: &mut Drained,
        counting: Option<&AnswerCounting>,
    ) {
        scratch.clear();
        self.drain_until(until, scratch);
        if let Some(counting) = counting {
            counting.count(scratch);
        }
        window.add_drained(scratch);
        if let Some(counting) = counting {
            counting.label(window);
        }
    }

    pub fn pending_samples(&self) -> usize {
        match self {
            Driver::Closed(d) => d.pending_samples(),
            Driver::Open { driver, .. } => driver.pending_samples(),
            Driver::Periodic(p) => p.running.as_ref().map_or(0, PeriodicLoop::pending_samples),
            Driver::Sessions(d) => d.pending_samples(),
            Driver::ScheduledSessions(d) => d.pending_samples(),
            Driver::OpenSessions(d) => d.pending_samples(),
        }
    }

    /// True when a finite load has run out: every budgeted request (closed loop), every
    /// scheduled one (fixed schedule) or every periodic set was sent and answered.
    pub fn finished(&self) -> bool {
        match self {
            Driver::Closed(d) => d.all_finished(),
            Driver::Sessions(d) => d.all_finished(),
            Driver::ScheduledSessions(d) => d.all_finished(),
            Driver::OpenSessions(d) => d.all_finished(),
            Driver::Open { driver, .. } => driver.schedule_done() && driver.in_flight() == 0,
            Driver::Periodic(p) => p.running.as_ref().is_none_or(PeriodicLoop::finished),
        }
    }

    /// What the driver has to say about the level it ran, beside the figures.
    pub fn notes(&self) -> Vec<String> {
        match self {
            Driver::Periodic(p) => p
                .running
                .as_ref()
                .map_or_else(Vec::new, PeriodicLoop::notes),
            _ => Vec::new(),
        }
    }

    /// Adds the send counters since the last window to `window`.
    pub fn stamp_counters(&mut self, window: &mut WindowStats) {
        let not_sent = match self {
            Driver::Sessions(sessions) => Some(sessions.take_not_sent()),
            Driver::ScheduledSessions(sessions) => Some(sessions.take_not_sent()),
            Driver::OpenSessions(users) => Some(users.take_not_sent()),
            _ => None,
        };
        if let Some(not_sent) = not_sent {
            window.sent = window.completed();
            if not_sent > 0 {
                window.turns.get_or_insert_with(Default::default).not_sent += not_sent;
            }
            return;
        }
        let Driver::Open { driver, mark } = self else {
            window.sent = window.completed();
            return;
        };
        let c = driver.counters();
        let now = CounterMark {
            sent: c.sent.load(Ordering::Relaxed),
            cap_waits: c.cap_waits.load(Ordering::Relaxed),
            cap_wait_ns: c.cap_wait_ns.load(Ordering::Relaxed),
        };
        window.sent = now.sent - mark.sent;
        window.cap_waits = now.cap_waits - mark.cap_waits;
        window.cap_wait_ns = (now.cap_wait_ns - mark.cap_wait_ns) as u128;
        *mark = now;
    }

    pub fn closed_loop(&mut self) -> Option<&mut ClosedLoop> {
        match self {
            Driver::Closed(d) => Some(d),
            _ => None,
        }
    }

    /// Stops sending; in-flight requests get `grace` to finish before they are dropped.
    pub async fn stop(&mut self, grace: std::time::Duration) {
        match self {
            Driver::Closed(d) => d.stop(grace).await,
            Driver::Open { driver, .. } => driver.stop().await,
            Driver::Sessions(d) => d.stop(grace).await,
            Driver::ScheduledSessions(d) => d.stop(grace).await,
            Driver::OpenSessions(d) => d.stop(grace).await,
            Driver::Periodic(p) => p.running.iter_mut().for_each(PeriodicLoop::stop),
        }
    }
}

/// The schedule of an open-loop level: the whole stream's, of which a shard keeps every
/// N-th send (so the shards' union is the asked stream, each shifted by its phase). A fixed
/// schedule is a shard's already: its data holds only its own entries.
fn schedule_for(load: &LoadConfig, dataset: &Dataset, rate: f64) -> RunResult<Schedule> {
    let whole = whole_schedule(load, dataset, rate)?;
    Ok(match &load.shard {
        Some(shard) if shard.count > 1 && !matches!(load.mode, LoadMode::FixedSchedule) => {
            Schedule::sharded(whole, shard.index, shard.count)
        }
        _ => whole,
    })
}

fn whole_schedule(load: &LoadConfig, dataset: &Dataset, rate: f64) -> RunResult<Schedule> {
    if let Some(shaped) = super::rate_ramps::shaped_schedule(load, rate) {
        return Ok(shaped);
    }
    Ok(match &load.mode {
        LoadMode::RequestRate {
            distribution: ArrivalPattern::Constant,
            ..
        } => Schedule::constant(rate),
        LoadMode::RequestRate {
            distribution: ArrivalPattern::Poisson,
            ..
        } => Schedule::poisson(rate, load.seed),
        LoadMode::RequestRate {
            distribution: ArrivalPattern::Gamma { smoothness },
            ..
        } => Schedule::gamma(rate, *smoothness, load.seed),
        LoadMode::Intervals { gaps } => Schedule::intervals(gaps.clone()),
        LoadMode::FixedSchedule => match load.shard {
            // A shard's entries keep the whole data's time origin (see `Dataset::build`).
            Some(_) => Schedule::fixed_from_zero(fixed_offsets(dataset)?),
            None => Schedule::fixed(fixed_offsets(dataset)?),
        },
        LoadMode::Timeline { plan, distribution } => {
            let segments = plan.segments.clone();
            Schedule::Curve(match *distribution {
                ArrivalPattern::Constant => RateCurve::new(segments, None),
                ArrivalPattern::Poisson => RateCurve::new(segments, Some(load.seed)),
                ArrivalPattern::Gamma { smoothness } => {
                    RateCurve::gamma(segments, smoothness, load.seed)
                }
            })
        }
        LoadMode::Concurrency | LoadMode::Periodic(_) => {
            return Err(RunError::failed("internal: a closed loop has no schedule"))
        }
    })
}

/// The `timestamp` of every input-data entry, for `--fixed-schedule`.
fn fixed_offsets(dataset: &Dataset) -> RunResult<Vec<std::time::Duration>> {
    let offsets: Option<Vec<_>> = dataset
        .timestamps_ms()
        .map(|t| t.map(|ms| inferperf_wire::number::saturating_secs(ms.max(0.0) / 1000.0)))
        .collect();
    match offsets {
        Some(list) if !list.is_empty() => Ok(list),
        _ => Err(RunError::bad_option(
            "--fixed-schedule replays the \"timestamp\" (ms) of each --input-data entry: give a JSON input-data file whose every entry has one.",
        )),
    }
}

//! Sessions started by a clock rather than N at a time: AIPerf's users
//! ([`user_centric`], `--user-centric-rate`) and sessions at a request rate
//! ([`rated`], `--request-rate` over a multi-turn dataset). A starter decides when a
//! session begins and how its later turns are paced; this file holds what both share — the
//! budgets (`--request-count` turns, `--conversation-num` sessions), the cap on sessions
//! with turns to play (`--concurrency`), the connections each client thread keeps between
//! sessions, the samples, and stopping.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};

mod rated;
pub mod user_centric;

use super::{Pace, SessionPlan, TurnPlayer};
use crate::backend::replicas::Replicas;
use crate::config::UserCentric;
use crate::load::caller::Caller;
use crate::load::client_threads::ClientThreads;
use crate::load::gate::{CallGates, Gate};
use crate::load::schedule::Schedule;
use crate::load::slot_set::{budget, take_budget, Budget};
use crate::load::timer::{wait_until_unless, PreciseTimer};
use crate::measure::sample::{Drained, SlotBuffer, SlotBuffers};
use rated::{TickPace, Ticker};
use user_centric::{start_lanes, UserPace};

/// Longest a wait goes without looking at the stop flag.
pub(super) const STOP_CHECK: Duration = Duration::from_millis(20);

/// A connection kept by a thread between sessions, with the buffer its samples go to.
struct Line {
    caller: Caller,
    buffer: Arc<SlotBuffer>,
}

/// What the driver, its starters and their sessions share.
#[derive(Default)]
pub(super) struct Shared {
    stop: AtomicBool,
    /// Turns out, and turns about to go (taken from the budget, not yet sent).
    in_flight: AtomicU64,
    /// Sessions started and not ended.
    pub live: AtomicUsize,
    /// Starters still starting sessions.
    pub starters: AtomicUsize,
    next_session: AtomicUsize,
    not_sent: Arc<AtomicU64>,
    buffers: SlotBuffers,
    /// Each thread's idle connections, by server.
    idle: Mutex<Vec<Vec<Vec<Line>>>>,
    tasks: Mutex<Vec<AbortHandle>>,
    opened: AtomicUsize,
    /// `--request-count` (turns) and `--conversation-num` (sessions).
    pub turns: Budget,
    users: Budget,
    /// `--concurrency`: sessions with turns to play.
    pub cap: Option<Gate>,
    gates: Option<Arc<CallGates>>,
    /// Later turns of sessions at a request rate, waiting for a tick, oldest first.
    waiting: Mutex<std::collections::VecDeque<oneshot::Sender<Instant>>>,
}

impl Shared {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Vec<Line>>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_tasks(&self) -> std::sync::MutexGuard<'_, Vec<AbortHandle>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::VecDeque<oneshot::Sender<Instant>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts a later turn in line for a tick.
    pub fn wait_for_tick(&self, turn: oneshot::Sender<Instant>) {
        self.lock_waiting().push_back(turn);
    }

    /// Gives the tick `at` to the turn that has waited longest; false when none waits.
    pub fn give_tick(&self, at: Instant) -> bool {
        let mut waiting = self.lock_waiting();
        while let Some(turn) = waiting.pop_front() {
            if turn.send(at).is_ok() {
                return true;
            }
        }
        false
    }

    /// Ends the turns waiting for a tick: no tick comes any more.
    pub fn end_ticks(&self) {
        self.lock_waiting().clear();
    }

    /// Whether no more session may start: `--conversation-num` spent.
    pub fn sessions_spent(&self) -> bool {
        spent(&self.users)
    }
}

/// Whether a budget was given and is spent.
pub(super) fn spent(budget: &Budget) -> bool {
    budget
        .as_ref()
        .is_some_and(|b| b.load(Ordering::Relaxed) <= 0)
}

/// Waits until `due` (within microseconds with a timer); false if stopped meanwhile.
pub(super) async fn wait_until(
    timer: Option<&PreciseTimer>,
    due: Instant,
    shared: &Shared,
) -> bool {
    wait_until_unless(timer, due, STOP_CHECK, || shared.stopped()).await
}

/// How a session's turns go after its first: AIPerf's user, a turn gap after the one
/// before was due; or at a request rate, each at the next tick not taken by a turn that
/// waited longer.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pacing {
    Gap { start: Instant, gap: Duration },
    Ticks { start: Instant },
}

/// What a starter needs to start sessions.
#[derive(Clone)]
pub(super) struct Starting {
    pub replicas: Arc<Replicas>,
    pub plan: Arc<SessionPlan>,
    pub shared: Arc<Shared>,
}

impl Starting {
    /// Starts the dataset's next session (its first `turns` when given) on a task of
    /// client thread `thread`, paced by `pacing`; `placed`: it already holds its place
    /// under `--concurrency`. The turns it will play, or `None` when `--conversation-num`
    /// is spent.
    pub fn start(
        &self,
        thread: usize,
        turns: Option<u32>,
        pacing: Pacing,
        placed: bool,
    ) -> Option<usize> {
        let shared = &self.shared;
        shared.live.fetch_add(1, Ordering::AcqRel);
        if !take_budget(&shared.users) {
            shared.live.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let sessions = self.plan.sessions.len().max(1);
        let number = shared.next_session.fetch_add(1, Ordering::Relaxed) % sessions;
        let whole = self.plan.sessions[number].clone();
        let played = turns.map_or(whole.len(), |t| (t as usize).min(whole.len()));
        let session = Session {
            thread,
            server: number % self.replicas.len().max(1),
            span: whole.start..whole.start + played,
            pacing,
            placed,
            starting: self.clone(),
        };
        let task = tokio::spawn(session.run());
        shared.lock_tasks().push(task.abort_handle());
        Some(played)
    }
}

/// Plays sessions started by a clock.
pub struct OpenSessions {
    replicas: Arc<Replicas>,
    threads: Arc<ClientThreads>,
    plan: Arc<SessionPlan>,
    /// `--user-centric-rate`; without it, sessions start at the level's request rate.
    users: Option<UserCentric>,
    /// Set before the start: the budgets, the cap and the gates.
    pending: Option<Shared>,
    shared: Option<Arc<Shared>>,
    starters: Vec<JoinHandle<()>>,
    not_sent_mark: u64,
}

impl OpenSessions {
    pub fn new(
        replicas: Arc<Replicas>,
        threads: Arc<ClientThreads>,
        plan: Arc<SessionPlan>,
        users: Option<UserCentric>,
    ) -> Self {
        let servers = replicas.len().max(1);
        let idle = (0..threads.len()).map(|_| (0..servers).map(|_| Vec::new()).collect());
        OpenSessions {
            replicas,
            threads,
            plan,
            users,
            pending: Some(Shared {
                idle: Mutex::new(idle.collect()),
                ..Shared::default()
            }),
            shared: None,
            starters: Vec::new(),
            not_sent_mark: 0,
        }
    }

    /// Whether sessions start at a request rate (the level's schedule), not as users.
    pub fn at_rate(&self) -> bool {
        self.users.is_none()
    }

    fn pending(&mut self) -> Option<&mut Shared> {
        self.pending.as_mut()
    }

    /// `--request-count` (turns) and `--conversation-num` (sessions), before the start.
    pub fn set_budgets(&mut self, turns: Option<u64>, sessions: Option<u64>) {
        if let Some(shared) = self.pending() {
            shared.turns = budget(turns);
            shared.users = budget(sessions);
        }
    }

    /// `--concurrency`: at most `cap` sessions with turns to play (from 1 when ramped).
    pub fn set_cap(&mut self, cap: Option<u32>, ramped: bool) {
        if let Some(shared) = self.pending() {
            shared.cap = cap.map(|n| Gate::new(if ramped { 1 } else { n as usize }));
        }
    }

    /// Makes every turn pass `gates`.
    pub fn set_gates(&mut self, gates: Option<Arc<CallGates>>) {
        if let Some(shared) = self.pending() {
            shared.gates = gates;
        }
    }

    pub fn gates(&self) -> Option<&Arc<CallGates>> {
        let shared = self.shared.as_deref().or(self.pending.as_ref());
        shared.and_then(|s| s.gates.as_ref())
    }

    /// Raises the cap of `--concurrency` (its ramp).
    pub fn raise_cap(&self, cap: u32) {
        let shared = self.shared.as_deref().or(self.pending.as_ref());
        if let Some(gate) = shared.and_then(|s| s.cap.as_ref()) {
            gate.raise_to(cap as usize);
        }
    }

    /// Starts now: the users' lanes, or the ticks of `schedule` (sessions at a rate).
    /// Once: a second start does nothing.
    pub fn start(&mut self, schedule: Option<Schedule>) {
        let Some(shared) = self.pending.take() else {
            return;
        };
        let starting = Starting {
            replicas: self.replicas.clone(),
            plan: self.plan.clone(),
            shared: Arc::new(shared),
        };
        let threads = &self.threads;
        match (self.users, schedule) {
            (Some(users), _) => self.starters = start_lanes(users, &starting, threads),
            (None, Some(schedule)) => {
                starting.shared.starters.store(1, Ordering::Relaxed);
                let ticker = Ticker::new(schedule, starting.clone(), threads.len());
                self.starters.push(threads.handle(0).spawn(ticker.run()));
            }
            (None, None) => {}
        }
        self.shared = Some(starting.shared);
    }

    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        if let Some(shared) = &self.shared {
            shared.buffers.drain_until(boundary, out);
        }
    }

    pub fn pending_samples(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.buffers.pending())
    }

    pub fn in_flight(&self) -> u64 {
        self.shared
            .as_ref()
            .map_or(0, |s| s.in_flight.load(Ordering::Relaxed))
    }

    /// True once nothing more can be sent and nothing is out: the turns' budget spent
    /// with no turn out, or no starter starting sessions and no session left.
    pub fn all_finished(&self) -> bool {
        let Some(shared) = &self.shared else {
            return false;
        };
        let out = shared.in_flight.load(Ordering::Acquire) == 0;
        let live = shared.live.load(Ordering::Acquire) > 0;
        let starting = shared.starters.load(Ordering::Acquire) > 0;
        let no_sessions = spent(&shared.users) || !starting;
        (spent(&shared.turns) && out) || (no_sessions && !live)
    }

    /// Turns not sent since the last call.
    pub fn take_not_sent(&mut self) -> u64 {
        let Some(shared) = &self.shared else {
            return 0;
        };
        let now = shared.not_sent.load(Ordering::Relaxed);
        let delta = now - self.not_sent_mark;
        self.not_sent_mark = now;
        delta
    }

    /// Starts no session and no turn more; the turns out go on.
    pub fn stop_sending(&self) {
        if let Some(shared) = &self.shared {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Stops, waiting for the turns out up to `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        shared.stop.store(true, Ordering::Relaxed);
        let until = Instant::now() + grace;
        while shared.in_flight.load(Ordering::Relaxed) > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let tasks = std::mem::take(&mut *shared.lock_tasks());
        tasks.iter().for_each(AbortHandle::abort);
        self.starters.drain(..).for_each(|s| s.abort());
    }
}

/// One session playing its turns on a connection of its thread.
struct Session {
    thread: usize,
    server: usize,
    span: Range<usize>,
    pacing: Pacing,
    /// It holds its place under `--concurrency` already.
    placed: bool,
    starting: Starting,
}

impl Session {
    async fn run(self) {
        let shared = self.starting.shared.clone();
        if let (Some(cap), false) = (&shared.cap, self.placed) {
            cap.enter().await;
        }
        let taken = shared.lock_idle()[self.thread][self.server].pop();
        let mut line = taken.unwrap_or_else(|| self.new_line());
        let server = self.starting.replicas.for_index(self.server).1;
        let player = TurnPlayer {
            target: server.target.clone(),
            requests: server.requests.clone(),
            plan: self.starting.plan.clone(),
            buffer: line.buffer.clone(),
            not_sent: shared.not_sent.clone(),
        };
        let turn = Reservation::new(shared.clone());
        match self.pacing {
            Pacing::Gap { start, gap } => {
                let pace = UserPace::new(start, gap, turn);
                self.play(&player, &mut line, &pace).await;
            }
            Pacing::Ticks { start } => {
                let pace = TickPace::new(start, turn);
                self.play(&player, &mut line, &pace).await;
            }
        }
        shared.lock_idle()[self.thread][self.server].push(line);
        if let Some(cap) = &shared.cap {
            cap.leave();
        }
        shared.live.fetch_sub(1, Ordering::AcqRel);
    }

    async fn play<P: Pace + Reserving>(&self, player: &TurnPlayer, line: &mut Line, pace: &P) {
        let _ = player.play(&mut line.caller, self.span.clone(), pace).await;
        pace.reservation().release();
    }

    /// A new connection to the session's server (opened at its first turn).
    fn new_line(&self) -> Line {
        let shared = &self.starting.shared;
        let (replica, chosen) = self.starting.replicas.for_index(self.server);
        let slot = shared.opened.fetch_add(1, Ordering::Relaxed);
        Line {
            caller: Caller::new(slot, &chosen.target)
                .for_replica(replica)
                .with_gates(shared.gates.clone()),
            buffer: shared.buffers.add(),
        }
    }
}

/// A pace that holds its session's next turn as a [`Reservation`].
pub(super) trait Reserving {
    fn reservation(&self) -> &Reservation;
}

/// A session's turn taken from the budget and counted in flight, until it is done.
pub(super) struct Reservation {
    held: AtomicBool,
    pub shared: Arc<Shared>,
}

impl Reservation {
    pub fn new(shared: Arc<Shared>) -> Self {
        Reservation {
            held: AtomicBool::new(false),
            shared,
        }
    }

    /// Takes the next turn: false (nothing held) when stopped or the turns' budget is
    /// spent. Counted out before the budget is taken, so no one sees the budget spent and
    /// nothing out while this turn is on its way.
    pub fn take(&self) -> bool {
        self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        self.held.store(true, Ordering::Release);
        if self.shared.stopped() || !take_budget(&self.shared.turns) {
            self.release();
            return false;
        }
        true
    }

    /// Counts the turn held as done (it ended, or was never sent).
    pub fn release(&self) {
        if self.held.swap(false, Ordering::AcqRel) {
            self.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

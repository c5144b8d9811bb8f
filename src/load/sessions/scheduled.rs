//! Sessions at their trace's timestamps (`--fixed-schedule` over a file of sessions: a
//! multi_turn file, or single_turn and mooncake_trace lines grouped by `session_id`), as
//! AIPerf replays them: each session starts at its first turn's timestamp, however many are
//! in flight; a later turn goes at its own timestamp when it has one (at once if the answer
//! before it came later), else its `delay` after that answer, else at once. The times are
//! relative to the earliest first turn. A first turn's latency counts from its timestamp,
//! as an open-loop send's does; so does a later turn's whose timestamp was still ahead when
//! it could go (a turn held back by the answer before it counts from its send).
//!
//! Each client thread starts its share of the sessions on its own precise timer and plays
//! them as tasks of that thread, on connections it keeps and reuses.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::task::{AbortHandle, JoinHandle};

use super::{Pace, SessionPlan, Stop, TurnPlayer};
use crate::backend::replicas::Replicas;
use crate::load::caller::Caller;
use crate::load::client_threads::ClientThreads;
use crate::load::gate::CallGates;
use crate::load::timer::{lower_timer_slack, wait_until_unless, PreciseTimer};
use crate::measure::sample::{Drained, SlotBuffer, SlotBuffers};

/// Longest a wait goes without looking at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);
/// Connections each thread opens before the first session starts (at most its sessions).
const OPENED_AHEAD: usize = 8;

/// A connection kept by a thread between sessions, with the buffer its samples go to.
struct Line {
    caller: Caller,
    buffer: Arc<SlotBuffer>,
}

/// What the driver, its threads and their session tasks share.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    in_flight: AtomicU64,
    /// Sessions started and not ended.
    live: AtomicUsize,
    not_sent: Arc<AtomicU64>,
    buffers: SlotBuffers,
    /// Each thread's idle connections, by server.
    idle: Mutex<Vec<Vec<Vec<Line>>>>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// Connections opened so far (each a slot number of its own).
    opened: AtomicUsize,
    /// AIPerf's limits the turns pass (`--prefill-concurrency`), set before the start.
    gates: OnceLock<Arc<CallGates>>,
}

/// Plays every session once at its trace's times.
pub struct ScheduledSessions {
    replicas: Arc<Replicas>,
    threads: Arc<ClientThreads>,
    plan: Arc<SessionPlan>,
    shared: Arc<Shared>,
    starters: Vec<JoinHandle<()>>,
    not_sent_mark: u64,
}

impl ScheduledSessions {
    pub fn new(
        replicas: Arc<Replicas>,
        threads: Arc<ClientThreads>,
        plan: Arc<SessionPlan>,
    ) -> Self {
        let servers = replicas.len().max(1);
        let idle = (0..threads.len()).map(|_| (0..servers).map(|_| Vec::new()).collect());
        let shared = Shared {
            idle: Mutex::new(idle.collect()),
            ..Shared::default()
        };
        ScheduledSessions {
            replicas,
            threads,
            plan,
            shared: Arc::new(shared),
            starters: Vec::new(),
            not_sent_mark: 0,
        }
    }

    /// Makes every turn pass `gates` (called before the first connection is made).
    pub fn set_gates(&mut self, gates: Option<Arc<CallGates>>) {
        if let Some(gates) = gates {
            let _ = self.shared.gates.set(gates);
        }
    }

    pub fn gates(&self) -> Option<&Arc<CallGates>> {
        self.shared.gates.get()
    }

    /// Before the first send: each thread's first connections, so that opening them is not
    /// part of a session's lateness. How many opened, of how many tried.
    pub async fn open_ahead(&mut self) -> (usize, usize) {
        let threads = self.threads.len().max(1);
        let mut tried = 0;
        let mut opened = 0;
        for thread in 0..threads {
            let sessions = (self.plan.len() + threads - 1 - thread) / threads;
            for _ in 0..sessions.min(OPENED_AHEAD) {
                let server = tried % self.replicas.len().max(1);
                let mut line = self.new_line(server);
                tried += 1;
                let target = self.replicas.for_index(server).1.target.clone();
                if line.caller.open(&target).await {
                    opened += 1;
                    self.shared.lock_idle()[thread][server].push(line);
                }
            }
        }
        (opened, tried)
    }

    fn new_line(&self, server: usize) -> Line {
        new_line(&self.shared, &self.replicas, server)
    }

    /// Starts the replay now: each thread starts every T-th session (by start time) at
    /// its first turn's timestamp.
    pub fn start(&mut self) {
        let origin = Instant::now();
        let starts = self.plan.starts();
        let threads = self.threads.len().max(1);
        for thread in 0..threads {
            let mine: Vec<(Duration, usize)> = starts
                .iter()
                .skip(thread)
                .step_by(threads)
                .copied()
                .collect();
            self.shared.live.fetch_add(mine.len(), Ordering::Relaxed);
            let starter = Starter {
                thread,
                origin,
                sessions: mine,
                replicas: self.replicas.clone(),
                plan: self.plan.clone(),
                shared: self.shared.clone(),
            };
            self.starters
                .push(self.threads.handle(thread).spawn(starter.run()));
        }
    }

    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        self.shared.buffers.drain_until(boundary, out);
    }

    pub fn pending_samples(&self) -> usize {
        self.shared.buffers.pending()
    }

    pub fn in_flight(&self) -> u64 {
        self.shared.in_flight.load(Ordering::Relaxed)
    }

    /// True once every session has ended.
    pub fn all_finished(&self) -> bool {
        self.shared.live.load(Ordering::Relaxed) == 0
    }

    /// Turns not sent since the last call.
    pub fn take_not_sent(&mut self) -> u64 {
        let now = self.shared.not_sent.load(Ordering::Relaxed);
        let delta = now - self.not_sent_mark;
        self.not_sent_mark = now;
        delta
    }

    /// Stops starting sessions and turns, waiting for turns in flight up to `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let until = Instant::now() + grace;
        while !self.all_finished() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let tasks = std::mem::take(&mut *self.shared.lock_tasks());
        tasks.iter().for_each(AbortHandle::abort);
        self.starters.drain(..).for_each(|s| s.abort());
    }
}

impl Shared {
    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Vec<Line>>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_tasks(&self) -> std::sync::MutexGuard<'_, Vec<AbortHandle>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A new connection to server `server` (opened at its first request), its own slot number
/// and buffer.
fn new_line(shared: &Shared, replicas: &Replicas, server: usize) -> Line {
    let (replica, chosen) = replicas.for_index(server);
    let slot = shared.opened.fetch_add(1, Ordering::Relaxed);
    Line {
        caller: Caller::new(slot, &chosen.target)
            .for_replica(replica)
            .with_gates(shared.gates.get().cloned()),
        buffer: shared.buffers.add(),
    }
}

impl SessionPlan {
    /// Each session's start after the earliest first turn, and its number, by start.
    fn starts(&self) -> Vec<(Duration, usize)> {
        let first = |s: &Range<usize>| self.turns[s.start].timestamp_ms.unwrap_or(0.0);
        let zero = self.zero_ms();
        let mut starts: Vec<(Duration, usize)> = (self.sessions.iter().enumerate())
            .map(|(n, s)| (after_ms(first(s) - zero), n))
            .collect();
        starts.sort();
        starts
    }

    /// The earliest first turn's timestamp (the replay's time zero).
    fn zero_ms(&self) -> f64 {
        let first = |s: &Range<usize>| self.turns[s.start].timestamp_ms.unwrap_or(0.0);
        self.sessions
            .iter()
            .map(first)
            .fold(f64::INFINITY, f64::min)
    }
}

fn after_ms(ms: f64) -> Duration {
    inferperf_wire::number::saturating_secs(ms.max(0.0) / 1000.0)
}

/// One thread's share of the sessions, started on its timer.
struct Starter {
    thread: usize,
    origin: Instant,
    sessions: Vec<(Duration, usize)>,
    replicas: Arc<Replicas>,
    plan: Arc<SessionPlan>,
    shared: Arc<Shared>,
}

impl Starter {
    async fn run(self) {
        lower_timer_slack();
        let timer = PreciseTimer::new().ok();
        let zero_ms = self.plan.zero_ms();
        let total = self.sessions.len();
        for (started, &(offset, session)) in self.sessions.iter().enumerate() {
            let due = self.origin + offset;
            if !wait_until(timer.as_ref(), due, &self.shared).await {
                self.shared
                    .live
                    .fetch_sub(total - started, Ordering::Relaxed);
                return;
            }
            let play = SessionRun {
                thread: self.thread,
                server: session % self.replicas.len().max(1),
                span: self.plan.sessions[session].clone(),
                first_due: due,
                origin: self.origin,
                zero_ms,
                replicas: self.replicas.clone(),
                plan: self.plan.clone(),
                shared: self.shared.clone(),
            };
            let task = tokio::spawn(play.run());
            self.shared.lock_tasks().push(task.abort_handle());
        }
    }
}

/// Waits until `due` (precisely when the thread has a timer); false if stopped meanwhile.
async fn wait_until(timer: Option<&PreciseTimer>, due: Instant, shared: &Shared) -> bool {
    wait_until_unless(timer, due, STOP_CHECK, || shared.stopped()).await
}

/// One session being played on a connection of its thread.
struct SessionRun {
    thread: usize,
    server: usize,
    span: Range<usize>,
    first_due: Instant,
    origin: Instant,
    zero_ms: f64,
    replicas: Arc<Replicas>,
    plan: Arc<SessionPlan>,
    shared: Arc<Shared>,
}

impl SessionRun {
    async fn run(self) {
        let taken = self.shared.lock_idle()[self.thread][self.server].pop();
        let mut line = taken.unwrap_or_else(|| new_line(&self.shared, &self.replicas, self.server));
        let server = self.replicas.for_index(self.server).1;
        let player = TurnPlayer {
            target: server.target.clone(),
            requests: server.requests.clone(),
            plan: self.plan.clone(),
            buffer: line.buffer.clone(),
            not_sent: self.shared.not_sent.clone(),
        };
        let _ = player
            .play(&mut line.caller, self.span.clone(), &self)
            .await;
        self.shared.lock_idle()[self.thread][self.server].push(line);
        self.shared.live.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pace for SessionRun {
    /// The first turn is due at the session's start; a later one at its timestamp, or
    /// its delay after the answer before it, or at once.
    async fn due(
        &self,
        plan: &SessionPlan,
        index: usize,
        place: usize,
    ) -> Result<Option<Instant>, Stop> {
        if self.shared.stopped() {
            return Err(Stop);
        }
        if place == 0 {
            return Ok(Some(self.first_due));
        }
        let turn = plan.turns[index];
        let due = match (turn.timestamp_ms, turn.delay()) {
            (Some(at), _) => self.origin + after_ms(at - self.zero_ms),
            (None, Some(delay)) => Instant::now() + delay,
            (None, None) => return Ok(None),
        };
        if due <= Instant::now() {
            return Ok(None);
        }
        match wait_until(None, due, &self.shared).await {
            true => Ok(turn.timestamp_ms.map(|_| due)),
            false => Err(Stop),
        }
    }

    fn in_flight(&self, busy: bool) {
        match busy {
            true => self.shared.in_flight.fetch_add(1, Ordering::Relaxed),
            false => self.shared.in_flight.fetch_sub(1, Ordering::Relaxed),
        };
    }
}

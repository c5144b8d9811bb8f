//! AIPerf's user-centric rate (`--user-centric-rate Q --num-users N`): N simulated users
//! share Q requests per second. Each user plays one multi-turn session and sends its next
//! turn N/Q seconds (the turn gap) after its previous one was due — at once when the
//! answer came later, the gap then counted from that send — never two turns of its own at
//! once. As in AIPerf the run starts in a steady state: N lanes whose first users start
//! 1/Q apart, all but the newest already part-way through their sessions (a user of lane k
//! has only its session's first few turns left), and each lane starts its next user, with
//! a whole session, when its previous user's turns were due to end — on schedule,
//! whatever the answers do. A user takes the next session of the dataset.
//!
//! `--concurrency C` caps the users with a turn to play (a user waits for a place before
//! its first turn and keeps it until its last); `--request-count` counts turns,
//! `--conversation-num` users. Each client thread runs its share of the lanes and plays
//! their users as its own tasks, on connections it keeps.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::task::{AbortHandle, JoinHandle};

use super::{Pace, SessionPlan, Stop, TurnPlayer};
use crate::backend::replicas::Replicas;
use crate::config::UserCentric;
use crate::load::caller::Caller;
use crate::load::client_threads::ClientThreads;
use crate::load::gate::{CallGates, Gate};
use crate::load::slot_set::{budget, take_budget, Budget};
use crate::measure::sample::{Drained, SlotBuffer, SlotBuffers};

/// Longest a wait goes without looking at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// One lane's first user: when it starts (in turn gaps of 1/Q from the start) and how
/// many of its session's turns it has left (`None`: all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstUser {
    pub order: u32,
    pub turns: Option<u32>,
}

/// AIPerf's steady state at the start for `users` users whose sessions have `turns` turns
/// on average: user i of N has lived (N−i)/N of a session's L = max(1, turns−1) gaps, so
/// L − ⌊(N−i)·L/N⌋ turns are left (the oldest, with none, is replaced by a new user with a
/// whole session, who starts first); their starting places spread over 1..=N so that users
/// of a similar age do not start together.
pub fn first_users(users: u32, turns: u32) -> Vec<FirstUser> {
    let n = users.max(1) as u64;
    let lifetime = turns.saturating_sub(1).max(1) as u64;
    let spaced = gcd(n, lifetime) > 1;
    let step = (2..n).find(|&s| gcd(n, s) == 1).unwrap_or(1);
    let mut first = Vec::with_capacity(n as usize);
    for i in 0..n {
        let age = (n - i) * lifetime;
        let left = lifetime - age / n;
        if left == 0 {
            continue;
        }
        let place = match spaced {
            true => (i * step) % n,
            false => age % n,
        };
        first.push(FirstUser {
            order: (n - place) as u32,
            turns: Some(left as u32),
        });
    }
    first.push(FirstUser {
        order: 0,
        turns: None,
    });
    first
}

fn gcd(a: u64, b: u64) -> u64 {
    match b {
        0 => a,
        _ => gcd(b, a % b),
    }
}

/// A connection kept by a thread between users, with the buffer its samples go to.
struct Line {
    caller: Caller,
    buffer: Arc<SlotBuffer>,
}

/// What the driver, its lanes and their users share.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Turns out, and turns about to go (taken from the budget, not yet sent).
    in_flight: AtomicU64,
    /// Users started and not ended.
    live: AtomicUsize,
    /// Lanes still starting users.
    lanes: AtomicUsize,
    next_session: AtomicUsize,
    not_sent: Arc<AtomicU64>,
    buffers: SlotBuffers,
    /// Each thread's idle connections, by server.
    idle: Mutex<Vec<Vec<Vec<Line>>>>,
    tasks: Mutex<Vec<AbortHandle>>,
    opened: AtomicUsize,
    /// `--request-count` (turns) and `--conversation-num` (users).
    turns: Budget,
    users: Budget,
    /// `--concurrency`: users with turns to play.
    cap: Option<Gate>,
    gates: Option<Arc<CallGates>>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Vec<Line>>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_tasks(&self) -> std::sync::MutexGuard<'_, Vec<AbortHandle>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a budget was given and is spent.
fn spent(budget: &Budget) -> bool {
    budget
        .as_ref()
        .is_some_and(|b| b.load(Ordering::Relaxed) <= 0)
}

/// Plays AIPerf's users.
pub struct UserCentricLoop {
    replicas: Arc<Replicas>,
    threads: Arc<ClientThreads>,
    plan: Arc<SessionPlan>,
    users: UserCentric,
    /// Set before the start: the budgets, the cap and the gates.
    pending: Option<Shared>,
    shared: Option<Arc<Shared>>,
    lanes: Vec<JoinHandle<()>>,
    not_sent_mark: u64,
}

impl UserCentricLoop {
    pub fn new(
        replicas: Arc<Replicas>,
        threads: Arc<ClientThreads>,
        plan: Arc<SessionPlan>,
        users: UserCentric,
    ) -> Self {
        let servers = replicas.len().max(1);
        let idle = (0..threads.len()).map(|_| (0..servers).map(|_| Vec::new()).collect());
        UserCentricLoop {
            replicas,
            threads,
            plan,
            users,
            pending: Some(Shared {
                idle: Mutex::new(idle.collect()),
                ..Shared::default()
            }),
            shared: None,
            lanes: Vec::new(),
            not_sent_mark: 0,
        }
    }

    fn pending(&mut self) -> Option<&mut Shared> {
        self.pending.as_mut()
    }

    /// `--request-count` (turns) and `--conversation-num` (users), before the start.
    pub fn set_budgets(&mut self, turns: Option<u64>, users: Option<u64>) {
        if let Some(shared) = self.pending() {
            shared.turns = budget(turns);
            shared.users = budget(users);
        }
    }

    /// `--concurrency`: at most `cap` users with turns to play (from 1 when ramped).
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

    /// Starts the lanes now.
    pub fn start(&mut self) {
        let Some(shared) = self.pending.take() else {
            return;
        };
        let shared = Arc::new(shared);
        let origin = Instant::now();
        let stagger = 1.0 / self.users.rate;
        let gap = self.users.turn_gap();
        let first = first_users(self.users.users, self.plan.rounded_turns());
        let threads = self.threads.len().max(1);
        shared.lanes.store(first.len(), Ordering::Relaxed);
        for (lane, user) in first.into_iter().enumerate() {
            let offset = crate::number::saturating_secs(user.order as f64 * stagger);
            let run = Lane {
                thread: lane % threads,
                first_at: origin + offset,
                first_turns: user.turns,
                gap,
                replicas: self.replicas.clone(),
                plan: self.plan.clone(),
                shared: shared.clone(),
            };
            let handle = self.threads.handle(lane % threads).spawn(run.run());
            self.lanes.push(handle);
        }
        self.shared = Some(shared);
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
    /// with no turn out, or no lane starting users and no user left.
    pub fn all_finished(&self) -> bool {
        let Some(shared) = &self.shared else {
            return false;
        };
        let out = shared.in_flight.load(Ordering::Acquire) == 0;
        let live = shared.live.load(Ordering::Acquire) > 0;
        let lanes = shared.lanes.load(Ordering::Acquire) > 0;
        let no_users = spent(&shared.users) || !lanes;
        (spent(&shared.turns) && out) || (no_users && !live)
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

    /// Starts no user and no turn more; the turns out go on.
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
        self.lanes.drain(..).for_each(|lane| lane.abort());
    }
}

impl SessionPlan {
    /// The sessions' mean number of turns, rounded as Python rounds (half to even).
    fn rounded_turns(&self) -> u32 {
        let total: usize = self.sessions.iter().map(Range::len).sum();
        let mean = total as f64 / self.sessions.len().max(1) as f64;
        mean.round_ties_even().max(1.0) as u32
    }
}

/// Waits until `due`; false if stopped meanwhile.
async fn wait_until(due: Instant, shared: &Shared) -> bool {
    loop {
        if shared.stopped() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        tokio::time::sleep((due - now).min(STOP_CHECK)).await;
    }
}

/// One lane: its first user, then a user with a whole session each time the previous
/// one's turns were due to end.
struct Lane {
    thread: usize,
    first_at: Instant,
    first_turns: Option<u32>,
    gap: Duration,
    replicas: Arc<Replicas>,
    plan: Arc<SessionPlan>,
    shared: Arc<Shared>,
}

impl Lane {
    async fn run(self) {
        let mut at = self.first_at;
        let mut turns = self.first_turns;
        let sessions = self.plan.sessions.len().max(1);
        while wait_until(at, &self.shared).await && !spent(&self.shared.turns) {
            self.shared.live.fetch_add(1, Ordering::AcqRel);
            if !take_budget(&self.shared.users) {
                self.shared.live.fetch_sub(1, Ordering::AcqRel);
                break;
            }
            let number = self.shared.next_session.fetch_add(1, Ordering::Relaxed) % sessions;
            let whole = self.plan.sessions[number].clone();
            let played = turns.map_or(whole.len(), |t| (t as usize).min(whole.len()));
            let user = User {
                thread: self.thread,
                server: number % self.replicas.len().max(1),
                span: whole.start..whole.start + played,
                start: at,
                gap: self.gap,
                replicas: self.replicas.clone(),
                plan: self.plan.clone(),
                shared: self.shared.clone(),
            };
            let task = tokio::spawn(user.run());
            self.shared.lock_tasks().push(task.abort_handle());
            at += self.gap * played as u32;
            turns = None;
        }
        self.shared.lanes.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One user playing its turns on a connection of its thread.
struct User {
    thread: usize,
    server: usize,
    span: Range<usize>,
    start: Instant,
    gap: Duration,
    replicas: Arc<Replicas>,
    plan: Arc<SessionPlan>,
    shared: Arc<Shared>,
}

impl User {
    async fn run(self) {
        let shared = self.shared.clone();
        if let Some(cap) = &shared.cap {
            cap.enter().await;
        }
        let taken = shared.lock_idle()[self.thread][self.server].pop();
        let mut line = taken.unwrap_or_else(|| self.new_line());
        let server = self.replicas.for_index(self.server).1;
        let player = TurnPlayer {
            target: server.target.clone(),
            requests: server.requests.clone(),
            plan: self.plan.clone(),
            buffer: line.buffer.clone(),
            not_sent: shared.not_sent.clone(),
        };
        let pace = UserPace {
            due: Mutex::new(self.start),
            gap: self.gap,
            reserved: AtomicBool::new(false),
            shared: shared.clone(),
        };
        let _ = player
            .play(&mut line.caller, self.span.clone(), &pace)
            .await;
        pace.release();
        shared.lock_idle()[self.thread][self.server].push(line);
        if let Some(cap) = &shared.cap {
            cap.leave();
        }
        shared.live.fetch_sub(1, Ordering::AcqRel);
    }

    /// A new connection to the user's server (opened at its first turn).
    fn new_line(&self) -> Line {
        let (replica, chosen) = self.replicas.for_index(self.server);
        let slot = self.shared.opened.fetch_add(1, Ordering::Relaxed);
        Line {
            caller: Caller::new(slot, &chosen.target)
                .for_replica(replica)
                .with_gates(self.shared.gates.clone()),
            buffer: self.shared.buffers.add(),
        }
    }
}

/// When a user's turns go: the first at its start, each next one the turn gap after the
/// previous one was due, or at once when that has passed (the gap then counts from now).
struct UserPace {
    due: Mutex<Instant>,
    gap: Duration,
    /// A turn was taken from the budget and counted in flight, and is not done yet.
    reserved: AtomicBool,
    shared: Arc<Shared>,
}

impl UserPace {
    /// Counts the reserved turn as done (it ended, or was never sent).
    fn release(&self) {
        if self.reserved.swap(false, Ordering::AcqRel) {
            self.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn lock_due(&self) -> std::sync::MutexGuard<'_, Instant> {
        self.due.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Pace for UserPace {
    async fn due(
        &self,
        _plan: &SessionPlan,
        _index: usize,
        place: usize,
    ) -> Result<Option<Instant>, Stop> {
        let due = {
            let mut due = self.lock_due();
            if place > 0 {
                *due = (*due + self.gap).max(Instant::now());
            }
            *due
        };
        let waited = due > Instant::now();
        if !wait_until(due, &self.shared).await {
            return Err(Stop);
        }
        // Counted out before the budget is taken, so no one sees the budget spent and
        // nothing out while this turn is on its way.
        self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        self.reserved.store(true, Ordering::Release);
        let turns = &self.shared.turns;
        if self.shared.stopped() || !take_budget(turns) {
            self.release();
            return Err(Stop);
        }
        Ok(waited.then_some(due))
    }

    fn in_flight(&self, busy: bool) {
        if !busy {
            self.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes' first users as (order, turns left).
    fn lanes(users: u32, turns: u32) -> Vec<(u32, Option<u32>)> {
        let mut all: Vec<_> = (first_users(users, turns).into_iter())
            .map(|u| (u.order, u.turns))
            .collect();
        all.sort();
        all
    }

    #[test]
    fn the_start_is_aiperf_s_steady_state() {
        // AIPerf's worked example: 15 users of 20 turns; the new user first, then users
        // with 6, 11, 16, 2, … turns left, one every 1/Q.
        let left: Vec<u32> = lanes(15, 20).iter().skip(1).map(|l| l.1.unwrap()).collect();
        assert_eq!(left, [6, 11, 16, 2, 7, 12, 17, 3, 8, 13, 18, 4, 9, 14]);
        assert_eq!(lanes(15, 20)[0], (0, None));
        // Every user has its own place in 0..N.
        for (users, turns) in [(4, 3), (6, 4), (10, 5), (3, 2), (1, 2), (8, 9)] {
            let all = lanes(users, turns);
            assert_eq!(all.len(), users as usize, "{users} users, {turns} turns");
            let mut orders: Vec<u32> = all.iter().map(|l| l.0).collect();
            orders.dedup();
            assert_eq!(orders.len(), users as usize, "{users}/{turns}: {all:?}");
            assert!(all
                .iter()
                .all(|l| l.1.is_none_or(|t| t >= 1 && t < turns.max(2))));
        }
    }

    #[test]
    fn shared_factors_spread_the_users_by_a_coprime_step() {
        // 4 users of 3 turns: lifetime 2 shares a factor with 4, so places step by 3.
        assert_eq!(
            lanes(4, 3),
            [(0, None), (1, Some(1)), (2, Some(1)), (3, Some(2))]
        );
    }
}

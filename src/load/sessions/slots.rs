//! Sessions at a concurrency (`--session-concurrency N`, or a dataset of multi-turn sessions
//! at a concurrency): N slots, each a task with its own connection, each playing one session
//! at a time, each turn waiting its delay after the previous answer. A slot takes the next
//! session as one ends, cycling through the dataset's sessions as the closed loop cycles
//! through its requests.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::{Pace, SessionPlan, Stop, TurnPlayer};
use crate::backend::replicas::Replicas;
use crate::load::caller::{Called, Caller};
use crate::load::client_threads::ClientThreads;
use crate::measure::sample::{Drained, SlotBuffer};

/// How long a slot pauses before its next session when the server refused a connection.
const UNREACHABLE_PAUSE: Duration = Duration::from_millis(20);

const ACTIVE: u8 = 0;
const PAUSED: u8 = 1;
const STOPPED: u8 = 2;

/// State one slot shares with the driver.
#[derive(Debug, Default)]
struct SlotShared {
    buffer: Arc<SlotBuffer>,
    state: AtomicU8,
    busy: AtomicBool,
    connected: AtomicBool,
    wake: Notify,
}

impl SlotShared {
    fn set_state(&self, state: u8) {
        self.state.store(state, Ordering::Relaxed);
        self.wake.notify_one();
    }
}

struct Slot {
    shared: Arc<SlotShared>,
    task: Option<JoinHandle<()>>,
}

/// Keeps a chosen number of sessions in flight.
pub struct SessionLoop {
    replicas: Arc<Replicas>,
    threads: Arc<ClientThreads>,
    plan: Arc<SessionPlan>,
    slots: Vec<Slot>,
    /// Which session goes next, shared by the slots.
    next_session: Arc<AtomicUsize>,
    /// Turns not sent because an earlier turn of their session failed, and the count as
    /// last read for a window.
    not_sent: Arc<AtomicU64>,
    not_sent_mark: u64,
    /// When set, the turns still allowed to start (`--request-count`).
    budget: Option<Arc<AtomicI64>>,
}

impl SessionLoop {
    pub fn new(
        replicas: Arc<Replicas>,
        threads: Arc<ClientThreads>,
        plan: Arc<SessionPlan>,
    ) -> Self {
        SessionLoop {
            replicas,
            threads,
            plan,
            slots: Vec::new(),
            next_session: Arc::new(AtomicUsize::new(0)),
            not_sent: Arc::new(AtomicU64::new(0)),
            not_sent_mark: 0,
            budget: None,
        }
    }

    /// Limits the turns started from now on to `count` (None: no limit).
    pub fn set_budget(&mut self, count: Option<u64>) {
        self.budget = count.map(|c| Arc::new(AtomicI64::new(c as i64)));
    }

    /// Runs exactly `concurrency` session slots: starts missing ones, pauses extra ones
    /// after their current turn (a paused slot goes on with its session when resumed).
    pub fn set_concurrency(&mut self, concurrency: usize) {
        for index in 0..self.slots.len() {
            let keep = index < concurrency;
            self.slots[index]
                .shared
                .set_state(if keep { ACTIVE } else { PAUSED });
            let finished = (self.slots[index].task.as_ref()).is_none_or(JoinHandle::is_finished);
            if keep && finished {
                let task = self.spawn(index, self.slots[index].shared.clone());
                self.slots[index].task = Some(task);
            }
        }
        while self.slots.len() < concurrency {
            let shared = Arc::new(SlotShared::default());
            let task = self.spawn(self.slots.len(), shared.clone());
            self.slots.push(Slot {
                shared,
                task: Some(task),
            });
        }
    }

    fn spawn(&self, index: usize, shared: Arc<SlotShared>) -> JoinHandle<()> {
        let (replica, server) = self.replicas.for_index(index);
        let count = self.replicas.len().max(1);
        let slot = SessionSlot {
            index: index / count,
            replica,
            player: TurnPlayer {
                target: server.target.clone(),
                requests: server.requests.clone(),
                plan: self.plan.clone(),
                buffer: shared.buffer.clone(),
                not_sent: self.not_sent.clone(),
            },
            shared,
            next_session: self.next_session.clone(),
            budget: self.budget.clone(),
        };
        let lane = server.target.lane(index / count) * count + replica as usize;
        self.threads.handle(lane).spawn(slot.run())
    }

    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        for slot in &self.slots {
            slot.shared.buffer.drain_until(boundary, out);
        }
    }

    pub fn pending_samples(&self) -> usize {
        self.slots.iter().map(|s| s.shared.buffer.len()).sum()
    }

    /// How many of the first `concurrency` slots have a connection.
    pub fn connected_slots(&self, concurrency: usize) -> usize {
        let connected = |s: &&Slot| s.shared.connected.load(Ordering::Relaxed);
        (self.slots.iter().take(concurrency))
            .filter(connected)
            .count()
    }

    pub fn in_flight(&self) -> u64 {
        let busy = |s: &&Slot| s.shared.busy.load(Ordering::Relaxed);
        self.slots.iter().filter(busy).count() as u64
    }

    /// True when no slot task is running (the budget ran out).
    pub fn all_finished(&self) -> bool {
        (self.slots.iter()).all(|s| s.task.as_ref().is_none_or(JoinHandle::is_finished))
    }

    /// Turns not sent since the last call.
    pub fn take_not_sent(&mut self) -> u64 {
        let now = self.not_sent.load(Ordering::Relaxed);
        let delta = now - self.not_sent_mark;
        self.not_sent_mark = now;
        delta
    }

    /// Stops every slot, waiting for turns in flight up to `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        for slot in &self.slots {
            slot.shared.set_state(STOPPED);
        }
        for slot in &mut self.slots {
            if let Some(task) = slot.task.take() {
                let abort = task.abort_handle();
                if tokio::time::timeout(grace, task).await.is_err() {
                    abort.abort();
                }
            }
        }
    }
}

/// One session slot: its connection and its loop.
struct SessionSlot {
    index: usize,
    replica: u16,
    shared: Arc<SlotShared>,
    player: TurnPlayer,
    next_session: Arc<AtomicUsize>,
    budget: Option<Arc<AtomicI64>>,
}

impl SessionSlot {
    async fn run(self) {
        let target = self.player.target.clone();
        let mut caller = Caller::new(self.index, &target).for_replica(self.replica);
        let opened = caller.open(&target).await;
        self.shared.connected.store(opened, Ordering::Relaxed);
        let plan = self.player.plan.clone();
        let sessions = plan.len().max(1);
        while self.wait_while_paused().await {
            let next = self.next_session.fetch_add(1, Ordering::Relaxed) % sessions;
            let Some(span) = plan.sessions.get(next).cloned() else {
                break;
            };
            match self.player.play(&mut caller, span, &self).await {
                Err(Stop) => break,
                Ok(called) => {
                    let connected = called != Called::NotConnected;
                    self.shared.connected.store(connected, Ordering::Relaxed);
                    if !connected {
                        tokio::time::sleep(UNREACHABLE_PAUSE).await;
                    }
                }
            }
        }
    }

    /// Waits while the slot is paused; false once it is stopped.
    async fn wait_while_paused(&self) -> bool {
        loop {
            match self.shared.state.load(Ordering::Relaxed) {
                ACTIVE => return true,
                PAUSED => self.shared.wake.notified().await,
                _ => return false,
            }
        }
    }

    /// Waits a turn's delay, cut short when the slot is paused or stopped.
    async fn wait_delay(&self, delay_ms: Option<f64>) {
        let Some(ms) = delay_ms.filter(|&ms| ms > 0.0) else {
            return;
        };
        let until = tokio::time::Instant::now() + crate::number::saturating_secs(ms / 1000.0);
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return,
                _ = self.shared.wake.notified() => {}
            }
            if self.shared.state.load(Ordering::Relaxed) != ACTIVE {
                return;
            }
        }
    }

    fn take_budget(&self) -> bool {
        self.budget
            .as_ref()
            .is_none_or(|b| b.fetch_sub(1, Ordering::Relaxed) > 0)
    }
}

impl Pace for SessionSlot {
    /// A turn after the first waits its delay; every turn waits while the slot is paused
    /// and takes one from the budget.
    async fn due(
        &self,
        plan: &SessionPlan,
        index: usize,
        place: usize,
    ) -> Result<Option<Instant>, Stop> {
        if place > 0 {
            self.wait_delay(plan.turns[index].delay_ms).await;
        }
        match self.wait_while_paused().await && self.take_budget() {
            true => Ok(None),
            false => Err(Stop),
        }
    }

    fn in_flight(&self, busy: bool) {
        self.shared.busy.store(busy, Ordering::Relaxed);
    }
}

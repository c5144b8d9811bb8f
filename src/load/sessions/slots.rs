//! Sessions at a concurrency (`--session-concurrency N`, or a dataset of multi-turn sessions
//! at a concurrency): N slots, each a task with its own connection, each playing one session
//! at a time, each turn waiting its delay after the previous answer. A slot takes the next
//! session as one ends, cycling through the dataset's sessions as the closed loop cycles
//! through its requests. With several servers, slot i plays its sessions on server i mod n;
//! when the slots cannot be dealt evenly, each session goes to the next server in turn (as
//! AIPerf's round_robin, which moves on at each session's start).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::{Pace, SessionPlan, Stop, TurnPlayer};
use crate::backend::replicas::Replicas;
use crate::load::caller::{Called, Caller};
use crate::load::client_threads::ClientThreads;
use crate::load::gate::CallGates;
use crate::load::slot_set::{budget, take_budget, Budget, Rotation, SlotSet, SlotShared};
use crate::measure::sample::Drained;

/// How long a slot pauses before its next session when the server refused a connection.
const UNREACHABLE_PAUSE: Duration = Duration::from_millis(20);

/// Keeps a chosen number of sessions in flight.
pub struct SessionLoop {
    replicas: Arc<Replicas>,
    threads: Arc<ClientThreads>,
    plan: Arc<SessionPlan>,
    slots: SlotSet,
    /// Which session goes next, shared by the slots.
    next_session: Arc<AtomicUsize>,
    /// Turns not sent because an earlier turn of their session failed, and the count as
    /// last read for a window.
    not_sent: Arc<AtomicU64>,
    not_sent_mark: u64,
    /// When set, the turns still allowed to start (`--request-count`).
    budget: Budget,
    /// When set, the sessions still allowed to start (AIPerf's `--conversation-num`,
    /// `--num-warmup-sessions`): a session started plays all its turns.
    session_budget: Budget,
    /// AIPerf's limits the turns pass (`--prefill-concurrency`).
    gates: Option<Arc<CallGates>>,
    /// Whether the slots' sessions take the servers in turn.
    rotation: Arc<Rotation>,
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
            slots: SlotSet::default(),
            next_session: Arc::new(AtomicUsize::new(0)),
            not_sent: Arc::new(AtomicU64::new(0)),
            not_sent_mark: 0,
            budget: None,
            session_budget: None,
            gates: None,
            rotation: Arc::default(),
        }
    }

    /// Makes the turns of every slot started from now on pass `gates`.
    pub fn set_gates(&mut self, gates: Option<Arc<CallGates>>) {
        self.gates = gates;
    }

    pub fn gates(&self) -> Option<&Arc<CallGates>> {
        self.gates.as_ref()
    }

    /// Limits the sessions started from now on to `count` (None: no limit).
    pub fn set_session_budget(&mut self, count: Option<u64>) {
        self.session_budget = budget(count);
    }

    /// Limits the turns started from now on to `count` (None: no limit).
    pub fn set_budget(&mut self, count: Option<u64>) {
        self.budget = budget(count);
    }

    /// Runs exactly `concurrency` session slots: starts missing ones, pauses extra ones
    /// after their current turn (a paused slot goes on with its session when resumed).
    pub fn set_concurrency(&mut self, concurrency: usize) {
        (self.rotation).set_for(concurrency, self.replicas.len(), true);
        let mut slots = std::mem::take(&mut self.slots);
        slots.resize(concurrency, |index, shared| self.spawn(index, shared));
        self.slots = slots;
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
            session_budget: self.session_budget.clone(),
            gates: self.gates.clone(),
            replicas: self.replicas.clone(),
            rotation: self.rotation.clone(),
        };
        let lane = server.target.lane(index / count) * count + replica as usize;
        self.threads.handle(lane).spawn(slot.run())
    }

    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        self.slots.drain_until(boundary, out);
    }

    pub fn pending_samples(&self) -> usize {
        self.slots.pending_samples()
    }

    /// How many of the first `concurrency` slots have a connection.
    pub fn connected_slots(&self, concurrency: usize) -> usize {
        self.slots.connected_slots(concurrency)
    }

    pub fn in_flight(&self) -> u64 {
        self.slots.in_flight()
    }

    /// True when no slot task is running (the budget ran out).
    pub fn all_finished(&self) -> bool {
        self.slots.all_finished()
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
        self.slots.stop(grace).await;
    }
}

/// One session slot: its connection and its loop.
struct SessionSlot {
    index: usize,
    replica: u16,
    shared: Arc<SlotShared>,
    player: TurnPlayer,
    next_session: Arc<AtomicUsize>,
    budget: Budget,
    session_budget: Budget,
    gates: Option<Arc<CallGates>>,
    replicas: Arc<Replicas>,
    rotation: Arc<Rotation>,
}

impl SessionSlot {
    /// The slot's caller of server `replica`.
    fn caller(&self, replica: usize) -> Caller {
        Caller::new(self.index, &self.replicas.list[replica].target)
            .for_replica(replica as u16)
            .with_gates(self.gates.clone())
    }

    async fn run(mut self) {
        let (home, servers) = (self.replica as usize, self.replicas.len());
        // The slot's callers, one per server it plays sessions on; its own opened first.
        let mut callers: Vec<Option<Caller>> = (0..servers).map(|_| None).collect();
        let caller = callers[home].insert(self.caller(home));
        let opened = caller.open(&self.replicas.list[home].target).await;
        self.shared.connected.store(opened, Ordering::Relaxed);
        let plan = self.player.plan.clone();
        let sessions = plan.len().max(1);
        while self.shared.wait_while_paused().await && take_budget(&self.session_budget) {
            let next = self.next_session.fetch_add(1, Ordering::Relaxed) % sessions;
            let Some(span) = plan.sessions.get(next).cloned() else {
                break;
            };
            let to = self.rotation.server(home, servers);
            let server = &self.replicas.list[to];
            (self.player.target, self.player.requests) =
                (server.target.clone(), server.requests.clone());
            let caller = callers[to].get_or_insert_with(|| self.caller(to));
            match self.player.play(caller, span, &self).await {
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
        if let Some(wait) = plan.turns[index].delay().filter(|_| place > 0) {
            let until = tokio::time::Instant::now() + wait;
            self.shared.sleep_while_active(until).await;
        }
        match self.shared.wait_while_paused().await && take_budget(&self.budget) {
            true => Ok(None),
            false => Err(Stop),
        }
    }

    fn in_flight(&self, busy: bool) {
        self.shared.busy.store(busy, Ordering::Relaxed);
    }
}

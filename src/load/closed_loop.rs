//! The closed-loop driver: N slots, each a task with its own connection, each sending its
//! next request as soon as its previous one is answered (all of its answers, for a stream).
//! Samples go into the slot's own buffer; the profiler cuts windows from those buffers.
//! With several servers, slot i sends to server i mod n; when the slots cannot be dealt
//! evenly (1 in flight over 2 servers), each request goes to the next server in turn, as
//! AIPerf's round_robin sends them, so that every server has its share.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::caller::{Called, Caller};
use super::client_threads::ClientThreads;
use super::gate::CallGates;
use super::sequences::{Sequence, SequencePlan};
use super::slot_set::{budget, take_budget, Budget, Rotation, SlotSet, SlotShared};
use crate::backend::replicas::Replicas;
use crate::measure::sample::{Drained, SlotBuffer};

/// Longest pause between reconnection attempts to a server that refuses connections.
const MAX_BACKOFF: Duration = Duration::from_millis(100);
/// Connections being opened at once when a level starts many slots: enough to open
/// thousands a second, few enough not to overflow a server's accept queue (whose dropped
/// SYNs would be retried only a second later).
const CONNECTS_IN_FLIGHT: usize = 256;

/// Longest new slots wait for each other to connect before they send anyway.
const GATE_LIMIT: Duration = Duration::from_secs(10);

/// Keeps a chosen number of requests in flight.
pub struct ClosedLoop {
    /// The servers; slot i sends to server i % n (or each request to the next, in turn).
    replicas: Arc<Replicas>,
    slots: SlotSet,
    threads: Arc<ClientThreads>,
    /// When set, the number of requests still allowed to start (request-count and warm-up).
    budget: Budget,
    /// Which request of the list goes next, shared by the slots: each request of the list is
    /// sent once before any is sent again (a slot stepping through the list on its own
    /// would send each one as many times in a row as there are slots, which a server's
    /// cache of prompts or answers then serves for free).
    next_request: Arc<AtomicUsize>,
    /// Bounds the connections opened at once.
    connects: Arc<Semaphore>,
    /// The sequences a sequence model's slots play, one at a time each.
    sequences: Option<Arc<SequencePlan>>,
    /// AIPerf's limits its slots' requests pass (`--prefill-concurrency`).
    gates: Option<Arc<CallGates>>,
    /// Whether the slots' requests take the servers in turn.
    rotation: Arc<Rotation>,
}

impl ClosedLoop {
    pub fn new(replicas: Arc<Replicas>, threads: Arc<ClientThreads>) -> Self {
        ClosedLoop {
            replicas,
            slots: SlotSet::default(),
            threads,
            budget: None,
            next_request: Arc::new(AtomicUsize::new(0)),
            connects: Arc::new(Semaphore::new(CONNECTS_IN_FLIGHT)),
            sequences: None,
            gates: None,
            rotation: Arc::default(),
        }
    }

    /// Makes the requests of every slot started from now on pass `gates`.
    pub fn set_gates(&mut self, gates: Option<Arc<CallGates>>) {
        self.gates = gates;
    }

    pub fn gates(&self) -> Option<&Arc<CallGates>> {
        self.gates.as_ref()
    }

    /// Makes every slot started from now on play sequences of `plan`.
    pub fn set_sequences(&mut self, plan: Option<Arc<SequencePlan>>) {
        self.sequences = plan;
    }

    /// How many of the first `concurrency` slots have a connection.
    pub fn connected_slots(&self, concurrency: usize) -> usize {
        self.slots.connected_slots(concurrency)
    }

    /// Limits the requests started from now on to `count` (None: no limit). Applies to
    /// slots started after the call.
    pub fn set_budget(&mut self, count: Option<u64>) {
        self.budget = budget(count);
    }

    /// Runs exactly `concurrency` slots: starts missing ones, pauses extra ones after
    /// their current request.
    pub fn set_concurrency(&mut self, concurrency: usize) {
        // A sequence stays on its slot's server.
        let free = self.sequences.is_none();
        (self.rotation).set_for(concurrency, self.replicas.len(), free);
        // Slots started now send only once all of them have connected (or tried to), so
        // that the first ones' requests do not slow the others' connecting.
        let gate = Arc::new(ConnectGate::new(self.slots.starting(concurrency)));
        let mut slots = std::mem::take(&mut self.slots);
        slots.resize(concurrency, |index, shared| {
            self.spawn(index, shared, gate.clone())
        });
        self.slots = slots;
    }

    fn spawn(
        &self,
        index: usize,
        shared: Arc<SlotShared>,
        gate: Arc<ConnectGate>,
    ) -> JoinHandle<()> {
        let (replica, server) = self.replicas.for_index(index);
        let count = self.replicas.len().max(1);
        let slot = SlotTask {
            index: index / count,
            replica,
            shared,
            replicas: self.replicas.clone(),
            rotation: self.rotation.clone(),
            budget: self.budget.clone(),
            next_request: self.next_request.clone(),
            connects: self.connects.clone(),
            gate,
            holder: index,
            sequences: self.sequences.clone(),
            gates: self.gates.clone(),
        };
        // The server's own lanes, interleaved with the other servers' (with one server:
        // the lane of `index`).
        let lane = server.target.lane(index / count) * count + replica as usize;
        self.threads.handle(lane).spawn(slot.run())
    }

    /// Moves every sample finished by `boundary` into `out`.
    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        self.slots.drain_until(boundary, out);
    }

    /// Samples waiting in the buffers.
    pub fn pending_samples(&self) -> usize {
        self.slots.pending_samples()
    }

    /// Requests out right now.
    pub fn in_flight(&self) -> u64 {
        self.slots.in_flight()
    }

    /// True when no slot task is running (every budgeted request was sent and answered).
    /// Only meaningful while a budget is set: otherwise slots pause instead of ending.
    pub fn all_finished(&self) -> bool {
        self.slots.all_finished()
    }

    /// Stops every slot, waiting for in-flight requests up to the request timeout.
    pub async fn stop(&mut self, grace: Duration) {
        self.slots.stop(grace).await;
    }
}

/// One in-flight slot: its connection and its loop.
struct SlotTask {
    /// The slot's place among its server's slots.
    index: usize,
    /// The slot's own server.
    replica: u16,
    shared: Arc<SlotShared>,
    replicas: Arc<Replicas>,
    rotation: Arc<Rotation>,
    budget: Budget,
    next_request: Arc<AtomicUsize>,
    connects: Arc<Semaphore>,
    /// Held until every slot started with this one has connected.
    gate: Arc<ConnectGate>,
    /// The slot's place among all slots: which sequence holder it is.
    holder: usize,
    sequences: Option<Arc<SequencePlan>>,
    gates: Option<Arc<CallGates>>,
}

impl SlotTask {
    /// The slot's caller of server `replica`.
    fn caller(&self, replica: usize) -> Caller {
        Caller::new(self.index, &self.replicas.list[replica].target)
            .for_replica(replica as u16)
            .with_gates(self.gates.clone())
    }

    async fn run(self) {
        let home = self.replica as usize;
        let servers = self.replicas.len();
        // The slot's callers, one per server it sends to; its own server's opened first.
        let mut callers: Vec<Option<Caller>> = (0..servers).map(|_| None).collect();
        let caller = callers[home].insert(self.caller(home));
        if let Ok(_permit) = self.connects.acquire().await {
            let opened = caller.open(&self.replicas.list[home].target).await;
            self.shared.connected.store(opened, Ordering::Relaxed);
        }
        self.gate.arrive_and_wait(GATE_LIMIT).await;
        let listed = self.replicas.list[home].requests.len().max(1);
        let take = || self.next_request.fetch_add(1, Ordering::Relaxed) % listed;
        let mut next = take();
        let mut rng = SmallRng::from_os_rng();
        let mut live: Option<Sequence> = None;
        let mut backoff = Duration::from_millis(1);
        loop {
            if !self.shared.wait_while_paused().await {
                break;
            }
            if !take_budget(&self.budget) {
                break;
            }
            let (index, step) = match &self.sequences {
                Some(plan) => {
                    let sequence = live.get_or_insert_with(|| plan.begin(self.holder, &mut rng));
                    let (index, step) = plan.step(sequence);
                    (index, Some(step))
                }
                None => (next, None),
            };
            let to = self.rotation.server(home, servers);
            let server = &self.replicas.list[to];
            let Some(request) = server.requests.get(index) else {
                break;
            };
            let caller = callers[to].get_or_insert_with(|| self.caller(to));
            self.shared.busy.store(true, Ordering::Relaxed);
            let buffer = &self.shared.buffer;
            let called = caller
                .call_step(&server.target, request, None, buffer, None, step)
                .await;
            self.shared.busy.store(false, Ordering::Relaxed);
            let connected = called != Called::NotConnected;
            self.shared.connected.store(connected, Ordering::Relaxed);
            if !connected {
                // The same request goes again once a connection opens.
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
            backoff = Duration::from_millis(1);
            if let Some(sequence) = live.as_mut() {
                sequence.advance();
                if sequence.finished() {
                    live = None;
                }
                continue;
            }
            next = take();
        }
        let caller = callers[home].as_mut();
        if let (Some(plan), Some(sequence), Some(caller)) = (&self.sequences, live.as_ref(), caller)
        {
            self.end_sequence(caller, plan, sequence).await;
        }
    }

    /// Ends the slot's sequence that the end of the level (or of `--request-count`) cut
    /// short, as perf_analyzer completes its ongoing sequences: one more request, with the
    /// END flag and not measured. Left open, the sequence would hold its place in the
    /// server's sequence batcher until its idle timeout, holding back the requests of the
    /// other slots' sequences that are still in flight.
    async fn end_sequence(&self, caller: &mut Caller, plan: &SequencePlan, sequence: &Sequence) {
        if sequence.done == 0 {
            return;
        }
        let (index, mut step) = plan.step(sequence);
        step.end = true;
        let server = &self.replicas.list[self.replica as usize];
        let Some(request) = server.requests.get(index) else {
            return;
        };
        let unmeasured = SlotBuffer::default();
        let step = Some(step);
        let _ = (caller.call_step(&server.target, request, None, &unmeasured, None, step)).await;
    }
}

/// Holds the slots started together until all of them have connected (or failed to).
struct ConnectGate {
    left: AtomicUsize,
    open: Notify,
}

impl ConnectGate {
    fn new(slots: usize) -> ConnectGate {
        ConnectGate {
            left: AtomicUsize::new(slots),
            open: Notify::new(),
        }
    }

    /// Counts this slot in, then waits (at most `limit`) for the others.
    async fn arrive_and_wait(&self, limit: Duration) {
        let opened = self.open.notified();
        tokio::pin!(opened);
        opened.as_mut().enable();
        if self.left.fetch_sub(1, Ordering::AcqRel) <= 1 {
            self.open.notify_waiters();
            return;
        }
        let _ = tokio::time::timeout(limit, opened).await;
    }
}

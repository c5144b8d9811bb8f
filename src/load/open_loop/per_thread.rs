//! One client thread's part of the open loop: its share of the schedule, its pool of
//! connections, and the requests it sends. Everything here runs on that thread's own event
//! loop, so a send is a task spawned onto the thread it already runs on — no channel, no
//! wake-up of another thread — and a connection, once its request is answered, goes back to
//! the pool it came from. Waiting for a free connection (at `--max-concurrency`) or for a
//! sequence to come free (`--serial-sequences`) waits for an answer on the same thread.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Notify;

use super::counters::{OpenLoopCounters, ENDING_WAIT};
use crate::backend::replicas::{Replica, Replicas};
use crate::load::caller::Caller;
use crate::load::client_threads::{set_next_due, share_wakeups};
use crate::load::gate::CallGates;
use crate::load::schedule::Schedule;
use crate::load::sequences::{Sequence, SequencePlan};
use crate::load::timer::PreciseTimer;
use crate::measure::sample::{SlotBuffer, SlotBuffers};
use inferperf_wire::model::SequenceStep;

/// Longest a wait goes without looking at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);
/// Sends launched back to back (a thread behind its schedule) before the thread lets the
/// launched requests go out and the answers in.
const BURST: usize = 32;

/// One request to send.
struct Job {
    scheduled: Instant,
    payload: usize,
    /// Its sequence step, and the flag its live sequence keeps while it is in flight.
    step: Option<(SequenceStep, Arc<AtomicBool>)>,
    /// False for the request that ends a sequence the schedule's end cut short: sent, not
    /// measured, and not counted among the sends.
    measured: bool,
}

/// One connection of a pool, with what its requests need.
struct Worker {
    caller: Caller,
    server: Replica,
    buffer: Arc<SlotBuffer>,
}

impl Worker {
    async fn send(&mut self, job: &Job) {
        let target = &self.server.target;
        let Some(request) = self.server.requests.get(job.payload) else {
            return;
        };
        let step = job.step.as_ref().map(|(step, _)| *step);
        if job.measured {
            let buffer = &*self.buffer;
            (self.caller)
                .call_step(target, request, Some(job.scheduled), buffer, None, step)
                .await;
        } else {
            let unmeasured = SlotBuffer::default();
            (self.caller)
                .call_step(target, request, None, &unmeasured, None, step)
                .await;
        }
    }
}

/// A thread's connections to one server.
#[derive(Default)]
struct ServerPool {
    idle: Vec<Worker>,
    /// Connections this pool has (idle or busy).
    opened: usize,
}

/// One client thread's connections, kept from one level to the next.
pub(super) struct ThreadPool {
    /// The thread's place among the open loop's threads, and their number: slot numbers are
    /// dealt so that the slots of one gRPC lane (shared connection) stay on one thread.
    thread: usize,
    threads: usize,
    /// The most connections per server (its share of `--max-concurrency`).
    cap: AtomicUsize,
    servers: Mutex<Vec<ServerPool>>,
    /// Told each time a request ends, for a send waiting for a connection or a sequence.
    freed: Notify,
    /// Told when the thread woke after its sender's next send fell due.
    poke: Arc<Notify>,
    /// AIPerf's limits the requests pass (`--prefill-concurrency`, a ramped cap).
    pub(super) gates: OnceLock<Arc<CallGates>>,
}

impl ThreadPool {
    pub(super) fn new(thread: usize, threads: usize, servers: usize) -> ThreadPool {
        ThreadPool {
            thread,
            threads,
            cap: AtomicUsize::new(1),
            servers: Mutex::new((0..servers).map(|_| ServerPool::default()).collect()),
            freed: Notify::new(),
            poke: Arc::default(),
            gates: OnceLock::new(),
        }
    }

    pub(super) fn set_cap(&self, cap: usize) {
        self.cap.store(cap.max(1), Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, Vec<ServerPool>> {
        self.servers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn give_back(&self, server: usize, worker: Worker) {
        self.lock()[server].idle.push(worker);
        self.freed.notify_one();
    }

    /// Closes the idle connections (the end of a run).
    pub(super) fn close_idle(&self) {
        for pool in self.lock().iter_mut() {
            pool.opened -= pool.idle.len();
            pool.idle.clear();
        }
    }

    /// A new, not yet connected, connection to `server` under the cap (`None` at the cap),
    /// counted in `pool`.
    fn new_worker(
        &self,
        pool: &mut ServerPool,
        server: usize,
        (replicas, buffers, counters): (&Replicas, &SlotBuffers, &OpenLoopCounters),
    ) -> Option<Worker> {
        if pool.opened >= self.cap.load(Ordering::Relaxed) {
            return None;
        }
        let replica = replicas.list[server].clone();
        let slot = self.slot(pool.opened, replica.target.lane_width());
        pool.opened += 1;
        counters.workers.fetch_add(1, Ordering::Relaxed);
        Some(Worker {
            caller: Caller::new(slot, &replica.target)
                .for_replica(server as u16)
                .with_gates(self.gates.get().cloned()),
            server: replica,
            buffer: buffers.add(),
        })
    }

    /// Opens this thread's share of the cap to every server before the first send
    /// (`--max-concurrency`), `connects` at a time; the number that connected.
    pub(super) async fn open_all(
        self: Arc<Self>,
        replicas: Arc<Replicas>,
        buffers: Arc<SlotBuffers>,
        counters: Arc<OpenLoopCounters>,
        connects: Arc<tokio::sync::Semaphore>,
    ) -> usize {
        let mut opening = Vec::new();
        for server in 0..replicas.len().max(1) {
            let parts = (&*replicas, &*buffers, &*counters);
            while let Some(mut worker) = self.new_worker(&mut self.lock()[server], server, parts) {
                let connects = connects.clone();
                opening.push(async move {
                    let _permit = connects.acquire().await;
                    let opened = worker.caller.open(&worker.server.target).await;
                    (server, worker, opened)
                });
            }
        }
        let mut connected = 0;
        for (server, worker, opened) in futures::future::join_all(opening).await {
            connected += usize::from(opened);
            self.lock()[server].idle.push(worker);
        }
        connected
    }

    /// The slot number of this thread's `index`-th connection to a server whose lanes are
    /// `width` slots wide: lane `index / width` of this thread is lane `… * threads +
    /// thread` of the whole.
    fn slot(&self, index: usize, width: usize) -> usize {
        ((index / width) * self.threads + self.thread) * width + index % width
    }
}

/// One thread's sender: its share of the schedule, sent from its pool.
pub(super) struct Scheduler {
    pub schedule: Schedule,
    pub start: Instant,
    pub slack: Duration,
    /// Its first send's place in the whole stream, and the step to its next.
    pub first: usize,
    pub stride: usize,
    pub pool: Arc<ThreadPool>,
    pub replicas: Arc<Replicas>,
    pub buffers: Arc<SlotBuffers>,
    pub counters: Arc<OpenLoopCounters>,
    pub stop: Arc<AtomicBool>,
    pub sequences: Option<LiveSequences>,
}

impl Scheduler {
    pub(super) async fn run(mut self) {
        crate::load::timer::lower_timer_slack();
        let timer = PreciseTimer::new().ok();
        let entries = self.replicas.first().requests.len().max(1);
        let servers = self.replicas.len().max(1);
        let mut whole = self.first;
        let mut burst = 0;
        while let Some(offset) = self.schedule.next_offset() {
            let due = self.start + offset;
            if Instant::now() < due {
                burst = 0;
                if !self.wait_until(timer.as_ref(), due, self.slack).await {
                    break;
                }
            } else if self.stop.load(Ordering::Relaxed) {
                break;
            } else if burst >= BURST {
                burst = 0;
                tokio::task::yield_now().await;
            }
            let index = whole;
            whole = whole.wrapping_add(self.stride);
            // A sequence stays on one server (its state lives there): its holder's.
            let holder = match self.sequences.as_mut() {
                Some(live) => match live.pick(&self.stop, &self.pool.freed).await {
                    Some(holder) => Some(holder),
                    None => break,
                },
                None => None,
            };
            let server = holder.unwrap_or(index) % servers;
            let Some(worker) = self.free_worker(server).await else {
                break;
            };
            let (payload, step) = match (self.sequences.as_mut(), holder) {
                (Some(live), Some(holder)) => {
                    let (payload, step) = live.take(holder);
                    (payload, Some(step))
                }
                _ => (index % entries, None),
            };
            let job = Job {
                scheduled: due,
                payload,
                step,
                measured: true,
            };
            self.counters.sent.fetch_add(1, Ordering::Relaxed);
            self.launch(server, worker, job);
            burst += 1;
        }
        self.end_live_sequences().await;
    }

    /// Waits until `due`: until the thread wakes anyway once it is due, or at the latest
    /// `slack` after it; false if asked to stop meanwhile.
    async fn wait_until(
        &self,
        timer: Option<&PreciseTimer>,
        due: Instant,
        slack: Duration,
    ) -> bool {
        share_wakeups(&self.pool.poke);
        let on_time = loop {
            if self.stop.load(Ordering::Relaxed) {
                break false;
            }
            let now = Instant::now();
            if now >= due {
                break true;
            }
            set_next_due(Some(due));
            let until = (due + slack).min(now + STOP_CHECK);
            tokio::select! {
                biased;
                _ = self.pool.poke.notified() => {}
                precise = sleep_precisely(timer, until) => {
                    if !precise {
                        tokio::time::sleep_until(until.into()).await;
                    }
                }
            }
        };
        set_next_due(None);
        on_time
    }

    /// Sends `job` on `worker` in a task of this thread; the worker comes back to the pool
    /// when the request is answered.
    fn launch(&self, server: usize, mut worker: Worker, job: Job) {
        let pool = self.pool.clone();
        let counters = self.counters.clone();
        tokio::spawn(async move {
            worker.send(&job).await;
            if let Some((_, busy)) = &job.step {
                busy.store(false, Ordering::Release);
            }
            match job.measured {
                true => counters.done.fetch_add(1, Ordering::Relaxed),
                false => counters.ending.fetch_sub(1, Ordering::AcqRel),
            };
            pool.give_back(server, worker);
        });
    }

    /// An idle connection to `server`, a new one, or (at the cap) the next one to be freed;
    /// `None` when asked to stop while waiting.
    async fn free_worker(&self, server: usize) -> Option<Worker> {
        if let Some(worker) = self.idle_or_new(server) {
            return Some(worker);
        }
        let waited = Instant::now();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            let _ = tokio::time::timeout(STOP_CHECK, self.pool.freed.notified()).await;
            if let Some(worker) = self.idle_or_new(server) {
                let ns = waited.elapsed().as_nanos() as u64;
                self.counters.cap_waits.fetch_add(1, Ordering::Relaxed);
                self.counters.cap_wait_ns.fetch_add(ns, Ordering::Relaxed);
                return Some(worker);
            }
        }
    }

    /// An idle connection to `server`, or a new one under the cap (it connects in its first
    /// request's task, off this sender's path); never waits.
    fn idle_or_new(&self, server: usize) -> Option<Worker> {
        let mut pools = self.pool.lock();
        let pool = &mut pools[server];
        if let Some(worker) = pool.idle.pop() {
            return Some(worker);
        }
        let parts = (&*self.replicas, &*self.buffers, &*self.counters);
        self.pool.new_worker(pool, server, parts)
    }

    /// Ends each sequence this schedule started and did not finish, as the closed loop's
    /// slots do: one more request with the END flag, not measured, after the sequence's
    /// request in flight (if any) is answered. Left open, a sequence would hold its place
    /// in the server's sequence batcher until its idle timeout and stall the next level's.
    async fn end_live_sequences(&mut self) {
        let Some(live) = self.sequences.take() else {
            return;
        };
        let servers = self.replicas.len().max(1);
        let deadline = Instant::now() + ENDING_WAIT;
        for (holder, sequence) in live.live.iter().enumerate() {
            let Some(sequence) = sequence.as_ref().filter(|s| s.done > 0) else {
                continue;
            };
            while live.busy[holder].load(Ordering::Acquire) && Instant::now() < deadline {
                let wait = Duration::from_millis(1);
                let _ = tokio::time::timeout(wait, self.pool.freed.notified()).await;
            }
            let (payload, mut step) = live.plan.step(sequence);
            step.end = true;
            let server = holder % servers;
            let Some(worker) = self.idle_or_new(server) else {
                continue;
            };
            let job = Job {
                scheduled: Instant::now(),
                payload,
                step: Some((step, live.busy[holder].clone())),
                measured: false,
            };
            self.counters.ending.fetch_add(1, Ordering::AcqRel);
            self.launch(server, worker, job);
        }
    }
}

/// The open loop's live sequences (`--num-of-sequences`): each send goes to one drawn at
/// random — with `--serial-sequences`, among those with no request in flight, waiting for
/// one to come free.
pub(super) struct LiveSequences {
    plan: Arc<SequencePlan>,
    live: Vec<Option<Sequence>>,
    busy: Vec<Arc<AtomicBool>>,
    serial: bool,
    rng: SmallRng,
}

impl LiveSequences {
    pub(super) fn new(plan: Arc<SequencePlan>) -> LiveSequences {
        let count = plan.live_sequences().max(1);
        LiveSequences {
            serial: plan.serial(),
            live: vec![None; count],
            busy: (0..count).map(|_| Arc::default()).collect(),
            plan,
            rng: SmallRng::from_os_rng(),
        }
    }

    /// The next step of the sequence `holder` (one from [`LiveSequences::pick`]): its
    /// request and step, the sequence marked in flight.
    fn take(&mut self, holder: usize) -> (usize, (SequenceStep, Arc<AtomicBool>)) {
        let plan = &self.plan;
        let rng = &mut self.rng;
        let sequence = self.live[holder].get_or_insert_with(|| plan.begin(holder, rng));
        let (index, step) = plan.step(sequence);
        sequence.advance();
        if sequence.finished() {
            self.live[holder] = None;
        }
        self.busy[holder].store(true, Ordering::Release);
        (index, (step, self.busy[holder].clone()))
    }

    /// The sequence the next send belongs to: any live one, or with `--serial-sequences`
    /// one with no request in flight, waiting (for `freed`) for one to come free; `None`
    /// when asked to stop while waiting.
    async fn pick(&mut self, stop: &AtomicBool, freed: &Notify) -> Option<usize> {
        let count = self.live.len();
        if !self.serial {
            return Some(self.rng.random_range(0..count));
        }
        loop {
            let free: Vec<usize> = (0..count)
                .filter(|&i| !self.busy[i].load(Ordering::Acquire))
                .collect();
            if !free.is_empty() {
                return Some(free[self.rng.random_range(0..free.len())]);
            }
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let _ = tokio::time::timeout(STOP_CHECK, freed.notified()).await;
        }
    }
}

/// Sleeps on `timer` until `until`; false when there is no timer or it failed.
async fn sleep_precisely(timer: Option<&PreciseTimer>, until: Instant) -> bool {
    match timer {
        Some(timer) => timer.sleep_until(until).await.is_ok(),
        None => false,
    }
}

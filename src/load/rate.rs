//! The open-loop driver: requests go out on a schedule, never waiting for answers. A
//! dispatcher thread sleeps until each request is due (timer slack lowered to 1 µs) and hands
//! it to an idle worker; workers are tasks with one connection each, created on demand, so a
//! slow server makes requests pile up in flight instead of delaying sends. With
//! `--max-concurrency` the pool is capped: a send then waits for a free worker, and the wait
//! is counted. Latency is measured from the scheduled time (no coordinated omission). With
//! several `-u` servers, send k goes to server k % n, each server with its own pool of
//! workers (and its share of the cap); a sequence model's sends go to the server of their
//! sequence, so that each sequence lives on one server.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::caller::Caller;
use super::schedule::Schedule;
use super::sequences::{Sequence, SequencePlan};
use super::threads::ClientThreads;
use crate::backend::replicas::{Replica, Replicas};
use crate::measure::sample::{Drained, SlotBuffer, SlotBuffers};
use crate::model::SequenceStep;

/// Most workers (requests in flight) without a cap, so a dead server cannot exhaust sockets.
pub const MAX_WORKERS: usize = 16_384;
/// Longest the dispatcher sleeps before looking at the stop flag again.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// One request handed to a worker.
struct Job {
    scheduled: Instant,
    payload: usize,
    /// Its sequence step, and the flag its live sequence keeps while it is in flight.
    step: Option<(SequenceStep, Arc<AtomicBool>)>,
    /// False for the request that ends a sequence the schedule's end cut short: sent, not
    /// measured, and not counted among the sends.
    measured: bool,
}

/// Longest the end of a run waits for the requests that end cut-short sequences.
const ENDING_WAIT: Duration = Duration::from_secs(2);

/// Counters the profiler reads at window ends.
#[derive(Debug, Default)]
pub struct OpenLoopCounters {
    /// Requests handed to workers.
    pub sent: AtomicU64,
    /// Requests answered (or failed) so far.
    pub done: AtomicU64,
    /// Sends that had to wait for the in-flight cap, and how long in total (ns).
    pub cap_waits: AtomicU64,
    pub cap_wait_ns: AtomicU64,
    /// Workers (connections) opened so far.
    pub workers: AtomicU64,
    /// Requests ending cut-short sequences that are queued or in flight.
    pub ending: AtomicU64,
}

/// One server's workers and their queues.
struct ServerPool {
    jobs: Vec<UnboundedSender<Job>>,
    idle_tx: Sender<usize>,
    idle_rx: Receiver<usize>,
}

impl ServerPool {
    fn new() -> ServerPool {
        let (idle_tx, idle_rx) = mpsc::channel();
        ServerPool {
            jobs: Vec::new(),
            idle_tx,
            idle_rx,
        }
    }
}

/// Every server's pool, handed from one level's dispatcher to the next.
struct Pool {
    servers: Vec<ServerPool>,
}

/// Sends requests on a schedule.
pub struct OpenLoop {
    replicas: Arc<Replicas>,
    /// The in-flight cap of each server's pool.
    cap: usize,
    buffers: Arc<SlotBuffers>,
    counters: Arc<OpenLoopCounters>,
    stop: Arc<AtomicBool>,
    dispatcher: Option<JoinHandle<Pool>>,
    pool: Option<Pool>,
    threads: Arc<ClientThreads>,
    /// A sequence model's sequences, `--num-of-sequences` of them live at once.
    sequences: Option<Arc<SequencePlan>>,
    /// `--request-count`: the next schedules send this many requests, then end.
    budget: Option<u64>,
}

impl OpenLoop {
    pub fn new(
        replicas: Arc<Replicas>,
        max_in_flight: Option<usize>,
        threads: Arc<ClientThreads>,
    ) -> Self {
        let servers = replicas.len().max(1);
        let cap = max_in_flight.unwrap_or(MAX_WORKERS).clamp(1, MAX_WORKERS);
        OpenLoop {
            cap: cap.div_ceil(servers),
            buffers: Arc::default(),
            counters: Arc::default(),
            stop: Arc::default(),
            dispatcher: None,
            pool: Some(Pool {
                servers: (0..servers).map(|_| ServerPool::new()).collect(),
            }),
            replicas,
            threads,
            sequences: None,
            budget: None,
        }
    }

    /// Makes every send from the next schedule on a step of one of the live sequences.
    pub fn set_sequences(&mut self, plan: Option<Arc<SequencePlan>>) {
        self.sequences = plan;
    }

    /// Ends each schedule started from now on after `count` sends (`None`: no end).
    pub fn set_budget(&mut self, count: Option<u64>) {
        self.budget = count;
    }

    pub fn counters(&self) -> &OpenLoopCounters {
        &self.counters
    }

    /// Starts sending on `schedule` from now, after the previous schedule (if any) stops.
    pub fn start(&mut self, schedule: Schedule) {
        self.halt_dispatcher();
        let schedule = match self.budget {
            Some(count) => Schedule::limited(schedule, count),
            None => schedule,
        };
        let Some(pool) = self.pool.take() else {
            return;
        };
        self.stop.store(false, Ordering::SeqCst);
        let dispatcher = Dispatcher {
            schedule,
            pool,
            cap: self.cap,
            threads: self.threads.clone(),
            replicas: self.replicas.clone(),
            buffers: self.buffers.clone(),
            counters: self.counters.clone(),
            stop: self.stop.clone(),
            sequences: self.sequences.clone().map(LiveSequences::new),
        };
        let spawned = std::thread::Builder::new()
            .name("inferperf-dispatch".into())
            .spawn(move || dispatcher.run());
        match spawned {
            Ok(handle) => self.dispatcher = Some(handle),
            Err(e) => eprintln!("warning: cannot start the request dispatcher: {e}"),
        }
    }

    /// True once a finite schedule (`--fixed-schedule`) has sent everything.
    pub fn schedule_done(&self) -> bool {
        self.dispatcher.as_ref().is_none_or(|d| d.is_finished())
    }

    /// Moves every sample finished by `boundary` into `out`.
    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        self.buffers.drain_until(boundary, out);
    }

    /// Samples waiting in the buffers.
    pub fn pending_samples(&self) -> usize {
        self.buffers.pending()
    }

    /// Requests sent and not answered yet.
    pub fn in_flight(&self) -> u64 {
        let done = self.counters.done.load(Ordering::Relaxed);
        self.counters
            .sent
            .load(Ordering::Relaxed)
            .saturating_sub(done)
    }

    /// Stops sending, keeping the workers for the next schedule; requests in flight go on.
    pub fn halt(&mut self) {
        self.halt_dispatcher();
    }

    fn halt_dispatcher(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.dispatcher.take() {
            if let Ok(pool) = handle.join() {
                self.pool = Some(pool);
            }
        }
    }

    /// Stops sending and lets in-flight requests finish (up to the request timeout).
    pub async fn stop(&mut self) {
        let stop = self.stop.clone();
        stop.store(true, Ordering::SeqCst);
        let handle = self.dispatcher.take();
        let pool = tokio::task::spawn_blocking(move || handle.and_then(|h| h.join().ok()))
            .await
            .ok()
            .flatten();
        // Dropping the job queues ends each worker after its queued requests.
        drop(pool.or_else(|| self.pool.take()));
        // The requests that end cut-short sequences go out before the run ends, so that no
        // sequence is left open on the server.
        let waited = Instant::now();
        while self.counters.ending.load(Ordering::Acquire) > 0 && waited.elapsed() < ENDING_WAIT {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// The dispatcher thread's state.
struct Dispatcher {
    schedule: Schedule,
    pool: Pool,
    cap: usize,
    threads: Arc<ClientThreads>,
    replicas: Arc<Replicas>,
    buffers: Arc<SlotBuffers>,
    counters: Arc<OpenLoopCounters>,
    stop: Arc<AtomicBool>,
    sequences: Option<LiveSequences>,
}

impl Dispatcher {
    fn run(mut self) -> Pool {
        lower_timer_slack();
        let start = Instant::now();
        let mut payload = 0usize;
        let entries = self.replicas.first().requests.len().max(1);
        let mut send = 0usize;
        while let Some(offset) = self.schedule.next_offset() {
            let due = start + offset;
            if !self.sleep_until(due) {
                break;
            }
            // A sequence stays on one server (its state lives there): the server of its
            // holder, as the requests that end cut-short sequences use.
            let servers = self.pool.servers.len();
            let holder = match self.sequences.as_mut() {
                Some(live) => match live.pick(&self.stop) {
                    Some(holder) => Some(holder),
                    None => break,
                },
                None => None,
            };
            let server = holder.unwrap_or(send) % servers;
            send = send.wrapping_add(1);
            let Some(worker) = self.free_worker(server) else {
                break;
            };
            let (index, step) = match (self.sequences.as_mut(), holder) {
                (Some(live), Some(holder)) => {
                    let (index, step) = live.take(holder);
                    (index, Some(step))
                }
                _ => {
                    let index = payload;
                    payload = (payload + 1) % entries;
                    (index, None)
                }
            };
            let job = Job {
                scheduled: due,
                payload: index,
                step,
                measured: true,
            };
            if self.pool.servers[server].jobs[worker].send(job).is_ok() {
                self.counters.sent.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.end_live_sequences();
        self.pool
    }

    /// Ends each sequence this schedule started and did not finish, as the closed loop's
    /// slots do: one more request with the END flag, not measured, after the sequence's
    /// request in flight (if any) is answered. Left open, a sequence would hold its place
    /// in the server's sequence batcher until its idle timeout and stall the next level's.
    fn end_live_sequences(&mut self) {
        let Some(live) = self.sequences.take() else {
            return;
        };
        let servers = self.pool.servers.len();
        let deadline = Instant::now() + ENDING_WAIT;
        for (holder, sequence) in live.live.into_iter().enumerate() {
            let Some(sequence) = sequence.filter(|s| s.done > 0) else {
                continue;
            };
            while live.busy[holder].load(Ordering::Acquire) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(200));
            }
            let (payload, mut step) = live.plan.step(&sequence);
            step.end = true;
            let server = holder % servers;
            let Some(worker) = self.idle_or_new_worker(server) else {
                continue;
            };
            let job = Job {
                scheduled: Instant::now(),
                payload,
                step: Some((step, live.busy[holder].clone())),
                measured: false,
            };
            self.counters.ending.fetch_add(1, Ordering::AcqRel);
            if self.pool.servers[server].jobs[worker].send(job).is_err() {
                self.counters.ending.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// An idle worker of `server`, or a new one under the cap; never waits.
    fn idle_or_new_worker(&mut self, server: usize) -> Option<usize> {
        let pool = &self.pool.servers[server];
        if let Ok(id) = pool.idle_rx.try_recv() {
            return Some(id);
        }
        (pool.jobs.len() < self.cap).then(|| self.spawn_worker(server))
    }

    /// Sleeps until `due`; false if asked to stop meanwhile.
    fn sleep_until(&self, due: Instant) -> bool {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now >= due {
                return true;
            }
            std::thread::sleep((due - now).min(STOP_CHECK));
        }
    }

    /// An idle worker of `server`, a new one, or (at the cap) the next one to finish.
    fn free_worker(&mut self, server: usize) -> Option<usize> {
        let pool = &self.pool.servers[server];
        if let Ok(id) = pool.idle_rx.try_recv() {
            return Some(id);
        }
        if pool.jobs.len() < self.cap {
            return Some(self.spawn_worker(server));
        }
        let waited = Instant::now();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            match self.pool.servers[server].idle_rx.recv_timeout(STOP_CHECK) {
                Ok(id) => {
                    let ns = waited.elapsed().as_nanos() as u64;
                    self.counters.cap_waits.fetch_add(1, Ordering::Relaxed);
                    self.counters.cap_wait_ns.fetch_add(ns, Ordering::Relaxed);
                    return Some(id);
                }
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    fn spawn_worker(&mut self, server: usize) -> usize {
        let count = self.pool.servers.len();
        let pool = &mut self.pool.servers[server];
        let id = pool.jobs.len();
        let (tx, rx) = unbounded_channel();
        let buffer = self.buffers.add();
        let worker = Worker {
            id,
            replica: server as u16,
            server: self.replicas.list[server].clone(),
            buffer,
            idle: pool.idle_tx.clone(),
            counters: self.counters.clone(),
        };
        // The server's own lanes, interleaved with the other servers'.
        let lane = worker.server.target.lane(id) * count + server;
        self.threads.handle(lane).spawn(worker.run(rx));
        pool.jobs.push(tx);
        self.counters.workers.fetch_add(1, Ordering::Relaxed);
        id
    }
}

/// The open loop's live sequences (`--num-of-sequences`), on the dispatcher thread: each
/// send goes to one drawn at random — with `--serial-sequences`, among those with no
/// request in flight, waiting for one to come free.
struct LiveSequences {
    plan: Arc<SequencePlan>,
    live: Vec<Option<Sequence>>,
    busy: Vec<Arc<AtomicBool>>,
    serial: bool,
    rng: SmallRng,
}

impl LiveSequences {
    fn new(plan: Arc<SequencePlan>) -> LiveSequences {
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
    /// one with no request in flight, waiting for one to come free; `None` when asked to
    /// stop while waiting.
    fn pick(&mut self, stop: &AtomicBool) -> Option<usize> {
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
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Asks the kernel to wake this thread within 1 µs of its deadline (default slack: 50 µs).
fn lower_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong);
    }
}

/// One worker: a connection and a queue of jobs.
struct Worker {
    /// Its place in its server's pool.
    id: usize,
    replica: u16,
    server: Replica,
    buffer: Arc<SlotBuffer>,
    idle: Sender<usize>,
    counters: Arc<OpenLoopCounters>,
}

impl Worker {
    async fn run(self, mut jobs: UnboundedReceiver<Job>) {
        let target = &self.server.target;
        let mut caller = Caller::new(self.id, target).for_replica(self.replica);
        let unmeasured = SlotBuffer::default();
        while let Some(job) = jobs.recv().await {
            if let Some(request) = self.server.requests.get(job.payload) {
                let step = job.step.as_ref().map(|(step, _)| *step);
                let (scheduled, buffer) = match job.measured {
                    true => (Some(job.scheduled), &*self.buffer),
                    false => (None, &unmeasured),
                };
                (caller.call_step(target, request, scheduled, buffer, None, step)).await;
            }
            if let Some((_, busy)) = &job.step {
                busy.store(false, Ordering::Release);
            }
            match job.measured {
                true => self.counters.done.fetch_add(1, Ordering::Relaxed),
                false => self.counters.ending.fetch_sub(1, Ordering::AcqRel),
            };
            if self.idle.send(self.id).is_err() {
                break;
            }
        }
    }
}

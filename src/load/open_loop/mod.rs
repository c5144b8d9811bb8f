//! The open-loop driver: requests go out on a schedule, never waiting for answers. Each
//! client thread runs its share of the schedule (every N-th send of the whole stream, so the
//! union is the asked stream) on its own microsecond timer, sends every request that is due
//! in one wake-up, and takes a free connection from its own pool — opening one, in the
//! request's own task, when none is free — so that no send crosses threads or wakes another
//! one (see `per_thread`). A slow server makes requests pile up in flight instead of
//! delaying sends. With `--max-concurrency` each pool is capped: a send then waits for a
//! free connection, and the wait is counted. Latency is measured from the scheduled time
//! (no coordinated omission). With several `-u` servers, send k goes to server k % n, each
//! server with its own pools (and its share of the cap); a sequence model's sends go to the
//! server of their sequence, so that each sequence lives on one server, and run on one
//! thread, which holds the live sequences.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

mod counters;
mod per_thread;

pub use counters::OpenLoopCounters;

use super::client_threads::ClientThreads;
use super::schedule::Schedule;
use super::sequences::SequencePlan;
use crate::backend::replicas::Replicas;
use crate::measure::sample::{Drained, SlotBuffers};
use counters::ENDING_WAIT;
use per_thread::{LiveSequences, Scheduler, ThreadPool};

/// Most workers (requests in flight) without a cap, so a dead server cannot exhaust sockets.
pub const MAX_WORKERS: usize = 16_384;

/// Sends per second per client thread from which `--send-slack` applies.
const SLACK_FROM_RATE: f64 = 5000.0;

/// Connections opened at once by [`OpenLoop::open_pools`] (as the closed loop's slots).
const CONNECTS_IN_FLIGHT: usize = 256;

/// One schedule's senders, one per client thread used.
struct Running {
    stop: Arc<AtomicBool>,
    senders: Vec<JoinHandle<()>>,
}

impl Running {
    fn finished(&self) -> bool {
        self.senders.iter().all(JoinHandle::is_finished)
    }
}

/// Sends requests on a schedule.
pub struct OpenLoop {
    replicas: Arc<Replicas>,
    /// The in-flight cap of each server's pools together.
    cap: usize,
    /// How late a send may go to share a wake-up (`--send-slack`).
    slack: Duration,
    buffers: Arc<SlotBuffers>,
    counters: Arc<OpenLoopCounters>,
    threads: Arc<ClientThreads>,
    /// Each client thread's connections, kept from one level to the next.
    pools: Vec<Arc<ThreadPool>>,
    running: Option<Running>,
    /// A sequence model's sequences, `--num-of-sequences` of them live at once.
    sequences: Option<Arc<SequencePlan>>,
    /// `--request-count`: the next schedules send this many requests, then end.
    budget: Option<u64>,
    /// `--max-concurrency` was given: its connections are opened before the first send.
    capped: bool,
}

impl OpenLoop {
    pub fn new(
        replicas: Arc<Replicas>,
        max_in_flight: Option<usize>,
        threads: Arc<ClientThreads>,
        slack: Duration,
    ) -> Self {
        let servers = replicas.len().max(1);
        let cap = max_in_flight.unwrap_or(MAX_WORKERS).clamp(1, MAX_WORKERS);
        let cap = cap.div_ceil(servers);
        // A thread with no share of the cap could never send: use at most `cap` threads.
        let used = threads.len().clamp(1, cap);
        let pools = (0..used)
            .map(|thread| Arc::new(ThreadPool::new(thread, used, servers)))
            .collect();
        OpenLoop {
            cap,
            slack,
            buffers: Arc::default(),
            counters: Arc::default(),
            pools,
            running: None,
            replicas,
            threads,
            sequences: None,
            budget: None,
            capped: max_in_flight.is_some(),
        }
    }

    /// With `--max-concurrency`, opens every connection of the pools (a few hundred at a
    /// time) before the first send, so that connecting is not part of any request; the
    /// connections opened, of how many, and how long it took. `None` without a cap, or
    /// with sequences (whose sends run on one thread).
    pub async fn open_pools(&mut self) -> Option<(usize, usize, Duration)> {
        if !self.capped || self.sequences.is_some() {
            return None;
        }
        let started = Instant::now();
        let used = self.pools.len();
        let connects = Arc::new(tokio::sync::Semaphore::new(CONNECTS_IN_FLIGHT));
        let mut opening = Vec::new();
        for (thread, pool) in self.pools.iter().enumerate() {
            pool.set_cap(self.cap / used + usize::from(thread < self.cap % used));
            let open = pool.clone().open_all(
                self.replicas.clone(),
                self.buffers.clone(),
                self.counters.clone(),
                connects.clone(),
            );
            opening.push(self.threads.handle(thread).spawn(open));
        }
        let mut connected = 0;
        for task in opening {
            connected += task.await.unwrap_or(0);
        }
        let asked = self.cap * self.replicas.len().max(1);
        Some((connected, asked, started.elapsed()))
    }

    /// Makes every request pass `gates` (called before the first connection is made).
    pub fn set_gates(&mut self, gates: Option<Arc<super::gate::CallGates>>) {
        if let Some(gates) = gates {
            for pool in &self.pools {
                let _ = pool.gates.set(gates.clone());
            }
        }
    }

    pub fn gates(&self) -> Option<&Arc<super::gate::CallGates>> {
        self.pools.first().and_then(|pool| pool.gates.get())
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
        self.halt();
        let schedule = match self.budget {
            Some(count) => Schedule::limited(schedule, count),
            None => schedule,
        };
        // Live sequences are drawn from one place: a sequence model's sends run on one thread.
        let used = match self.sequences {
            Some(_) => 1,
            None => self.pools.len(),
        };
        // The slack pays only where a wake-up per send would cost a tenth of a core or
        // more; below, each send goes at the earliest instant, so that a sparse schedule
        // never waits for a wake-up that does not come.
        let slack = match schedule.mean_rate() / used as f64 >= SLACK_FROM_RATE {
            true => self.slack,
            false => Duration::ZERO,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let senders = (0..used)
            .map(|thread| {
                // Thread k's share of the cap: an even split, the remainder to the first.
                let pool = self.pools[thread].clone();
                pool.set_cap(self.cap / used + usize::from(thread < self.cap % used));
                let share = match used {
                    1 => schedule.clone(),
                    _ => Schedule::sharded(schedule.clone(), thread as u32, used as u32),
                };
                let scheduler = Scheduler {
                    schedule: share,
                    start,
                    slack,
                    first: thread,
                    stride: used,
                    pool,
                    replicas: self.replicas.clone(),
                    buffers: self.buffers.clone(),
                    counters: self.counters.clone(),
                    stop: stop.clone(),
                    sequences: self.sequences.clone().map(LiveSequences::new),
                };
                self.threads.handle(thread).spawn(scheduler.run())
            })
            .collect();
        self.running = Some(Running { stop, senders });
    }

    /// True once a finite schedule (`--fixed-schedule`) has sent everything.
    pub fn schedule_done(&self) -> bool {
        self.running.as_ref().is_none_or(Running::finished)
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

    /// Stops sending, keeping the connections for the next schedule; requests in flight go
    /// on. Waits (bounded) until every sender has ended its cut-short sequences.
    pub fn halt(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        running.stop.store(true, Ordering::SeqCst);
        let waited = Instant::now();
        while !running.finished() && waited.elapsed() < ENDING_WAIT * 2 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Stops sending and lets in-flight requests finish (up to the request timeout).
    pub async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.stop.store(true, Ordering::SeqCst);
            for sender in running.senders {
                let _ = sender.await;
            }
        }
        // The requests that end cut-short sequences go out before the run ends, so that no
        // sequence is left open on the server.
        let waited = Instant::now();
        while self.counters.ending.load(Ordering::Acquire) > 0 && waited.elapsed() < ENDING_WAIT {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.pools.iter().for_each(|pool| pool.close_idle());
    }
}

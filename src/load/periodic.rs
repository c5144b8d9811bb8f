//! The periodic-concurrency driver (`--periodic-concurrency-range START:END:STEP` with
//! `--request-period N`), perf_analyzer's load for LLM servers: START streamed requests at
//! once; each time every request of the latest set has received N answers, STEP more; until
//! END requests were started. Each request has its own stream and is sent once. A request
//! that ends before its Nth answer counts as having reached it (perf_analyzer stops with an
//! error there), so the run never waits for answers that will not come; the report says
//! how many did.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::caller::Caller;
use super::client_threads::ClientThreads;
use crate::backend::{Request, Target};
use crate::config::PeriodicRange;
use crate::measure::sample::{Drained, SlotBuffer, SlotBuffers};

/// What the request tasks and the pacing task share.
#[derive(Debug, Default)]
struct Progress {
    started: AtomicU64,
    finished: AtomicU64,
    /// Requests of the latest set that have not yet had their Nth answer.
    awaiting_period: AtomicU64,
    /// Requests that ended before their Nth answer.
    short: AtomicU64,
    changed: Notify,
}

impl Progress {
    fn period_reached(&self) {
        self.awaiting_period.fetch_sub(1, Ordering::SeqCst);
        self.changed.notify_one();
    }
}

/// Starts sets of streamed requests as the previous set's answers come.
pub struct PeriodicLoop {
    progress: Arc<Progress>,
    buffers: Arc<SlotBuffers>,
    pacer: Option<JoinHandle<()>>,
    range: PeriodicRange,
}

impl PeriodicLoop {
    /// Starts the first set; the rest follow on their own.
    pub fn start(
        target: Arc<Target>,
        requests: Arc<Vec<Request>>,
        threads: Arc<ClientThreads>,
        range: PeriodicRange,
    ) -> PeriodicLoop {
        let progress = Arc::new(Progress::default());
        let buffers: Arc<SlotBuffers> = Arc::default();
        let launcher = Launcher {
            target,
            requests,
            threads,
            progress: progress.clone(),
            buffers: buffers.clone(),
            period: range.period,
        };
        let pacer = tokio::spawn(launcher.pace(range));
        PeriodicLoop {
            progress,
            buffers,
            pacer: Some(pacer),
            range,
        }
    }

    /// True once every request was started and answered.
    pub fn finished(&self) -> bool {
        self.pacer.as_ref().is_none_or(JoinHandle::is_finished) && self.in_flight() == 0
    }

    /// Requests started and not finished.
    pub fn in_flight(&self) -> u64 {
        let finished = self.progress.finished.load(Ordering::SeqCst);
        self.progress
            .started
            .load(Ordering::SeqCst)
            .saturating_sub(finished)
    }

    /// Moves every sample finished by `boundary` into `out`.
    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        self.buffers.drain_until(boundary, out);
    }

    /// Samples waiting in the buffers.
    pub fn pending_samples(&self) -> usize {
        self.buffers.pending()
    }

    /// What the run should say beside its figures: requests that ended before their Nth
    /// answer, when any did.
    pub fn notes(&self) -> Vec<String> {
        let short = self.progress.short.load(Ordering::SeqCst);
        if short == 0 {
            return Vec::new();
        }
        vec![format!(
            "{short} request(s) ended after fewer than --request-period {} answers; the next set started when they ended.",
            self.range.period
        )]
    }

    /// Starts no more sets (requests in flight go on until answered).
    pub fn stop(&mut self) {
        if let Some(pacer) = self.pacer.take() {
            pacer.abort();
        }
    }
}

/// Starts the requests of each set.
struct Launcher {
    target: Arc<Target>,
    requests: Arc<Vec<Request>>,
    threads: Arc<ClientThreads>,
    progress: Arc<Progress>,
    buffers: Arc<SlotBuffers>,
    period: u32,
}

impl Launcher {
    /// Starts START requests, then STEP more each time the latest set has reached the
    /// period, until END were started.
    async fn pace(self, range: PeriodicRange) {
        self.start_set(range.start);
        loop {
            let started = self.progress.started.load(Ordering::SeqCst);
            if started >= range.end as u64 {
                return;
            }
            if self.progress.awaiting_period.load(Ordering::SeqCst) == 0 {
                let left = range.end as u64 - started;
                self.start_set(left.min(range.step as u64) as u32);
                continue;
            }
            self.progress.changed.notified().await;
        }
    }

    fn start_set(&self, count: u32) {
        self.progress
            .awaiting_period
            .store(count as u64, Ordering::SeqCst);
        for _ in 0..count {
            let slot = self.progress.started.fetch_add(1, Ordering::SeqCst) as usize;
            let buffer = self.buffers.add();
            let task = Streamed {
                slot,
                target: self.target.clone(),
                requests: self.requests.clone(),
                progress: self.progress.clone(),
                buffer,
                period: self.period,
            };
            let lane = self.target.lane(slot);
            self.threads.handle(lane).spawn(task.run());
        }
    }
}

/// One request of a periodic run, on its own stream.
struct Streamed {
    slot: usize,
    target: Arc<Target>,
    requests: Arc<Vec<Request>>,
    progress: Arc<Progress>,
    buffer: Arc<SlotBuffer>,
    period: u32,
}

impl Streamed {
    async fn run(self) {
        let reached = AtomicBool::new(false);
        let watch = |answers: u32| {
            if answers == self.period && !reached.swap(true, Ordering::SeqCst) {
                self.progress.period_reached();
            }
        };
        let count = self.requests.len().max(1);
        if let Some(request) = self.requests.get(self.slot % count) {
            let mut caller = Caller::new(self.slot, &self.target);
            caller
                .call(&self.target, request, None, &self.buffer, Some(&watch))
                .await;
        }
        if !reached.swap(true, Ordering::SeqCst) {
            self.progress.short.fetch_add(1, Ordering::SeqCst);
            self.progress.period_reached();
        }
        self.progress.finished.fetch_add(1, Ordering::SeqCst);
        self.progress.changed.notify_one();
    }
}

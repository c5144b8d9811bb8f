//! Scheduling like Triton's: each model has `instances` executors working in parallel,
//! with requests waiting first-in first-out in front of them.
//!
//! Two shapes of the same rule. A model that computes in microseconds and does not batch
//! runs each request on the caller's own task once an instance is free (a fair semaphore
//! is the queue), so the common path costs one atomic and no thread hop. A model that
//! sleeps or batches dynamically gets one OS thread per instance, as Triton does: an idle
//! instance forms the next batch from the queue — waiting up to the maximum queue delay
//! for a preferred size, by Triton's rules — runs it, and hands each request its answer.
//! Threads, not tasks, so a sleeping or spinning model never holds up the async runtime
//! and the queue delay is timed to the microsecond rather than the timer wheel's
//! millisecond.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Semaphore};

use super::error::InferError;
use super::models::{Job, Model, Outcome};

/// How a model's requests reach its instances.
#[derive(Debug)]
pub enum Scheduler {
    /// Runs each request on the caller's task once one of the instances is free.
    Direct(Semaphore),
    /// Queues requests for instance threads.
    Queued(Arc<Queue>),
}

fn stopped() -> InferError {
    InferError::Unavailable("the server is shutting down".into())
}

impl Scheduler {
    /// The scheduler the model needs; starts its instance threads if it has any.
    pub fn new(model: &Arc<Model>) -> anyhow::Result<Scheduler> {
        let def = &model.def;
        if !def.dynamic_batching() && !def.kind.blocks() {
            return Ok(Scheduler::Direct(Semaphore::new(def.instances as usize)));
        }
        let queue = Arc::new(Queue::new(model.clone()));
        // Built first so that a failed start drops it, which stops the threads started.
        let scheduler = Scheduler::Queued(queue.clone());
        for i in 0..def.instances {
            let q = queue.clone();
            std::thread::Builder::new()
                .name(format!("{}-{i}", def.name))
                .spawn(move || q.serve())
                .map_err(|e| anyhow::anyhow!("cannot start an instance of '{}': {e}", def.name))?;
        }
        Ok(scheduler)
    }

    /// Runs the job on the model and answers it.
    pub async fn submit(&self, model: &Model, mut job: Job) -> Outcome {
        match self {
            Scheduler::Direct(instances) => {
                let _instance = instances.acquire().await.map_err(|_| stopped())?;
                let outcome = model.execute(std::slice::from_mut(&mut job)).pop();
                outcome.unwrap_or_else(|| Err(stopped()))
            }
            Scheduler::Queued(queue) => queue.submit(job).await,
        }
    }

    /// Stops taking requests; instance threads end once the queue is closed.
    pub fn close(&self) {
        match self {
            Scheduler::Direct(instances) => instances.close(),
            Scheduler::Queued(queue) => queue.close(),
        }
    }
}

impl Drop for Scheduler {
    /// Ends the instance threads with the scheduler that feeds them.
    fn drop(&mut self) {
        self.close();
    }
}

/// A queued request and where its answer goes.
#[derive(Debug)]
struct Entry {
    job: Job,
    reply: oneshot::Sender<Outcome>,
}

#[derive(Debug, Default)]
struct State {
    entries: VecDeque<Entry>,
    closed: bool,
}

/// The dynamic batcher's settings, fixed at start.
#[derive(Debug)]
struct Policy {
    dynamic: bool,
    /// The largest batch an execution takes (the largest preferred size, else max batch).
    max: u32,
    preferred: Vec<u32>,
    delay: Duration,
}

/// What an idle instance does next.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    /// Execute the first `n` queued requests now.
    Take(usize),
    /// Wait for more requests, at most this long (`None`: until one arrives).
    Wait(Option<Duration>),
}

/// The queue in front of a model's instance threads.
#[derive(Debug)]
pub struct Queue {
    model: Arc<Model>,
    policy: Policy,
    state: Mutex<State>,
    arrived: Condvar,
    /// Held by the one idle instance that forms the next batch.
    former: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Queue {
    fn new(model: Arc<Model>) -> Queue {
        let def = &model.def;
        let policy = Policy {
            dynamic: def.dynamic_batching(),
            max: def.max_execution_batch(),
            preferred: def.preferred_batch.clone(),
            delay: Duration::from_micros(def.queue_delay_us.unwrap_or(0)),
        };
        Queue {
            model,
            policy,
            state: Mutex::new(State::default()),
            arrived: Condvar::new(),
            former: Mutex::new(()),
        }
    }

    async fn submit(&self, job: Job) -> Outcome {
        let (reply, answer) = oneshot::channel();
        {
            let mut state = lock(&self.state);
            if state.closed {
                return Err(stopped());
            }
            state.entries.push_back(Entry { job, reply });
        }
        self.arrived.notify_one();
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        self.arrived.notify_all();
    }

    /// An instance thread: executes batches until the queue closes.
    fn serve(&self) {
        while let Some(entries) = self.next_batch() {
            let (mut jobs, replies): (Vec<Job>, Vec<_>) =
                entries.into_iter().map(|e| (e.job, e.reply)).unzip();
            let outcomes = self.model.execute(&mut jobs);
            for (reply, outcome) in replies.into_iter().zip(outcomes) {
                let _ = reply.send(outcome);
            }
        }
    }

    /// Waits for the next batch by the policy; `None` once the queue is closed.
    fn next_batch(&self) -> Option<Vec<Entry>> {
        let _former = lock(&self.former);
        let mut state = lock(&self.state);
        loop {
            if state.closed {
                return None;
            }
            state = match decide(&state.entries, &self.policy, Instant::now()) {
                Decision::Take(n) => return Some(state.entries.drain(..n).collect()),
                Decision::Wait(None) => self
                    .arrived
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                Decision::Wait(Some(d)) => {
                    let waited = self.arrived.wait_timeout(state, d);
                    waited.unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }
}

/// Triton's dynamic batcher: walk the queue while the batch stays within the largest
/// size and the shapes match, noting where a preferred size is reached. A preferred size
/// runs at once; so does a batch that cannot grow; otherwise the oldest request waits
/// until the maximum queue delay has passed, then whatever is pending runs.
fn decide(entries: &VecDeque<Entry>, policy: &Policy, now: Instant) -> Decision {
    let Some(first) = entries.front() else {
        return Decision::Wait(None);
    };
    if !policy.dynamic {
        return Decision::Take(1);
    }
    let (mut pending, mut n, mut best, mut full) = (0u32, 0usize, None, false);
    for e in entries {
        let fits = pending.saturating_add(e.job.batch) <= policy.max;
        if n > 0 && (!fits || !first.job.batches_with(&e.job)) {
            full = true;
            break;
        }
        pending = pending.saturating_add(e.job.batch);
        n += 1;
        if policy.preferred.contains(&pending) {
            best = Some(n);
        }
    }
    let waited = now.saturating_duration_since(first.job.enqueued);
    let exceeded = !policy.delay.is_zero() && waited >= policy.delay;
    match best {
        Some(b) if !exceeded => Decision::Take(b),
        _ if full || pending >= policy.max || exceeded || policy.delay.is_zero() => {
            Decision::Take(n)
        }
        _ => Decision::Wait(Some(policy.delay - waited)),
    }
}

#[cfg(test)]
#[path = "sched_tests.rs"]
mod tests;

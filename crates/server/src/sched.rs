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
//! millisecond. A decoupled model's queue holds stream senders instead of one-answer
//! replies, and its instance runs the whole stream ([`super::stream`]) before taking the
//! next batch. The OpenAI kinds have schedulers of their own: an `llm` model's engines
//! batch continuously ([`super::llm`]), an `embeddings` model's instances are a semaphore.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Semaphore};

use super::def::ModelKind;
use super::error::InferError;
use super::llm::Engines;
use super::models::{Job, Model, Outcome};
use super::stream::{self, StreamSender};

/// A one-answer request's reply.
type Once = oneshot::Sender<Outcome>;

/// How a model's requests reach its instances.
#[derive(Debug)]
pub(crate) enum Scheduler {
    /// Runs each request on the caller's task once one of the instances is free.
    Direct(Semaphore),
    /// Queues requests for instance threads.
    Queued(Arc<Queue<Once>>),
    /// Queues a decoupled model's requests for instance threads that stream the answers.
    Streamed(Arc<Queue<StreamSender>>),
    /// An `llm` model's engines, batching continuously.
    Llm(Engines),
    /// An `embeddings` model's instances: each request holds one for its service time.
    Embeddings(Semaphore),
}

/// Where the answers of a batch go, and how an instance thread executes the batch.
pub(crate) trait Replies: Sized + Send + 'static {
    fn execute(model: &Model, jobs: Vec<Job>, replies: Vec<Self>);
    /// Answers a request that will not run with the error.
    fn refuse(self, error: InferError);
}

impl Replies for Once {
    fn execute(model: &Model, mut jobs: Vec<Job>, replies: Vec<Self>) {
        let outcomes = model.execute(&mut jobs);
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            let _ = reply.send(outcome);
        }
    }

    fn refuse(self, error: InferError) {
        let _ = self.send(Err(error));
    }
}

impl Replies for StreamSender {
    fn execute(model: &Model, jobs: Vec<Job>, replies: Vec<Self>) {
        stream::execute(model, jobs, replies)
    }

    fn refuse(self, error: InferError) {
        let _ = self.try_send(Err(error));
    }
}

/// Starts the instance threads of a queue.
fn spawn_instances<R: Replies>(queue: &Arc<Queue<R>>) -> anyhow::Result<()> {
    let def = &queue.model.def;
    for i in 0..def.instances {
        let q = queue.clone();
        std::thread::Builder::new()
            .name(format!("{}-{i}", def.name))
            .spawn(move || q.serve())
            .map_err(|e| anyhow::anyhow!("cannot start an instance of '{}': {e}", def.name))?;
    }
    Ok(())
}

fn stopped() -> InferError {
    InferError::Unavailable("the server is shutting down".into())
}

impl Scheduler {
    /// The scheduler the model needs; starts its instance threads if it has any.
    pub(crate) fn new(model: &Arc<Model>) -> anyhow::Result<Scheduler> {
        let def = &model.def;
        match def.kind {
            ModelKind::Llm(_) => return Ok(Scheduler::Llm(Engines::start(model)?)),
            ModelKind::Embeddings { .. } => {
                return Ok(Scheduler::Embeddings(Semaphore::new(
                    def.instances as usize,
                )))
            }
            _ => {}
        }
        if !def.dynamic_batching() && !def.kind.blocks() {
            return Ok(Scheduler::Direct(Semaphore::new(def.instances as usize)));
        }
        // Each scheduler is built before its threads start, so that a failed start drops
        // it, which stops the threads started.
        if def.kind.decoupled() {
            let queue = Arc::new(Queue::new(model.clone()));
            let scheduler = Scheduler::Streamed(queue.clone());
            spawn_instances(&queue)?;
            return Ok(scheduler);
        }
        let queue = Arc::new(Queue::new(model.clone()));
        let scheduler = Scheduler::Queued(queue.clone());
        spawn_instances(&queue)?;
        Ok(scheduler)
    }

    /// Runs the job on the model and answers it.
    pub(crate) async fn submit(&self, model: &Model, mut job: Job) -> Outcome {
        match self {
            Scheduler::Direct(instances) => {
                let _instance = instances.acquire().await.map_err(|_| stopped())?;
                let outcome = model.execute(std::slice::from_mut(&mut job)).pop();
                outcome.unwrap_or_else(|| Err(stopped()))
            }
            Scheduler::Queued(queue) => queue.submit(job).await,
            Scheduler::Streamed(_) => Err(InferError::decoupled("one-answer inference")),
            Scheduler::Llm(_) | Scheduler::Embeddings(_) => {
                Err(model.refuse_kserve().err().unwrap_or_else(stopped))
            }
        }
    }

    /// Queues the job of a decoupled model; its answers go to `sender`.
    pub(crate) fn submit_stream(&self, job: Job, sender: StreamSender) -> Result<(), InferError> {
        match self {
            Scheduler::Streamed(queue) => queue.enqueue(job, sender),
            _ => Err(InferError::Internal(
                "only a decoupled model's scheduler streams".into(),
            )),
        }
    }

    /// Stops taking requests; instance threads end once the queue is closed.
    pub(crate) fn close(&self) {
        match self {
            Scheduler::Direct(instances) => instances.close(),
            Scheduler::Queued(queue) => queue.close(),
            Scheduler::Streamed(queue) => queue.close(),
            Scheduler::Llm(engines) => engines.close(),
            Scheduler::Embeddings(instances) => instances.close(),
        }
    }
}

impl Drop for Scheduler {
    /// Ends the instance threads with the scheduler that feeds them.
    fn drop(&mut self) {
        self.close();
    }
}

/// A queued request and where its answers go.
#[derive(Debug)]
struct Entry<R = Once> {
    job: Job,
    reply: R,
}

#[derive(Debug)]
struct State<R> {
    entries: VecDeque<Entry<R>>,
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

/// The queue in front of a model's instance threads; `R` is where answers go.
#[derive(Debug)]
pub(crate) struct Queue<R> {
    model: Arc<Model>,
    policy: Policy,
    state: Mutex<State<R>>,
    arrived: Condvar,
    /// Held by the one idle instance that forms the next batch.
    former: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Replies> Queue<R> {
    fn new(model: Arc<Model>) -> Queue<R> {
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
            state: Mutex::new(State {
                entries: VecDeque::new(),
                closed: false,
            }),
            arrived: Condvar::new(),
            former: Mutex::new(()),
        }
    }

    /// Puts the job at the back of the queue; refused once the queue is closed.
    fn enqueue(&self, job: Job, reply: R) -> Result<(), InferError> {
        {
            let mut state = lock(&self.state);
            if state.closed {
                return Err(stopped());
            }
            state.entries.push_back(Entry { job, reply });
        }
        self.arrived.notify_one();
        Ok(())
    }

    /// Stops taking requests and refuses those still waiting.
    fn close(&self) {
        let waiting = {
            let mut state = lock(&self.state);
            state.closed = true;
            std::mem::take(&mut state.entries)
        };
        self.arrived.notify_all();
        for entry in waiting {
            entry.reply.refuse(stopped());
        }
    }
}

impl Queue<Once> {
    async fn submit(&self, job: Job) -> Outcome {
        let (reply, answer) = oneshot::channel();
        self.enqueue(job, reply)?;
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }
}

impl<R: Replies> Queue<R> {
    /// An instance thread: executes batches until the queue closes.
    fn serve(&self) {
        while let Some(entries) = self.next_batch() {
            let (jobs, replies): (Vec<Job>, Vec<R>) =
                entries.into_iter().map(|e| (e.job, e.reply)).unzip();
            R::execute(&self.model, jobs, replies);
        }
    }

    /// Waits for the next batch by the policy; `None` once the queue is closed.
    fn next_batch(&self) -> Option<Vec<Entry<R>>> {
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
fn decide<R>(entries: &VecDeque<Entry<R>>, policy: &Policy, now: Instant) -> Decision {
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

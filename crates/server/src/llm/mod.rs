//! The `llm` kind's engines: continuous batching as vLLM-style servers do it, with timing
//! that is known exactly, so a load tester's TTFT, ITL and token figures can be checked
//! against it.
//!
//! A model has `instances` engines, each with `max_batch` slots. A request takes a free
//! slot on arrival (on the engine with the most free slots), else waits first-in first-out
//! until any engine frees one. Once in a slot its prefill runs for `ttft_ms` plus
//! `prefill_us_per_token` per prompt token, alongside whatever the engine is decoding; at
//! its end the first event goes out and the sequence joins the decode batch at the next
//! step boundary (at once when the engine was not decoding). With a prefix cache
//! (`prefix_cache=TOKENS`, [`prefix_cache`], one per model shared by its engines)
//! the prompt's leading blocks found in the cache when the request takes its slot are its
//! cached tokens, and its prefill runs for `ttft_ms` + `prefill_us_per_token` × (prompt
//! tokens − cached tokens); at the prefill's end its blocks go into the cache. Steps run back to back while
//! any sequence decodes, each `itl_ms` + `itl_us_per_sequence` × the sequences in the batch
//! long (fixed as the step starts), and each gives every
//! sequence in the batch its next event of `tokens_per_event` tokens. A sequence leaves
//! with its last token, freeing its slot at that instant.
//!
//! One tokio task per engine sleeps until its next prefill end or step end (absolute
//! deadlines, so steps never drift) or until a request arrives; a step costs one atomic
//! store and one wake per sequence. Readers hold a [`Ticket`] and see how many events are
//! out; a streaming reader is woken per event, any other only by the last. A reader that
//! goes away frees its slot at the sequence's next event.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::AtomicWaker;
use tokio::sync::Notify;

use super::def::{LlmTiming, ModelKind};
use super::error::InferError;
use super::gpu_power::PowerMeter;
use super::models::Model;
use super::stats::{add, nanos, Compute};
use engine_timings::EngineTimings;
use prefix_cache::PrefixCache;

pub(crate) mod engine_timings;
mod gauges;
mod media_tokens;
pub(crate) mod prefix_cache;
pub(crate) mod prompt_tokens;
use gauges::EngineCounts;
pub(crate) use gauges::{EngineGauges, ModelNumbers};

/// What a request asks of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ask {
    pub prompt_tokens: u32,
    /// The tokens to generate (at least 1).
    pub tokens: u32,
    /// Whether the reader wants each event as it comes out.
    pub stream: bool,
    /// Whether the answer stops at the request's limit (finish reason "length").
    pub length: bool,
}

/// One sequence's progress, shared between its engine and its reader.
#[derive(Debug, Default)]
struct Progress {
    /// Events out so far, or [`ABORTED`].
    events: AtomicU32,
    /// Set when the reader has gone.
    gone: AtomicBool,
    /// Prompt tokens the prefix cache held, set when the sequence takes its slot.
    cached: AtomicU32,
    waker: AtomicWaker,
}

const ABORTED: u32 = u32::MAX;

/// How far a sequence has come, as its reader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Produced {
    /// This many events are out.
    Events(u32),
    /// The server stopped before the sequence ended.
    Aborted,
}

/// The reader's side of one sequence. Dropping it tells the engine the client left.
#[derive(Debug)]
pub(crate) struct Ticket {
    progress: Arc<Progress>,
    /// The events the sequence will have: its tokens over `tokens_per_event`, rounded up.
    pub events: u32,
}

impl Ticket {
    /// Ready once more than `seen` events are out, or the sequence was aborted.
    pub(crate) fn poll_events(&self, seen: u32, cx: &mut Context<'_>) -> Poll<Produced> {
        let check = || match self.progress.events.load(Acquire) {
            ABORTED => Some(Produced::Aborted),
            n if n > seen => Some(Produced::Events(n)),
            _ => None,
        };
        if let Some(p) = check() {
            return Poll::Ready(p);
        }
        self.progress.waker.register(cx.waker());
        check().map_or(Poll::Pending, Poll::Ready)
    }

    /// Prompt tokens the prefix cache held (0 until the sequence has a slot).
    pub(crate) fn cached(&self) -> u32 {
        self.progress.cached.load(Acquire)
    }

    /// Waits for the last event; false if the sequence was aborted.
    pub(crate) async fn finished(&self) -> bool {
        let last = self.events.saturating_sub(1);
        let produced = std::future::poll_fn(|cx| self.poll_events(last, cx)).await;
        produced != Produced::Aborted
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.progress.gone.store(true, Relaxed);
    }
}

/// The engine's side of one sequence.
#[derive(Debug)]
struct Seq {
    progress: Arc<Progress>,
    ask: Ask,
    /// The names of the prompt's full blocks, for the prefix cache (empty without one).
    blocks: Vec<u64>,
    produced: u32,
    events: u32,
    arrival: Instant,
    /// When it took a slot.
    admitted: Instant,
    /// When its last event came out.
    last_event: Instant,
}

impl Drop for Seq {
    /// A sequence dropped before its end (the server stopping) tells its reader.
    fn drop(&mut self) {
        if self.produced < self.ask.tokens {
            self.progress.events.store(ABORTED, Release);
            self.progress.waker.wake();
        }
    }
}

/// A sequence in prefill, ordered so that the heap yields the earliest end first (and, at
/// equal ends, the first admitted).
#[derive(Debug)]
struct Prefill {
    ready: Instant,
    order: u64,
    seq: Seq,
}

impl PartialEq for Prefill {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Prefill {}

impl PartialOrd for Prefill {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Prefill {
    fn cmp(&self, other: &Self) -> Ordering {
        Reverse((self.ready, self.order)).cmp(&Reverse((other.ready, other.order)))
    }
}

/// The slots of every engine and the requests waiting for one.
#[derive(Debug)]
struct PoolState {
    waiting: VecDeque<Seq>,
    /// Free slots per engine.
    free: Vec<u32>,
    /// Per engine, sequences given a slot that the engine has not picked up yet.
    inbox: Vec<Vec<Seq>>,
    /// The power of the GPU the model stands for, told each change of the slots in use.
    power: PowerMeter,
}

impl PoolState {
    /// Tells the power model how many of the `slots` are in use from `now`.
    fn count_running(&mut self, now: Instant, slots: u64) {
        let free: u64 = self.free.iter().map(|&f| u64::from(f)).sum();
        self.power.set_running(now, slots.saturating_sub(free));
    }
}

#[derive(Debug)]
struct Pool {
    model: Arc<Model>,
    ttft: Duration,
    prefill_ns_per_token: f64,
    itl: Duration,
    /// A step's extra length per sequence in the batch.
    itl_ns_per_sequence: f64,
    per_event: u32,
    state: Mutex<PoolState>,
    /// One per engine: a sequence is in its inbox, or the pool closed.
    wakes: Box<[Notify]>,
    closed: AtomicBool,
    /// The slots of all engines.
    slots: u64,
    /// The prefix cache, when the model has one.
    cache: Option<Mutex<PrefixCache>>,
    block: u32,
    counts: EngineCounts,
    timings: Arc<EngineTimings>,
}

impl Pool {
    /// How long a decode step of `batch` sequences lasts.
    fn step(&self, batch: usize) -> Duration {
        let extra = self.itl_ns_per_sequence * batch as f64;
        self.itl + Duration::from_nanos(extra.round() as u64)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn stopped() -> InferError {
    InferError::Unavailable("the server is shutting down".into())
}

/// An `llm` model's engines; closing (or dropping) it ends their tasks.
#[derive(Debug)]
pub(crate) struct Engines {
    pool: Arc<Pool>,
}

impl Engines {
    /// Starts the model's engine tasks on the current tokio runtime.
    pub(crate) fn start(model: &Arc<Model>) -> anyhow::Result<Engines> {
        let def = &model.def;
        let ModelKind::Llm(timing) = &def.kind else {
            anyhow::bail!("model '{}' is not an llm model", def.name);
        };
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            anyhow::anyhow!(
                "the llm model '{}' needs a tokio runtime for its engines",
                def.name
            )
        })?;
        let LlmTiming {
            ttft_ms,
            itl_ms,
            itl_us_per_sequence,
            prefill_us_per_token,
            tokens_per_event,
            prefix_cache,
            block,
            gpu_watts_idle,
            gpu_watts_per_sequence,
            ..
        } = *timing;
        let engines = def.instances.max(1) as usize;
        let pool = Arc::new(Pool {
            model: model.clone(),
            ttft: inferperf_wire::number::saturating_secs(ttft_ms / 1e3),
            prefill_ns_per_token: prefill_us_per_token * 1e3,
            itl: inferperf_wire::number::saturating_secs(itl_ms / 1e3),
            itl_ns_per_sequence: itl_us_per_sequence * 1e3,
            per_event: tokens_per_event.max(1),
            state: Mutex::new(PoolState {
                waiting: VecDeque::new(),
                free: vec![def.max_batch.max(1); engines],
                inbox: (0..engines).map(|_| Vec::new()).collect(),
                power: PowerMeter::new(gpu_watts_idle, gpu_watts_per_sequence, Instant::now()),
            }),
            wakes: (0..engines).map(|_| Notify::new()).collect(),
            closed: AtomicBool::new(false),
            slots: u64::from(def.max_batch.max(1)) * engines as u64,
            cache: (prefix_cache > 0).then(|| Mutex::new(PrefixCache::new(prefix_cache, block))),
            block,
            counts: EngineCounts::default(),
            timings: Arc::default(),
        });
        for me in 0..engines {
            runtime.spawn(Engine::new(pool.clone(), me).run());
        }
        Ok(Engines { pool })
    }

    /// Gives the request a slot, or queues it for the first slot to free; `blocks` are
    /// its prompt's block names for the prefix cache.
    pub(crate) fn submit(&self, ask: Ask, blocks: Vec<u64>) -> Result<Ticket, InferError> {
        let pool = &*self.pool;
        let progress = Arc::new(Progress::default());
        let now = Instant::now();
        let seq = Seq {
            progress: progress.clone(),
            ask,
            blocks,
            produced: 0,
            events: 0,
            arrival: now,
            admitted: now,
            last_event: now,
        };
        let engine = {
            let mut state = lock(&pool.state);
            if pool.closed.load(Acquire) {
                return Err(stopped());
            }
            // The engine with the most free slots, the first of equals.
            let best = (0..state.free.len()).max_by_key(|&i| (state.free[i], Reverse(i)));
            match best.filter(|&i| state.free[i] > 0) {
                Some(i) => {
                    state.free[i] -= 1;
                    state.count_running(now, pool.slots);
                    state.inbox[i].push(seq);
                    Some(i)
                }
                None => {
                    state.waiting.push_back(seq);
                    None
                }
            }
        };
        if let Some(i) = engine {
            pool.wakes[i].notify_one();
        }
        Ok(Ticket {
            progress,
            events: ask.tokens.div_ceil(pool.per_event),
        })
    }

    /// Stops taking requests, aborts those waiting and ends the engine tasks (which abort
    /// their sequences).
    pub(crate) fn close(&self) {
        let pool = &*self.pool;
        let dropped = {
            let mut state = lock(&pool.state);
            pool.closed.store(true, Release);
            let inboxes: Vec<Seq> = state.inbox.iter_mut().flat_map(std::mem::take).collect();
            (std::mem::take(&mut state.waiting), inboxes)
        };
        drop(dropped);
        pool.wakes.iter().for_each(Notify::notify_one);
    }
}

/// Counts gathered during one pass of an engine, added to the model's counters at its end.
#[derive(Debug, Default)]
struct Tally {
    completion_tokens: u64,
    events: u64,
    completed: u64,
    completed_length: u64,
    cancelled: u64,
}

/// What one event did to a sequence.
#[derive(Debug, PartialEq, Eq)]
enum Emitted {
    More,
    Done,
    /// Not sent: the reader had gone.
    Gone,
}

/// Gives the sequence its next event of up to `per_event` tokens.
fn emit(tally: &mut Tally, per_event: u32, seq: &mut Seq) -> Emitted {
    if seq.progress.gone.load(Relaxed) {
        tally.cancelled += 1;
        return Emitted::Gone;
    }
    let n = per_event.min(seq.ask.tokens - seq.produced);
    seq.produced += n;
    seq.events += 1;
    seq.progress.events.store(seq.events, Release);
    tally.completion_tokens += u64::from(n);
    tally.events += u64::from(seq.ask.stream);
    let done = seq.produced == seq.ask.tokens;
    if seq.ask.stream || done {
        seq.progress.waker.wake();
    }
    if done {
        tally.completed += 1;
        tally.completed_length += u64::from(seq.ask.length);
        Emitted::Done
    } else {
        Emitted::More
    }
}

/// A finished sequence in the statistics extension: its wait for a slot as the queue time,
/// from its slot to its last token as compute; and in the end-to-end histogram.
fn record(pool: &Pool, seq: &Seq, end: Instant) {
    let model = &pool.model;
    pool.timings
        .e2e
        .observe(end.saturating_duration_since(seq.arrival));
    let compute = Compute {
        infer_ns: nanos(end.saturating_duration_since(seq.admitted)),
        ..Compute::default()
    };
    let queue_ns = nanos(seq.admitted.saturating_duration_since(seq.arrival));
    let request_ns = nanos(end.saturating_duration_since(seq.arrival));
    model.stats.record_success(1, queue_ns, compute, request_ns);
}

/// One engine: its sequences in prefill and in the decode batch, and its step clock.
struct Engine {
    pool: Arc<Pool>,
    me: usize,
    prefilling: BinaryHeap<Prefill>,
    decoding: Vec<Seq>,
    /// Out of prefill while a step runs: they join the next one.
    joining: Vec<Seq>,
    /// When the running step ends; `None` while nothing decodes.
    step_end: Option<Instant>,
    order: u64,
    inbox: Vec<Seq>,
    tally: Tally,
}

impl Engine {
    fn new(pool: Arc<Pool>, me: usize) -> Engine {
        Engine {
            pool,
            me,
            prefilling: BinaryHeap::new(),
            decoding: Vec::new(),
            joining: Vec::new(),
            step_end: None,
            order: 0,
            inbox: Vec::new(),
            tally: Tally::default(),
        }
    }

    async fn run(mut self) {
        let sleep = tokio::time::sleep_until(tokio::time::Instant::now());
        tokio::pin!(sleep);
        while !self.pool.closed.load(Acquire) {
            let notified = self.pool.wakes[self.me].notified();
            let woken = match self.next_wake() {
                Some(at) => {
                    sleep.as_mut().reset(at.into());
                    tokio::select! {
                        biased;
                        _ = notified => true,
                        _ = &mut sleep => false,
                    }
                }
                None => {
                    notified.await;
                    true
                }
            };
            if self.pool.closed.load(Acquire) {
                break;
            }
            if woken {
                self.take_inbox();
            }
            self.advance(Instant::now());
            self.flush_tally();
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let prefill = self.prefilling.peek().map(|p| p.ready);
        match (prefill, self.step_end) {
            (Some(p), Some(s)) => Some(p.min(s)),
            (p, s) => p.or(s),
        }
    }

    /// Starts the prefill of the sequences given a slot on arrival.
    fn take_inbox(&mut self) {
        let mut arrived = std::mem::take(&mut self.inbox);
        std::mem::swap(&mut lock(&self.pool.state).inbox[self.me], &mut arrived);
        for seq in arrived.drain(..) {
            self.start_prefill(seq);
        }
        self.inbox = arrived;
    }

    /// Starts the prefill of a sequence that took a slot: `ttft` plus the share of its
    /// prompt tokens the prefix cache does not hold.
    fn start_prefill(&mut self, seq: Seq) {
        let uncached = seq.ask.prompt_tokens - self.pool.look_up(&seq);
        let prompt = f64::from(uncached) * self.pool.prefill_ns_per_token;
        let ready = seq.admitted + self.pool.ttft + Duration::from_nanos(prompt as u64);
        self.order += 1;
        self.prefilling.push(Prefill {
            ready,
            order: self.order,
            seq,
        });
    }

    /// Runs every prefill end and step end due by `now`, in time order (a prefill ending
    /// on a step boundary joins that step).
    fn advance(&mut self, now: Instant) {
        loop {
            let prefill = self.prefilling.peek().map(|p| p.ready);
            match (prefill, self.step_end) {
                (Some(p), step) if p <= now && step.is_none_or(|s| p <= s) => self.end_prefill(),
                (_, Some(s)) if s <= now => self.end_step(s),
                _ => return,
            }
        }
    }

    fn end_prefill(&mut self) {
        let Some(Prefill { ready, mut seq, .. }) = self.prefilling.pop() else {
            return;
        };
        self.pool.remember(&std::mem::take(&mut seq.blocks));
        let emitted = emit(&mut self.tally, self.pool.per_event, &mut seq);
        if emitted != Emitted::Gone {
            let ttft = ready.saturating_duration_since(seq.arrival);
            self.pool.timings.ttft.observe(ttft);
            seq.last_event = ready;
        }
        match emitted {
            Emitted::More if self.step_end.is_some() => self.joining.push(seq),
            Emitted::More => {
                self.decoding.push(seq);
                self.step_end = Some(ready + self.pool.step(1));
            }
            Emitted::Done => {
                record(&self.pool, &seq, ready);
                self.admit(ready, 1);
            }
            Emitted::Gone => self.admit(ready, 1),
        }
    }

    /// The step ending at `end`: every decoding sequence gets its next event; those that
    /// end leave, those out of prefill join, and the next step starts at once.
    fn end_step(&mut self, end: Instant) {
        let (pool, tally) = (&*self.pool, &mut self.tally);
        let mut freed = 0;
        let gap = |seq: &mut Seq| {
            pool.timings
                .itl
                .observe(end.saturating_duration_since(seq.last_event));
            seq.last_event = end;
        };
        self.decoding
            .retain_mut(|seq| match emit(tally, pool.per_event, seq) {
                Emitted::More => {
                    gap(seq);
                    true
                }
                Emitted::Done => {
                    gap(seq);
                    record(pool, seq, end);
                    freed += 1;
                    false
                }
                Emitted::Gone => {
                    freed += 1;
                    false
                }
            });
        self.decoding.append(&mut self.joining);
        let batch = self.decoding.len();
        self.step_end = (batch > 0).then(|| end + self.pool.step(batch));
        if freed > 0 {
            self.admit(end, freed);
        }
    }

    /// `freed` slots freed at `at`: the first waiting requests take them, from then.
    fn admit(&mut self, at: Instant, freed: u32) {
        let pool = self.pool.clone();
        let mut state = lock(&pool.state);
        for _ in 0..freed {
            // A request whose client left while it waited is dropped, not started.
            let next = std::iter::from_fn(|| state.waiting.pop_front())
                .find(|seq| !self.drop_if_gone(seq));
            match next {
                Some(mut seq) => {
                    seq.admitted = at;
                    self.start_prefill(seq);
                }
                None => state.free[self.me] += 1,
            }
        }
        state.count_running(at, pool.slots);
    }

    /// Whether the sequence's reader has gone (counted as cancelled).
    fn drop_if_gone(&mut self, seq: &Seq) -> bool {
        let gone = seq.progress.gone.load(Relaxed);
        self.tally.cancelled += u64::from(gone);
        gone
    }

    fn flush_tally(&mut self) {
        let t = std::mem::take(&mut self.tally);
        let counters = &self.pool.model.tokens;
        add(&counters.completion_tokens, t.completion_tokens);
        add(&counters.events, t.events);
        add(&counters.completed, t.completed);
        add(&counters.cancelled, t.cancelled);
        add(&self.pool.counts.length, t.completed_length);
    }
}

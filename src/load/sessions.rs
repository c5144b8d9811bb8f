//! The sessions driver (`--session-concurrency N`, or a dataset of multi-turn sessions at a
//! concurrency): N slots, each a task with its own connection, each playing one session at
//! a time — its turns in order, each turn waiting its delay after the previous answer and
//! carrying the conversation so far (the earlier prompts and the answers the server gave),
//! encoded as it is sent. A slot takes the next session as one ends, cycling through the
//! dataset's sessions as the closed loop cycles through its requests. A turn that fails
//! ends its session: its later turns are counted as not sent.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::caller::{Called, Caller};
use super::client_threads::ClientThreads;
use crate::backend::replicas::Replicas;
use crate::backend::{Request, Target};
use crate::config::{LoadConfig, LoadMode};
use crate::data::sessions::{conversation_text, spans};
use crate::data::tokenizer::Counter;
use crate::data::{Dataset, Prompt};
use crate::error::{RunError, RunResult};
use crate::measure::sample::{Drained, SlotBuffer};

/// How long a slot pauses before its next session when the server refused a connection.
const UNREACHABLE_PAUSE: Duration = Duration::from_millis(20);

const ACTIVE: u8 = 0;
const PAUSED: u8 = 1;
const STOPPED: u8 = 2;

/// The sessions of a run: each entry's prompt and wait, where each session lies, and what
/// counts a turn's input tokens.
#[derive(Clone)]
pub struct SessionPlan {
    prompts: Vec<Prompt>,
    /// Each entry's wait after the previous turn's answer, in ms.
    delays: Vec<Option<f64>>,
    sessions: Vec<Range<usize>>,
    tokenizer: Option<Counter>,
}

impl SessionPlan {
    /// The run's sessions, when it has any: a dataset of multi-turn sessions, or
    /// `--session-concurrency`. Sessions are played at a concurrency; any other load mode
    /// is refused.
    pub fn for_run(load: &LoadConfig, dataset: &Dataset) -> RunResult<Option<SessionPlan>> {
        let has_turns = dataset.entries.iter().any(|e| e.turn.is_some());
        if !has_turns && load.session_concurrency.is_none() {
            return Ok(None);
        }
        if !matches!(load.mode, LoadMode::Concurrency) {
            return Err(RunError::bad_option(
                "The dataset holds multi-turn sessions, which are played N at a time: use --session-concurrency N (or --concurrency-range) instead of the request-rate, schedule or timeline flags.",
            ));
        }
        if load.shard.as_ref().is_some_and(|s| s.count > 1) {
            return Err(RunError::bad_option(
                "Multi-turn sessions are not dealt out to shards: run them in one process (drop --shard, or run without MPI).",
            ));
        }
        let prompts: Option<Vec<Prompt>> =
            dataset.entries.iter().map(|e| e.prompt.clone()).collect();
        let Some(prompts) = prompts else {
            return Err(RunError::bad_option(
                "Sessions are conversations of prompts: --session-concurrency runs an LLM dataset (--service-kind openai).",
            ));
        };
        Ok(Some(SessionPlan {
            prompts,
            delays: dataset
                .entries
                .iter()
                .map(|e| e.turn.and_then(|t| t.delay_ms))
                .collect(),
            sessions: spans(&dataset.entries),
            tokenizer: dataset.tokenizer.clone(),
        }))
    }

    /// How many sessions the dataset holds.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Input tokens of a turn sent with its history: the tokenizer's count of all of it
    /// (the prompt's own count when it has no history or nothing counts).
    fn input_tokens(&self, prompt: &Prompt, history: &[(String, String)]) -> u32 {
        if history.is_empty() {
            return prompt.input_tokens;
        }
        let text = conversation_text(prompt, history);
        self.tokenizer
            .as_ref()
            .and_then(|t| t.count(&text).ok())
            .unwrap_or(prompt.input_tokens)
    }
}

/// State one slot shares with the driver.
#[derive(Debug, Default)]
struct SlotShared {
    buffer: SlotBuffer,
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
            shared,
            target: server.target.clone(),
            requests: server.requests.clone(),
            plan: self.plan.clone(),
            next_session: self.next_session.clone(),
            not_sent: self.not_sent.clone(),
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

/// How a session went.
enum Played {
    /// Every turn was answered, or a turn failed and the session stopped.
    Ended,
    /// The slot was stopped (or its budget ran out) in the middle.
    Stopped,
}

/// One session slot: its connection and its loop.
struct SessionSlot {
    index: usize,
    replica: u16,
    shared: Arc<SlotShared>,
    target: Arc<Target>,
    /// The dataset's requests as encoded once: a first turn is sent as it is.
    requests: Arc<Vec<Request>>,
    plan: Arc<SessionPlan>,
    next_session: Arc<AtomicUsize>,
    not_sent: Arc<AtomicU64>,
    budget: Option<Arc<AtomicI64>>,
}

impl SessionSlot {
    async fn run(self) {
        let mut caller = Caller::new(self.index, &self.target).for_replica(self.replica);
        let opened = caller.open(&self.target).await;
        self.shared.connected.store(opened, Ordering::Relaxed);
        let sessions = self.plan.len().max(1);
        while self.wait_while_paused().await {
            let next = self.next_session.fetch_add(1, Ordering::Relaxed) % sessions;
            let Some(span) = self.plan.sessions.get(next).cloned() else {
                break;
            };
            if let Played::Stopped = self.play(&mut caller, span).await {
                break;
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

    /// Plays one session's turns in order.
    async fn play(&self, caller: &mut Caller, span: Range<usize>) -> Played {
        let mut history: Vec<(String, String)> = Vec::with_capacity(span.len());
        for (place, index) in span.clone().enumerate() {
            if place > 0 {
                self.wait_delay(self.plan.delays[index]).await;
            }
            if !self.wait_while_paused().await || !self.take_budget() {
                return Played::Stopped;
            }
            let prompt = &self.plan.prompts[index];
            let Some(request) = self.turn_request(index, prompt, &history) else {
                return Played::Stopped;
            };
            self.shared.busy.store(true, Ordering::Relaxed);
            let turn = (place + 1).min(u16::MAX as usize) as u16;
            let called =
                (caller.call_turn(&self.target, &request, &self.shared.buffer, turn)).await;
            self.shared.busy.store(false, Ordering::Relaxed);
            let connected = called != Called::NotConnected;
            self.shared.connected.store(connected, Ordering::Relaxed);
            if called != Called::Sent {
                let left = (span.len() - place - 1) as u64;
                self.not_sent.fetch_add(left, Ordering::Relaxed);
                if !connected {
                    tokio::time::sleep(UNREACHABLE_PAUSE).await;
                }
                return Played::Ended;
            }
            history.push((prompt.text.clone(), caller.answer_text().to_string()));
        }
        Played::Ended
    }

    /// The request of a turn: the one encoded once when it has no history, else encoded
    /// now with its history, its input tokens counted over all of it.
    fn turn_request(
        &self,
        index: usize,
        prompt: &Prompt,
        history: &[(String, String)],
    ) -> Option<Request> {
        let encoded = self.requests.get(index)?;
        if history.is_empty() {
            return Some(encoded.clone());
        }
        let payload = self.target.api.encode_turn(&self.target, prompt, history)?;
        Some(Request {
            index,
            payload,
            check: encoded.check.clone(),
            input_tokens: self.plan.input_tokens(prompt, history),
            max_tokens: encoded.max_tokens,
        })
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

//! What every driver does to send one request from an in-flight slot: reuse the slot's
//! connection (or open a new one), send on it under the slot's deadline, and record the
//! outcome — a timed sample and the gaps between its answers, a failure with what went
//! wrong, or a cancellation (`--request-cancellation-rate`) — in the slot's buffer. The closed loop, the open loop and the periodic loop only
//! decide when.

use std::sync::Arc;
use std::time::Instant;

use super::gate::{CallGates, Held};
use crate::backend::cache_bust::Digest;
use crate::backend::{
    AnswerText, Connection, Deadline, ErrorKind, Exchange, Failure, Request, Target,
};
use crate::measure::sample::{Sample, SlotBuffer};
use inferperf_wire::model::SequenceStep;

/// How a call went, as far as the driver needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Called {
    /// The request went out and was answered.
    Sent,
    /// The request went out and failed (an error was recorded).
    Failed,
    /// No connection could be opened; a failure was recorded.
    NotConnected,
}

/// One slot's connection, deadline and reusable list of answer gaps.
pub struct Caller {
    slot: usize,
    /// The `-u` server the slot sends to, marked on its samples.
    replica: u16,
    connection: Option<Connection>,
    deadline: Deadline,
    gaps: Vec<u64>,
    /// The text of the slot's current answer, counted later by the driver: kept only for
    /// an API that answers with text (OpenAI's); tensor answers carry none to keep.
    text: Option<AnswerText>,
    /// AIPerf's limits on the requests out (`--prefill-concurrency`, a ramped in-flight
    /// cap), shared by the driver's callers; `None` without such a flag.
    gates: Option<Arc<CallGates>>,
}

impl Caller {
    pub fn new(slot: usize, target: &Target) -> Caller {
        Caller {
            slot,
            replica: 0,
            connection: None,
            deadline: Deadline::new(target.peer.timeout),
            gaps: Vec::new(),
            // Answers whose text is counted in tokens keep it until it is counted.
            text: (target.api.service_kind().capabilities().tokens).then(AnswerText::default),
            gates: None,
        }
    }

    /// The same caller, each request passing `gates` (none: no limit).
    pub fn with_gates(self, gates: Option<Arc<CallGates>>) -> Caller {
        Caller { gates, ..self }
    }

    /// The same caller, marking its samples as sent to `-u` server number `replica`.
    pub fn for_replica(self, replica: u16) -> Caller {
        Caller { replica, ..self }
    }

    /// Opens the slot's connection ahead of its first request (so that connecting is not
    /// part of the level's measurement); false when it cannot be opened now.
    pub async fn open(&mut self, target: &Target) -> bool {
        Connection::reuse_or_open(&mut self.connection, target, self.slot)
            .await
            .is_ok()
    }

    /// Sends `request`, due at `scheduled` (open loop; otherwise when it is sent), and
    /// records what came of it in `buffer`. `watch`, when given, hears the number of each
    /// answer as it comes.
    pub async fn call(
        &mut self,
        target: &Target,
        request: &Request,
        scheduled: Option<Instant>,
        buffer: &SlotBuffer,
        watch: Option<&(dyn Fn(u32) + Sync)>,
    ) -> Called {
        self.call_step(target, request, scheduled, buffer, watch, None)
            .await
    }

    /// [`Caller::call`] for one step of a sequence (`None`: a request of no sequence): the
    /// request carries the step's id and flags, and its sample records them.
    pub async fn call_step(
        &mut self,
        target: &Target,
        request: &Request,
        scheduled: Option<Instant>,
        buffer: &SlotBuffer,
        watch: Option<&(dyn Fn(u32) + Sync)>,
        step: Option<SequenceStep>,
    ) -> Called {
        let marks = Marks {
            step,
            turn: 0,
            digest: None,
        };
        self.call_marked(target, request, scheduled, buffer, watch, marks)
            .await
    }

    /// Sends turn `turn` (from 1) of a multi-turn session, due at `scheduled` (a trace's
    /// timestamp; otherwise when it is sent), its sample marked with it; `digest` is the
    /// session's `--cache-bust` marker, the same on each of its turns.
    pub async fn call_turn(
        &mut self,
        target: &Target,
        request: &Request,
        scheduled: Option<Instant>,
        buffer: &SlotBuffer,
        (turn, digest): (u16, Option<Digest>),
    ) -> Called {
        let marks = Marks {
            step: None,
            turn,
            digest,
        };
        self.call_marked(target, request, scheduled, buffer, None, marks)
            .await
    }

    /// The content of the last answer received (empty when the API answers with tensors).
    pub fn answer_text(&self) -> &str {
        self.text.as_ref().map_or("", |t| t.content.as_str())
    }

    async fn call_marked(
        &mut self,
        target: &Target,
        request: &Request,
        scheduled: Option<Instant>,
        buffer: &SlotBuffer,
        watch: Option<&(dyn Fn(u32) + Sync)>,
        marks: Marks,
    ) -> Called {
        let Marks { step, turn, digest } = marks;
        let stepped;
        let request = match &step {
            Some(step) => {
                stepped = target.api.in_sequence(request, step);
                &stepped
            }
            None => request,
        };
        let busted;
        let request = match with_marker(target, request, digest) {
            Some(filled) => {
                busted = filled;
                &busted
            }
            None => request,
        };
        let (sequence_id, end) = step.map_or((0, false), |s| (s.id, s.end));
        // AIPerf's limits: a place until the last answer, and one until the first (both
        // given back when this call ends, at the latest).
        let gates = self.gates.as_deref();
        let _in_flight = match gates.and_then(|g| g.requests.as_ref()) {
            Some(gate) => Some(Held::enter(gate).await),
            None => None,
        };
        let prefill = match gates.and_then(|g| g.prefill.as_ref()) {
            Some(gate) => Some(Held::enter(gate).await),
            None => None,
        };
        let first_answer;
        let watch = match &prefill {
            Some(held) => {
                first_answer = move |n: u32| {
                    if n == 1 {
                        held.leave();
                    }
                    if let Some(watch) = watch {
                        watch(n);
                    }
                };
                Some(&first_answer as &(dyn Fn(u32) + Sync))
            }
            None => watch,
        };
        let opened = Connection::reuse_or_open(&mut self.connection, target, self.slot).await;
        let (conn, opening) = match opened {
            Ok(opened) => opened,
            Err(kind) => {
                let at = Instant::now();
                let sample = Sample::failed(scheduled.unwrap_or(at), at, at, kind);
                let sample = sample.of_request(request.index).of_replica(self.replica);
                buffer.push(sample.of_sequence(sequence_id, end).of_turn(turn), &[]);
                return Called::NotConnected;
            }
        };
        let sent = Instant::now();
        let scheduled = scheduled.unwrap_or(sent);
        let mut ex = Exchange::new(sent, &mut self.gaps);
        if let Some(text) = self.text.as_mut() {
            ex = ex.with_text(text);
        }
        if let Some(opening) = opening {
            ex.connect_ns = crate::backend::nanos(sent.saturating_duration_since(opening));
        }
        if let Some(watch) = watch {
            ex = ex.with_watch(watch);
        }
        let cancel_at = target.cancel.as_ref().and_then(|plan| plan.next());
        let exchange = conn.exchange(request, &mut ex, &mut self.deadline);
        let Some(exchanged) = until_cancelled(exchange, cancel_at.map(|d| sent + d)).await else {
            // Closed on purpose: the connection goes with it, and the slot opens a new one.
            self.connection = None;
            let sample = Sample::failed(scheduled, sent, Instant::now(), ErrorKind::Cancelled)
                .of_request(request.index)
                .of_replica(self.replica)
                .of_sequence(sequence_id, end)
                .of_turn(turn);
            buffer.push(sample, &[]);
            return Called::Sent;
        };
        match exchanged {
            Ok(()) => {
                if target.connection_per_request {
                    self.connection = None;
                }
                let sample = Sample::answered(scheduled, &ex)
                    .of_request(request.index)
                    .of_replica(self.replica)
                    .of_sequence(sequence_id, end)
                    .of_turn(turn);
                buffer.push_answer(sample, ex.gaps(), ex.text());
                Called::Sent
            }
            Err(failure) => {
                if !failure.kind.leaves_connection_usable() {
                    self.connection = None;
                }
                let sample = Sample::failed(scheduled, sent, Instant::now(), failure.kind)
                    .of_request(request.index)
                    .of_replica(self.replica)
                    .of_sequence(sequence_id, end)
                    .of_turn(turn);
                buffer.push_failure(sample, failure);
                Called::Failed
            }
        }
    }
}

/// What a call's sample is marked with: its sequence step, its session turn (0: none);
/// and its session's `--cache-bust` digest (`None`: the request's own).
struct Marks {
    step: Option<SequenceStep>,
    turn: u16,
    digest: Option<Digest>,
}

/// `request` with its `--cache-bust` marker filled in (the session's `digest`, else the
/// next trajectory's); `None` when the run's requests carry none.
fn with_marker(target: &Target, request: &Request, digest: Option<Digest>) -> Option<Request> {
    let plan = target.cache_bust.as_ref()?;
    let digest = digest.unwrap_or_else(|| plan.next_digest());
    Some(Request {
        payload: crate::backend::cache_bust::fill(&request.payload, &digest)?,
        ..request.clone()
    })
}

/// Runs `exchange` to its end, or drops it at `cancel_at` (`--request-cancellation-rate`):
/// `None` when it was cancelled. The exchange is polled before the deadline is looked at,
/// so with no delay the request is still written whole before it is dropped; an answer
/// complete before the deadline is an answer.
async fn until_cancelled(
    exchange: impl std::future::Future<Output = Result<(), Failure>>,
    cancel_at: Option<Instant>,
) -> Option<Result<(), Failure>> {
    match cancel_at {
        None => Some(exchange.await),
        Some(at) => tokio::time::timeout_at(tokio::time::Instant::from_std(at), exchange)
            .await
            .ok(),
    }
}

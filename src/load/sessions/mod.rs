//! Multi-turn sessions on the wire: what a session's turns are ([`SessionPlan`]) and how one
//! session is played ([`TurnPlayer`]) — its turns in order, each after the one before it is
//! answered, a chat's turn carrying the conversation so far (the earlier prompts and the
//! answers the server gave), encoded as it is sent. A turn that fails ends its session: its
//! later turns are counted as not sent. When a turn goes is the load mode's: N sessions at a
//! time ([`slots`], `--session-concurrency`), each session at its trace's timestamps
//! ([`scheduled`], `--fixed-schedule`), or sessions started by a clock ([`open`]: AIPerf's
//! users, or a request rate whose ticks each send one turn).

pub mod open;
pub mod scheduled;
pub mod slots;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::caller::{Called, Caller};
use crate::backend::{Request, Target};
use crate::config::{LoadConfig, LoadMode};
use crate::data::chat_template::conversation_messages;
use crate::data::sessions::{conversation_text, spans};
use crate::data::tokenizer::Counter;
use crate::data::{Dataset, Prompt};
use crate::measure::sample::SlotBuffer;
use inferperf_wire::error::{RunError, RunResult};

pub use open::OpenSessions;
pub use scheduled::ScheduledSessions;
pub use slots::SessionLoop;

/// When a turn goes, as its entry says: at a trace's timestamp, or a wait after the answer
/// to the turn before; and whether it carries its session's history.
#[derive(Debug, Clone, Copy, Default)]
struct TurnTiming {
    timestamp_ms: Option<f64>,
    delay_ms: Option<f64>,
    history: bool,
}

impl TurnTiming {
    /// The wait after the answer before this turn, when it has one.
    fn delay(&self) -> Option<std::time::Duration> {
        let ms = self.delay_ms.filter(|&ms| ms > 0.0)?;
        Some(inferperf_wire::number::saturating_secs(ms / 1000.0))
    }
}

/// The sessions of a run: each entry's prompt and timing, where each session lies, and
/// what counts a turn's input tokens.
#[derive(Clone)]
pub struct SessionPlan {
    prompts: Vec<Prompt>,
    turns: Vec<TurnTiming>,
    sessions: Vec<Range<usize>>,
    tokenizer: Option<Counter>,
    /// `--cache-bust`'s marker tokens, in every turn's input.
    marker_tokens: u32,
}

impl SessionPlan {
    /// The run's sessions, when it has any: a dataset of multi-turn sessions, or
    /// `--session-concurrency`. Sessions are played at a concurrency or at their trace's
    /// timestamps (`--fixed-schedule`); any other load mode is refused.
    pub fn for_run(load: &LoadConfig, dataset: &Dataset) -> RunResult<Option<SessionPlan>> {
        let has_turns = dataset.entries.iter().any(|e| e.turn.is_some());
        if !has_turns && load.modes.user_centric.is_some() {
            return Err(RunError::bad_option(
                "--user-centric-rate plays multi-turn sessions and the dataset has none: give --conversation-turn-mean 2 or more.",
            ));
        }
        if !has_turns && load.session_concurrency.is_none() {
            return Ok(None);
        }
        check_played(load)?;
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
        let turns = (dataset.entries.iter())
            .map(|e| TurnTiming {
                timestamp_ms: e.timestamp_ms,
                delay_ms: e.turn.and_then(|t| t.delay_ms),
                history: e.turn.is_some_and(|t| t.history),
            })
            .collect();
        let plan = SessionPlan {
            prompts,
            turns,
            sessions: spans(&dataset.entries),
            tokenizer: dataset.tokenizer.clone(),
            marker_tokens: dataset.marker_tokens,
        };
        if load.mode == LoadMode::FixedSchedule {
            plan.check_first_timestamps(dataset)?;
        }
        Ok(Some(plan))
    }

    /// How many sessions the dataset holds.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// A fixed schedule starts each session at its first turn's timestamp: every session
    /// needs one.
    fn check_first_timestamps(&self, dataset: &Dataset) -> RunResult<()> {
        match self.sessions.iter().find(|s| self.turns[s.start].timestamp_ms.is_none()) {
            Some(session) => Err(RunError::bad_option(format!(
                "--fixed-schedule starts each session at its first turn's \"timestamp\" (ms), and {} has none: give every session's first turn a timestamp, or play the sessions with --session-concurrency.",
                dataset.entries[session.start].origin
            ))),
            None => Ok(()),
        }
    }

    /// Input tokens of a turn sent with its history: the tokenizer's count of all of it
    /// (the prompt's own count when it has no history or nothing counts).
    fn input_tokens(&self, prompt: &Prompt, history: &[(String, String)]) -> u32 {
        if history.is_empty() {
            return prompt.input_tokens;
        }
        let Some(tokenizer) = &self.tokenizer else {
            return prompt.input_tokens;
        };
        let templated = tokenizer.count_chat(&conversation_messages(prompt, history));
        let counted = match templated {
            Some(templated) => templated.ok(),
            None => tokenizer.count(&conversation_text(prompt, history)).ok(),
        };
        counted.map_or(prompt.input_tokens, |n| n + self.marker_tokens)
    }
}

/// Sessions are played N at a time, at their timestamps, as users, or at one request rate
/// (or `--request-intervals`); a sweep of rates and a load that changes over time are
/// refused.
fn check_played(load: &LoadConfig) -> RunResult<()> {
    let refused = match &load.mode {
        LoadMode::Concurrency | LoadMode::FixedSchedule | LoadMode::Intervals { .. } => None,
        _ if load.modes.user_centric.is_some() => None,
        LoadMode::RequestRate { .. } if load.levels().take(2).count() == 1 => None,
        LoadMode::RequestRate { .. } => {
            Some("a sweep of request rates (--request-rate-range START:END)")
        }
        _ => Some("a load that changes over time (--ramp, --load-steps, periodic concurrency)"),
    };
    match refused {
        Some(what) => Err(RunError::bad_option(format!(
            "The dataset holds multi-turn sessions, which are played N at a time, at one request rate or at their timestamps, not under {what}: give one --request-rate, --session-concurrency N (or --concurrency-range), or --fixed-schedule."
        ))),
        None => Ok(()),
    }
}

/// When the next turn of a session goes: the load mode's part of playing a session.
pub(super) trait Pace {
    /// Waits until turn `index` of the dataset, at `place` in its session, may go; the
    /// instant it was due (`None`: when it is sent), or `Err` when the session must stop.
    async fn due(
        &self,
        plan: &SessionPlan,
        index: usize,
        place: usize,
    ) -> Result<Option<Instant>, Stop>;

    /// Told when a turn goes out (true) and when it is done (false).
    fn in_flight(&self, busy: bool);
}

/// The session was stopped (or its budget ran out) in the middle.
pub(super) struct Stop;

/// What plays a session's turns on a caller's connection to one server.
pub(super) struct TurnPlayer {
    pub target: Arc<Target>,
    /// The dataset's requests as encoded once: a turn without history is sent as it is.
    pub requests: Arc<Vec<Request>>,
    pub plan: Arc<SessionPlan>,
    pub buffer: Arc<SlotBuffer>,
    /// Turns not sent because an earlier turn of their session failed.
    pub not_sent: Arc<AtomicU64>,
}

impl TurnPlayer {
    /// Plays one session's turns in order, each when `pace` lets it go. Ok when every turn
    /// was answered or a turn failed (the later ones counted as not sent); `Err` when the
    /// session was stopped.
    pub async fn play(
        &self,
        caller: &mut Caller,
        span: Range<usize>,
        pace: &impl Pace,
    ) -> Result<Called, Stop> {
        let mut history: Vec<(String, String)> = Vec::with_capacity(span.len());
        // The session's `--cache-bust` marker, drawn at its start.
        let digest = self
            .target
            .cache_bust
            .as_ref()
            .map(|plan| plan.next_digest());
        for (place, index) in span.clone().enumerate() {
            // Encoded (its history counted) before it is due, so that the work is not in
            // its latency.
            let prompt = &self.plan.prompts[index];
            let carried = match self.plan.turns[index].history {
                true => history.as_slice(),
                false => &[],
            };
            let request = self.turn_request(index, prompt, carried).ok_or(Stop)?;
            let scheduled = pace.due(&self.plan, index, place).await?;
            pace.in_flight(true);
            let turn = (place + 1).min(u16::MAX as usize) as u16;
            let marks = (turn, digest);
            let called =
                (caller.call_turn(&self.target, &request, scheduled, &self.buffer, marks)).await;
            pace.in_flight(false);
            if called != Called::Sent {
                let left = (span.len() - place - 1) as u64;
                self.not_sent.fetch_add(left, Ordering::Relaxed);
                return Ok(called);
            }
            history.push((prompt.text.clone(), caller.answer_text().to_string()));
        }
        Ok(Called::Sent)
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
}

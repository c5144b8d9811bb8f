//! One finished request as the driver saw it, and the per-slot buffer it goes into. The
//! driver only appends here; windows are cut from these buffers off the hot path. A request
//! answered many times (a stream) is one sample: the times of its first and final answers
//! and how many came; the gaps between its answers go into the slot's one list of gaps,
//! which is emptied at every cut — there is no list per request. A buffer keeps room for
//! what it held at its last cuts, not for the most it ever held (see [`fit`]), so memory
//! stays flat over a long run.

use std::sync::Mutex;
use std::time::Instant;

use crate::backend::{AnswerText, ErrorKind, Exchange, Failure, Tokens};

/// Samples a slot's buffer keeps room for however few it held lately (the least a `Vec` of
/// them allocates).
const SLOT_ROOM: usize = 4;
/// Samples the profiler's list of one cut keeps room for (a tenth of a second at 10,000/s).
const CUT_ROOM: usize = 1024;

/// Timestamps and outcome of one request. All instants come from the monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// When the request was meant to go (open loop); equal to `sent` in closed loop.
    pub scheduled: Instant,
    /// When the client began sending it.
    pub sent: Instant,
    /// Nanoseconds from `sent` until the request was handed to the connection.
    pub send_ns: u32,
    /// Nanoseconds spent receiving and decoding the answer after its first byte.
    pub recv_ns: u32,
    /// When the first answer came (equal to `done` when none carried outputs).
    pub first: Instant,
    /// When the request ended: its last answer with outputs (perf_analyzer's rule for a
    /// stream closed by an empty final answer), or the failure.
    pub done: Instant,
    /// Answers that carried outputs.
    pub answers: u32,
    /// How many gaps between answers this sample put in its slot's list (answers − 1).
    pub gaps: u32,
    /// Nanoseconds spent opening a connection for this request (0 when one was reused).
    pub connect_ns: u32,
    /// The tokens of a text generation (all zero for tensors).
    pub tokens: Tokens,
    /// The request's place in the dataset (for per-request exports).
    pub request: u32,
    /// Which `-u` server it went to (its place in the list; 0 with one server).
    pub replica: u16,
    /// The correlation id of the sequence it is a step of (0: none).
    pub sequence_id: u64,
    /// It was the last request of its sequence.
    pub sequence_end: bool,
    /// Its place in a multi-turn session, from 1 (0: not a turn of a session).
    pub turn: u16,
    pub error: Option<ErrorKind>,
}

impl Sample {
    /// A request answered correctly, as its exchange timed it.
    pub fn answered(scheduled: Instant, ex: &Exchange<'_>) -> Sample {
        Sample {
            scheduled,
            sent: ex.sent,
            send_ns: ex.send_ns,
            recv_ns: ex.recv_ns,
            first: ex.first_answer(),
            done: ex.end(),
            answers: ex.answers(),
            gaps: ex.gaps().len() as u32,
            connect_ns: ex.connect_ns,
            tokens: ex.tokens,
            request: 0,
            replica: 0,
            sequence_id: 0,
            sequence_end: false,
            turn: 0,
            error: None,
        }
    }

    /// A request answered once, at `done` (what a unary call records).
    pub fn once(scheduled: Instant, sent: Instant, done: Instant) -> Sample {
        Sample {
            scheduled,
            sent,
            send_ns: 0,
            recv_ns: 0,
            first: done,
            done,
            answers: 1,
            gaps: 0,
            connect_ns: 0,
            tokens: Tokens::default(),
            request: 0,
            replica: 0,
            sequence_id: 0,
            sequence_end: false,
            turn: 0,
            error: None,
        }
    }

    /// A request that failed with `kind` at `at`.
    pub fn failed(scheduled: Instant, sent: Instant, at: Instant, kind: ErrorKind) -> Sample {
        Sample {
            scheduled,
            sent,
            send_ns: 0,
            recv_ns: 0,
            first: at,
            done: at,
            answers: 0,
            gaps: 0,
            connect_ns: 0,
            tokens: Tokens::default(),
            request: 0,
            replica: 0,
            sequence_id: 0,
            sequence_end: false,
            turn: 0,
            error: Some(kind),
        }
    }

    /// The same sample, marked as the answer to dataset entry `request`.
    pub fn of_request(self, request: usize) -> Sample {
        Sample {
            request: request as u32,
            ..self
        }
    }

    /// The same sample, marked as a step of sequence `id` (`end`: its last).
    pub fn of_sequence(self, id: u64, end: bool) -> Sample {
        Sample {
            sequence_id: id,
            sequence_end: end,
            ..self
        }
    }

    /// The same sample, marked as turn `turn` (from 1) of a multi-turn session.
    pub fn of_turn(self, turn: u16) -> Sample {
        Sample { turn, ..self }
    }

    /// The same sample, marked as sent to `-u` server number `replica`.
    pub fn of_replica(self, replica: u16) -> Sample {
        Sample { replica, ..self }
    }

    /// Latency from the actual send to the final response (the service time), in ns.
    pub fn latency_ns(&self) -> u64 {
        self.done.saturating_duration_since(self.sent).as_nanos() as u64
    }

    /// Latency from the scheduled send to the final response, in ns: what the user of the
    /// service experiences when the client could not send on time.
    pub fn latency_from_schedule_ns(&self) -> u64 {
        self.done
            .saturating_duration_since(self.scheduled)
            .as_nanos() as u64
    }

    /// From the scheduled send to the first answer, in ns.
    pub fn first_response_ns(&self) -> u64 {
        self.first
            .saturating_duration_since(self.scheduled)
            .as_nanos() as u64
    }
}

/// What a failed request's answer had wrong, kept for the report: the first of each kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorNote {
    pub at: Instant,
    pub kind: ErrorKind,
    pub text: String,
}

/// What a cut takes out of the buffers: samples in the order they finished, the gaps of
/// their answers in the same order, the text of their answers (each generation's content
/// then its reasoning, `tokens.content_bytes` and `tokens.reasoning_bytes` long) for the
/// driver to count, and the notes on failures.
#[derive(Debug, Default)]
pub struct Drained {
    pub samples: Vec<Sample>,
    pub gaps: Vec<u64>,
    pub texts: String,
    pub notes: Vec<ErrorNote>,
}

impl Drained {
    /// Empties the lists, keeping room for about what they held (see [`fit`]).
    pub fn clear(&mut self) {
        let held = (self.samples.len(), self.gaps.len());
        self.samples.clear();
        self.gaps.clear();
        self.texts = String::new();
        self.notes.clear();
        fit(&mut self.samples, held.0, CUT_ROOM);
        fit(&mut self.gaps, held.1, CUT_ROOM);
    }

    /// Each sample (mutable, for its tokens to be counted) with its content and reasoning
    /// text.
    pub fn each_text(&mut self) -> impl Iterator<Item = (&mut Sample, &str, &str)> {
        let texts = self.texts.as_str();
        let mut offset = 0usize;
        self.samples.iter_mut().map(move |s| {
            let take = |from: usize, len: u32| {
                let end = (from + len as usize).min(texts.len());
                texts.get(from.min(end)..end).unwrap_or("")
            };
            let content = take(offset, s.tokens.content_bytes);
            let reasoning = take(offset + content.len(), s.tokens.reasoning_bytes);
            offset += content.len() + reasoning.len();
            (s, content, reasoning)
        })
    }

    /// Each sample with its gaps.
    pub fn each(&self) -> impl Iterator<Item = (&Sample, &[u64])> {
        let mut offset = 0usize;
        self.samples.iter().map(move |s| {
            let end = (offset + s.gaps as usize).min(self.gaps.len());
            let gaps = &self.gaps[offset.min(end)..end];
            offset = end;
            (s, gaps)
        })
    }
}

/// The samples one in-flight slot has finished since the last window cut. Only its slot
/// writes to it; the lock is contended only when the profiler takes the samples out.
#[derive(Debug, Default)]
pub struct SlotBuffer {
    recorded: Mutex<Drained>,
}

impl SlotBuffer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Drained> {
        self.recorded
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Records a finished request and the gaps between its answers.
    pub fn push(&self, sample: Sample, gaps: &[u64]) {
        self.push_answer(sample, gaps, None);
    }

    /// Records a finished request, the gaps between its answers and the text it carried
    /// (without one, the sample holds no text to count).
    pub fn push_answer(&self, mut sample: Sample, gaps: &[u64], text: Option<&AnswerText>) {
        let mut recorded = self.lock();
        match text {
            Some(text) => {
                sample.tokens.content_bytes = text.content.len() as u32;
                sample.tokens.reasoning_bytes = text.reasoning.len() as u32;
                recorded.texts.push_str(&text.content);
                recorded.texts.push_str(&text.reasoning);
            }
            None => {
                sample.tokens.content_bytes = 0;
                sample.tokens.reasoning_bytes = 0;
            }
        }
        recorded.samples.push(sample);
        recorded.gaps.extend_from_slice(gaps);
    }

    /// Records a failed request; its detail, if any, is kept when it is the slot's first of
    /// its kind since the last cut.
    pub fn push_failure(&self, sample: Sample, failure: Failure) {
        let mut recorded = self.lock();
        recorded.samples.push(sample);
        let Some(text) = failure.detail else {
            return;
        };
        if !recorded.notes.iter().any(|n| n.kind == failure.kind) {
            recorded.notes.push(ErrorNote {
                at: sample.done,
                kind: failure.kind,
                text,
            });
        }
    }

    /// Moves every sample whose final response arrived at or before `boundary` into `out`
    /// (a slot finishes its requests in order, so they are the oldest ones), with their gaps
    /// and the notes of that time; later ones stay for the next window.
    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        let mut recorded = self.lock();
        // The lists only grow between cuts: what they hold now is the most since the last.
        let held = (recorded.samples.len(), recorded.gaps.len());
        let taken = recorded
            .samples
            .iter()
            .position(|s| s.done > boundary)
            .unwrap_or(held.0);
        if taken > 0 {
            let gaps: usize = recorded.samples[..taken]
                .iter()
                .map(|s| s.gaps as usize)
                .sum();
            let gaps = gaps.min(held.1);
            let text: usize = recorded.samples[..taken]
                .iter()
                .map(|s| s.tokens.content_bytes as usize + s.tokens.reasoning_bytes as usize)
                .sum();
            // Whole answers were pushed, so this is a character boundary; were it not, the
            // texts are dropped rather than split mid-character.
            let text = match recorded.texts.is_char_boundary(text) {
                true => text,
                false => recorded.texts.len(),
            };
            out.samples.extend(recorded.samples.drain(..taken));
            out.gaps.extend(recorded.gaps.drain(..gaps));
            out.texts.push_str(&recorded.texts[..text]);
            recorded.texts.drain(..text);
            if recorded.texts.is_empty() {
                recorded.texts = String::new();
            }
            let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut recorded.notes)
                .into_iter()
                .partition(|n| n.at <= boundary);
            out.notes.extend(now);
            recorded.notes = later;
        }
        fit(&mut recorded.samples, held.0, SLOT_ROOM);
        fit(&mut recorded.gaps, held.1, SLOT_ROOM);
    }

    /// Number of samples waiting to be cut into a window.
    pub fn len(&self) -> usize {
        self.lock().samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Lets `list`, which held `held` items at its fullest since it was last emptied, keep room
/// for twice that (at least `floor`) once it has four times that: room for the most it ever
/// held would otherwise stay. With thousands of slots, each slot's list grew whenever a
/// cut came late or a burst of answers came to it, never shrank, and the run's memory crept
/// up for as long as it ran (10,000 connections: the live heap grew 4 MiB in 33 s, and
/// 30,000 req/s over 256 connections 16 MiB in 40 s). The factor of four keeps a list whose
/// load varies from being shrunk and grown again at every cut.
fn fit<T>(list: &mut Vec<T>, held: usize, floor: usize) {
    if list.capacity() > floor.max(held.saturating_mul(4)) {
        list.shrink_to(floor.max(held.saturating_mul(2)));
    }
}

/// The buffers of a driver whose slots come and go (open-loop workers, periodic streams):
/// each new slot adds its own; cuts drain them all.
#[derive(Debug, Default)]
pub struct SlotBuffers {
    buffers: Mutex<Vec<std::sync::Arc<SlotBuffer>>>,
}

impl SlotBuffers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<std::sync::Arc<SlotBuffer>>> {
        self.buffers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer for a new slot.
    pub fn add(&self) -> std::sync::Arc<SlotBuffer> {
        let buffer = std::sync::Arc::new(SlotBuffer::default());
        self.lock().push(buffer.clone());
        buffer
    }

    /// Moves every sample finished by `boundary` into `out`.
    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        for buffer in self.lock().iter() {
            buffer.drain_until(boundary, out);
        }
    }

    /// Samples waiting in the buffers.
    pub fn pending(&self) -> usize {
        self.lock().iter().map(|b| b.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample(t: Instant, done_ms: u64, gaps: u32) -> Sample {
        let done = t + Duration::from_millis(done_ms);
        Sample {
            scheduled: t,
            sent: t,
            send_ns: 0,
            recv_ns: 0,
            first: done,
            done,
            answers: gaps + 1,
            gaps,
            connect_ns: 0,
            tokens: Tokens::default(),
            request: 0,
            replica: 0,
            sequence_id: 0,
            sequence_end: false,
            turn: 0,
            error: None,
        }
    }

    #[test]
    fn a_cut_takes_the_finished_samples_with_their_own_gaps() {
        let t = Instant::now();
        let buffer = SlotBuffer::default();
        buffer.push(sample(t, 10, 2), &[1, 2]);
        buffer.push(sample(t, 20, 0), &[]);
        buffer.push(sample(t, 30, 1), &[3]);
        let failure = Failure::new(ErrorKind::Validation, "first");
        let at = t + Duration::from_millis(40);
        buffer.push_failure(Sample::failed(t, t, at, ErrorKind::Validation), failure);
        let second = Failure::new(ErrorKind::Validation, "second");
        buffer.push_failure(Sample::failed(t, t, at, ErrorKind::Validation), second);
        let mut out = Drained::default();
        buffer.drain_until(t + Duration::from_millis(25), &mut out);
        let got: Vec<(u32, Vec<u64>)> = out.each().map(|(s, g)| (s.answers, g.to_vec())).collect();
        assert_eq!(got, vec![(3, vec![1, 2]), (1, vec![])]);
        assert!(out.notes.is_empty());
        out.clear();
        buffer.drain_until(t + Duration::from_millis(50), &mut out);
        let got: Vec<Vec<u64>> = out.each().map(|(_, g)| g.to_vec()).collect();
        assert_eq!(got, vec![vec![3], vec![], vec![]]);
        assert_eq!(out.notes.len(), 1, "one note per kind");
        assert_eq!(out.notes[0].text, "first");
        assert!(buffer.is_empty());
    }

    fn room(buffer: &SlotBuffer) -> usize {
        buffer.lock().samples.capacity()
    }

    #[test]
    fn a_buffer_keeps_room_for_its_recent_load_not_its_largest() {
        let t = Instant::now();
        let buffer = SlotBuffer::default();
        let mut out = Drained::default();
        // A burst (a late cut) grows the list.
        (0..1000).for_each(|_| buffer.push(sample(t, 1, 0), &[]));
        let grown = room(&buffer);
        assert!(grown >= 1000);
        buffer.drain_until(t + Duration::from_millis(10), &mut out);
        assert_eq!(out.samples.len(), 1000);
        assert_eq!(
            room(&buffer),
            grown,
            "kept while it held that much at the cut"
        );
        // One sample at the next cut: the room goes back to what that needs.
        buffer.push(sample(t, 1, 0), &[]);
        buffer.drain_until(t + Duration::from_millis(10), &mut out);
        assert_eq!(room(&buffer), SLOT_ROOM);
        // A steady load is not shrunk and grown again at every cut.
        for _ in 0..3 {
            (0..3).for_each(|_| buffer.push(sample(t, 1, 0), &[]));
            buffer.drain_until(t + Duration::from_millis(10), &mut out);
            assert_eq!(room(&buffer), SLOT_ROOM);
        }
        // The profiler's list of a cut lets its room go the same way.
        assert!(out.samples.capacity() >= 1010);
        out.clear();
        out.clear();
        assert!(out.samples.capacity() <= CUT_ROOM);
    }
}

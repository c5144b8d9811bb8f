//! One execution of a decoupled (`stream`) model, run on an instance thread: every request
//! of the batch gets its answers as they are produced — the first `first_ms` after the
//! execution starts, the rest `interval_ms` apart, each carrying the request's own
//! `INPUT0` as `OUTPUT0` — then an empty final answer. The instance is held for the whole
//! stream, as a Triton backend holds it while it sends a decoupled model's responses. Each
//! answer is counted under its response index in the statistics; a request whose client
//! has gone stops getting answers, and an execution whose clients have all gone ends early.

use std::time::Instant;

use tokio::sync::mpsc::{self, OwnedPermit};

use super::def::ModelKind;
use super::error::InferError;
use super::models::{service_time, wait_until, Job, Model};
use super::stats::{nanos, Compute, ResponseEnd};
use inferperf_wire::{InferResponse, Tensor};

/// One answer of a streamed inference: a response (no outputs for the empty final one) and
/// whether it is the last.
#[derive(Debug, Clone)]
pub struct StreamAnswer {
    pub response: InferResponse,
    pub last: bool,
}

/// What a stream carries: answers, or the error that ends it.
pub(crate) type StreamItem = Result<StreamAnswer, InferError>;

/// Where one request's answers go.
pub(crate) type StreamSender = mpsc::Sender<StreamItem>;

/// A channel with room for every answer a request of the model can get (its responses, the
/// final one and an error), so the instance never waits on a slow reader.
pub(crate) fn channel(model: &Model) -> (StreamSender, mpsc::Receiver<StreamItem>) {
    let responses = match model.def.kind {
        ModelKind::Stream { responses, .. } => responses as usize,
        _ => 0,
    };
    mpsc::channel(responses + 2)
}

/// A stream that holds one answer, the last: how a model that is not decoupled answers on
/// a stream.
pub(crate) fn single(response: InferResponse) -> mpsc::Receiver<StreamItem> {
    let (sender, answers) = mpsc::channel(1);
    let _ = sender.try_send(Ok(StreamAnswer {
        response,
        last: true,
    }));
    answers
}

/// One request of the execution while its answers are being sent.
struct Open {
    job: Job,
    sender: StreamSender,
    /// The answer every non-final response repeats.
    template: InferResponse,
    /// False once the client has gone.
    listening: bool,
}

impl Open {
    fn new(model: &Model, mut job: Job, sender: StreamSender) -> Open {
        let wanted = job.wanted & 1 != 0;
        let outputs: Vec<Tensor> = std::mem::take(&mut job.inputs)
            .into_iter()
            .take(1)
            .filter(|_| wanted)
            .map(|t| Tensor {
                name: "OUTPUT0".to_string(),
                ..t
            })
            .collect();
        let template = model.response(std::mem::take(&mut job.id), outputs);
        Open {
            job,
            sender,
            template,
            listening: true,
        }
    }

    /// Hands over one answer that is not the last; false when the client has gone.
    fn send(&mut self, response: InferResponse) -> bool {
        let answer = StreamAnswer {
            response,
            last: false,
        };
        self.listening = self.listening && self.sender.try_send(Ok(answer)).is_ok();
        self.listening
    }

    fn empty_response(&self) -> InferResponse {
        InferResponse {
            outputs: Vec::new(),
            ..self.template.clone()
        }
    }
}

/// The stream model's timing: responses, mean first delay and gap (ms), how each delay is
/// drawn, and whether waiting spins.
struct Timing {
    responses: u32,
    first_ms: f64,
    interval_ms: f64,
    dist: super::def::Dist,
    spin: bool,
}

fn timing(kind: &ModelKind) -> Option<Timing> {
    match *kind {
        ModelKind::Stream {
            responses,
            first_ms,
            interval_ms,
            dist,
            spin,
        } => Some(Timing {
            responses,
            first_ms,
            interval_ms,
            dist,
            spin,
        }),
        _ => None,
    }
}

/// Runs one execution of the jobs, answering each through its sender, and records the
/// statistics. Called on an instance thread; it sleeps (or spins) between responses.
pub(crate) fn execute(model: &Model, jobs: Vec<Job>, senders: Vec<StreamSender>) {
    let Some(timing) = timing(&model.def.kind) else {
        let error = InferError::Internal(format!("model '{}' is not decoupled", model.name()));
        for sender in senders {
            let _ = sender.try_send(Err(error.clone()));
        }
        return;
    };
    let start = Instant::now();
    let mut open: Vec<Open> = (jobs.into_iter().zip(senders))
        .map(|(job, sender)| Open::new(model, job, sender))
        .collect();
    let prepared = Instant::now();
    let (last_produced, previous) = send_responses(model, &timing, &mut open, start);
    let finals = reserve_finals(model, &timing, &mut open, previous);
    let end = Instant::now();
    let compute = Compute {
        input_ns: nanos(prepared - start),
        infer_ns: nanos(last_produced.saturating_duration_since(prepared)),
        output_ns: nanos(end.saturating_duration_since(last_produced)),
    };
    // Recorded before the final answers go, so a client that has its final answer reads
    // statistics that count its request.
    record(model, &open, start, end, compute);
    for (slot, response) in finals {
        slot.send(Ok(StreamAnswer {
            response,
            last: true,
        }));
    }
}

/// Sends the timed responses while any client listens; returns when the last one was
/// produced and when it was handed over.
fn send_responses(
    model: &Model,
    timing: &Timing,
    open: &mut [Open],
    start: Instant,
) -> (Instant, Instant) {
    let (mut deadline, mut previous, mut produced) = (start, start, start);
    for index in 0..timing.responses {
        if !open.iter().any(|o| o.listening) {
            break;
        }
        let mean = if index == 0 {
            timing.first_ms
        } else {
            timing.interval_ms
        };
        deadline += service_time(mean, timing.dist);
        wait_until(deadline, timing.spin);
        produced = Instant::now();
        let infer_ns = nanos(produced - previous);
        let mut sent = Vec::with_capacity(open.len());
        for o in open.iter_mut().filter(|o| o.listening) {
            sent.push(o.send(o.template.clone()));
        }
        let handed = Instant::now();
        let output_ns = nanos(handed - produced);
        for delivered in sent {
            let end = if delivered {
                ResponseEnd::Success
            } else {
                ResponseEnd::Cancel
            };
            model
                .stats
                .record_response(index as usize, end, infer_ns, output_ns);
        }
        previous = handed;
    }
    (produced, previous)
}

/// Takes a slot for the empty final answer of every client still listening and counts
/// it; the answers go once the execution is recorded.
fn reserve_finals(
    model: &Model,
    timing: &Timing,
    open: &mut [Open],
    previous: Instant,
) -> Vec<(OwnedPermit<StreamItem>, InferResponse)> {
    let mut finals = Vec::with_capacity(open.len());
    for o in open.iter_mut().filter(|o| o.listening) {
        let slot = o.sender.clone().try_reserve_owned().ok();
        o.listening = slot.is_some();
        let end = if slot.is_some() {
            ResponseEnd::Empty
        } else {
            ResponseEnd::Cancel
        };
        let ns = nanos(previous.elapsed());
        model
            .stats
            .record_response(timing.responses as usize, end, 0, ns);
        if let Some(slot) = slot {
            finals.push((slot, o.empty_response()));
        }
    }
    finals
}

/// The execution and each request: a success if its client got the final answer, else a
/// failure.
fn record(model: &Model, open: &[Open], start: Instant, end: Instant, c: Compute) {
    let total: u32 = open.iter().map(|o| o.job.batch).sum();
    model.stats.record_execution(total, c);
    for o in open {
        let request_ns = nanos(end - o.job.arrival);
        if o.listening {
            let queue_ns = nanos(start.saturating_duration_since(o.job.enqueued));
            model
                .stats
                .record_success(o.job.batch, queue_ns, c, request_ns);
        } else {
            model.stats.record_failure(request_ns);
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;

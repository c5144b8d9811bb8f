//! What a served model is and does: the tensors each kind declares, how a request is
//! checked against them (becoming a [`Job`]), and one execution of a batch of jobs —
//! concatenate the inputs, run the kind once, split the outputs back per request — timed
//! phase by phase into the model's statistics. Free of HTTP, gRPC and scheduling, so the
//! front ends and the scheduler share it.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::def::{Dist, FailMode, ModelDef, ModelKind};
use super::error::InferError;
use super::sequences::SequenceBook;
use super::spoil::wrong_values;
use super::stats::{nanos, Compute, ModelStats, TokenStats};
use inferperf_wire::model::{DataType, TensorSpec};
use inferperf_wire::{InferRequest, InferResponse, Tensor};

/// A request that fits its model, waiting for or in execution.
#[derive(Debug)]
pub(crate) struct Job {
    pub id: String,
    /// The inputs in declared order.
    pub inputs: Vec<Tensor>,
    /// Bit `i` set: the client wants output `i`.
    pub wanted: u64,
    /// Batch elements (1 for a model that does not batch).
    pub batch: u32,
    /// When the request reached the model (Triton's request start).
    pub arrival: Instant,
    /// When the request entered the queue (Triton's queue start).
    pub enqueued: Instant,
}

impl Job {
    /// Whether two jobs can run in one execution: same shapes after the batch dimension.
    pub(crate) fn batches_with(&self, other: &Job) -> bool {
        fn rest(t: &Tensor) -> Option<&[i64]> {
            t.shape.get(1..)
        }
        (self.inputs.iter().zip(&other.inputs)).all(|(a, b)| rest(a) == rest(b))
    }
}

/// The answer to one job.
pub(crate) type Outcome = Result<InferResponse, InferError>;

thread_local! {
    /// Per-thread generator for failures and service times: fast and lock-free.
    static RNG: std::cell::RefCell<SmallRng> = std::cell::RefCell::new(SmallRng::from_os_rng());
}

/// A uniform draw from [0, 1).
fn uniform() -> f64 {
    RNG.with(|r| r.borrow_mut().random::<f64>())
}

/// One service time of mean `ms` drawn from `dist`.
pub(crate) fn service_time(ms: f64, dist: Dist) -> Duration {
    let drawn = match dist {
        Dist::Fixed => ms,
        Dist::Uniform => 2.0 * ms * uniform(),
        Dist::Normal => {
            // Box–Muller: one standard normal from two uniforms.
            let (u1, u2) = (1.0 - uniform(), uniform());
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            ms + ms / 4.0 * z
        }
        Dist::Exponential => -ms * (1.0 - uniform()).ln(),
    };
    inferperf_wire::number::saturating_millis(drawn)
}

/// Waits on this thread until `end`: sleeping, or burning CPU when `spin`.
pub(crate) fn wait_until(end: Instant, spin: bool) {
    if !spin {
        std::thread::sleep(end.saturating_duration_since(Instant::now()));
        return;
    }
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// A model ready to serve: its definition, declared tensors and statistics.
#[derive(Debug)]
pub(crate) struct Model {
    pub def: ModelDef,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    pub stats: ModelStats,
    /// What the OpenAI routes served (zero for the KServe kinds).
    pub tokens: TokenStats,
    /// A `sequence` model's live sequences and counters.
    pub sequences: SequenceBook,
}

impl Model {
    pub(crate) fn new(def: ModelDef) -> Model {
        let names = |names: [&str; 2]| -> Vec<TensorSpec> {
            let count = if def.kind == ModelKind::AddSub { 2 } else { 1 };
            let spec = |name: &&str| TensorSpec {
                name: name.to_string(),
                datatype: def.datatype,
                shape: def.dims.clone(),
            };
            names[..count].iter().map(spec).collect()
        };
        let (inputs, outputs) = match def.kind {
            // Described as Triton's vLLM backend names its tensors, for discovery's sake;
            // inference is refused (see `refuse_kserve`).
            ModelKind::Llm(_) => (
                vec![bytes_spec("text_input")],
                vec![bytes_spec("text_output")],
            ),
            ModelKind::Embeddings { dims, .. } => (
                vec![bytes_spec("input")],
                vec![TensorSpec {
                    name: "embedding".into(),
                    datatype: DataType::Fp32,
                    shape: vec![i64::from(dims)],
                }],
            ),
            ModelKind::Sequence { .. } => (names(["INPUT", ""]), names(["OUTPUT", ""])),
            _ => (names(["INPUT0", "INPUT1"]), names(["OUTPUT0", "OUTPUT1"])),
        };
        Model {
            inputs,
            outputs,
            stats: ModelStats::new(def.kserve_max_batch(), counted_responses(&def.kind)),
            tokens: TokenStats::default(),
            sequences: SequenceBook::default(),
            def,
        }
    }

    /// The refusal of KServe inference for a model served on the OpenAI routes only.
    pub(crate) fn refuse_kserve(&self) -> Result<(), InferError> {
        let route = match self.def.kind {
            ModelKind::Llm(_) => {
                "POST /v1/chat/completions, /v1/completions or Triton's /v2/models/NAME/generate"
            }
            ModelKind::Embeddings { .. } => {
                "POST /v1/embeddings (or /v1/ranking, /rerank, /v2/rerank)"
            }
            _ => return Ok(()),
        };
        Err(InferError::Unsupported(format!(
            "model '{}' is an OpenAI-style {} model that KServe inference does not serve; \
             send it {route} on the HTTP port",
            self.def.name,
            self.def.kind.name()
        )))
    }

    pub(crate) fn name(&self) -> &str {
        &self.def.name
    }

    /// Whether the model answers over a stream only, with several responses per request.
    pub(crate) fn decoupled(&self) -> bool {
        self.def.kind.decoupled()
    }

    /// The response that carries `outputs` for the job's request.
    pub(crate) fn response(&self, id: String, outputs: Vec<Tensor>) -> InferResponse {
        InferResponse {
            model_name: self.def.name.clone(),
            model_version: "1".to_string(),
            id,
            outputs,
        }
    }

    /// Checks a request against the model; a bad one counts as a failed request.
    pub(crate) fn check(&self, req: InferRequest, arrival: Instant) -> Result<Job, InferError> {
        let checked = self.check_parts(req, arrival);
        if checked.is_err() {
            self.stats.record_failure(nanos(arrival.elapsed()));
        }
        checked
    }

    fn check_parts(&self, req: InferRequest, arrival: Instant) -> Result<Job, InferError> {
        let wanted = self.check_outputs(&req)?;
        let mut inputs = self.check_inputs(req.inputs)?;
        let batch = self.batch_of(&inputs)?;
        if matches!(self.def.kind, ModelKind::Sequence { .. }) {
            self.sequence_step(&req.parameters, &mut inputs)?;
        }
        Ok(Job {
            id: req.id,
            inputs,
            wanted,
            batch,
            arrival,
            enqueued: Instant::now(),
        })
    }

    /// A `sequence` model's request: its INPUT becomes its sequence's running sum, which the
    /// identity execution then answers.
    fn sequence_step(
        &self,
        params: &serde_json::Map<String, serde_json::Value>,
        inputs: &mut [Tensor],
    ) -> Result<(), InferError> {
        let Some(input) = inputs.first_mut() else {
            return Ok(());
        };
        let value = match input.data.get(..4) {
            Some(b) => i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            None => return Err(self.bad("input 'INPUT' holds no value".into())),
        };
        let string_ids = matches!(self.def.kind, ModelKind::Sequence { string_ids: true });
        let sum = (self.sequences).step(self.name(), params, i64::from(value), string_ids)?;
        input.data = Bytes::copy_from_slice(&(sum as i32).to_le_bytes());
        Ok(())
    }

    fn bad(&self, what: String) -> InferError {
        InferError::BadRequest(format!("model '{}': {what}", self.def.name))
    }

    /// The requested outputs as a bit set (all when none are named); each must exist.
    fn check_outputs(&self, req: &InferRequest) -> Result<u64, InferError> {
        if req.outputs.is_empty() {
            return Ok(u64::MAX);
        }
        let mut wanted = 0;
        for o in &req.outputs {
            let at = (self.outputs.iter()).position(|s| s.name == o.name);
            let at = at.ok_or_else(|| self.bad(format!("unexpected output name '{}'", o.name)))?;
            wanted |= 1 << at;
        }
        Ok(wanted)
    }

    /// Orders the inputs as declared and checks each one's datatype and shape.
    fn check_inputs(&self, mut given: Vec<Tensor>) -> Result<Vec<Tensor>, InferError> {
        if let Some(extra) = (given.iter()).find(|t| !self.inputs.iter().any(|s| s.name == t.name))
        {
            return Err(self.bad(format!("unexpected input name '{}'", extra.name)));
        }
        let mut ordered = Vec::with_capacity(self.inputs.len());
        for spec in &self.inputs {
            let at = (given.iter().position(|t| t.name == spec.name)).ok_or_else(|| {
                self.bad(format!(
                    "expected input '{}', which the request lacks",
                    spec.name
                ))
            })?;
            let tensor = given.swap_remove(at);
            self.check_tensor(spec, &tensor)?;
            ordered.push(tensor);
        }
        if let Some(dup) = given.first() {
            return Err(self.bad(format!("input '{}' is given twice", dup.name)));
        }
        Ok(ordered)
    }

    fn check_tensor(&self, spec: &TensorSpec, t: &Tensor) -> Result<(), InferError> {
        if t.datatype != spec.datatype {
            return Err(self.bad(format!(
                "input '{}' has datatype {}, expected {}",
                t.name, t.datatype, spec.datatype
            )));
        }
        let batch = self.def.max_batch;
        let (batch_dim, dims) = match (batch, t.shape.split_first()) {
            (0, _) | (_, None) => (None, t.shape.as_slice()),
            (_, Some((b, rest))) => (Some(*b), rest),
        };
        let dims_ok = dims.len() == spec.shape.len()
            && (dims.iter().zip(&spec.shape)).all(|(&d, &s)| s == -1 || d == s);
        let batch_ok = batch == 0 || batch_dim.is_some_and(|b| b >= 1 && b <= i64::from(batch));
        if !dims_ok || !batch_ok {
            return Err(self.bad(shape_message(&t.name, &t.shape, &spec.shape, batch)));
        }
        Ok(())
    }

    /// The request's batch size; every input must agree (add_sub: same shapes).
    fn batch_of(&self, inputs: &[Tensor]) -> Result<u32, InferError> {
        if let [a, b] = inputs {
            if a.shape != b.shape {
                return Err(self.bad(format!(
                    "inputs 'INPUT0' {:?} and 'INPUT1' {:?} must have the same shape",
                    a.shape, b.shape
                )));
            }
        }
        let first = inputs.first().and_then(|t| t.shape.first());
        match (self.def.max_batch, first) {
            (0, _) | (_, None) => Ok(1),
            (_, Some(&b)) => Ok(u32::try_from(b).unwrap_or(1)),
        }
    }

    /// Runs one execution of the jobs and answers each, recording the statistics. Sleeps
    /// or spins on this thread for a `sleep` model. A single job's tensors are passed
    /// through without a copy.
    pub(crate) fn execute(&self, jobs: &mut [Job]) -> Vec<Outcome> {
        let start = Instant::now();
        let (inputs, parts) = match jobs {
            [] => return Vec::new(),
            [job] => (std::mem::take(&mut job.inputs), Vec::new()),
            _ => (concat(jobs), parts_of(jobs)),
        };
        let inputs_done = Instant::now();
        let outputs = self.run(inputs);
        let run_done = Instant::now();
        let outcomes = match jobs {
            [job] => vec![self.answer(job, outputs.into_iter())],
            _ => self.split(jobs, parts, &outputs),
        };
        let end = Instant::now();
        let compute = Compute {
            input_ns: nanos(inputs_done - start),
            infer_ns: nanos(run_done - inputs_done),
            output_ns: nanos(end - run_done),
        };
        self.record(jobs, &outcomes, start, end, compute);
        outcomes
    }

    /// A `bls` model's answer once its calls (started at `calls_started`) are done: the
    /// identity answer, recorded as one execution whose compute spans the calls.
    pub(crate) fn answer_after_calls(&self, mut job: Job, calls_started: Instant) -> Outcome {
        let outputs = std::mem::take(&mut job.inputs);
        let mut jobs = [job];
        let outcome = self.answer(&mut jobs[0], outputs.into_iter());
        let end = Instant::now();
        let compute = Compute {
            input_ns: 0,
            infer_ns: nanos(end - calls_started),
            output_ns: 0,
        };
        let outcomes = [outcome];
        self.record(&jobs, &outcomes, calls_started, end, compute);
        let [outcome] = outcomes;
        outcome
    }

    /// Counts a request that failed after it was checked (a `bls` model's failed call).
    pub(crate) fn record_failed(&self, arrival: Instant) {
        self.stats.record_failure(nanos(arrival.elapsed()));
    }

    fn record(&self, jobs: &[Job], outcomes: &[Outcome], start: Instant, end: Instant, c: Compute) {
        let total: u32 = jobs.iter().map(|j| j.batch).sum();
        self.stats.record_execution(total, c);
        for (job, outcome) in jobs.iter().zip(outcomes) {
            let request_ns = nanos(end - job.arrival);
            match outcome {
                Ok(_) => {
                    let queue_ns = nanos(start.saturating_duration_since(job.enqueued));
                    self.stats
                        .record_success(job.batch, queue_ns, c, request_ns)
                }
                Err(_) => self.stats.record_failure(request_ns),
            }
        }
    }

    /// The model's outputs for the (batched) inputs, in declared order.
    fn run(&self, inputs: Vec<Tensor>) -> Vec<Tensor> {
        match self.def.kind {
            ModelKind::AddSub => return add_sub(&inputs),
            ModelKind::Sleep { ms, dist, spin } => {
                wait_until(Instant::now() + service_time(ms, dist), spin)
            }
            _ => {}
        }
        inputs
    }

    /// Cuts each job's part out of the batched outputs and answers it; `parts` is each
    /// job's first-input shape and byte length, which its outputs share.
    fn split(
        &self,
        jobs: &mut [Job],
        parts: Vec<(Vec<i64>, usize)>,
        outputs: &[Tensor],
    ) -> Vec<Outcome> {
        let mut offset = 0;
        let mut answers = Vec::with_capacity(jobs.len());
        for (job, (shape, len)) in jobs.iter_mut().zip(parts) {
            let range = offset..offset + len;
            offset += len;
            let own = outputs.iter().map(|t| Tensor {
                name: String::new(),
                datatype: t.datatype,
                shape: shape.clone(),
                data: slice(&t.data, range.clone()),
            });
            answers.push(self.answer(job, own));
        }
        answers
    }

    /// The job's answer from its outputs in declared order: the outputs it asked for under
    /// their declared names, unless a `fail` model spoils it.
    fn answer(&self, job: &mut Job, outputs: impl Iterator<Item = Tensor>) -> Outcome {
        let spoiled = self.drawn_spoil();
        if spoiled == Some(FailMode::Error) {
            return Err(self.failure());
        }
        let wanted = (outputs.zip(&self.outputs).enumerate())
            .filter(|(i, _)| job.wanted & (1 << i) != 0)
            .map(|(_, (t, spec))| Tensor {
                name: spec.name.clone(),
                ..t
            });
        let outputs = match spoiled {
            Some(FailMode::BadBody) => Vec::new(),
            Some(FailMode::WrongValues) => wanted.map(wrong_values).collect(),
            _ => wanted.collect(),
        };
        Ok(self.response(std::mem::take(&mut job.id), outputs))
    }

    /// For a `fail` model, whether this request is spoiled (a Bernoulli trial) and how.
    fn drawn_spoil(&self) -> Option<FailMode> {
        let ModelKind::Fail { rate, mode, .. } = self.def.kind else {
            return None;
        };
        (uniform() < rate).then_some(mode)
    }

    /// The error a `fail` model answers in [`FailMode::Error`].
    fn failure(&self) -> InferError {
        let (rate, code) = match self.def.kind {
            ModelKind::Fail { rate, code, .. } => (rate, code),
            _ => (0.0, 500),
        };
        let message = format!(
            "model '{}' failed this request on purpose (rate {rate})",
            self.def.name
        );
        InferError::from_http_status(code, message)
    }
}

fn bytes_spec(name: &str) -> TensorSpec {
    TensorSpec {
        name: name.into(),
        datatype: DataType::Bytes,
        shape: vec![1],
    }
}

/// How many response indexes the statistics keep: a `stream` model's responses plus its
/// empty final one; none for other models.
fn counted_responses(kind: &ModelKind) -> u32 {
    match kind {
        ModelKind::Stream { responses, .. } => responses.saturating_add(1),
        _ => 0,
    }
}

/// Each job's first-input shape and byte length.
fn parts_of(jobs: &[Job]) -> Vec<(Vec<i64>, usize)> {
    let part = |j: &Job| {
        let first = j.inputs.first();
        first.map_or((Vec::new(), 0), |t| (t.shape.clone(), t.data.len()))
    };
    jobs.iter().map(part).collect()
}

/// A part of batched data; the whole of it when the range covers it (no new reference
/// bookkeeping), never a panic on a bad range.
fn slice(data: &Bytes, range: std::ops::Range<usize>) -> Bytes {
    if range.start == 0 && range.end == data.len() {
        return data.clone();
    }
    data.get(range.clone())
        .map_or_else(Bytes::new, |_| data.slice(range))
}

/// The jobs' inputs as one batch: each input's data concatenated and its batch dimension
/// summed.
fn concat(jobs: &[Job]) -> Vec<Tensor> {
    let count = jobs.first().map_or(0, |j| j.inputs.len());
    (0..count)
        .filter_map(|i| {
            let parts: Vec<&Tensor> = jobs.iter().filter_map(|j| j.inputs.get(i)).collect();
            let first = parts.first()?;
            let size = parts.iter().map(|t| t.data.len()).sum();
            let mut data = BytesMut::with_capacity(size);
            parts.iter().for_each(|t| data.extend_from_slice(&t.data));
            let mut shape = first.shape.clone();
            if let Some(b) = shape.first_mut() {
                *b = parts
                    .iter()
                    .map(|t| t.shape.first().copied().unwrap_or(1))
                    .sum();
            }
            Some(Tensor {
                name: first.name.clone(),
                datatype: first.datatype,
                shape,
                data: data.freeze(),
            })
        })
        .collect()
}

/// INT32 element-wise sum and difference, wrapping on overflow.
fn add_sub(inputs: &[Tensor]) -> Vec<Tensor> {
    let [a, b] = inputs else {
        return Vec::new();
    };
    let mut sum = BytesMut::with_capacity(a.data.len());
    let mut diff = BytesMut::with_capacity(a.data.len());
    for (x, y) in a.data.chunks_exact(4).zip(b.data.chunks_exact(4)) {
        let x = i32::from_le_bytes([x[0], x[1], x[2], x[3]]);
        let y = i32::from_le_bytes([y[0], y[1], y[2], y[3]]);
        sum.put_i32_le(x.wrapping_add(y));
        diff.put_i32_le(x.wrapping_sub(y));
    }
    let out = |name: &str, data: BytesMut| Tensor {
        name: name.to_string(),
        datatype: DataType::Int32,
        shape: a.shape.clone(),
        data: data.freeze(),
    };
    vec![out("OUTPUT0", sum), out("OUTPUT1", diff)]
}

fn shape_message(name: &str, shape: &[i64], dims: &[i64], max_batch: u32) -> String {
    if max_batch == 0 {
        return format!("input '{name}' has shape {shape:?}, expected {dims:?}");
    }
    format!(
        "input '{name}' has shape {shape:?}, expected [batch] + {dims:?} with batch between 1 and {max_batch}"
    )
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;

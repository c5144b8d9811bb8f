//! A measurement window: the requests whose final response arrived inside it, summarised in
//! distributions and counters. Windows merge by adding, so a level's result is the sum of
//! its last windows and memory stays flat however long a run is. Besides latency, a window
//! keeps what streamed answers need: first-response latency, the gaps between answers,
//! answers per request and the response throughput.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::distribution::{Compaction, Distribution};
use super::replica::{merge_replicas, ReplicaWindow};
use super::sample::{Drained, ErrorNote, Sample};
use super::server::metrics::MetricsWindow;
use super::server::stats::ServerWindow;
use super::tokens::{GoodputRule, TokenStats};
use super::turns::TurnStats;
use crate::backend::ErrorKind;

/// A send later than this behind its schedule counts as late (perf_analyzer's tolerance).
pub const LATE_SEND: Duration = Duration::from_millis(1);

/// Counts, sums and distributions of the requests credited to one window (or to several
/// merged windows). Latencies are in ns.
#[derive(Debug, Clone)]
pub struct WindowStats {
    /// Actual length of the window (sum of lengths when merged).
    pub duration: Duration,
    /// Inferences per request (`-b`).
    pub batch_size: u32,
    /// Requests that succeeded.
    pub ok: u64,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Requests the client closed on purpose (`--request-cancellation-rate`): neither
    /// successes nor errors, and in no latency or token figure.
    pub cancelled: u64,
    /// The first note of each error kind (what a bad or wrong answer had wrong).
    pub notes: Vec<ErrorNote>,
    /// Latency of successful requests, from the *scheduled* send: what a user of the service
    /// waits, queueing in the client included (no coordinated omission). In closed loop a
    /// request is scheduled when it is sent, so this is the plain latency.
    pub latency: Distribution,
    /// Sum of squared latencies (for the standard deviation).
    pub latency_sq_sum: f64,
    /// Service time of successful requests: from the actual send to the answer.
    pub service: Distribution,
    /// How late each send was against its schedule (open loop).
    pub send_lag: Distribution,
    /// From the scheduled send to the first answer, per successful request.
    pub first_response: Distribution,
    /// The gaps between consecutive answers of successful requests.
    pub inter_response: Distribution,
    /// Answers per successful request (its sum is the window's answer count).
    pub responses: Distribution,
    /// Sends more than 1 ms late (perf_analyzer's tolerance).
    pub late_sends: u64,
    /// Sequences whose last request succeeded in the window (a sequence model's run).
    pub sequences_ended: u64,
    /// Requests the driver sent during the window (set by the profiler; 0 if unknown).
    pub sent: u64,
    /// Sends that waited for `--max-concurrency`, and their total wait in ns.
    pub cap_waits: u64,
    pub cap_wait_ns: u128,
    /// Sums over successful requests of client send and receive time, in ns.
    pub send_sum_ns: u128,
    pub recv_sum_ns: u128,
    /// How many windows were merged into this one.
    pub windows: u32,
    /// CPU time (user + system) this process used during the window.
    pub client_cpu: Duration,
    /// The server's statistics delta over the window, when the server has them.
    pub server: Option<ServerWindow>,
    /// The server metrics scraped during the window, when asked for.
    pub metrics: Option<MetricsWindow>,
    /// The figures of text generation, when the requests generated text.
    pub tokens: Option<Box<TokenStats>>,
    /// A sessions run's figures by turn number.
    pub turns: Option<Box<TurnStats>>,
    /// The per-request limits of goodput (from `--slo`).
    pub goodput: GoodputRule,
    /// First (scheduled or actual) send and last answer among the requests added, which
    /// bound a finite run's single window.
    pub first_send: Option<Instant>,
    pub last_done: Option<Instant>,
    /// When the window began and ended as it was cut (merged: the earliest start and the
    /// latest end), for the results file's time axis; `None` until cut.
    pub bounds: Option<(Instant, Instant)>,
    /// Each `-u` server's share, in `-u` order, when the run has several (else empty).
    pub replicas: Vec<ReplicaWindow>,
}

impl WindowStats {
    /// An empty window of a run: its batch size, the goodput limits of its `--slo`, and a
    /// share for each of its `replicas` servers when there are several.
    pub fn for_run(
        measure: &crate::config::MeasureConfig,
        batch_size: u32,
        replicas: usize,
    ) -> Self {
        let mut window = WindowStats::with_goodput(batch_size, GoodputRule::for_run(measure));
        if replicas > 1 {
            window.replicas = vec![ReplicaWindow::default(); replicas];
        }
        window
    }

    /// An empty window whose generations count towards goodput under `rule`.
    pub fn with_goodput(batch_size: u32, rule: GoodputRule) -> Self {
        WindowStats {
            goodput: rule,
            ..WindowStats::new(batch_size)
        }
    }

    pub fn new(batch_size: u32) -> Self {
        WindowStats {
            duration: Duration::ZERO,
            batch_size,
            ok: 0,
            errors: BTreeMap::new(),
            cancelled: 0,
            notes: Vec::new(),
            latency: Distribution::default(),
            latency_sq_sum: 0.0,
            service: Distribution::default(),
            send_lag: Distribution::default(),
            first_response: Distribution::default(),
            inter_response: Distribution::default(),
            responses: Distribution::default(),
            late_sends: 0,
            sequences_ended: 0,
            sent: 0,
            cap_waits: 0,
            cap_wait_ns: 0,
            send_sum_ns: 0,
            recv_sum_ns: 0,
            windows: 0,
            client_cpu: Duration::ZERO,
            server: None,
            metrics: None,
            tokens: None,
            turns: None,
            goodput: GoodputRule::default(),
            first_send: None,
            last_done: None,
            bounds: None,
            replicas: Vec::new(),
        }
    }

    /// Builds one window of the given length from samples answered once each.
    pub fn from_samples(samples: &[Sample], duration: Duration, batch_size: u32) -> Self {
        let mut stats = WindowStats::new(batch_size);
        stats.duration = duration;
        stats.windows = 1;
        for sample in samples {
            stats.add(sample, &[]);
        }
        stats
    }

    /// Adds everything a cut took out of the slots' buffers.
    pub fn add_drained(&mut self, drained: &Drained) {
        for (sample, gaps) in drained.each() {
            self.add(sample, gaps);
        }
        for note in &drained.notes {
            self.note(note);
        }
    }

    /// Adds one finished request and the gaps between its answers.
    pub fn add(&mut self, sample: &Sample, gaps: &[u64]) {
        let start = sample.scheduled.min(sample.sent);
        self.first_send = Some(self.first_send.map_or(start, |t| t.min(start)));
        self.last_done = Some(self.last_done.map_or(sample.done, |t| t.max(sample.done)));
        let lag = sample.sent.saturating_duration_since(sample.scheduled);
        self.send_lag.record(lag.as_nanos() as u64);
        if lag > LATE_SEND {
            self.late_sends += 1;
        }
        if sample.error == Some(ErrorKind::Cancelled) {
            self.cancelled += 1;
            return;
        }
        if let Some(replica) = self.replicas.get_mut(sample.replica as usize) {
            replica.add(sample);
        }
        if sample.turn > 0 {
            self.turns.get_or_insert_with(Default::default).add(sample);
        }
        if let Some(kind) = sample.error {
            *self.errors.entry(kind).or_insert(0) += 1;
            return;
        }
        let latency = sample.latency_from_schedule_ns().max(1);
        self.ok += 1;
        self.sequences_ended += u64::from(sample.sequence_end);
        self.latency.record(latency);
        self.latency_sq_sum += (latency as f64) * (latency as f64);
        self.service.record(sample.latency_ns().max(1));
        self.first_response.record(sample.first_response_ns());
        self.responses.record(sample.answers as u64);
        for &gap in gaps {
            self.inter_response.record(gap);
        }
        self.send_sum_ns += sample.send_ns as u128;
        self.recv_sum_ns += sample.recv_ns as u128;
        if sample.tokens.source != crate::backend::TokenSource::None {
            let goodput = self.goodput;
            let tokens = self.tokens.get_or_insert_with(Default::default);
            tokens.add(sample, gaps, &goodput);
        }
    }

    /// Keeps a note when it is the first of its kind.
    fn note(&mut self, note: &ErrorNote) {
        match self.notes.iter_mut().find(|n| n.kind == note.kind) {
            Some(kept) if kept.at <= note.at => {}
            Some(kept) => *kept = note.clone(),
            None => self.notes.push(note.clone()),
        }
    }

    /// Every distribution of the window.
    fn distributions(&mut self) -> [&mut Distribution; 6] {
        [
            &mut self.latency,
            &mut self.service,
            &mut self.send_lag,
            &mut self.first_response,
            &mut self.inter_response,
            &mut self.responses,
        ]
    }

    /// Drops the distributions' histograms, keeping their values at the percentiles of
    /// `keep`, every count and sum, and the histograms encoded if `keep` asks: a window that
    /// will only be reported, never merged again, then costs a few hundred bytes (with the
    /// histograms, from 0.5 KiB for a steady service time to 17 KiB for 50,000 latencies
    /// spread over three decades), so that memory stays flat however many windows or seconds
    /// a run has.
    pub fn compact(&mut self, keep: &Compaction) {
        for distribution in self.distributions() {
            distribution.compact(keep);
        }
        if let Some(tokens) = &mut self.tokens {
            tokens.compact(keep);
        }
        if let Some(turns) = &mut self.turns {
            turns.compact(keep);
        }
        for replica in &mut self.replicas {
            replica.compact(keep);
        }
    }

    /// Adds another window into this one; neither may be compacted.
    pub fn merge(&mut self, other: &WindowStats) {
        self.duration += other.duration;
        self.ok += other.ok;
        self.cancelled += other.cancelled;
        for (kind, count) in &other.errors {
            *self.errors.entry(*kind).or_insert(0) += count;
        }
        for note in &other.notes {
            self.note(note);
        }
        let theirs = [
            &other.latency,
            &other.service,
            &other.send_lag,
            &other.first_response,
            &other.inter_response,
            &other.responses,
        ];
        for (mine, theirs) in self.distributions().into_iter().zip(theirs) {
            mine.merge(theirs);
        }
        self.latency_sq_sum += other.latency_sq_sum;
        self.late_sends += other.late_sends;
        self.sequences_ended += other.sequences_ended;
        self.sent += other.sent;
        self.cap_waits += other.cap_waits;
        self.cap_wait_ns += other.cap_wait_ns;
        self.send_sum_ns += other.send_sum_ns;
        self.recv_sum_ns += other.recv_sum_ns;
        self.windows += other.windows;
        self.client_cpu += other.client_cpu;
        merge_option(&mut self.server, &other.server, ServerWindow::merge);
        merge_option(&mut self.metrics, &other.metrics, MetricsWindow::merge);
        merge_option(&mut self.tokens, &other.tokens, |m, o| m.merge(o));
        merge_option(&mut self.turns, &other.turns, |m, o| m.merge(o));
        merge_replicas(&mut self.replicas, &other.replicas);
        if !self.goodput.is_set() {
            self.goodput = other.goodput;
        }
        self.first_send = match (self.first_send, other.first_send) {
            (Some(mine), Some(theirs)) => Some(mine.min(theirs)),
            (mine, theirs) => mine.or(theirs),
        };
        self.last_done = self.last_done.max(other.last_done);
        self.bounds = match (self.bounds, other.bounds) {
            (Some(mine), Some(theirs)) => Some((mine.0.min(theirs.0), mine.1.max(theirs.1))),
            (mine, theirs) => mine.or(theirs),
        };
    }

    /// From the first send to the last answer of the requests added, if any.
    pub fn span(&self) -> Option<Duration> {
        let (first, last) = (self.first_send?, self.last_done?);
        Some(
            last.saturating_duration_since(first)
                .max(Duration::from_nanos(1)),
        )
    }

    /// Merges a list of windows into one.
    pub fn merged<'a>(windows: impl IntoIterator<Item = &'a WindowStats>, batch: u32) -> Self {
        let mut total = WindowStats::new(batch);
        for w in windows {
            total.merge(w);
        }
        total
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Requests that finished in the window, failed or not.
    pub fn completed(&self) -> u64 {
        self.ok + self.error_count()
    }

    /// Share of finished requests that failed, in [0, 1].
    pub fn error_rate(&self) -> f64 {
        let done = self.completed();
        if done == 0 {
            0.0
        } else {
            self.error_count() as f64 / done as f64
        }
    }

    fn per_second(&self, count: f64) -> f64 {
        let secs = self.duration.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            count / secs
        }
    }

    /// Sequences ended per second (perf_analyzer's `sequence_per_sec`).
    pub fn sequence_throughput(&self) -> f64 {
        self.per_second(self.sequences_ended as f64)
    }

    /// Output tokens of successful requests (0 for a tensor model).
    pub fn output_token_count(&self) -> f64 {
        self.tokens.as_ref().map_or(0, |t| t.output_tokens.sum()) as f64
    }

    /// Output tokens of successful requests per second.
    pub fn token_throughput(&self) -> f64 {
        self.per_second(self.output_token_count())
    }

    /// Successful requests within every `--slo` limit, per second.
    pub fn goodput(&self) -> f64 {
        self.per_second(self.tokens.as_ref().map_or(0, |t| t.good) as f64)
    }

    /// Successful inferences per second (requests × batch / window length).
    pub fn throughput(&self) -> f64 {
        self.per_second((self.ok * self.batch_size as u64) as f64)
    }

    /// Successful inferences per second of one `-u` server's share (over the same length).
    pub fn replica_throughput(&self, replica: &ReplicaWindow) -> f64 {
        self.per_second((replica.ok * self.batch_size as u64) as f64)
    }

    /// Answers of successful requests per second (perf_analyzer's response throughput).
    pub fn response_throughput(&self) -> f64 {
        self.per_second(self.responses.sum() as f64)
    }

    pub fn mean_latency_us(&self) -> f64 {
        self.latency.mean() / 1000.0
    }

    /// Sample standard deviation of latency in µs (0 with fewer than two requests).
    pub fn std_latency_us(&self) -> f64 {
        if self.ok < 2 {
            return 0.0;
        }
        let n = self.ok as f64;
        let mean = self.latency.mean();
        let variance = ((self.latency_sq_sum - n * mean * mean) / (n - 1.0)).max(0.0);
        variance.sqrt() / 1000.0
    }

    /// Latency at percentile `p` (0 < p < 100) in µs.
    pub fn percentile_us(&self, p: f64) -> f64 {
        self.latency.percentile(p) / 1000.0
    }

    /// Service time (actual send to answer) at percentile `p`, in µs.
    pub fn service_percentile_us(&self, p: f64) -> f64 {
        self.service.percentile(p) / 1000.0
    }

    /// Mean service time (actual send to answer), in µs.
    pub fn mean_service_us(&self) -> f64 {
        self.service.mean() / 1000.0
    }

    /// Send lag behind the schedule at percentile `p`, in µs.
    pub fn send_lag_percentile_us(&self, p: f64) -> f64 {
        self.send_lag.percentile(p) / 1000.0
    }

    /// Share of sends more than 1 ms behind schedule, in [0, 1].
    pub fn late_share(&self) -> f64 {
        match self.send_lag.count() {
            0 => 0.0,
            sends => self.late_sends as f64 / sends as f64,
        }
    }

    /// Requests sent per second during the window (open loop).
    pub fn send_rate(&self) -> f64 {
        self.per_second(self.sent as f64)
    }

    pub fn avg_send_us(&self) -> f64 {
        self.avg_us(self.send_sum_ns)
    }

    pub fn avg_recv_us(&self) -> f64 {
        self.avg_us(self.recv_sum_ns)
    }

    /// Average time between handing the request over and the first byte of the answer
    /// (client queueing in open loop is not part of it).
    pub fn avg_wait_us(&self) -> f64 {
        (self.mean_service_us() - self.avg_send_us() - self.avg_recv_us()).max(0.0)
    }

    fn avg_us(&self, sum_ns: u128) -> f64 {
        if self.ok == 0 {
            0.0
        } else {
            sum_ns as f64 / self.ok as f64 / 1000.0
        }
    }

    /// The latency the stability rule and `-l` look at: the mean, or the `--percentile`.
    pub fn stabilizing_latency_us(&self, percentile: Option<f64>) -> f64 {
        match percentile {
            Some(p) => self.percentile_us(p),
            None => self.mean_latency_us(),
        }
    }
}

/// Adds `other` into `mine` when there is something to add.
fn merge_option<T: Clone>(mine: &mut Option<T>, other: &Option<T>, add: fn(&mut T, &T)) {
    match (mine.as_mut(), other) {
        (Some(m), Some(o)) => add(m, o),
        (None, Some(o)) => *mine = Some(o.clone()),
        (_, None) => {}
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;

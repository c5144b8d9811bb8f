//! A measurement window: the requests whose final response arrived inside it, summarised in
//! histograms and counters. Windows merge by adding, so a level's result is the sum of its
//! last windows and memory stays flat however long a run is.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::metrics::MetricsWindow;
use super::sample::Sample;
use super::server_stats::ServerWindow;
use crate::backend::ErrorKind;

/// A send later than this behind its schedule counts as late (perf_analyzer's tolerance).
pub const LATE_SEND: Duration = Duration::from_millis(1);

/// Highest latency the histograms hold: one hour in nanoseconds (values above are clamped).
const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

/// The histograms start covering 1 ns to 1 ms (3 significant digits) and grow to the largest
/// value recorded, so a window of sub-millisecond answers costs tens of KiB, not the 256 KiB
/// of a histogram sized for an hour.
fn new_histogram() -> Histogram<u64> {
    let mut histogram =
        Histogram::new_with_bounds(1, 1_000_000, 3).expect("static histogram bounds are valid");
    histogram.auto(true);
    histogram
}

/// Records `ns` (at least 1, at most an hour).
fn record(histogram: &mut Histogram<u64>, ns: u64) {
    let _ = histogram.record(ns.clamp(1, MAX_TRACKED_NS));
}

/// Percentiles a window keeps when its distributions are dropped ([`WindowStats::compact`]).
#[derive(Debug, Clone, Default)]
pub struct KeptPercentiles {
    /// (percentile, latency µs, service time µs, send lag µs)
    points: Vec<(f64, f64, f64, f64)>,
    /// Sends the send-lag distribution counted.
    sends: u64,
}

impl KeptPercentiles {
    /// The kept figure at percentile `p`; NaN (shown as such) if it was not kept.
    fn at(&self, p: f64, figure: impl Fn(&(f64, f64, f64, f64)) -> f64) -> f64 {
        self.points
            .iter()
            .find(|point| point.0 == p)
            .map_or(f64::NAN, figure)
    }
}

/// Counts, sums and latency distribution of the requests credited to one window (or to
/// several merged windows).
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
    /// Latency of successful requests in ns, from the *scheduled* send: what a user of the
    /// service waits, queueing in the client included (no coordinated omission). In closed
    /// loop a request is scheduled when it is sent, so this is the plain latency.
    pub latency: Histogram<u64>,
    /// Service time of successful requests in ns: from the actual send to the answer.
    pub service: Histogram<u64>,
    /// How late each send was against its schedule, in ns (open loop).
    pub send_lag: Histogram<u64>,
    /// Sends more than 1 ms late (perf_analyzer's tolerance).
    pub late_sends: u64,
    /// Requests the driver sent during the window (set by the profiler; 0 if unknown).
    pub sent: u64,
    /// Sends that waited for `--max-concurrency`, and their total wait in ns.
    pub cap_waits: u64,
    pub cap_wait_ns: u128,
    /// Sum and sum of squares of latency in ns (for mean and standard deviation).
    pub latency_sum_ns: u128,
    pub latency_sq_sum: f64,
    /// Sum of service times in ns.
    pub service_sum_ns: u128,
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
    /// First (scheduled or actual) send and last answer among the requests added, which
    /// bound a finite run's single window.
    pub first_send: Option<Instant>,
    pub last_done: Option<Instant>,
    /// Set once the histograms were dropped: the percentiles the reports still need.
    pub kept: Option<Box<KeptPercentiles>>,
}

impl WindowStats {
    pub fn new(batch_size: u32) -> Self {
        WindowStats {
            duration: Duration::ZERO,
            batch_size,
            ok: 0,
            errors: BTreeMap::new(),
            latency: new_histogram(),
            service: new_histogram(),
            send_lag: new_histogram(),
            late_sends: 0,
            sent: 0,
            cap_waits: 0,
            cap_wait_ns: 0,
            latency_sum_ns: 0,
            latency_sq_sum: 0.0,
            service_sum_ns: 0,
            send_sum_ns: 0,
            recv_sum_ns: 0,
            windows: 0,
            client_cpu: Duration::ZERO,
            server: None,
            metrics: None,
            first_send: None,
            last_done: None,
            kept: None,
        }
    }

    /// Builds one window of the given length from the samples credited to it.
    pub fn from_samples(samples: &[Sample], duration: Duration, batch_size: u32) -> Self {
        let mut stats = WindowStats::new(batch_size);
        stats.duration = duration;
        stats.windows = 1;
        for sample in samples {
            stats.add(sample);
        }
        stats
    }

    /// Adds one finished request.
    pub fn add(&mut self, sample: &Sample) {
        let start = sample.scheduled.min(sample.sent);
        self.first_send = Some(self.first_send.map_or(start, |t| t.min(start)));
        self.last_done = Some(self.last_done.map_or(sample.done, |t| t.max(sample.done)));
        let lag = sample.sent.saturating_duration_since(sample.scheduled);
        record(&mut self.send_lag, lag.as_nanos() as u64);
        if lag > LATE_SEND {
            self.late_sends += 1;
        }
        if let Some(kind) = sample.error {
            *self.errors.entry(kind).or_insert(0) += 1;
            return;
        }
        let service = sample.latency_ns().max(1);
        let latency = sample.latency_from_schedule_ns().max(1);
        self.ok += 1;
        record(&mut self.latency, latency);
        record(&mut self.service, service);
        self.service_sum_ns += service as u128;
        self.latency_sum_ns += latency as u128;
        self.latency_sq_sum += (latency as f64) * (latency as f64);
        self.send_sum_ns += sample.send_ns as u128;
        self.recv_sum_ns += sample.recv_ns as u128;
    }

    /// Drops the latency distributions, keeping the figures at the percentiles `keep` and
    /// every count and sum: a window that will only be reported, never merged again, then
    /// costs a few hundred bytes instead of its histograms, so that memory stays flat
    /// however many windows or seconds a run has.
    pub fn compact(&mut self, keep: &[f64]) {
        if self.kept.is_some() {
            return;
        }
        let points = keep
            .iter()
            .map(|&p| {
                let lag = self.send_lag_percentile_us(p);
                let service = self.service_percentile_us(p);
                (p, self.percentile_us(p), service, lag)
            })
            .collect();
        let sends = self.send_lag.len();
        self.kept = Some(Box::new(KeptPercentiles { points, sends }));
        for histogram in [&mut self.latency, &mut self.service, &mut self.send_lag] {
            *histogram = Histogram::new_with_bounds(1, 2, 0).expect("static bounds are valid");
        }
    }

    /// Adds another window into this one; neither may be compacted.
    pub fn merge(&mut self, other: &WindowStats) {
        debug_assert!(self.kept.is_none() && other.kept.is_none());
        self.duration += other.duration;
        self.ok += other.ok;
        for (kind, count) in &other.errors {
            *self.errors.entry(*kind).or_insert(0) += count;
        }
        // Both histograms share bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.send_lag.add(&other.send_lag);
        self.late_sends += other.late_sends;
        self.sent += other.sent;
        self.cap_waits += other.cap_waits;
        self.cap_wait_ns += other.cap_wait_ns;
        self.latency_sum_ns += other.latency_sum_ns;
        self.latency_sq_sum += other.latency_sq_sum;
        self.service_sum_ns += other.service_sum_ns;
        self.send_sum_ns += other.send_sum_ns;
        self.recv_sum_ns += other.recv_sum_ns;
        self.windows += other.windows;
        self.client_cpu += other.client_cpu;
        merge_option(&mut self.server, &other.server, ServerWindow::merge);
        merge_option(&mut self.metrics, &other.metrics, MetricsWindow::merge);
        self.first_send = match (self.first_send, other.first_send) {
            (Some(mine), Some(theirs)) => Some(mine.min(theirs)),
            (mine, theirs) => mine.or(theirs),
        };
        self.last_done = self.last_done.max(other.last_done);
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

    /// Successful inferences per second (requests × batch / window length).
    pub fn throughput(&self) -> f64 {
        let secs = self.duration.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            (self.ok * self.batch_size as u64) as f64 / secs
        }
    }

    pub fn mean_latency_us(&self) -> f64 {
        if self.ok == 0 {
            0.0
        } else {
            self.latency_sum_ns as f64 / self.ok as f64 / 1000.0
        }
    }

    /// Sample standard deviation of latency in µs (0 with fewer than two requests).
    pub fn std_latency_us(&self) -> f64 {
        if self.ok < 2 {
            return 0.0;
        }
        let n = self.ok as f64;
        let mean = self.latency_sum_ns as f64 / n;
        let variance = ((self.latency_sq_sum - n * mean * mean) / (n - 1.0)).max(0.0);
        variance.sqrt() / 1000.0
    }

    /// Latency at percentile `p` (0 < p < 100) in µs.
    pub fn percentile_us(&self, p: f64) -> f64 {
        if self.ok == 0 {
            return 0.0;
        }
        if let Some(kept) = &self.kept {
            return kept.at(p, |point| point.1);
        }
        self.latency.value_at_quantile(p / 100.0) as f64 / 1000.0
    }

    /// Service time (actual send to answer) at percentile `p`, in µs.
    pub fn service_percentile_us(&self, p: f64) -> f64 {
        if self.ok == 0 {
            return 0.0;
        }
        if let Some(kept) = &self.kept {
            return kept.at(p, |point| point.2);
        }
        self.service.value_at_quantile(p / 100.0) as f64 / 1000.0
    }

    /// Mean service time (actual send to answer), in µs.
    pub fn mean_service_us(&self) -> f64 {
        self.avg_us(self.service_sum_ns)
    }

    /// Send lag behind the schedule at percentile `p`, in µs.
    pub fn send_lag_percentile_us(&self, p: f64) -> f64 {
        if let Some(kept) = &self.kept {
            return if kept.sends == 0 {
                0.0
            } else {
                kept.at(p, |point| point.3)
            };
        }
        if self.send_lag.is_empty() {
            return 0.0;
        }
        self.send_lag.value_at_quantile(p / 100.0) as f64 / 1000.0
    }

    /// Share of sends more than 1 ms behind schedule, in [0, 1].
    pub fn late_share(&self) -> f64 {
        let sends = self.kept.as_ref().map_or(self.send_lag.len(), |k| k.sends);
        if sends == 0 {
            0.0
        } else {
            self.late_sends as f64 / sends as f64
        }
    }

    /// Requests sent per second during the window (open loop).
    pub fn send_rate(&self) -> f64 {
        let secs = self.duration.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            self.sent as f64 / secs
        }
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
mod tests {
    use super::*;

    fn sample(at: Instant, latency_us: u64, error: Option<ErrorKind>) -> Sample {
        let done = at + Duration::from_micros(latency_us);
        Sample {
            scheduled: at,
            sent: at,
            send_ns: 1_000,
            recv_ns: 2_000,
            done,
            error,
        }
    }

    #[test]
    fn throughput_counts_batch_and_excludes_errors() {
        let t = Instant::now();
        let samples: Vec<_> = (0..10)
            .map(|i| sample(t, 100, (i == 0).then_some(ErrorKind::Timeout)))
            .collect();
        let w = WindowStats::from_samples(&samples, Duration::from_secs(1), 4);
        assert_eq!(w.ok, 9);
        assert_eq!(w.error_count(), 1);
        assert!((w.throughput() - 36.0).abs() < 1e-9);
        assert!((w.error_rate() - 0.1).abs() < 1e-9);
        assert!((w.mean_latency_us() - 100.0).abs() < 1e-6);
        assert!((w.avg_wait_us() - 97.0).abs() < 1e-6);
    }

    #[test]
    fn a_compacted_window_keeps_its_reported_figures_and_drops_its_histograms() {
        let t = Instant::now();
        let samples: Vec<_> = (1..=1000).map(|i| sample(t, i, None)).collect();
        let mut w = WindowStats::from_samples(&samples, Duration::from_secs(1), 1);
        let kept = [50.0, 99.0, 99.9];
        let before: Vec<f64> = kept.iter().map(|&p| w.percentile_us(p)).collect();
        let (mean, std, late) = (w.mean_latency_us(), w.std_latency_us(), w.late_share());
        let grown = w.latency.distinct_values();
        w.compact(&kept);
        let after: Vec<f64> = kept.iter().map(|&p| w.percentile_us(p)).collect();
        assert_eq!(before, after);
        assert_eq!((w.mean_latency_us(), w.std_latency_us()), (mean, std));
        assert_eq!(w.late_share(), late);
        assert_eq!(w.service_percentile_us(99.0), before[1]);
        assert!(
            w.percentile_us(75.0).is_nan(),
            "a percentile not kept shows as such"
        );
        assert!(w.latency.distinct_values() < 16, "was {grown} counters");
    }

    #[test]
    fn histograms_grow_only_to_the_values_recorded() {
        let t = Instant::now();
        let fast = WindowStats::from_samples(&[sample(t, 100, None)], Duration::from_secs(1), 1);
        let slow = WindowStats::from_samples(
            &[sample(t, 100, None), sample(t, 60_000_000, None)],
            Duration::from_secs(1),
            1,
        );
        assert!(fast.latency.distinct_values() < slow.latency.distinct_values());
        assert!((slow.percentile_us(99.0) - 60_000_000.0).abs() <= 60_000.0);
        let mut merged = fast.clone();
        merged.merge(&slow);
        assert_eq!(merged.percentile_us(99.0), slow.percentile_us(99.0));
    }

    #[test]
    fn merge_adds_counts_and_keeps_distribution() {
        let t = Instant::now();
        let fast: Vec<_> = (0..100).map(|_| sample(t, 100, None)).collect();
        let slow: Vec<_> = (0..100).map(|_| sample(t, 300, None)).collect();
        let a = WindowStats::from_samples(&fast, Duration::from_secs(1), 1);
        let b = WindowStats::from_samples(&slow, Duration::from_secs(1), 1);
        let m = WindowStats::merged([&a, &b], 1);
        assert_eq!(m.ok, 200);
        assert_eq!(m.windows, 2);
        assert!((m.throughput() - 100.0).abs() < 1e-9);
        assert!((m.mean_latency_us() - 200.0).abs() < 1e-6);
        assert!((m.std_latency_us() - 100.25).abs() < 0.5);
        assert!((m.percentile_us(25.0) - 100.0).abs() < 0.2);
        assert!((m.percentile_us(99.9) - 300.0).abs() < 0.5);
    }
}

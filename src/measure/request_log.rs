//! Every request of a level, one record each, for the exports that list requests one by one
//! (perf_analyzer's `profile_export.json`, which GenAI-Perf's artifacts include). Windows keep
//! only histograms so that memory stays flat; this log grows with the level, so it is kept
//! only when the user asks for a per-request export (`--artifact-dir`). Times are wall-clock
//! nanoseconds since the Unix epoch, converted from the monotonic clock through one anchor
//! taken when the run starts, so every duration between two of them is the monotonic one.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::sample::{Drained, Sample};
use crate::backend::{ErrorKind, Tokens};

/// One reading of the wall clock and the monotonic clock together: the one place where a
/// monotonic instant becomes a time of day.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    /// Nanoseconds since the Unix epoch at `instant`.
    epoch_ns: u64,
    instant: Instant,
}

impl WallClock {
    /// Reads both clocks now.
    pub fn now() -> WallClock {
        let instant = Instant::now();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        WallClock {
            epoch_ns: since_epoch.as_nanos() as u64,
            instant,
        }
    }

    /// A clock whose anchor is `instant` at `epoch_ns` (for tests).
    pub fn at(instant: Instant, epoch_ns: u64) -> WallClock {
        WallClock { epoch_ns, instant }
    }

    /// `at` in nanoseconds since the Unix epoch.
    pub fn epoch_ns(&self, at: Instant) -> u64 {
        if at >= self.instant {
            self.epoch_ns + (at - self.instant).as_nanos() as u64
        } else {
            self.epoch_ns
                .saturating_sub((self.instant - at).as_nanos() as u64)
        }
    }
}

/// One finished request. Times are ns since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestRecord {
    /// When the client began sending it (perf_analyzer's request timestamp).
    pub sent_ns: u64,
    /// When it was meant to go (open loop); equal to `sent_ns` in closed loop.
    pub scheduled_ns: u64,
    /// When its first answer came.
    pub first_ns: u64,
    /// When it ended: its last answer with outputs, or the failure.
    pub done_ns: u64,
    /// Its place in the dataset (which prompt it sent).
    pub request: u32,
    /// Answers that carried outputs; the gaps between them are the log's.
    pub answers: u32,
    pub tokens: Tokens,
    pub error: Option<ErrorKind>,
    /// The correlation id of its sequence (0: none).
    pub sequence_id: u64,
}

/// The requests of one level in the order their windows took them, with the gaps between
/// their answers and the boundaries of the windows.
#[derive(Debug, Clone)]
pub struct RequestLog {
    clock: WallClock,
    records: Vec<RequestRecord>,
    /// For each record in order, the gaps between its answers (`answers − 1` of them,
    /// fewer if the driver dropped some), ns.
    gaps: Vec<u64>,
    /// How many gaps each record has in `gaps`.
    gap_counts: Vec<u32>,
    /// Start of the first window, then the end of each window, ns since the epoch.
    window_boundaries: Vec<u64>,
}

impl RequestLog {
    pub fn new(clock: WallClock) -> RequestLog {
        RequestLog {
            clock,
            records: Vec::new(),
            gaps: Vec::new(),
            gap_counts: Vec::new(),
            window_boundaries: Vec::new(),
        }
    }

    /// Adds every request a cut took out of the slots' buffers.
    pub fn add_drained(&mut self, drained: &Drained) {
        for (sample, gaps) in drained.each() {
            self.add(sample, gaps);
        }
    }

    /// Adds one finished request and the gaps between its answers.
    pub fn add(&mut self, sample: &Sample, gaps: &[u64]) {
        let clock = &self.clock;
        self.records.push(RequestRecord {
            sent_ns: clock.epoch_ns(sample.sent),
            scheduled_ns: clock.epoch_ns(sample.scheduled),
            first_ns: clock.epoch_ns(sample.first),
            done_ns: clock.epoch_ns(sample.done),
            request: sample.request,
            answers: sample.answers,
            tokens: sample.tokens,
            error: sample.error,
            sequence_id: sample.sequence_id,
        });
        self.gaps.extend_from_slice(gaps);
        self.gap_counts.push(gaps.len() as u32);
    }

    /// Marks the end of a window that began at `start` (the first call also marks the start).
    pub fn close_window(&mut self, start: Instant, end: Instant) {
        if self.window_boundaries.is_empty() {
            self.window_boundaries.push(self.clock.epoch_ns(start));
        }
        self.window_boundaries.push(self.clock.epoch_ns(end));
    }

    /// Each request with the gaps between its answers.
    pub fn each(&self) -> impl Iterator<Item = (&RequestRecord, &[u64])> {
        let mut offset = 0usize;
        self.records
            .iter()
            .zip(&self.gap_counts)
            .map(move |(record, &count)| {
                let end = offset + count as usize;
                let gaps = &self.gaps[offset..end];
                offset = end;
                (record, gaps)
            })
    }

    /// Start of the first window, then the end of each, ns since the epoch.
    pub fn window_boundaries(&self) -> &[u64] {
        &self.window_boundaries
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

impl RequestRecord {
    /// When each answer with outputs came, ns since the epoch: the first, then the first
    /// plus each gap in turn.
    pub fn answer_times(&self, gaps: &[u64]) -> Vec<u64> {
        if self.answers == 0 {
            return Vec::new();
        }
        let mut at = self.first_ns;
        let mut times = Vec::with_capacity(gaps.len() + 1);
        times.push(at);
        for gap in gaps {
            at += gap;
            times.push(at);
        }
        times
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::TokenSource;
    use std::time::Duration;

    #[test]
    fn instants_become_epoch_nanoseconds_through_one_anchor() {
        let t = Instant::now();
        let clock = WallClock::at(t, 1_000_000_000);
        assert_eq!(clock.epoch_ns(t + Duration::from_micros(5)), 1_000_005_000);
        assert_eq!(clock.epoch_ns(t - Duration::from_micros(5)), 999_995_000);
        let now = WallClock::now();
        let year_2020_ns = 1_577_836_800u64 * 1_000_000_000;
        assert!(now.epoch_ns(Instant::now()) > year_2020_ns);
    }

    #[test]
    fn records_keep_their_own_gaps_and_the_windows_their_bounds() {
        let t = Instant::now();
        let mut log = RequestLog::new(WallClock::at(t, 1_000));
        let ms = Duration::from_millis;
        let mut streamed = Sample::once(t, t + ms(1), t + ms(30));
        streamed.first = t + ms(10);
        streamed.answers = 3;
        streamed.gaps = 2;
        streamed.request = 7;
        streamed.tokens = Tokens {
            output: 12,
            input: 5,
            source: TokenSource::Usage,
            unstreamed: false,
            ..Default::default()
        };
        let mut drained = Drained::default();
        drained.samples.push(streamed);
        drained.gaps.extend([8_000_000, 12_000_000]);
        drained
            .samples
            .push(Sample::failed(t, t, t + ms(40), ErrorKind::Timeout));
        log.add_drained(&drained);
        log.close_window(t, t + ms(50));
        log.close_window(t + ms(50), t + ms(100));
        let all: Vec<_> = log.each().collect();
        assert_eq!(all.len(), 2);
        let (first, gaps) = all[0];
        assert_eq!((first.sent_ns, first.scheduled_ns), (1_001_000, 1_000));
        assert_eq!((first.request, first.tokens.output), (7, 12));
        assert_eq!(
            first.answer_times(gaps),
            vec![10_001_000, 18_001_000, 30_001_000]
        );
        let (failed, gaps) = all[1];
        assert_eq!(failed.error, Some(ErrorKind::Timeout));
        assert!(gaps.is_empty() && failed.answer_times(gaps).is_empty());
        assert_eq!(log.window_boundaries(), &[1_000, 50_001_000, 100_001_000]);
    }
}

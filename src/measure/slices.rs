//! AIPerf's `--slice-duration`: a measurement's requests dealt into slices of S seconds by
//! when each started (its scheduled send, or its send), from the measurement's start, as
//! AIPerf bins its records; each slice is a window of its own, so every figure of a window
//! is there per slice. A slice nothing started in is left out, and the last one ends at the
//! last answer (incomplete, as AIPerf marks it); the slices' counts add up to the
//! measurement's.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::sample::Drained;
use super::window::WindowStats;

/// A level's slices: their length, and the slices with requests, in order.
#[derive(Debug, Clone, Default)]
pub struct SliceSet {
    pub width: Duration,
    pub windows: Vec<WindowStats>,
}

impl SliceSet {
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }
}

/// The slices of a measurement being taken.
#[derive(Debug, Clone)]
pub struct Slices {
    origin: Instant,
    width: Duration,
    /// An empty window as the run configures them, copied for each new slice.
    empty: WindowStats,
    by_index: BTreeMap<u64, WindowStats>,
}

impl Slices {
    /// Slices of `width` from `origin`, each a copy of `empty` filled.
    pub fn new(origin: Instant, width: Duration, empty: WindowStats) -> Slices {
        Slices {
            origin,
            width: width.max(Duration::from_micros(1)),
            empty,
            by_index: BTreeMap::new(),
        }
    }

    /// Deals the requests of `drained` into their slices.
    pub fn add_drained(&mut self, drained: &Drained) {
        for (sample, gaps) in drained.each() {
            let start = sample.scheduled.min(sample.sent);
            let after = start.saturating_duration_since(self.origin);
            let index = (after.as_nanos() / self.width.as_nanos()) as u64;
            let empty = &self.empty;
            let slice = self.by_index.entry(index).or_insert_with(|| empty.clone());
            slice.add(sample, gaps);
        }
    }

    /// The slices with requests, in order, each cut to its bounds (the last ends at the
    /// last answer, or at `end` when nothing was answered).
    pub fn finish(self, end: Instant) -> SliceSet {
        let last_done = (self.by_index.values())
            .filter_map(|w| w.last_done)
            .max()
            .unwrap_or(end);
        let windows = (self.by_index.into_iter())
            .map(|(index, mut slice)| {
                let start = self.origin + self.width * index as u32;
                let full_end = start + self.width;
                let end = full_end.min(last_done.max(start));
                slice.duration = (end - start).max(Duration::from_nanos(1));
                slice.bounds = Some((start, end));
                slice.windows = 1;
                slice.sent = slice.completed() + slice.cancelled;
                slice
            })
            .collect();
        SliceSet {
            width: self.width,
            windows,
        }
    }
}

/// Whether a slice covers its whole width (AIPerf's `is_complete`; the last is cut short).
pub fn is_whole(slice: &WindowStats, width: Duration) -> bool {
    slice.duration + Duration::from_nanos(1) >= width
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sample::{Sample, SlotBuffer};

    #[test]
    fn requests_go_to_the_slice_they_started_in_and_the_counts_add_up() {
        let origin = Instant::now();
        let buffer = SlotBuffer::default();
        let at = |ms: u64| origin + Duration::from_millis(ms);
        // Starts at 0, 150, 250, 260 and 720 ms; the last answer at 800 ms.
        for (start, done) in [(0, 40), (150, 400), (250, 300), (260, 270), (720, 800)] {
            buffer.push(Sample::once(at(start), at(start), at(done)), &[]);
        }
        let mut drained = Drained::default();
        buffer.drain_until(at(1000), &mut drained);
        let mut slices = Slices::new(origin, Duration::from_millis(200), WindowStats::new(1));
        slices.add_drained(&drained);
        let slices = slices.finish(at(1000)).windows;
        let counts: Vec<u64> = slices.iter().map(|s| s.ok).collect();
        assert_eq!(
            counts,
            [2, 2, 1],
            "slice 2 (400-600 ms) had no start: left out"
        );
        assert_eq!(counts.iter().sum::<u64>(), 5);
        let bounds: Vec<(u128, u128)> = (slices.iter())
            .map(|s| {
                let (a, b) = s.bounds.unwrap();
                ((a - origin).as_millis(), (b - origin).as_millis())
            })
            .collect();
        assert_eq!(bounds, [(0, 200), (200, 400), (600, 800)]);
        let width = Duration::from_millis(200);
        assert!(is_whole(&slices[0], width) && is_whole(&slices[2], width));
        let mut cut = Slices::new(origin, Duration::from_millis(500), WindowStats::new(1));
        cut.add_drained(&drained);
        let cut = cut.finish(at(1000)).windows;
        assert_eq!(cut.len(), 2);
        assert_eq!(
            cut[1].duration,
            Duration::from_millis(300),
            "ends at the last answer"
        );
        assert!(!is_whole(&cut[1], Duration::from_millis(500)));
    }
}

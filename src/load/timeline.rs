//! Load that changes over time (`--ramp`, `--load-steps`): a list of segments, each holding
//! a concurrency or a request rate that is constant or moves linearly from one value to
//! another. The same plan answers "what load now?" (the closed loop sets its slots from it,
//! the reports print it per second) and "when is the next request due?" (the open loop's
//! schedule, by inverting the cumulative number of requests the rate asks for).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};

/// What the segments' values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineKind {
    /// Requests per second, sent open loop.
    Rate,
    /// Requests in flight, closed loop.
    Concurrency,
}

/// One stretch of the plan: the load goes from `from` to `to` over `duration` (equal for
/// a step).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub from: f64,
    pub to: f64,
    pub duration: Duration,
}

impl Segment {
    fn secs(&self) -> f64 {
        self.duration.as_secs_f64()
    }

    /// Requests a rate segment asks for in all (the area under the rate).
    fn count(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.secs()
    }

    /// Seconds into a rate segment at which `u` requests have been asked for: the inverse
    /// of `from·t + (to−from)·t²/(2d)`, in a form that stays exact when `to == from`.
    fn time_of_count(&self, u: f64) -> f64 {
        let slope = (self.to - self.from) / self.secs();
        let root = (self.from * self.from + 2.0 * slope * u).max(0.0).sqrt();
        let t = if self.from + root > 0.0 {
            2.0 * u / (self.from + root)
        } else {
            0.0
        };
        t.min(self.secs())
    }

    /// The value `t` seconds into the segment. A rate moves continuously; a concurrency
    /// moves through every whole value between `from` and `to`, each held equally long.
    fn value_at(&self, kind: TimelineKind, t: f64) -> f64 {
        let share = (t / self.secs()).clamp(0.0, 1.0);
        match kind {
            TimelineKind::Rate => self.from + (self.to - self.from) * share,
            TimelineKind::Concurrency => {
                let span = (self.to - self.from).abs();
                let index = (share * (span + 1.0)).floor().min(span);
                self.from + index * (self.to - self.from).signum()
            }
        }
    }
}

/// The whole plan of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub kind: TimelineKind,
    pub segments: Vec<Segment>,
}

impl Timeline {
    /// How long the plan lasts.
    pub fn total(&self) -> Duration {
        self.segments.iter().map(|s| s.duration).sum()
    }

    /// The load `t` after the start (0 after the end).
    pub fn value_at(&self, t: Duration) -> f64 {
        let mut start = Duration::ZERO;
        for segment in &self.segments {
            if t < start + segment.duration {
                return segment.value_at(self.kind, (t - start).as_secs_f64());
            }
            start += segment.duration;
        }
        0.0
    }

    /// The load averaged over `[from, to)` (sampled every millisecond).
    pub fn mean_over(&self, from: Duration, to: Duration) -> f64 {
        let steps = ((to.saturating_sub(from)).as_millis() as u32).max(1);
        let width = to.saturating_sub(from) / steps;
        let sum: f64 = (0..steps)
            .map(|i| self.value_at(from + width * i + width / 2))
            .sum();
        sum / steps as f64
    }

    /// The plan in words, for the settings block: `rate 100 for 10s, 100..1000 for 5s`.
    pub fn describe(&self) -> String {
        let name = match self.kind {
            TimelineKind::Rate => "rate",
            TimelineKind::Concurrency => "concurrency",
        };
        let parts: Vec<String> = self
            .segments
            .iter()
            .map(|s| {
                let value = if s.from == s.to {
                    format!("{}", s.from)
                } else {
                    format!("{}..{}", s.from, s.to)
                };
                format!("{value} for {}s", s.secs())
            })
            .collect();
        format!("{name} {}", parts.join(", "))
    }
}

/// When each request of a rate plan is due, as an offset from the start. Requests are
/// placed where the cumulative count the rate asks for passes 0, 1, 2, … (constant) or 0
/// and then the points of a unit Poisson process (poisson), so a Poisson plan is a Poisson process whose
/// rate follows the plan.
#[derive(Debug, Clone)]
pub struct RateCurve {
    segments: Vec<Segment>,
    index: usize,
    /// Start of the current segment, in seconds, and the count asked for before it.
    segment_start: f64,
    count_before: f64,
    /// Count position of the next request.
    position: f64,
    poisson: Option<SmallRng>,
}

impl RateCurve {
    /// Evenly spaced requests (`seed` None) or a seeded Poisson process.
    pub fn new(segments: Vec<Segment>, poisson_seed: Option<u64>) -> RateCurve {
        RateCurve {
            segments,
            index: 0,
            segment_start: 0.0,
            count_before: 0.0,
            position: 0.0,
            poisson: poisson_seed.map(SmallRng::seed_from_u64),
        }
    }

    fn next_step(&mut self) -> f64 {
        match &mut self.poisson {
            Some(rng) => Exp1.sample(rng),
            None => 1.0,
        }
    }

    /// The offset of the next request, or `None` after the plan's end.
    pub fn next_offset(&mut self) -> Option<Duration> {
        loop {
            let segment = *self.segments.get(self.index)?;
            let within = self.position - self.count_before;
            if within < segment.count() {
                let t = self.segment_start + segment.time_of_count(within);
                self.position += self.next_step();
                return Some(Duration::from_secs_f64(t));
            }
            self.count_before += segment.count();
            self.segment_start += segment.secs();
            self.index += 1;
        }
    }

    /// Requests per second over the whole plan.
    pub fn mean_rate(&self) -> f64 {
        let count: f64 = self.segments.iter().map(Segment::count).sum();
        let secs: f64 = self.segments.iter().map(Segment::secs).sum();
        if secs > 0.0 {
            count / secs
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(from: f64, to: f64, secs: f64) -> Segment {
        Segment {
            from,
            to,
            duration: Duration::from_secs_f64(secs),
        }
    }

    fn offsets(curve: &mut RateCurve) -> Vec<f64> {
        std::iter::from_fn(|| curve.next_offset())
            .map(|d| d.as_secs_f64())
            .collect()
    }

    fn count_in(at: &[f64], from: f64, to: f64) -> usize {
        at.iter().filter(|&&t| t >= from && t < to).count()
    }

    #[test]
    fn steps_send_the_asked_rate_in_each_step() {
        let mut curve =
            RateCurve::new(vec![seg(100.0, 100.0, 2.0), seg(1000.0, 1000.0, 1.0)], None);
        let at = offsets(&mut curve);
        assert_eq!(count_in(&at, 0.0, 1.0), 100);
        assert_eq!(count_in(&at, 1.0, 2.0), 100);
        assert_eq!(count_in(&at, 2.0, 3.0), 1000);
        assert!(at.windows(2).all(|w| w[1] >= w[0]));
        assert!((at[1] - 0.01).abs() < 1e-9, "{}", at[1]);
    }

    #[test]
    fn a_ramp_sends_the_area_under_the_rate() {
        // 100 → 500 over 4 s: per second 150, 250, 350, 450.
        let mut curve = RateCurve::new(vec![seg(100.0, 500.0, 4.0)], None);
        let at = offsets(&mut curve);
        for (second, expected) in [150usize, 250, 350, 450].into_iter().enumerate() {
            let got = count_in(&at, second as f64, second as f64 + 1.0);
            assert!(got.abs_diff(expected) <= 1, "second {second}: {got}");
        }
        // A ramp from zero and a pause work too.
        let mut curve = RateCurve::new(
            vec![
                seg(0.0, 200.0, 1.0),
                seg(0.0, 0.0, 1.0),
                seg(50.0, 50.0, 1.0),
            ],
            None,
        );
        let at = offsets(&mut curve);
        assert!(count_in(&at, 0.0, 1.0).abs_diff(100) <= 1);
        assert_eq!(count_in(&at, 1.0, 2.0), 0);
        assert!(count_in(&at, 2.0, 3.0).abs_diff(50) <= 1);
    }

    #[test]
    fn a_poisson_plan_keeps_the_rate_and_spread() {
        let mut curve = RateCurve::new(vec![seg(1000.0, 1000.0, 100.0)], Some(3));
        let at = offsets(&mut curve);
        let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00002, "mean gap {mean}");
        assert!((var.sqrt() / mean - 1.0).abs() < 0.02);
    }

    #[test]
    fn values_over_time() {
        let plan = Timeline {
            kind: TimelineKind::Concurrency,
            segments: vec![seg(1.0, 4.0, 4.0), seg(8.0, 8.0, 1.0)],
        };
        let at = |s: f64| plan.value_at(Duration::from_secs_f64(s));
        assert_eq!(
            [at(0.0), at(0.99), at(1.0), at(3.5), at(4.2)],
            [1.0, 1.0, 2.0, 4.0, 8.0]
        );
        assert_eq!(at(5.0), 0.0);
        let mean = plan.mean_over(Duration::ZERO, Duration::from_secs(2));
        assert!((mean - 1.5).abs() < 0.01);
        let rate = Timeline {
            kind: TimelineKind::Rate,
            segments: vec![seg(100.0, 500.0, 4.0)],
        };
        let mean = rate.mean_over(Duration::from_secs(1), Duration::from_secs(2));
        assert!((mean - 250.0).abs() < 0.5);
        assert_eq!(rate.describe(), "rate 100..500 for 4s");
        assert_eq!(plan.total(), Duration::from_secs(5));
    }
}

//! AIPerf's ramps inside the measured phase, as AIPerf moves them. A concurrency (or
//! prefill) ramp is a staircase of whole steps: from 1 at the start, value k at
//! (k−1)/(target−1) of the duration, the target at its end. A rate ramp starts at
//! rate·0.1/duration and is moved every 0.1 s to where the line from there to the rate is;
//! a `--request-rate-series` is moved every 0.1 s to its points' line, from the end of
//! any rate ramp, and holds its last rate. Both rates become the segments of a
//! [`RateCurve`] (the shape `--load-steps` uses), so the schedule places requests along
//! them with the run's arrival pattern; the level's measurement is unchanged. The
//! concurrency and prefill steps are followed by [`LevelRamps`] from the level's start;
//! the rates are [`super::rate_ramps`]'s.

use std::time::{Duration, Instant};

use super::driver::Driver;
use crate::config::{LoadConfig, LoadLevel};

/// The value of a whole-step ramp from 1 to `target` over `duration`, `t` after its start.
pub fn step_value(target: u32, duration: Duration, t: Duration) -> u32 {
    if target <= 1 || t >= duration {
        return target.max(1);
    }
    let share = t.as_secs_f64() / duration.as_secs_f64();
    let steps = (share * (target - 1) as f64).floor() as u32;
    (1 + steps).min(target)
}

/// When a whole-step ramp reaches `value` (from 1 to `target` over `duration`).
fn step_time(target: u32, duration: Duration, value: u32) -> Duration {
    if target <= 1 || value <= 1 {
        return Duration::ZERO;
    }
    inferperf_wire::number::saturating_secs(
        duration.as_secs_f64() * (value - 1) as f64 / (target - 1) as f64,
    )
}

/// A whole-step ramp being followed.
#[derive(Debug, Clone, Copy)]
struct StepRamp {
    target: u32,
    duration: Duration,
    /// The value applied last.
    applied: u32,
}

impl StepRamp {
    fn new(target: u32, duration: Option<Duration>) -> Option<StepRamp> {
        let duration = duration?;
        (target > 1).then_some(StepRamp {
            target,
            duration,
            applied: 1,
        })
    }

    /// The value due `t` after the start, when it differs from the one applied.
    fn due(&mut self, t: Duration) -> Option<u32> {
        let value = step_value(self.target, self.duration, t);
        (value != self.applied).then(|| {
            self.applied = value;
            value
        })
    }

    /// When the next value is due, after the start (`None`: the target is reached).
    fn next(&self) -> Option<Duration> {
        (self.applied < self.target)
            .then(|| step_time(self.target, self.duration, self.applied + 1))
    }
}

/// The concurrency and prefill ramps of a level, moved on its driver as time passes.
#[derive(Debug, Clone)]
pub struct LevelRamps {
    start: Instant,
    concurrency: Option<StepRamp>,
    prefill: Option<StepRamp>,
}

impl LevelRamps {
    /// The ramps of `level` under `load` (`None`: nothing ramps): the concurrency of a
    /// closed loop or of sessions, or a rate's in-flight cap; the prefill limit.
    pub fn of(load: &LoadConfig, level: LoadLevel) -> Option<LevelRamps> {
        let shape = &load.modes.run;
        let target = match level {
            LoadLevel::Concurrency(c) => Some(c),
            LoadLevel::Rate(_) => load.max_concurrency,
        };
        let concurrency = target.and_then(|t| StepRamp::new(t, shape.concurrency_ramp));
        let prefill = shape.prefill.and_then(|p| StepRamp::new(p.limit, p.ramp));
        if concurrency.is_none() && prefill.is_none() {
            return None;
        }
        Some(LevelRamps {
            start: Instant::now(),
            concurrency,
            prefill,
        })
    }

    /// The level the driver starts with: a ramped concurrency starts at 1.
    pub fn first_level(&self, level: LoadLevel) -> LoadLevel {
        match (level, self.concurrency) {
            (LoadLevel::Concurrency(_), Some(_)) => LoadLevel::Concurrency(1),
            _ => level,
        }
    }

    /// Starts the ramps' clock now.
    pub fn start(&mut self) {
        self.start = Instant::now();
    }

    /// Moves the driver to the values due now.
    pub fn follow(&mut self, driver: &mut Driver) {
        let t = self.start.elapsed();
        if let Some(value) = self.concurrency.as_mut().and_then(|r| r.due(t)) {
            driver.ramp_concurrency(value);
        }
        if let Some(value) = self.prefill.as_mut().and_then(|r| r.due(t)) {
            driver.raise_prefill(value);
        }
    }

    /// When the next value is due (`None`: every ramp is at its target).
    pub fn next_change(&self) -> Option<Instant> {
        let next = [self.concurrency, self.prefill]
            .into_iter()
            .flatten()
            .filter_map(|r| r.next())
            .min()?;
        Some(self.start + next)
    }
}

#[cfg(test)]
mod tests {
    use super::super::rate_ramps::{rate_segments, HOLD};
    use super::*;
    use crate::config::rate_series::RateSeries;
    use crate::config::Segment;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_step_ramp_climbs_whole_steps_from_1_to_its_target() {
        // 1 → 5 over 4 s: one step a second, the target at the end.
        let at = |t| step_value(5, ms(4000), ms(t));
        assert_eq!(
            [
                at(0),
                at(999),
                at(1000),
                at(2500),
                at(3999),
                at(4000),
                at(9000)
            ],
            [1, 1, 2, 3, 4, 5, 5]
        );
        assert_eq!(step_time(5, ms(4000), 3), ms(2000));
        assert_eq!(step_value(1, ms(4000), ms(0)), 1);
        let mut ramp = StepRamp::new(3, Some(ms(1000))).unwrap();
        assert_eq!(ramp.next(), Some(ms(500)));
        assert_eq!(ramp.due(ms(100)), None);
        assert_eq!(ramp.due(ms(600)), Some(2));
        assert_eq!(ramp.due(ms(1200)), Some(3));
        assert_eq!(ramp.next(), None);
        assert!(
            StepRamp::new(1, Some(ms(1000))).is_none(),
            "nothing to ramp"
        );
    }

    fn rates(segments: &[Segment]) -> Vec<(f64, f64)> {
        let round = |x: f64| (x * 1e6).round() / 1e6;
        segments
            .iter()
            .map(|s| (round(s.from), round(s.secs())))
            .collect()
    }

    #[test]
    fn a_rate_ramp_starts_at_a_tenth_second_s_share_and_moves_every_tenth() {
        // 10 req/s over 0.5 s: 2, then 2 + 8·t/0.5 at t = 0.1 … 0.4, then 10 held.
        let segments = rate_segments(10.0, Some(ms(500)), None);
        let expected = [(2.0, 0.1), (3.6, 0.1), (5.2, 0.1), (6.8, 0.1), (8.4, 0.1)];
        assert_eq!(rates(&segments[..5]), expected);
        assert_eq!(segments[5].from, 10.0);
        assert_eq!(segments.len(), 6);
        // A ramp that is not a whole number of tenths ends on a shorter step.
        let odd = rate_segments(4.0, Some(ms(250)), None);
        assert_eq!(rates(&odd)[2], (3.52, 0.05));
    }

    #[test]
    fn a_series_follows_its_line_every_tenth_from_the_ramp_s_end() {
        let series =
            RateSeries::parse(r#"[{"time_s": 0, "qps": 2}, {"time_s": 0.3, "qps": 5}]"#).unwrap();
        let segments = rate_segments(2.0, None, Some(&series));
        assert_eq!(
            rates(&segments),
            [
                (2.0, 0.1),
                (3.0, 0.1),
                (4.0, 0.1),
                (5.0, HOLD.as_secs_f64())
            ]
        );
        let after_ramp = rate_segments(2.0, Some(ms(200)), Some(&series));
        assert_eq!(
            rates(&after_ramp)[..3],
            [(1.0, 0.1), (1.5, 0.1), (2.0, 0.1)]
        );
        // The requests a plan asks for in its first 0.4 s: 0.1·(2 + 3 + 4 + 5).
        let asked: f64 = segments[..3].iter().map(Segment::count).sum();
        assert!((asked - 0.9).abs() < 1e-9);
    }
}

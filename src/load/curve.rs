//! A rate that follows a plan over time (`--ramp`, `--load-steps`) as a stream of send
//! offsets: requests are placed where the cumulative count the plan asks for passes each whole
//! number (constant) or each point of a unit Poisson process (poisson).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1, Gamma};

use crate::config::Segment;

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
    /// With `poisson`'s generator: unit-mean gamma steps instead of exponential ones (a
    /// gamma renewal process whose rate follows the plan, `--arrival-pattern gamma`).
    gamma: Option<Gamma<f64>>,
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
            gamma: None,
        }
    }

    /// Gamma steps of shape `smoothness` and mean 1, from `seed`: the gaps' coefficient of
    /// variation at a steady rate is `1/sqrt(smoothness)`.
    pub fn gamma(segments: Vec<Segment>, smoothness: f64, seed: u64) -> RateCurve {
        RateCurve {
            gamma: Gamma::new(smoothness, 1.0 / smoothness).ok(),
            ..RateCurve::new(segments, Some(seed))
        }
    }

    fn next_step(&mut self) -> f64 {
        match (&mut self.poisson, &self.gamma) {
            (Some(rng), Some(gamma)) => gamma.sample(rng),
            (Some(rng), None) => Exp1.sample(rng),
            (None, _) => 1.0,
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
                return Some(inferperf_wire::number::saturating_secs(t));
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
            duration: inferperf_wire::number::saturating_secs(secs),
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
    fn a_gamma_plan_keeps_the_rate_and_the_spread_of_its_shape() {
        let mut curve = RateCurve::gamma(vec![seg(1000.0, 1000.0, 100.0)], 4.0, 3);
        let at = offsets(&mut curve);
        let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00002, "mean gap {mean}");
        assert!((var.sqrt() / mean - 0.5).abs() < 0.01);
    }
}

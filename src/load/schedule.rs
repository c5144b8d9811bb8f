//! When each open-loop request is due, as an offset from the start of the level: a constant
//! rate, a seeded Poisson process, seeded gamma gaps (`--arrival-pattern gamma`), gaps read from a file (looped), fixed timestamps
//! (replayed once), or a rate that changes over time (`--ramp`, `--load-steps`). Offsets are absolute, so a late wake-up never shifts later sends.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Gamma};

use super::curve::RateCurve;

/// How requests are spread in time.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Every `1/rate` seconds.
    Constant { rate: f64, sent: u64 },
    /// Exponential gaps with mean `1/rate` (a Poisson process), from a seeded generator.
    Poisson {
        rate: f64,
        rng: SmallRng,
        gaps: Exp<f64>,
        at_secs: f64,
    },
    /// Gamma gaps of shape `smoothness` and mean `1/rate`, from a seeded generator: their
    /// coefficient of variation is `1/sqrt(smoothness)` (1 is a Poisson process).
    Gamma {
        rate: f64,
        rng: SmallRng,
        gaps: Gamma<f64>,
        at_secs: f64,
    },
    /// Gaps from `--request-intervals`, repeated in order.
    Intervals {
        gaps: Vec<Duration>,
        next: usize,
        at: Duration,
    },
    /// `--fixed-schedule`: each request at its timestamp, once.
    Fixed { offsets: Vec<Duration>, next: usize },
    /// A rate that follows a plan over time, until the plan ends.
    Curve(RateCurve),
    /// One shard's part of a schedule: every `count`-th send of the whole, from `index`.
    Sharded {
        whole: Box<Schedule>,
        index: u64,
        count: u64,
        /// Sends of the whole schedule drawn so far.
        drawn: u64,
    },
    /// The first `left` sends of `inner` (`--request-count` in an open loop).
    Limited { inner: Box<Schedule>, left: u64 },
}

impl Schedule {
    /// A constant rate (requests per second > 0).
    pub fn constant(rate: f64) -> Schedule {
        Schedule::Constant { rate, sent: 0 }
    }

    /// A Poisson process of the given rate, reproducible from `seed`.
    pub fn poisson(rate: f64, seed: u64) -> Schedule {
        Schedule::Poisson {
            rate,
            rng: SmallRng::seed_from_u64(seed),
            gaps: Exp::new(rate).unwrap_or_else(|_| Exp::new(1.0).expect("1 is a valid rate")),
            at_secs: 0.0,
        }
    }

    /// Gamma gaps of shape `smoothness` (> 0) and scale `1/(rate·smoothness)`, so that the
    /// mean rate is `rate`; reproducible from `seed`.
    pub fn gamma(rate: f64, smoothness: f64, seed: u64) -> Schedule {
        let scale = 1.0 / (rate * smoothness);
        Schedule::Gamma {
            rate,
            rng: SmallRng::seed_from_u64(seed),
            gaps: Gamma::new(smoothness, scale)
                .unwrap_or_else(|_| Gamma::new(1.0, 1.0).expect("1, 1 is a valid gamma")),
            at_secs: 0.0,
        }
    }

    /// Gaps replayed in a loop; the first request goes at once.
    pub fn intervals(gaps: Vec<Duration>) -> Schedule {
        Schedule::Intervals {
            gaps,
            next: 0,
            at: Duration::ZERO,
        }
    }

    /// Timestamps replayed once, relative to the earliest.
    pub fn fixed(mut offsets: Vec<Duration>) -> Schedule {
        offsets.sort();
        let first = offsets.first().copied().unwrap_or_default();
        let offsets = offsets.into_iter().map(|o| o - first).collect();
        Schedule::Fixed { offsets, next: 0 }
    }

    /// Timestamps replayed once as they are (the first may be later than zero).
    pub fn fixed_from_zero(mut offsets: Vec<Duration>) -> Schedule {
        offsets.sort();
        Schedule::Fixed { offsets, next: 0 }
    }

    /// Shard `index` of `count` of the `whole` schedule: it keeps the whole stream's sends
    /// `index`, `index + count`, … at their own times, so that the shards' sends together
    /// are exactly the whole stream (a constant rate becomes `count` interleaved constant
    /// streams; a Poisson process is drawn whole from the shared seed and dealt out).
    pub fn sharded(whole: Schedule, index: u32, count: u32) -> Schedule {
        Schedule::Sharded {
            whole: Box::new(whole),
            index: index as u64,
            count: count.max(1) as u64,
            drawn: 0,
        }
    }

    /// The first `count` sends of `inner`, then the end.
    pub fn limited(inner: Schedule, count: u64) -> Schedule {
        Schedule::Limited {
            inner: Box::new(inner),
            left: count,
        }
    }

    /// The offset of the next request from the start, or `None` when the schedule is over.
    pub fn next_offset(&mut self) -> Option<Duration> {
        match self {
            Schedule::Constant { rate, sent } => {
                let at = inferperf_wire::number::saturating_secs(*sent as f64 / *rate);
                *sent += 1;
                Some(at)
            }
            Schedule::Poisson {
                rng, gaps, at_secs, ..
            } => {
                let at = inferperf_wire::number::saturating_secs(*at_secs);
                *at_secs += gaps.sample(rng);
                Some(at)
            }
            Schedule::Gamma {
                rng, gaps, at_secs, ..
            } => {
                let at = inferperf_wire::number::saturating_secs(*at_secs);
                *at_secs += gaps.sample(rng);
                Some(at)
            }
            Schedule::Intervals { gaps, next, at } => {
                let this = *at;
                if gaps.is_empty() {
                    return None;
                }
                *at += gaps[*next % gaps.len()];
                *next += 1;
                Some(this)
            }
            Schedule::Fixed { offsets, next } => {
                let at = offsets.get(*next).copied();
                *next += 1;
                at
            }
            Schedule::Curve(curve) => curve.next_offset(),
            Schedule::Limited { inner, left } => {
                *left = left.checked_sub(1)?;
                inner.next_offset()
            }
            Schedule::Sharded {
                whole,
                index,
                count,
                drawn,
            } => loop {
                let at = whole.next_offset()?;
                let n = *drawn;
                *drawn += 1;
                if n % *count == *index {
                    break Some(at);
                }
            },
        }
    }

    /// Mean requests per second the schedule asks for (the level's value in reports).
    pub fn mean_rate(&self) -> f64 {
        match self {
            Schedule::Constant { rate, .. } => *rate,
            Schedule::Poisson { rate, .. } => *rate,
            Schedule::Gamma { rate, .. } => *rate,
            Schedule::Intervals { gaps, .. } => {
                let total: Duration = gaps.iter().sum();
                rate_of(gaps.len(), total)
            }
            Schedule::Fixed { offsets, .. } => rate_of(
                offsets.len().saturating_sub(1),
                offsets.last().copied().unwrap_or_default(),
            ),
            Schedule::Curve(curve) => curve.mean_rate(),
            // A shard's report names the whole stream's rate, the level asked of all shards.
            Schedule::Sharded { whole, .. } => whole.mean_rate(),
            Schedule::Limited { inner, .. } => inner.mean_rate(),
        }
    }
}

fn rate_of(count: usize, span: Duration) -> f64 {
    if span.is_zero() {
        0.0
    } else {
        count as f64 / span.as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(schedule: &mut Schedule, n: usize) -> Vec<f64> {
        (0..n)
            .map_while(|_| schedule.next_offset())
            .map(|d| d.as_secs_f64())
            .collect()
    }

    #[test]
    fn constant_rate_is_evenly_spaced_from_zero() {
        let at = offsets(&mut Schedule::constant(1000.0), 4);
        assert_eq!(at, vec![0.0, 0.001, 0.002, 0.003]);
    }

    #[test]
    fn poisson_gaps_have_the_mean_and_spread_of_theory() {
        let at = offsets(&mut Schedule::poisson(1000.0, 42), 100_001);
        let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64;
        let cv = var.sqrt() / mean;
        assert!((mean - 0.001).abs() < 0.001 * 0.02, "mean gap {mean}");
        assert!((cv - 1.0).abs() < 0.02, "coefficient of variation {cv}");
        // Same seed, same schedule.
        assert_eq!(
            offsets(&mut Schedule::poisson(1000.0, 42), 5),
            at[..5].to_vec()
        );
    }

    /// Mean rate and coefficient of variation of 100,000 gaps.
    fn rate_and_cv(schedule: &mut Schedule) -> (f64, f64) {
        let at = offsets(schedule, 100_001);
        let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64;
        (1.0 / mean, var.sqrt() / mean)
    }

    #[test]
    fn every_arrival_pattern_has_the_rate_and_spread_of_theory() {
        let rate = 500.0;
        let patterns = [
            (Schedule::constant(rate), 0.0),
            (Schedule::poisson(rate, 3), 1.0),
            (Schedule::gamma(rate, 0.5, 3), 1.0 / 0.5f64.sqrt()),
            (Schedule::gamma(rate, 4.0, 3), 0.5),
            (Schedule::gamma(rate, 1.0, 3), 1.0),
        ];
        for (mut schedule, cv_theory) in patterns {
            let (measured, cv) = rate_and_cv(&mut schedule);
            assert!(
                (measured - rate).abs() < rate * 0.01,
                "{schedule:?}: rate {measured}"
            );
            assert!((cv - cv_theory).abs() <= cv_theory * 0.02 + 1e-6, "cv {cv}");
            assert_eq!(schedule.mean_rate(), rate);
        }
        // Same seed, same gaps.
        let first = offsets(&mut Schedule::gamma(rate, 4.0, 9), 5);
        assert_eq!(offsets(&mut Schedule::gamma(rate, 4.0, 9), 5), first);
    }

    #[test]
    fn shards_of_a_constant_rate_merge_into_the_constant_stream() {
        let whole = offsets(&mut Schedule::constant(2000.0), 4000);
        let mut merged: Vec<f64> = (0..4)
            .flat_map(|i| {
                offsets(
                    &mut Schedule::sharded(Schedule::constant(2000.0), i, 4),
                    1000,
                )
            })
            .collect();
        merged.sort_by(f64::total_cmp);
        assert_eq!(merged, whole);
        // Each shard is a constant stream of a quarter of the rate, shifted by its phase.
        let third = offsets(&mut Schedule::sharded(Schedule::constant(2000.0), 3, 4), 3);
        assert_eq!(third, vec![0.0015, 0.0035, 0.0055]);
        let gaps: Vec<f64> = merged.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| (g - 0.0005).abs() < 1e-9));
    }

    #[test]
    fn shards_of_a_poisson_process_deal_out_its_sends() {
        let whole = offsets(&mut Schedule::poisson(1000.0, 7), 3000);
        let mut merged: Vec<f64> = (0..3)
            .flat_map(|i| {
                offsets(
                    &mut Schedule::sharded(Schedule::poisson(1000.0, 7), i, 3),
                    1000,
                )
            })
            .collect();
        merged.sort_by(f64::total_cmp);
        assert_eq!(merged, whole);
        let fixed = vec![Duration::from_millis(5), Duration::from_millis(2)];
        let mut part = Schedule::sharded(Schedule::fixed_from_zero(fixed), 1, 2);
        assert_eq!(offsets(&mut part, 5), vec![0.005]);
    }

    #[test]
    fn a_limited_schedule_ends_after_its_count() {
        let mut limited = Schedule::limited(Schedule::constant(100.0), 3);
        assert_eq!(offsets(&mut limited, 3), [0.0, 0.01, 0.02]);
        assert_eq!(limited.next_offset(), None);
        assert_eq!(limited.mean_rate(), 100.0);
    }

    #[test]
    fn intervals_loop_and_fixed_schedules_end() {
        let gaps = vec![Duration::from_micros(100), Duration::from_micros(300)];
        let at = offsets(&mut Schedule::intervals(gaps), 5);
        assert_eq!(at, vec![0.0, 0.0001, 0.0004, 0.0005, 0.0008]);
        let fixed = vec![Duration::from_millis(5), Duration::from_millis(2)];
        let mut schedule = Schedule::fixed(fixed);
        assert_eq!(offsets(&mut schedule, 5), vec![0.0, 0.003]);
        assert!((Schedule::constant(250.0).mean_rate() - 250.0).abs() < 1e-9);
    }
}

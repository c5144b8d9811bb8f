//! Which requests the client cancels on purpose (AIPerf's `--request-cancellation-rate`),
//! to see how a server copes with clients that go away: each send of the run draws, from
//! `--random-seed` and its number, whether it is picked, so that a rerun with the same seed
//! picks the same sends; a picked request is closed its delay after it was sent. The plan
//! is shared by every slot of a target; a pick costs one atomic add.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::config::RequestCancellation;

/// The sends to cancel and when: one in `percent` hundred, `delay` after the send.
#[derive(Debug)]
pub struct CancelPlan {
    /// The share of sends picked, in [0, 1].
    share: f64,
    delay: Duration,
    seed: u64,
    /// Sends drawn so far (the number of the next).
    sends: AtomicU64,
}

impl CancelPlan {
    pub fn new(settings: &RequestCancellation) -> CancelPlan {
        CancelPlan {
            share: (settings.percent / 100.0).clamp(0.0, 1.0),
            delay: settings.delay,
            seed: settings.seed,
            sends: AtomicU64::new(0),
        }
    }

    /// Whether send number `n` of the run is cancelled: a uniform draw from the seed and
    /// `n` below the share.
    pub fn picks(&self, n: u64) -> bool {
        let draw = mix(self.seed ^ mix(n)) >> 11;
        (draw as f64) / ((1u64 << 53) as f64) < self.share
    }

    /// For the next send: the delay after which it is cancelled, or `None` to let it be.
    pub fn next(&self) -> Option<Duration> {
        let n = self.sends.fetch_add(1, Ordering::Relaxed);
        self.picks(n).then_some(self.delay)
    }
}

/// SplitMix64's finalizer: a well-spread 64-bit value of `x` (the cancellations' draws, and
/// `--cache-bust`'s digests).
pub(super) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(percent: f64, seed: u64) -> CancelPlan {
        CancelPlan::new(&RequestCancellation {
            percent,
            delay: Duration::from_millis(5),
            seed,
        })
    }

    fn picked(plan: &CancelPlan, n: u64) -> Vec<bool> {
        (0..n).map(|_| plan.next().is_some()).collect()
    }

    #[test]
    fn the_share_picked_is_the_rate_within_a_binomial_bound() {
        let n = 100_000u64;
        for percent in [1.0, 20.0, 50.0, 99.0] {
            let count = picked(&plan(percent, 3), n).iter().filter(|&&p| p).count() as f64;
            let p = percent / 100.0;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (count - n as f64 * p).abs() < 4.0 * sd,
                "{percent}%: {count} of {n}"
            );
        }
        assert!(picked(&plan(100.0, 1), 1000).iter().all(|&p| p));
        assert!(!picked(&plan(0.0, 1), 1000).iter().any(|&p| p));
    }

    #[test]
    fn the_same_seed_picks_the_same_sends_and_another_seed_others() {
        let first = picked(&plan(20.0, 42), 500);
        assert_eq!(picked(&plan(20.0, 42), 500), first);
        assert_ne!(picked(&plan(20.0, 43), 500), first);
        // Picks do not bunch: about the share of the first half and of the second.
        let half = first[..250].iter().filter(|&&p| p).count();
        assert!((25..=75).contains(&half), "{half}");
        assert_eq!(plan(20.0, 42).next().map(|_| ()), first[0].then_some(()));
        let delay = (0..50).find_map(|_| plan(100.0, 0).next());
        assert_eq!(delay, Some(Duration::from_millis(5)));
    }
}

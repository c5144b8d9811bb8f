//! The draws AIPerf's media generators make, with inferperf's generators: one generator per
//! concern derived from the run's seed and the concern's name (as AIPerf's `derive`), a
//! whole number of at least 1 from a normal distribution, a bounded normal draw by
//! rejection, a pick from a list, and Gaussian noise clipped to [-1, 1].

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

/// How many draws a bounded normal sample makes before it settles for the clamped mean.
const MAX_REJECTIONS: usize = 10_000;

/// The generator of one concern (`dataset.image.dimensions`), from the run's seed: the same
/// seed and name always give the same draws, and two names draw apart.
pub fn derive(seed: u64, concern: &str) -> SmallRng {
    let bytes = seed.to_le_bytes().into_iter().chain(concern.bytes());
    let hash = bytes.fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    SmallRng::seed_from_u64(hash)
}

/// `normal(mean, stddev)` drawn again until it lies at or above `lower`; after
/// [`MAX_REJECTIONS`] draws, the mean raised to `lower`.
pub fn normal_at_least(rng: &mut SmallRng, mean: f64, stddev: f64, lower: f64) -> f64 {
    let Ok(normal) = Normal::new(mean, stddev) else {
        return mean.max(lower);
    };
    (0..MAX_REJECTIONS)
        .map(|_| normal.sample(rng))
        .find(|&x| x >= lower)
        .unwrap_or(mean.max(lower))
}

/// A whole number of at least 1: `max(1, mean)` without a spread, else
/// `max(1, ceil(x))` of a normal draw `x ≥ 0` (AIPerf's `sample_positive_normal_integer`).
pub fn positive_normal_integer(rng: &mut SmallRng, mean: u32, stddev: u32) -> u32 {
    if stddev == 0 {
        return mean.max(1);
    }
    let x = normal_at_least(rng, f64::from(mean), f64::from(stddev), 0.0);
    (x.ceil() as u32).max(1)
}

/// One of `choices`, each as likely (the list is never empty).
pub fn pick<T: Copy>(rng: &mut SmallRng, choices: &[T]) -> T {
    choices[rng.random_range(0..choices.len())]
}

/// `count` samples of Gaussian noise, standard deviation 0.3, clipped to [-1, 1].
pub fn noise(rng: &mut SmallRng, count: usize) -> Vec<f64> {
    let normal = Normal::<f64>::new(0.0, 0.3).expect("a positive standard deviation");
    (0..count)
        .map(|_| normal.sample(rng).clamp(-1.0, 1.0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_aiperf_rules() {
        let mut rng = derive(7, "x");
        assert_eq!(positive_normal_integer(&mut rng, 0, 0), 1);
        assert_eq!(positive_normal_integer(&mut rng, 64, 0), 64);
        let drawn: Vec<u32> = (0..2000)
            .map(|_| positive_normal_integer(&mut rng, 100, 10))
            .collect();
        let mean = drawn.iter().sum::<u32>() as f64 / drawn.len() as f64;
        assert!((mean - 100.5).abs() < 1.5, "{mean}");
        assert!(drawn.iter().any(|&d| d != 100));
        let lengths: Vec<f64> = (0..500)
            .map(|_| normal_at_least(&mut rng, 0.02, 1.0, 0.01))
            .collect();
        assert!(lengths.iter().all(|&l| l >= 0.01));
        assert!(noise(&mut rng, 10_000).iter().all(|x| x.abs() <= 1.0));
    }

    #[test]
    fn each_concern_has_its_own_stream() {
        let a: u64 = derive(1, "dataset.image.noise").random();
        let again: u64 = derive(1, "dataset.image.noise").random();
        let other: u64 = derive(1, "dataset.image.format").random();
        let seed2: u64 = derive(2, "dataset.image.noise").random();
        assert_eq!(a, again);
        assert_ne!(a, other);
        assert_ne!(a, seed2);
    }
}

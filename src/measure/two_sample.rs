//! Whether two samples of per-request values come from one distribution: the two-sample
//! Kolmogorov–Smirnov test, two-sided, as AIPerf's `--convergence-mode distribution` asks it
//! of the latest run against the runs before. The statistic is the largest gap between the
//! two empirical distribution functions; its p-value is exact (the share of the orderings
//! of the pooled values whose gap is as large) while the samples are small enough to count,
//! and the Kolmogorov limit beyond.

/// The most lattice cells the exact p-value walks (n₁ × n₂) before the limit is taken.
const EXACT_CELLS: u64 = 10_000_000;

/// The test of two samples: the largest gap `d` and how likely a gap that large is when
/// both samples come from one distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KsTest {
    pub d: f64,
    pub p_value: f64,
}

/// The two-sided test of `a` against `b` (non-finite values left out); `None` when either
/// has fewer than two values.
pub fn ks_test(a: &[f64], b: &[f64]) -> Option<KsTest> {
    let a = sorted_finite(a);
    let b = sorted_finite(b);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (n, m) = (a.len() as u64, b.len() as u64);
    let gap = largest_gap(&a, &b);
    let d = gap as f64 / (n * m) as f64;
    let p_value = if n * m <= EXACT_CELLS {
        exact_p(n, m, gap)
    } else {
        limit_p(d, n, m)
    };
    Some(KsTest {
        d,
        p_value: p_value.clamp(0.0, 1.0),
    })
}

fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The largest |F_a(x) − F_b(x)| over the pooled values, scaled by n·m so it is a whole
/// number: |i·m − j·n| after the i values of `a` and j of `b` up to x.
fn largest_gap(a: &[f64], b: &[f64]) -> u64 {
    let (n, m) = (a.len() as u64, b.len() as u64);
    let (mut i, mut j, mut gap) = (0usize, 0usize, 0u64);
    while i < a.len() || j < b.len() {
        let x = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) | (None, Some(&x)) => x,
            (None, None) => break,
        };
        while a.get(i).is_some_and(|&v| v <= x) {
            i += 1;
        }
        while b.get(j).is_some_and(|&v| v <= x) {
            j += 1;
        }
        gap = gap.max((i as u64 * m).abs_diff(j as u64 * n));
    }
    gap
}

/// The share of the orderings of n values of one sample and m of the other whose gap
/// reaches `gap` at some point: one minus the chance that a random ordering, walked value
/// by value, keeps |i·m − j·n| below it.
fn exact_p(n: u64, m: u64, gap: u64) -> f64 {
    let inside = |i: u64, j: u64| (i * m).abs_diff(j * n) < gap;
    // row[i]: the chance of reaching (i, j) with every step inside, for the current j.
    let mut row = vec![0.0f64; n as usize + 1];
    for j in 0..=m {
        for i in 0..=n {
            let here = if i == 0 && j == 0 {
                1.0
            } else {
                let from_left = match i {
                    0 => 0.0,
                    _ => row[i as usize - 1] * step(n - (i - 1), m - j),
                };
                let from_below = match j {
                    0 => 0.0,
                    _ => row[i as usize] * step(m - (j - 1), n - i),
                };
                from_left + from_below
            };
            row[i as usize] = if inside(i, j) { here } else { 0.0 };
        }
    }
    1.0 - row[n as usize]
}

/// The chance that the next value of a random ordering is of the sample with `left` values
/// still to come, the other having `other` left.
fn step(left: u64, other: u64) -> f64 {
    left as f64 / (left + other) as f64
}

/// Kolmogorov's limit: P(D ≥ d) ≈ 2 Σ (−1)^(k−1) e^(−2k²λ²), with Stephens' correction
/// for finite samples, λ = d·(√e + 0.12 + 0.11/√e), e = n·m/(n+m).
fn limit_p(d: f64, n: u64, m: u64) -> f64 {
    let root = ((n * m) as f64 / (n + m) as f64).sqrt();
    let lambda = d * (root + 0.12 + 0.11 / root);
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100u32 {
        let term = (-2.0 * f64::from(k * k) * lambda * lambda).exp();
        sum += if k % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    2.0 * sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(x: f64, y: f64, tolerance: f64) -> bool {
        (x - y).abs() <= tolerance
    }

    #[test]
    fn small_samples_get_the_exact_p_value() {
        // scipy.stats.ks_2samp([1,2,3,4,5], [6,7,8,9,10]): D 1, p 0.007937 (2/C(10,5)).
        let t = ks_test(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(t.d, 1.0);
        assert!(close(t.p_value, 2.0 / 252.0, 1e-12), "{t:?}");
        // Interleaved: ks_2samp([1,3,5,7], [2,4,6,8,10]): D 0.4, p 0.746032.
        let t = ks_test(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(close(t.d, 0.4, 1e-12), "{t:?}");
        assert!(close(t.p_value, 0.746_031_746, 1e-6), "{t:?}");
    }

    #[test]
    fn one_distribution_passes_and_a_shifted_one_fails() {
        let a: Vec<f64> = (0..400).map(|i| f64::from(i % 97) * 0.37).collect();
        let b: Vec<f64> = (0..300).map(|i| f64::from(i % 89) * 0.4).collect();
        // scipy: D 0.06, p 0.550125; shifted by 8: D 0.25, p 6.98e-10.
        let same = ks_test(&a, &b).unwrap();
        assert!(close(same.d, 0.06, 1e-12), "{same:?}");
        assert!(close(same.p_value, 0.550_125_455, 1e-6), "{same:?}");
        let shifted: Vec<f64> = b.iter().map(|v| v + 8.0).collect();
        let moved = ks_test(&a, &shifted).unwrap();
        assert!(moved.p_value < 0.001, "{moved:?}");
    }

    #[test]
    fn the_limit_agrees_with_the_exact_count_on_large_samples() {
        // n·m = 1.2 million cells: counted; the limit must be near it.
        let a: Vec<f64> = (0..1200).map(|i| f64::from(i) * 1.7 % 101.0).collect();
        let b: Vec<f64> = (0..1000)
            .map(|i| f64::from(i) * 2.3 % 103.0 + 1.5)
            .collect();
        // scipy: D 0.035, exact p 0.504430 (its asymptotic method 0.505448).
        let exact = ks_test(&a, &b).unwrap();
        assert!(close(exact.p_value, 0.504_429_896, 1e-6), "{exact:?}");
        let limit = limit_p(exact.d, 1200, 1000);
        assert!(close(limit, exact.p_value, 0.01), "{limit}");
    }

    #[test]
    fn too_few_values_give_no_test() {
        assert_eq!(ks_test(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(ks_test(&[1.0, f64::NAN], &[1.0, 2.0]), None);
    }
}

//! Tests of `inferperf compare`: the noise rule, the verdicts and the --fail-on limits.

use super::*;

#[test]
fn a_change_within_both_noises_is_within_noise() {
    let p50 = Figure::Percentile(50.0);
    assert_eq!(verdict(p50, 3.0, 1.0, 2.0), Verdict::WithinNoise);
    assert_eq!(verdict(p50, -3.0, 1.0, 2.0), Verdict::WithinNoise);
    assert_eq!(verdict(p50, 3.1, 1.0, 2.0), Verdict::Worse);
    assert_eq!(verdict(p50, -3.1, 1.0, 2.0), Verdict::Better);
    assert_eq!(verdict(Figure::Throughput, 3.1, 1.0, 2.0), Verdict::Better);
    assert_eq!(verdict(Figure::Throughput, -3.1, 1.0, 2.0), Verdict::Worse);
    assert_eq!(verdict(Figure::Avg, 0.0, 0.0, 0.0), Verdict::WithinNoise);
    assert_eq!(
        verdict(Figure::Avg, f64::NAN, 0.0, 0.0),
        Verdict::WithinNoise
    );
}

#[test]
fn noise_is_the_relative_half_range() {
    assert_eq!(half_range(&[90.0, 110.0]), Some(10.0));
    assert_eq!(half_range(&[100.0, 100.0, 100.0]), Some(0.0));
    assert_eq!(half_range(&[100.0]), None);
    assert_eq!(half_range(&[]), None);
}

#[test]
fn a_limit_is_passed_beyond_its_percentage() {
    let drop = Limit {
        figure: Figure::Throughput,
        percent: -5.0,
    };
    let rise = Limit {
        figure: Figure::Percentile(99.0),
        percent: 10.0,
    };
    assert!(drop.passed(-6.0) && !drop.passed(-4.0) && !drop.passed(6.0));
    assert!(rise.passed(11.0) && !rise.passed(9.0));
}

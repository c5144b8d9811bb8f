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
fn fail_on_parses_drops_and_rises() {
    let limits = parse_fail_on("throughput<-5%, p99>+10%,p99.9>20%,avg>+1.5%").unwrap();
    assert_eq!(
        limits,
        vec![
            Limit {
                figure: Figure::Throughput,
                percent: -5.0
            },
            Limit {
                figure: Figure::Percentile(99.0),
                percent: 10.0
            },
            Limit {
                figure: Figure::Percentile(99.9),
                percent: 20.0
            },
            Limit {
                figure: Figure::Avg,
                percent: 1.5
            },
        ]
    );
    assert!(limits[0].passed(-6.0) && !limits[0].passed(-4.0) && !limits[0].passed(6.0));
    assert!(limits[1].passed(11.0) && !limits[1].passed(9.0));
}

#[test]
fn bad_fail_on_is_one_sentence() {
    for bad in [
        "throughput<5%",
        "p99>-10%",
        "p99=10%",
        "latency>10%",
        "p100>1%",
        "p99>10",
        "p99>x%",
        "",
    ] {
        let e = parse_fail_on(bad).unwrap_err();
        assert!(e.starts_with("--fail-on") && e.ends_with('.'), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

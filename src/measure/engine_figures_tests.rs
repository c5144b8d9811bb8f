//! Unit tests of a level's engine figures.

use super::*;

fn series(count: u64, sum: f64, max: f64, increase: f64) -> SeriesStats {
    SeriesStats {
        count,
        sum,
        max,
        first: 0.0,
        increase,
        seconds: if increase > 0.0 { 2.0 } else { 0.0 },
    }
}

#[test]
fn a_level_has_gauges_rates_a_hit_rate_and_histogram_percentiles() {
    let mut window = MetricsWindow::default();
    let mut put = |key: &str, s: SeriesStats| {
        window.series.insert(key.to_string(), s);
    };
    put("engine:running", series(4, 10.0, 4.0, 0.0));
    put("engine:cache_hits", series(2, 0.0, 0.0, 30.0));
    put("engine:cache_queries", series(2, 0.0, 0.0, 120.0));
    put("engine:generation_tokens", series(2, 0.0, 0.0, 500.0));
    // 100 observations: 50 up to 10 ms, 40 more up to 20 ms, 10 more up to 40 ms.
    put("engine:ttft|0.01", series(2, 0.0, 0.0, 50.0));
    put("engine:ttft|0.02", series(2, 0.0, 0.0, 90.0));
    put("engine:ttft|0.04", series(2, 0.0, 0.0, 100.0));
    put("engine:ttft|+Inf", series(2, 0.0, 0.0, 100.0));
    let figures = EngineFigures::of(&window).unwrap();
    assert_eq!(figures.running, Some(GaugeFigures { avg: 2.5, max: 4.0 }));
    assert_eq!(figures.prefix_hit_rate, Some(0.25));
    assert_eq!(figures.generation_tokens_per_s, Some(250.0));
    let ttft = figures.ttft.unwrap();
    assert_eq!(ttft.count, 100.0);
    assert!((ttft.p50_ms - 10.0).abs() < 1e-9, "{ttft:?}");
    assert!((ttft.p90_ms - 20.0).abs() < 1e-9, "{ttft:?}");
    assert!((ttft.p99_ms - 38.0).abs() < 1e-9, "{ttft:?}");
    assert_eq!(figures.itl, None);
    assert_eq!(EngineFigures::of(&MetricsWindow::default()), None);
}

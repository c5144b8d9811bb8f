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

#[test]
fn token_counts_may_differ_by_the_requests_the_engine_held_at_once() {
    let gauge = |max| Some(GaugeFigures { avg: max, max });
    let figures = EngineFigures {
        running: gauge(4.0),
        waiting: gauge(4.0),
        requests: Some(101.0),
        generation_tokens: Some(1700.0),
        ..EngineFigures::default()
    };
    // 100 requests of 16 tokens ended in the level.
    let mut client = WindowStats::new(1);
    client.ok = 100;
    let mut tokens = crate::measure::tokens::TokenStats::default();
    (0..100).for_each(|_| tokens.output_tokens.record(16));
    client.tokens = Some(Box::new(tokens));
    let checks = count_checks(&figures, &client);
    let by = |what: &str| checks.iter().find(|c| c.what == what).unwrap().clone();
    // 8 held at once, 16 tokens each: 128 tokens may be on one side only.
    let generated = by("generation tokens");
    assert_eq!((generated.client, generated.in_flight), (1600.0, 128.0));
    assert!(!generated.disagrees(), "100 apart, within 16 + 128");
    let requests = by("requests");
    assert_eq!(requests.in_flight, 0.0);
    assert!(!requests.disagrees(), "1 apart: 1%");
    let more = |engine| CountCheck {
        engine,
        ..generated.clone()
    };
    assert!(!more(1744.0).disagrees());
    assert!(more(1745.0).disagrees(), "145 apart, beyond 144");
    assert!(more(1455.0).disagrees());
    assert_eq!(
        checks.len(),
        2,
        "no prompt tokens counted by the engine: {checks:?}"
    );
}

#[test]
fn what_ended_while_a_boundarys_page_was_read_is_allowed_for() {
    let figures = EngineFigures {
        requests: Some(104.0),
        ..EngineFigures::default()
    };
    // 100 requests in 2 s (50/s), a page read up to 60 ms after its boundary: 3 requests
    // may be counted by the engine in this window and by the client in the next.
    let mut client = WindowStats::new(1);
    client.ok = 100;
    client.duration = std::time::Duration::from_secs(2);
    client.metrics = Some(MetricsWindow {
        read_late_s: 0.06,
        ..MetricsWindow::default()
    });
    let checks = count_checks(&figures, &client);
    let requests = checks.iter().find(|c| c.what == "requests").unwrap();
    assert!((requests.in_flight - 3.0).abs() < 1e-9, "{requests:?}");
    assert!(!requests.disagrees(), "4 apart, within 1 + 3");
    let five = CountCheck {
        engine: 105.0,
        ..requests.clone()
    };
    assert!(five.disagrees(), "5 apart, beyond 4");
}

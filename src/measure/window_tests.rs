//! Tests of the window: counting, merging, compacting, and the figures of streamed answers.

use super::*;
use crate::measure::distribution::Compaction;

fn sample(at: Instant, latency_us: u64, error: Option<ErrorKind>) -> Sample {
    let done = at + Duration::from_micros(latency_us);
    Sample {
        scheduled: at,
        sent: at,
        send_ns: 1_000,
        recv_ns: 2_000,
        first: done,
        done,
        answers: 1,
        gaps: 0,
        connect_ns: 0,
        request: 0,
        replica: 0,
        sequence_id: 0,
        sequence_end: false,
        turn: 0,
        tokens: Default::default(),
        error,
    }
}

#[test]
fn throughput_counts_batch_and_excludes_errors() {
    let t = Instant::now();
    let samples: Vec<_> = (0..10)
        .map(|i| sample(t, 100, (i == 0).then_some(ErrorKind::Timeout)))
        .collect();
    let w = WindowStats::from_samples(&samples, Duration::from_secs(1), 4);
    assert_eq!(w.ok, 9);
    assert_eq!(w.error_count(), 1);
    assert!((w.throughput() - 36.0).abs() < 1e-9);
    assert!((w.error_rate() - 0.1).abs() < 1e-9);
    assert!((w.mean_latency_us() - 100.0).abs() < 1e-6);
    assert!((w.avg_wait_us() - 97.0).abs() < 1e-6);
}

#[test]
fn a_compacted_window_keeps_its_reported_figures_and_drops_its_histograms() {
    let t = Instant::now();
    let samples: Vec<_> = (1..=1000).map(|i| sample(t, i, None)).collect();
    let mut w = WindowStats::from_samples(&samples, Duration::from_secs(1), 1);
    let kept = [50.0, 99.0, 99.9];
    let before: Vec<f64> = kept.iter().map(|&p| w.percentile_us(p)).collect();
    let (mean, std, late) = (w.mean_latency_us(), w.std_latency_us(), w.late_share());
    let grown = w.latency.resolution();
    w.compact(&Compaction::percentiles(&kept));
    let after: Vec<f64> = kept.iter().map(|&p| w.percentile_us(p)).collect();
    assert_eq!(before, after);
    assert_eq!((w.mean_latency_us(), w.std_latency_us()), (mean, std));
    assert_eq!(w.late_share(), late);
    assert_eq!(w.service_percentile_us(99.0), before[1]);
    assert!(
        w.percentile_us(75.0).is_nan(),
        "a percentile not kept shows as such"
    );
    assert!(w.latency.resolution() < 16, "was {grown} counters");
}

#[test]
fn histograms_grow_only_to_the_values_recorded() {
    let t = Instant::now();
    let fast = WindowStats::from_samples(&[sample(t, 100, None)], Duration::from_secs(1), 1);
    let slow = WindowStats::from_samples(
        &[sample(t, 100, None), sample(t, 60_000_000, None)],
        Duration::from_secs(1),
        1,
    );
    assert!(fast.latency.resolution() < slow.latency.resolution());
    assert!((slow.percentile_us(99.0) - 60_000_000.0).abs() <= 60_000.0);
    let mut merged = fast.clone();
    merged.merge(&slow);
    assert_eq!(merged.percentile_us(99.0), slow.percentile_us(99.0));
}

#[test]
fn merge_adds_counts_and_keeps_distribution() {
    let t = Instant::now();
    let fast: Vec<_> = (0..100).map(|_| sample(t, 100, None)).collect();
    let slow: Vec<_> = (0..100).map(|_| sample(t, 300, None)).collect();
    let a = WindowStats::from_samples(&fast, Duration::from_secs(1), 1);
    let b = WindowStats::from_samples(&slow, Duration::from_secs(1), 1);
    let m = WindowStats::merged([&a, &b], 1);
    assert_eq!(m.ok, 200);
    assert_eq!(m.windows, 2);
    assert!((m.throughput() - 100.0).abs() < 1e-9);
    assert!((m.mean_latency_us() - 200.0).abs() < 1e-6);
    assert!((m.std_latency_us() - 100.25).abs() < 0.5);
    assert!((m.percentile_us(25.0) - 100.0).abs() < 0.2);
    assert!((m.percentile_us(99.9) - 300.0).abs() < 0.5);
}

#[test]
fn streamed_answers_give_first_response_gaps_and_response_throughput() {
    let t = Instant::now();
    let mut w = WindowStats::new(1);
    w.duration = Duration::from_secs(1);
    for i in 0..10u64 {
        let start = t + Duration::from_millis(i);
        let s = Sample {
            first: start + Duration::from_millis(10),
            done: start + Duration::from_millis(26),
            answers: 5,
            gaps: 4,
            ..sample(start, 26_000, None)
        };
        w.add(&s, &[4_000_000; 4]);
    }
    assert_eq!(w.responses.sum(), 50);
    assert!((w.response_throughput() - 50.0).abs() < 1e-9);
    assert!((w.first_response.percentile(50.0) - 10_000_000.0).abs() <= 10_000.0);
    assert_eq!(w.inter_response.count(), 40);
    assert!((w.inter_response.mean() - 4_000_000.0).abs() < 1e-6);
    assert_eq!(w.responses.percentile(99.0), 5.0);
    assert!((w.mean_latency_us() - 26_000.0).abs() < 1e-6);
}

/// What a compacted window costs when it keeps its histograms for the results file: the
/// encoded histograms of a window of 50,000 requests whose latencies spread over three
/// decades (50 µs to 50 ms, log-uniform, the worst case for compression), and of a narrow
/// one (a model with a steady service time). Measured: about 17 KiB and 0.5 KiB for the six
/// distributions (a live latency histogram of the wide window alone holds 136 KiB).
#[test]
fn a_compacted_window_keeps_its_histograms_in_a_few_kib() {
    let t = Instant::now();
    let mut x = 7u64;
    let wide: Vec<_> = (0..50_000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let decades = (x >> 11) as f64 / (1u64 << 53) as f64 * 3.0;
            sample(t, (50.0 * 10f64.powf(decades)) as u64, None)
        })
        .collect();
    let narrow: Vec<_> = (0..50_000)
        .map(|i| sample(t, 2000 + i % 200, None))
        .collect();
    let keep = Compaction {
        percentiles: vec![50.0, 90.0, 95.0, 99.0],
        keep_histograms: true,
    };
    let mut costs = Vec::new();
    for (samples, most) in [(wide, 32 * 1024), (narrow, 2 * 1024)] {
        let mut w = WindowStats::from_samples(&samples, Duration::from_secs(1), 1);
        let live_bytes = w.latency.resolution() * 8;
        let p99 = w.percentile_us(99.0);
        w.compact(&keep);
        let encoded: usize = w.distributions().iter().map(|d| d.encoded_len()).sum();
        assert_eq!(w.percentile_us(99.0), p99);
        assert!(
            encoded < most,
            "{encoded} bytes of histograms (a live latency histogram holds {live_bytes})"
        );
        costs.push(encoded);
    }
    println!(
        "encoded histograms per compacted window: wide {} B, narrow {} B",
        costs[0], costs[1]
    );
}

//! Open-loop load against the embedded server: the achieved rate matches the target, Poisson
//! sends have exponential gaps, an intervals file is replayed in order, `--max-concurrency` holds on the server's side, and
//! latency counts from the scheduled send, so a backlog shows (no coordinated omission).

use crate::common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use inferperf::load::open_loop::OpenLoop;
use inferperf::load::schedule::Schedule;
use inferperf::measure::sample::Sample;
use inferperf::measure::window::LATE_SEND;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn achieved_rate_is_within_one_percent_of_the_target() {
    let server = start_server(&["noop=noop"]).await;
    for rate in ["1000", "10000"] {
        let results = profile(&[
            "-m",
            "noop",
            "-u",
            &url(&server, "http"),
            "--request-rate-range",
            rate,
            "-p",
            "1000",
            "-s",
            "50",
            "-r",
            "3",
        ])
        .await;
        let w = &results[0].merged;
        let target: f64 = rate.parse().unwrap();
        println!(
            "rate {rate}: sent {:.1}/s, answered {:.1}/s, late {:.2}%, lag p99 {:.0} us",
            w.send_rate(),
            w.throughput(),
            w.late_share() * 100.0,
            w.send_lag_percentile_us(99.0)
        );
        assert!(
            (w.send_rate() - target).abs() <= 0.01 * target,
            "send rate {} for {rate}",
            w.send_rate()
        );
        assert!(
            (w.throughput() - target).abs() <= 0.01 * target,
            "throughput {} for {rate}",
            w.throughput()
        );
        assert_eq!(w.error_count(), 0);
    }
}

/// Runs an open loop directly and returns every sample, in send order.
async fn run_open_loop(
    url: &str,
    schedule: Schedule,
    cap: Option<usize>,
    for_how_long: Duration,
) -> Vec<Sample> {
    run_open_loop_on(url, schedule, cap, for_how_long, 1).await
}

/// [`run_open_loop`] from `threads` client threads, with the default `--send-slack`.
async fn run_open_loop_on(
    url: &str,
    schedule: Schedule,
    cap: Option<usize>,
    for_how_long: Duration,
    threads: usize,
) -> Vec<Sample> {
    let cfg = config(&["-m", "noop", "-u", url, "--request-rate-range", "1"]);
    let prepared = inferperf::commands::profile::prepare(&cfg)
        .await
        .expect("prepare");
    let threads = inferperf::load::client_threads::ClientThreads::start(threads);
    let mut driver = OpenLoop::new(prepared.replicas, cap, threads, cfg.load.send_slack);
    driver.start(schedule);
    tokio::time::sleep(for_how_long).await;
    driver.stop().await;
    let mut drained = inferperf::measure::sample::Drained::default();
    driver.drain_until(Instant::now(), &mut drained);
    let mut samples = drained.samples;
    samples.sort_by_key(|s| s.scheduled);
    samples
}

/// `--client-threads 2`: each thread sends every other request of a constant schedule on
/// its own timer, and the union is the asked stream — the scheduled instants are exactly
/// 500 µs apart with none missing or doubled, and the actual sends keep that spacing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_client_threads_split_a_constant_schedule_into_the_asked_stream() {
    let server = start_server(&["noop=noop"]).await;
    let samples = run_open_loop_on(
        &url(&server, "http"),
        Schedule::constant(2000.0),
        None,
        Duration::from_secs(2),
        2,
    )
    .await;
    assert!(
        samples.len() >= 3_800,
        "{} sends in 2 s at 2000/s",
        samples.len()
    );
    let start = samples[0].scheduled;
    // The last 100 ms are left out: when the run stops, one thread may see it a moment
    // before the other (on a loaded machine), and its last sends are then missing.
    let last = samples[samples.len() - 1].scheduled;
    let settled = samples
        .iter()
        .take_while(|s| last.duration_since(s.scheduled) >= Duration::from_millis(100));
    for (k, sample) in settled.enumerate() {
        let at = sample.scheduled.duration_since(start).as_secs_f64();
        assert!(
            (at - k as f64 * 0.0005).abs() < 2e-6,
            "send {k} scheduled at {at} s, not {} s",
            k as f64 * 0.0005
        );
    }
    let (gaps, late) = on_time_send_gaps(&samples);
    let (mean, cv) = mean_and_cv(&gaps);
    println!(
        "{} sends from 2 threads, {:.2}% late, on-time gaps: mean {:.1} us, CV {cv:.3}",
        samples.len(),
        late * 100.0,
        mean * 1e6
    );
    assert!(late < 0.15, "{:.1}% of sends were late", late * 100.0);
    assert!((mean - 0.0005).abs() <= 0.0005 * 0.05, "mean gap {mean}");
    assert!(cv < 0.5, "merged gaps of a constant schedule: CV {cv}");
}

/// Gaps between consecutive actual sends, in seconds, and the share of sends the client
/// itself reports as late (more than 1 ms behind schedule, perf_analyzer's tolerance). A gap
/// that starts or ends at a late send measures the machine's scheduling, not the schedule,
/// so it is left out; the late share is returned so that a test can bound what was left out.
fn on_time_send_gaps(samples: &[Sample]) -> (Vec<f64>, f64) {
    let mut sends: Vec<(Instant, bool)> = samples
        .iter()
        .map(|s| (s.sent, s.sent.duration_since(s.scheduled) <= LATE_SEND))
        .collect();
    sends.sort();
    let late = sends.iter().filter(|s| !s.1).count() as f64 / sends.len().max(1) as f64;
    let gaps = sends
        .windows(2)
        .filter(|w| w[0].1 && w[1].1)
        .map(|w| w[1].0.duration_since(w[0].0).as_secs_f64())
        .collect();
    (gaps, late)
}

/// Mean and coefficient of variation.
fn mean_and_cv(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, variance.sqrt() / mean)
}

/// A Poisson schedule of 1,000/s: the gaps between the *actual* sends (the instants the
/// workers recorded, not the schedule) have the mean (1 ms) and the coefficient of variation
/// (1) of exponential gaps, within 5%. The spread leaves out the sends the client reports
/// late (see [`on_time_send_gaps`]), which must be few.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poisson_sends_have_the_mean_and_spread_of_theory() {
    let server = start_server(&["noop=noop"]).await;
    let samples = run_open_loop(
        &url(&server, "http"),
        Schedule::poisson(1000.0, 11),
        None,
        Duration::from_secs(4),
    )
    .await;
    let (gaps, late) = on_time_send_gaps(&samples);
    let (on_time_mean, cv) = mean_and_cv(&gaps);
    // The mean gap of all sends: their span over their count, which late sends cannot bias.
    let first = samples.iter().map(|s| s.sent).min().unwrap();
    let last = samples.iter().map(|s| s.sent).max().unwrap();
    let mean = last.duration_since(first).as_secs_f64() / (samples.len() - 1) as f64;
    println!(
        "{} sends, {:.1}% late, mean gap {:.1} us; {} gaps between on-time sends: mean {:.1} us, CV {cv:.3}",
        samples.len(),
        late * 100.0,
        mean * 1e6,
        gaps.len(),
        on_time_mean * 1e6
    );
    assert!(
        samples.len() >= 3_800,
        "{} sends in 4 s at 1000/s",
        samples.len()
    );
    assert!(late < 0.15, "{:.1}% of sends were late", late * 100.0);
    assert!((mean - 0.001).abs() <= 0.001 * 0.05, "mean gap {mean}");
    assert!((cv - 1.0).abs() <= 0.05, "coefficient of variation {cv}");
    // A constant schedule has nearly no spread: the statistic tells the two apart.
    let samples = run_open_loop(
        &url(&server, "http"),
        Schedule::constant(1000.0),
        None,
        Duration::from_secs(1),
    )
    .await;
    let (gaps, _) = on_time_send_gaps(&samples);
    let (_, constant_cv) = mean_and_cv(&gaps);
    assert!(constant_cv < 0.5, "constant schedule CV {constant_cv}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intervals_file_is_replayed_in_order() {
    let server = start_server(&["noop=noop"]).await;
    let gaps_us = [2_000u64, 9_000, 4_000, 15_000];
    let gaps: Vec<Duration> = gaps_us.iter().map(|&g| Duration::from_micros(g)).collect();
    let samples = run_open_loop(
        &url(&server, "http"),
        Schedule::intervals(gaps),
        None,
        Duration::from_millis(150),
    )
    .await;
    assert!(samples.len() >= 12, "{} samples", samples.len());
    let mut deviations: Vec<i64> = Vec::new();
    for (i, pair) in samples.windows(2).enumerate().take(11) {
        let expected = gaps_us[i % gaps_us.len()] as i64;
        let scheduled_gap = pair[1]
            .scheduled
            .duration_since(pair[0].scheduled)
            .as_micros() as i64;
        assert_eq!(scheduled_gap, expected, "gap {i} of the schedule");
        let sent_gap = pair[1].sent.duration_since(pair[0].sent).as_micros() as i64;
        deviations.push((sent_gap - expected).abs());
    }
    deviations.sort();
    // The sends follow the file too: the median gap is within half a millisecond of it
    // (a single descheduled send on a busy machine must not decide the test).
    assert!(
        deviations[deviations.len() / 2] < 500,
        "send gaps deviate from the file: {deviations:?} us"
    );
}

/// A KServe-shaped test server that answers after 20 ms and records the most requests it
/// ever had in flight at once.
async fn counting_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let peak_out = peak.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (in_flight, peak) = (in_flight.clone(), peak.clone());
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                        let (in_flight, peak) = (in_flight.clone(), peak.clone());
                        async move { Ok::<_, Infallible>(answer(req, &in_flight, &peak).await) }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, peak_out)
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    in_flight: &AtomicUsize,
    peak: &AtomicUsize,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let _ = req.into_body().collect().await;
    let body = match path.as_str() {
        "/v2" => r#"{"name":"counter","version":"1","extensions":[]}"#.to_string(),
        "/v2/models/noop" => r#"{"name":"noop","platform":"test","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[4]}],"outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[4]}]}"#.to_string(),
        "/v2/models/noop/infer" => {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            r#"{"model_name":"noop","outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[4],"data":[0,0,0,0]}]}"#.to_string()
        }
        _ => return Response::builder().status(404).body(Full::new(Bytes::from_static(b"{\"error\":\"no\"}"))).unwrap(),
    };
    Response::new(Full::new(Bytes::from(body)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_concurrency_caps_what_the_server_sees() {
    let (addr, peak) = counting_server().await;
    // 400/s of 20 ms requests would need 8 in flight; the cap allows 3.
    let results = profile(&[
        "-m",
        "noop",
        "-u",
        &addr,
        "--request-rate-range",
        "400",
        "--max-concurrency",
        "3",
        "-p",
        "500",
        "-s",
        "100",
        "-r",
        "3",
    ])
    .await;
    let w = &results[0].merged;
    println!(
        "peak in flight on the server: {}, cap waits {}",
        peak.load(Ordering::SeqCst),
        w.cap_waits
    );
    assert!(
        peak.load(Ordering::SeqCst) <= 3,
        "the server saw {} in flight",
        peak.load(Ordering::SeqCst)
    );
    assert!(
        peak.load(Ordering::SeqCst) >= 2,
        "the load never overlapped"
    );
    assert!(
        w.cap_waits > 0,
        "the report must count the sends the cap delayed"
    );
    // Throughput is bounded by the cap: 3 / 20 ms = 150/s at most.
    assert!(w.throughput() < 160.0, "{}", w.throughput());
}

/// The coordinated-omission test: 150/s against a model that serves 100/s. The backlog grows
/// by ~50 requests a second, so the latency a user sees grows window after window; with the
/// queue held in the client (--max-concurrency 1, the load perf_analyzer's sync mode
/// applies), the service time from the actual send stays near 10 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_counts_the_backlog_while_service_time_stays_flat() {
    let server = start_server(&["slow=sleep:ms=10,instances=1"]).await;
    let results = profile(&[
        "-m",
        "slow",
        "-u",
        &url(&server, "http"),
        "--request-rate-range",
        "150",
        "--max-concurrency",
        "1",
        "-p",
        "1000",
        "-s",
        "1",
        "-r",
        "4",
    ])
    .await;
    let windows = &results[0].windows;
    let means: Vec<f64> = windows
        .iter()
        .map(|w| w.mean_latency_us() / 1000.0)
        .collect();
    let service: Vec<f64> = windows
        .iter()
        .map(|w| w.mean_service_us() / 1000.0)
        .collect();
    println!(
        "latency from schedule per window (ms): {means:.1?}; service time (ms): {service:.2?}"
    );
    for pair in means.windows(2) {
        assert!(
            pair[1] > pair[0] + 100.0,
            "latency must grow with the backlog: {means:?}"
        );
    }
    for s in &service {
        assert!(
            (9.5..12.5).contains(s),
            "service time {s:.2} ms should stay near 10 ms"
        );
    }
    // Each second adds ~50 requests × 10 ms = ~500 ms of waiting at the end of the window.
    let last = windows.last().unwrap();
    assert!(
        last.percentile_us(99.0) > 1_000_000.0,
        "p99 after 4 s of backlog: {}",
        last.percentile_us(99.0)
    );
    assert!(last.cap_waits > 0);
}

/// With `--max-concurrency`, the open loop opens its connections before the first send, a
/// few hundred at a time, and says how long they took; the run then measures as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_concurrency_connections_open_before_the_first_send() {
    let server = start_server(&["noop=noop"]).await;
    let out = run_cli(&[
        "-m",
        "noop",
        "-u",
        &url(&server, "http"),
        "--request-rate-range",
        "500",
        "--max-concurrency",
        "2000",
        "--request-count",
        "500",
    ])
    .await;
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let took: f64 = text
        .split("The 2000 connections of --max-concurrency took ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no connect time in:\n{text}"));
    println!("2000 connections opened in {took} s");
    assert!(took < 5.0, "2000 connections took {took} s");
    assert!(text.contains("Request count: 500"), "{text}");
    assert_eq!(served(&server, "noop"), 500, "{text}");
}

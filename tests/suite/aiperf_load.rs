//! AIPerf's load shapes as real traffic against the embedded server: a concurrency ramp's
//! requests in flight climbing one at a time, a rate ramp's and a rate series' sends per
//! second, the prefill limit held over the requests waiting for their first token,
//! user-centric users keeping their gap, sessions at a request rate taking one tick per
//! turn, slices adding up to the run, and the failed-request
//! threshold stopping a run against a failing model. Times come from the client's own
//! record of every request (send, first answer, end), the counts from the server's.

use std::path::Path;
use std::sync::{Arc, Mutex};

use inferperf::load::profiler::Interrupt;
use inferperf::measure::level::LevelResult;
use inferperf::measure::request_log::RequestRecord;

use crate::common;

/// The `llm` model of the brief: 5 ms to the first token, then 1 ms per token, 8 tokens.
const LLM: &str = "llm=llm:ttft_ms=5,itl_ms=1,output_tokens=8";

/// An AIPerf line against `addr` counted with the word tokenizer in `dir`, then `extra`.
fn line(addr: &str, dir: &Path, extra: &[&str]) -> Vec<String> {
    let tokenizer = common::word_tokenizer(dir);
    let mut args: Vec<String> = ["--model", "llm", "--url", addr, "--endpoint-type", "chat"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--tokenizer".into(), tokenizer.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Runs the line in-process; its level and every request it recorded, by send time.
async fn run(args: &[String]) -> (LevelResult, Vec<RequestRecord>) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cfg = common::config(&args);
    let prepared = inferperf::commands::profile::prepare(&cfg)
        .await
        .expect("target prepares");
    let (profiler, _) = prepared
        .profiler(&cfg, Arc::new(Interrupt::default()))
        .await;
    let records = Mutex::new(Vec::new());
    let outcome = profiler
        .measure_levels(|level| {
            let log = level
                .requests
                .as_ref()
                .expect("an AIPerf line logs its requests");
            records.lock().unwrap().extend(log.each().map(|(r, _)| *r));
        })
        .await;
    if let Some(e) = outcome.error {
        panic!("profile failed: {e}");
    }
    let mut records = records.into_inner().unwrap();
    records.sort_by_key(|r| r.sent_ns);
    (outcome.results.into_iter().next().unwrap(), records)
}

/// Seconds of `ns` after `origin`.
fn secs(ns: u64, origin: u64) -> f64 {
    ns.saturating_sub(origin) as f64 / 1e9
}

/// The most intervals `[from, to)` (seconds after the first send) open at once at any
/// moment within `[a, b)`.
fn most_at_once(intervals: &[(f64, f64)], a: f64, b: f64) -> usize {
    let mut edges: Vec<(f64, i32)> = Vec::new();
    for &(from, to) in intervals.iter().filter(|&&(f, t)| t > a && f < b) {
        edges.push((from.max(a), 1));
        edges.push((to.min(b), -1));
    }
    // At a tie an end comes before a start: a slot's next request follows its last.
    edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let (mut open, mut most) = (0, 0);
    for (_, step) in edges {
        open += step;
        most = most.max(open);
    }
    most as usize
}

/// Each request's time in flight, `[send, end)`, in seconds after the first send.
fn in_flight(records: &[RequestRecord]) -> Vec<(f64, f64)> {
    let origin = records[0].sent_ns;
    (records.iter())
        .map(|r| (secs(r.sent_ns, origin), secs(r.done_ns, origin)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_ramp_climbs_one_request_at_a_time_and_is_measured() {
    let server = common::start_server(&[LLM]).await;
    let dir = tempfile::tempdir().unwrap();
    let extra = [
        "--concurrency",
        "4",
        "--concurrency-ramp-duration",
        "1.5",
        "--benchmark-duration",
        "2.4",
    ];
    let (level, records) = run(&line(&server.http_addr.to_string(), dir.path(), &extra)).await;
    let flying = in_flight(&records);
    // Steps at 0, 0.5, 1 and 1.5 s (AIPerf's: value k at (k−1)/3 of the ramp).
    for (from, to, most) in [
        (0.05, 0.45, 1),
        (0.55, 0.95, 2),
        (1.05, 1.45, 3),
        (1.6, 2.3, 4),
    ] {
        assert_eq!(
            most_at_once(&flying, from, to),
            most,
            "in flight from {from} s to {to} s"
        );
    }
    // The ramp's requests are measured: the first half second's are in the level.
    let early = flying.iter().filter(|r| r.0 < 0.5).count();
    assert!(early >= 10, "only {early} requests in the first 0.5 s");
    assert_eq!(level.merged.ok as usize, records.len());
    assert_eq!(
        common::served(&server, "llm"),
        level.merged.ok + 1,
        "the server answered what the level counted, and the pre-flight probe"
    );
}

/// Sends per second in each whole second of the run, by when each was due.
fn sends_per_second(records: &[RequestRecord], seconds: usize) -> Vec<usize> {
    let origin = records.iter().map(|r| r.scheduled_ns).min().unwrap();
    (0..seconds)
        .map(|s| {
            let due = |r: &&RequestRecord| secs(r.scheduled_ns, origin) as usize == s;
            records.iter().filter(due).count()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_ramp_rises_in_tenths_of_a_second_to_the_rate() {
    let server = common::start_server(&[LLM]).await;
    let dir = tempfile::tempdir().unwrap();
    let extra = [
        "--request-rate",
        "40",
        "--arrival-pattern",
        "constant",
        "--request-rate-ramp-duration",
        "1",
        "--benchmark-duration",
        "2",
    ];
    let (_, records) = run(&line(&server.http_addr.to_string(), dir.path(), &extra)).await;
    // From 4 req/s, moved every 0.1 s: 0.1 × (4 + 7.6 + … + 36.4) = 20.2 in the first
    // second, then 40.
    let counts = sends_per_second(&records, 2);
    assert!(counts[0].abs_diff(20) <= 1, "{counts:?}");
    assert!(counts[1].abs_diff(40) <= 1, "{counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_series_follows_its_points_then_holds_the_last() {
    let server = common::start_server(&[LLM]).await;
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("series.json");
    let points = r#"{"points": [{"time_s": 0, "qps": 10}, {"time_s": 1, "qps": 50}]}"#;
    std::fs::write(&series, points).unwrap();
    let extra = [
        "--request-rate-series",
        series.to_str().unwrap(),
        "--arrival-pattern",
        "constant",
        "--benchmark-duration",
        "2",
    ];
    let (level, records) = run(&line(&server.http_addr.to_string(), dir.path(), &extra)).await;
    // 0.1 × (10 + 14 + … + 46) = 28 in the first second, then 50 held.
    let counts = sends_per_second(&records, 2);
    assert!(counts[0].abs_diff(28) <= 1, "{counts:?}");
    assert!(counts[1].abs_diff(50) <= 1, "{counts:?}");
    let rate = match level.level {
        inferperf::config::LoadLevel::Rate(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        rate, 10.0,
        "the level is named by the series' first rate, as AIPerf's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefill_concurrency_holds_the_requests_waiting_for_their_first_token() {
    // A long first token and a long decode: four in flight, one at a time in prefill.
    let server = common::start_server(&["llm=llm:ttft_ms=30,itl_ms=5,output_tokens=8"]).await;
    let dir = tempfile::tempdir().unwrap();
    let addr = server.http_addr.to_string();
    let base = ["--concurrency", "4", "--streaming", "--request-count", "32"];
    let limited = [&base[..], &["--prefill-concurrency", "1"]].concat();
    let (level, records) = run(&line(&addr, dir.path(), &limited)).await;
    assert_eq!(level.merged.ok, 32, "{:?}", level.merged.errors);
    let origin = records[0].sent_ns;
    let prefill: Vec<(f64, f64)> = (records.iter())
        .map(|r| (secs(r.sent_ns, origin), secs(r.first_ns, origin)))
        .collect();
    let end = secs(records.iter().map(|r| r.done_ns).max().unwrap(), origin);
    assert_eq!(
        most_at_once(&prefill, 0.0, end),
        1,
        "one waiting for its first token"
    );
    assert!(
        most_at_once(&in_flight(&records), 0.0, end) >= 3,
        "the others decode meanwhile"
    );
    let (_, free) = run(&line(&addr, dir.path(), &base)).await;
    let origin = free[0].sent_ns;
    let free_prefill: Vec<(f64, f64)> = (free.iter())
        .map(|r| (secs(r.sent_ns, origin), secs(r.first_ns, origin)))
        .collect();
    assert_eq!(
        most_at_once(&free_prefill, 0.0, 10.0),
        4,
        "without the limit, all four"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_centric_users_keep_their_gap_and_start_on_schedule() {
    let server = common::start_server(&[LLM]).await;
    let dir = tempfile::tempdir().unwrap();
    // 4 users sharing 10 req/s: each user's turns 0.4 s apart, the first users 0.1 s apart.
    let extra = [
        "--user-centric-rate",
        "10",
        "--num-users",
        "4",
        "--conversation-turn-mean",
        "3",
        "--conversation-num",
        "30",
        "--request-count",
        "30",
    ];
    let (level, records) = run(&line(&server.http_addr.to_string(), dir.path(), &extra)).await;
    assert_eq!(level.merged.ok, 30, "{:?}", level.merged.errors);
    let origin = records[0].sent_ns;
    // A session's turns are three consecutive entries of the dataset: one user each.
    let mut users: std::collections::BTreeMap<u32, Vec<&RequestRecord>> = Default::default();
    for r in &records {
        users.entry(r.request / 3).or_default().push(r);
    }
    for turns in users.values() {
        for pair in turns.windows(2) {
            let gap = secs(pair[1].sent_ns, pair[0].sent_ns);
            assert!((gap - 0.4).abs() < 0.03, "a user's turns {gap:.3} s apart");
            assert!(
                pair[1].sent_ns >= pair[0].done_ns,
                "a user's turns never overlap"
            );
        }
    }
    // AIPerf's steady start: the new user first, then users with 1, 1 and 2 turns left.
    let firsts: Vec<(f64, usize)> = (users.values())
        .map(|t| (secs(t[0].sent_ns, origin), t.len()))
        .take(4)
        .collect();
    let starts: Vec<f64> = firsts.iter().map(|f| (f.0 * 10.0).round() / 10.0).collect();
    assert_eq!(starts, [0.0, 0.1, 0.2, 0.3], "{firsts:?}");
    let lengths: Vec<usize> = firsts.iter().map(|f| f.1).collect();
    assert_eq!(lengths, [3, 1, 1, 2], "{firsts:?}");
    // Together they send the rate: 30 turns in about 3 s.
    let span = secs(records[29].sent_ns, origin);
    assert!((span - 2.9).abs() < 0.25, "30 turns over {span:.2} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_at_a_request_rate_send_one_turn_per_tick_later_turns_first() {
    let server = common::start_server(&[LLM]).await;
    let dir = tempfile::tempdir().unwrap();
    // 10 sessions of 3 turns at 20 turns/s: a turn is answered in about 13 ms, well within
    // the 50 ms between ticks, so each tick goes to the session under way until it ends.
    let extra = [
        "--request-rate",
        "20",
        "--request-rate-mode",
        "constant",
        "--conversation-turn-mean",
        "3",
        "--conversation-num",
        "10",
    ];
    let (level, records) = run(&line(&server.http_addr.to_string(), dir.path(), &extra)).await;
    assert_eq!(level.merged.ok, 30, "{:?}", level.merged.errors);
    assert_eq!(records.len(), 30, "the 10 sessions played once");
    let order: Vec<u32> = records.iter().map(|r| r.request).collect();
    assert_eq!(
        order,
        (0..30).collect::<Vec<u32>>(),
        "later turns take the ticks first"
    );
    let origin = records[0].sent_ns;
    for (tick, r) in records.iter().enumerate() {
        let late = secs(r.sent_ns, origin) - tick as f64 * 0.05;
        assert!(
            (-0.002..0.01).contains(&late),
            "turn {tick} {late:.4} s off its tick"
        );
    }
    for pair in records.windows(2) {
        assert!(
            pair[1].sent_ns >= pair[0].done_ns,
            "a session's turns never overlap"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_add_up_to_the_run_in_results_json_and_aiperf_s_files() {
    let server = common::start_server(&[LLM]).await;
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("art");
    let results = dir.path().join("results.json");
    let extra = [
        "--concurrency",
        "2",
        "--streaming",
        "--benchmark-duration",
        "1.2",
        "--slice-duration",
        "0.5",
        "--artifact-dir",
        art.to_str().unwrap(),
        "--results-file",
        results.to_str().unwrap(),
    ];
    let args = line(&server.http_addr.to_string(), dir.path(), &extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let level = common::profile_with_reports(&args).await.remove(0);
    let counts: Vec<u64> = level.slices.windows.iter().map(|w| w.ok).collect();
    assert_eq!(counts.len(), 3, "0–0.5, 0.5–1, 1–1.2 s: {counts:?}");
    assert_eq!(counts.iter().sum::<u64>(), level.merged.ok);
    let file = common::assert_valid(&results);
    let recorded = file["levels"][0]["slices"].as_array().unwrap();
    let ok: Vec<u64> = recorded.iter().map(|s| s["ok"].as_u64().unwrap()).collect();
    assert_eq!(ok, counts);
    assert_eq!(file["levels"][0]["slice_s"], 0.5);
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(art.join("profile_export_aiperf_timeslices.json")).unwrap(),
    )
    .unwrap();
    let slices = json["timeslices"].as_array().unwrap();
    let requests: Vec<f64> = (slices.iter())
        .map(|s| s["request_count"]["avg"].as_f64().unwrap())
        .collect();
    assert_eq!(
        requests,
        counts.iter().map(|&c| c as f64).collect::<Vec<_>>()
    );
    assert_eq!(
        slices[2]["is_complete"], false,
        "the last slice is cut at the end"
    );
    assert!(slices[0].get("is_complete").is_none());
    let width = slices[0]["end_ns"].as_u64().unwrap() - slices[0]["start_ns"].as_u64().unwrap();
    assert_eq!(width, 500_000_000);
    let csv = std::fs::read_to_string(art.join("profile_export_aiperf_timeslices.csv")).unwrap();
    let mut rows = csv.lines();
    assert_eq!(
        rows.next(),
        Some("Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value")
    );
    let count_rows: Vec<&str> = rows.filter(|r| r.contains(",Request Count,")).collect();
    assert_eq!(count_rows.len(), 3, "{count_rows:?}");
    assert!(count_rows[1].starts_with("1,"), "{count_rows:?}");
    assert!(
        count_rows[1].ends_with(&format!(",requests,avg,{}.00", counts[1])),
        "{count_rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_failed_request_threshold_stops_the_run_and_ends_it_in_an_error() {
    let server = common::start_server(&["fail=fail:rate=0.5"]).await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let addr = server.http_addr.to_string();
    let out = common::run_cli(&[
        "profile",
        "-m",
        "fail",
        "-u",
        &addr,
        "--service-kind",
        "triton",
        "--concurrency",
        "2",
        "--request-count",
        "400",
        "--failed-request-threshold",
        "0.3",
        "--results-file",
        results.to_str().unwrap(),
    ])
    .await;
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(
        stderr.contains("--failed-request-threshold 0.3"),
        "{stderr}"
    );
    let file = common::assert_valid(&results);
    let merged = &file["levels"][0]["merged"];
    let (ok, failed) = (
        merged["ok"].as_u64().unwrap(),
        merged["failed"].as_u64().unwrap(),
    );
    assert!(
        ok + failed >= 10,
        "judged once 10 were done: {ok} + {failed}"
    );
    assert!(
        ok + failed < 200,
        "stopped long before 400: {ok} + {failed}"
    );
    assert!(failed as f64 / (ok + failed) as f64 > 0.3);
    assert_eq!(file["levels"][0]["end"], "interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn combinations_aiperf_refuses_are_refused_naming_the_flags() {
    for (args, needle) in [
        (
            &["--num-users", "4", "--conversation-turn-mean", "3"][..],
            "--num-users counts the users of --user-centric-rate",
        ),
        (
            &["--request-rate", "3", "--request-rate-series", "s.json"][..],
            "--request-rate-series and --request-rate",
        ),
        (
            &["--concurrency", "2", "--prefill-concurrency", "1"][..],
            "--prefill-concurrency limits the requests waiting for their first token",
        ),
    ] {
        let mut all = vec!["profile", "--model", "llm", "--url", "127.0.0.1:9"];
        all.extend_from_slice(args);
        let out = common::run_cli(&all).await;
        let stderr = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

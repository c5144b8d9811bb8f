//! The results file against the embedded server: real files — a concurrency sweep, an LLM
//! run over the OpenAI API, a ramp — are valid against docs/results.schema.json, read back
//! with `results::read`, and their histograms give back the run's own figures: percentiles
//! equal to the run's (same histogram, so exactly), and the merged windows' histograms add
//! up to the level's merged histogram.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use inferperf::load::profiler::Interrupt;
use inferperf::results::{self, merge_distributions, DistributionRecord, ResultsFile};
use serde_json::Value;

use common::{assert_valid, schema};

fn decoded(d: &DistributionRecord) -> inferperf::measure::distribution::Distribution {
    d.distribution().expect("the histogram decodes")
}

/// Every distribution of a file: its listed percentiles are those of its histogram.
fn assert_percentiles_match_histograms(file: &ResultsFile) {
    let windows = file
        .levels
        .iter()
        .flat_map(|l| l.windows.iter().chain([&l.merged]))
        .chain(
            file.timeline
                .iter()
                .flat_map(|t| t.buckets.iter().map(|b| &b.window)),
        );
    for w in windows {
        for (name, d) in w.distributions() {
            let back = decoded(d);
            assert_eq!(back.count(), d.count, "{name}");
            for &(p, value) in &d.percentiles.0 {
                assert_eq!(back.percentile(p), value, "{name} p{p}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_round_trips_through_the_results_file() {
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("out/run.json");
    let url = common::url(&server, "http");
    // -s so tight that no level is stable: every level measures all 5 windows, and the
    // first two are compacted (their histograms kept encoded) while the level goes on.
    let cfg = common::config(&[
        "-m",
        "slow",
        "-u",
        &url,
        "--concurrency-range",
        "1:2",
        "-p",
        "150",
        "-r",
        "5",
        "-s",
        "0.001",
        "--percentile",
        "97.5",
        "-H",
        "Authorization: Bearer very-secret-token",
        "--results-file",
        path.to_str().unwrap(),
    ]);
    let outcome = inferperf::commands::profile::profile(&cfg, Arc::new(Interrupt::default()))
        .await
        .expect("the run completes");
    assert_valid(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("very-secret-token"),
        "a header value is never written"
    );
    let file = results::read(&path).expect("reads back");
    assert_eq!(file.schema_version, 1);
    assert!(file.finished && !file.interrupted && file.error.is_none());
    assert_eq!(file.settings.header_names, ["authorization"]);
    assert_eq!(file.model.as_ref().unwrap().name, "slow");
    assert_eq!(file.levels.len(), outcome.results.len());
    assert_eq!(file.levels.len(), 2);
    assert_percentiles_match_histograms(&file);

    let mut last_end = 0.0;
    for (level, run) in file.levels.iter().zip(&outcome.results) {
        assert_eq!(level.windows.len(), 5, "-r 5 windows, none stable");
        assert!(!level.stable);
        assert!(level.why.contains("-r 5"), "{}", level.why);
        assert_eq!(level.merged_windows, [2, 3, 4]);
        // The windows follow one another on the run's clock.
        for w in &level.windows {
            let (start, end) = (w.start_s.unwrap(), w.end_s.unwrap());
            assert!(start >= last_end - 1e-9 && end > start, "{start}..{end}");
            assert!((end - start - w.duration_s).abs() < 1e-6);
            last_end = end;
        }
        // The merged figures are the run's own, histogram for histogram.
        let merged = decoded(&level.merged.latency);
        for p in [1.0, 37.5, 50.0, 97.5, 99.0, 99.9, 99.99] {
            assert_eq!(
                merged.percentile(p),
                run.merged.latency.percentile(p),
                "p{p}"
            );
        }
        assert_eq!(merged.mean(), run.merged.latency.mean());
        assert_eq!(level.merged.ok, run.merged.ok);
        assert_eq!(level.merged.throughput, run.merged.throughput());
        // The windows merged add up to the level's merged histogram, exactly.
        let parts = level
            .merged_windows
            .iter()
            .map(|&i| &level.windows[i].latency);
        let added = merge_distributions(parts).unwrap();
        assert_eq!(added.histogram(), merged.histogram());
        assert_eq!(
            (added.count(), added.sum(), added.min(), added.max()),
            (merged.count(), merged.sum(), merged.min(), merged.max())
        );
        // Every window, those compacted during the level too, keeps the run's figures.
        for (w, kept) in level.windows.iter().zip(&run.windows) {
            for p in cfg.measure.reported_percentiles() {
                assert_eq!(
                    w.latency.percentiles.get(p),
                    Some(kept.latency.percentile(p))
                );
                assert_eq!(
                    decoded(&w.latency).percentile(p),
                    kept.latency.percentile(p)
                );
            }
            assert_eq!(w.latency.count, kept.ok);
            let server = w
                .server
                .as_ref()
                .expect("the embedded server has statistics");
            // The server counts a request when it answers, the client when the answer
            // arrives: one may fall on each side of a window's end.
            assert!(server.model.success.count.abs_diff(w.ok) <= 2, "{w:?}");
            assert!(server.breakdown_us.compute_infer > 1500.0, "a 2 ms model");
        }
    }
    // Levels of two runs, or two machines, merge the same way.
    let both = merge_distributions(file.levels.iter().map(|l| &l.merged.latency)).unwrap();
    assert_eq!(
        both.count(),
        file.levels.iter().map(|l| l.merged.ok).sum::<u64>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_dir_holds_the_results_and_the_csv() {
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("runs/baseline");
    let url = common::url(&server, "grpc");
    let output = common::run_cli(&[
        "-m",
        "slow",
        "-u",
        &url,
        "-i",
        "grpc",
        "--concurrency-range",
        "1:4:3",
        "-p",
        "200",
        "-s",
        "60",
        "-r",
        "6",
        "--slo",
        "p99<=500ms",
        "--report-dir",
        dir.to_str().unwrap(),
    ])
    .await;
    assert!(output.status.success(), "{}", common::stderr(&output));
    let mut raw = assert_valid(&dir.join("results.json"));
    // The schema is strict: a field it does not describe is an error.
    raw["levels"][0]["windows"][0]["undocumented"] = 1.into();
    let schema = schema();
    assert!(!jsonschema::validator_for(&schema).unwrap().is_valid(&raw));
    let file = results::read(&dir).expect("a report dir reads as its results.json");
    assert_eq!(file.levels.len(), 2);
    assert_eq!(file.settings.protocol, "grpc");
    assert_eq!(file.settings.slo, ["p99<=500ms"]);
    assert_eq!(
        file.knee,
        Some(1),
        "the busier level met the SLO with more throughput"
    );
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert!(csv.starts_with("Concurrency,Inferences/Second"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "a row per level: {csv}");
    let first = csv.lines().nth(1).unwrap();
    let throughput: f64 = first.split(',').nth(1).unwrap().parse().unwrap();
    assert!((throughput - file.levels[0].merged.throughput).abs() < 1.0);
    assert_percentiles_match_histograms(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_run_writes_its_token_figures() {
    let server = common::start_server(&["chat=llm:ttft_ms=20,itl_ms=2,output_tokens=8"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("llm.json");
    let url = common::url(&server, "http");
    let output = common::run_cli(&[
        "profile",
        "-m",
        "chat",
        "-u",
        &url,
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
        "--streaming",
        "--output-tokens-mean",
        "8",
        "--concurrency-range",
        "2",
        "--request-count",
        "20",
        "--results-file",
        path.to_str().unwrap(),
    ])
    .await;
    assert!(output.status.success(), "{}", common::stderr(&output));
    assert_valid(&path);
    let file = results::read(&path).unwrap();
    assert_eq!(file.settings.service_kind, "openai");
    let llm = file.settings.llm.as_ref().unwrap();
    assert_eq!(llm.endpoint, "v1/chat/completions");
    let level = &file.levels[0];
    assert_eq!(level.end, results::LevelEndRecord::SingleWindow);
    let w = &level.merged;
    assert_eq!(w.ok, 20);
    let tokens = w.tokens.as_ref().expect("an LLM run has token figures");
    assert_eq!(tokens.output_tokens.unit, "count");
    assert_eq!(tokens.output_tokens.sum, 160, "8 tokens each");
    assert_eq!(tokens.counted_by_usage, 20);
    // GenAI-Perf's percentiles are in the file, the histograms answer the rest.
    let ttft = &w.first_response;
    for p in [1.0, 25.0, 75.0, 99.0, 99.9] {
        assert!(ttft.percentiles.get(p).is_some(), "p{p}");
    }
    assert!(ttft.min >= 19_000_000, "TTFT {} ns", ttft.min);
    let itl = decoded(&tokens.inter_token);
    assert!(
        (1.5e6..20e6).contains(&itl.percentile(50.0)),
        "{}",
        itl.percentile(50.0)
    );
    assert_eq!(w.inter_response.count, 20 * 7, "7 gaps between 8 events");
    assert_percentiles_match_histograms(&file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_writes_its_buckets() {
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ramp");
    let url = common::url(&server, "http");
    let output = common::run_cli(&[
        "-m",
        "slow",
        "-u",
        &url,
        "--ramp",
        "3s",
        "--concurrency-range",
        "1:4",
        "--report-dir",
        dir.to_str().unwrap(),
    ])
    .await;
    assert!(output.status.success(), "{}", common::stderr(&output));
    let raw = assert_valid(&dir.join("results.json"));
    assert_eq!(raw["settings"]["load"]["mode"], "timeline");
    let file = results::read(&dir).unwrap();
    assert!(file.levels.is_empty());
    let timeline = file.timeline.as_ref().expect("a ramp has a timeline");
    assert_eq!(timeline.kind, "concurrency");
    assert!(timeline.buckets.len() >= 3, "{}", timeline.buckets.len());
    for (i, bucket) in timeline.buckets.iter().enumerate().take(3) {
        assert_eq!(bucket.plan_offset_s, i as f64);
        assert!(!bucket.after_end);
        assert!(bucket.target >= 1.0 && bucket.target <= 4.0);
        assert!((bucket.window.duration_s - 1.0).abs() < 0.05);
    }
    let starts: Vec<f64> = timeline
        .buckets
        .iter()
        .map(|b| b.window.start_s.unwrap())
        .collect();
    assert!(starts.windows(2).all(|s| s[1] > s[0]), "{starts:?}");
    let total = timeline
        .total
        .as_ref()
        .expect("the total is written at the end");
    let ok: u64 = timeline.buckets.iter().map(|b| b.window.ok).sum();
    assert_eq!(total.ok, ok);
    let all = merge_distributions(timeline.buckets.iter().map(|b| &b.window.latency)).unwrap();
    assert_eq!(all.histogram(), decoded(&total.latency).histogram());
    assert_percentiles_match_histograms(&file);
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert!(csv.starts_with("Time (s),"), "the per-second CSV: {csv}");
}

/// Every field the schema describes has a description, so the file is documented where
/// readers look.
#[test]
fn the_schema_describes_every_field() {
    fn walk(node: &Value, at: &str, missing: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    for (name, prop) in props {
                        if prop.get("description").is_none() {
                            missing.push(format!("{at}/{name}"));
                        }
                    }
                }
                for (key, value) in map {
                    walk(value, &format!("{at}/{key}"), missing);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, at, missing)),
            _ => {}
        }
    }
    let schema = schema();
    let mut missing = Vec::new();
    walk(&schema, "", &mut missing);
    assert!(
        missing.is_empty(),
        "fields without a description: {missing:?}"
    );
    assert!(jsonschema::meta::is_valid(&schema));
    assert_eq!(
        schema["properties"]["schema_version"]["const"],
        results::SCHEMA_VERSION
    );
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reader_refuses_what_it_cannot_read_with_one_sentence() {
    let tmp = tempfile::tempdir().unwrap();
    let refusal = |path: &Path| {
        let e = results::read(path).expect_err("refused");
        assert_eq!(e.exit_code(), 3, "{e}");
        let text = e.to_string();
        assert!(!text.contains('\n'), "one sentence: {text}");
        text
    };
    let missing = refusal(&tmp.path().join("nothing"));
    assert!(missing.starts_with("No results file at"), "{missing}");
    let not_json = refusal(&write(
        tmp.path(),
        "a.json",
        "Concurrency,Inferences/Second\n",
    ));
    assert!(not_json.contains("not JSON"), "{not_json}");
    let foreign = refusal(&write(tmp.path(), "b.json", r#"{"experiments": []}"#));
    assert!(foreign.contains("no schema_version"), "{foreign}");
    let newer = refusal(&write(
        tmp.path(),
        "c.json",
        r#"{"schema_version": 7, "tool": {"name": "inferperf", "version": "9.0.0"}}"#,
    ));
    assert!(
        newer.contains("schema_version 7") && newer.contains("9.0.0"),
        "{newer}"
    );

    // A real file, then broken in two ways.
    let server = common::start_server(&["identity=identity"]).await;
    let url = common::url(&server, "http");
    let good = tmp.path().join("good.json");
    let output = common::run_cli(&[
        "-m",
        "identity",
        "-u",
        &url,
        "--request-count",
        "50",
        "--results-file",
        good.to_str().unwrap(),
    ])
    .await;
    assert!(output.status.success(), "{}", common::stderr(&output));
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    value["levels"][0]["windows"][0]["latency"]["histogram"] = "bm90IGEgaGlzdG9ncmFt".into();
    let bad_histogram = refusal(&write(tmp.path(), "d.json", &value.to_string()));
    assert!(
        bad_histogram.contains("level 1, window 1, latency"),
        "{bad_histogram}"
    );
    value["levels"][0]["windows"][0]["ok"] = "many".into();
    let bad_field = refusal(&write(tmp.path(), "e.json", &value.to_string()));
    assert!(
        bad_field.contains("is not a valid results file"),
        "{bad_field}"
    );
}

//! AIPerf's repeated runs (`--num-profile-runs`) against the embedded `llm` engine: every
//! run in its own folder with its own reports, the warm-up in the first run only (the
//! server's own count of requests says so), one workload for every run unless each is to
//! draw its own, each figure's interval over the runs in the results file and in AIPerf's
//! aggregate files, and the values they summarise each run's own figures.

use serde_json::Value;

use crate::common;
use crate::server_util::Http;
use inferperf_server::RunningServer;

/// The requests the engine answered, by its own `/metrics` page (every finish reason).
async fn answered(server: &RunningServer) -> f64 {
    let answer = Http::new(server.http_addr).get("/metrics").await;
    let page = String::from_utf8(answer.body.to_vec()).unwrap();
    (page.lines())
        .filter(|l| l.starts_with("vllm:request_success_total{model_name=\"chat\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// A repeated profile of `runs` runs with `extra` flags: its output, folder and results.
async fn repeated(
    server: &RunningServer,
    runs: &str,
    extra: &[&str],
) -> (std::process::Output, tempfile::TempDir) {
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let report = dir.path().join("report");
    let artifacts = dir.path().join("artifacts");
    let tokenizer = tokenizer.to_str().unwrap();
    let mut args = vec!["profile"];
    args.extend(common::chat_flags(&addr, tokenizer, &[]));
    args.extend([
        "--concurrency",
        "2",
        "--request-count",
        "20",
        "--synthetic-input-tokens-mean",
        "30",
        "--num-profile-runs",
        runs,
        "--report-dir",
        report.to_str().unwrap(),
        "--artifact-dir",
        artifacts.to_str().unwrap(),
    ]);
    args.extend_from_slice(extra);
    (common::run_cli(&args).await, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_is_kept_and_each_figure_is_given_over_the_runs() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1,output_tokens=8"]).await;
    let before = answered(&server).await;
    let (out, dir) = repeated(&server, "3", &["--warmup-request-count", "5"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    // Each run's pre-flight request and 20 measured; the 5 warm-up requests once.
    assert_eq!(answered(&server).await - before, 3.0 * 21.0 + 5.0);
    let stdout = common::stdout(&out);
    assert!(
        stdout.contains("=== Profile run 3 of 3 (run_0003) ==="),
        "{stdout}"
    );
    assert!(
        stdout.contains("Over 3 profile run(s) of 3: mean, 95% confidence interval"),
        "{stdout}"
    );
    let report = dir.path().join("report");
    let top = common::assert_valid(&report.join("results.json"));
    // Finished: every run asked for ran and finished.
    assert_eq!(
        (&top["finished"], &top["error"]),
        (&Value::Bool(true), &Value::Null)
    );
    let rep = &top["repetitions"];
    assert_eq!(rep["asked"], 3);
    assert_eq!(rep["confidence_level"], 0.95);
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let level = &rep["levels"][0];
    assert_eq!(level["load"]["concurrency"], 2);
    let throughput = &level["figures"]["request_throughput_avg"];
    for (i, run) in runs.iter().enumerate() {
        let label = format!("run_{:04}", i + 1);
        assert_eq!(run["label"], label.as_str());
        assert_eq!(run["measured"], 1);
        // The run's own results file, and the figures it gave, are those summarised.
        let own = common::assert_valid(
            &report
                .join("profile_runs")
                .join(&label)
                .join("results.json"),
        );
        assert_eq!(run["levels"], own["levels"], "{label}");
        let artifacts = dir.path().join("artifacts/profile_runs").join(&label);
        // An AIPerf command line: the run's files in its folder itself, as AIPerf lays them.
        let export = json(&artifacts.join("profile_export_aiperf.json"));
        assert_eq!(
            throughput["values"][i], export["request_throughput"]["avg"],
            "{label}"
        );
    }
    let count = &level["figures"]["request_count_avg"];
    assert_eq!(
        (count["mean"].as_f64(), count["std"].as_f64()),
        (Some(20.0), Some(0.0))
    );
    let t = throughput["t_critical"].as_f64().unwrap();
    assert!((t - 4.302_653).abs() < 1e-5, "t(0.975, 2): {t}");
    let values: Vec<f64> = (throughput["values"].as_array().unwrap().iter())
        .map(|v| v.as_f64().unwrap())
        .collect();
    let mean = values.iter().sum::<f64>() / 3.0;
    assert!((throughput["mean"].as_f64().unwrap() - mean).abs() < 1e-9 * mean);
    let (low, high) = (
        throughput["ci_low"].as_f64().unwrap(),
        throughput["ci_high"].as_f64().unwrap(),
    );
    assert!(low <= mean && mean <= high && (mean - low - (high - mean)).abs() < 1e-6 * mean);
    // AIPerf's aggregate files say the same.
    let aggregate = dir.path().join("artifacts/aggregate");
    let agg = json(&aggregate.join("profile_export_aiperf_aggregate.json"));
    assert_eq!(agg["metadata"]["aggregation_type"], "confidence");
    assert_eq!(agg["metadata"]["num_successful_runs"], 3);
    assert_eq!(
        agg["metrics"]["request_throughput_avg"]["mean"],
        throughput["mean"]
    );
    assert_eq!(
        agg["metrics"]["request_throughput_avg"]["unit"],
        "requests/sec"
    );
    let csv =
        std::fs::read_to_string(aggregate.join("profile_export_aiperf_aggregate.csv")).unwrap();
    assert!(csv.starts_with("metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit\r\n"));
    assert!(
        csv.contains("Run Labels,\"['run_0001', 'run_0002', 'run_0003']\""),
        "{csv}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_share_a_workload_unless_each_draws_its_own() {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,output_tokens=4"]).await;
    let inputs = |dir: &tempfile::TempDir, run: &str| {
        let path = dir
            .path()
            .join("artifacts/profile_runs")
            .join(run)
            .join("inputs.json");
        std::fs::read_to_string(path).unwrap()
    };
    let (out, same) = repeated(&server, "2", &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_eq!(inputs(&same, "run_0001"), inputs(&same, "run_0002"));
    let (out, own) = repeated(&server, "2", &["--vary-seed-per-trial"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_ne!(inputs(&own, "run_0001"), inputs(&own, "run_0002"));
}

/// The `request_latency` of every successful request in a run's AIPerf records.
fn record_latencies(dir: &tempfile::TempDir, run: &str) -> Vec<f64> {
    let path = dir
        .path()
        .join("artifacts/profile_runs")
        .join(run)
        .join("profile_export.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    (text.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|r| r["metrics"]["request_latency"]["value"].as_f64())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_stop_once_the_figure_has_settled() {
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,output_tokens=4"]).await;
    // Every run counts 20 requests: no variation, settled at the second run.
    let before = answered(&server).await;
    let count = [
        "--convergence-metric",
        "request_count",
        "--convergence-mode",
        "cv",
    ];
    let (out, dir) = repeated(&server, "5", &count).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_eq!(answered(&server).await - before, 2.0 * 21.0);
    let stdout = common::stdout(&out);
    assert!(
        stdout.contains("Converged: request_count avg (cv) was 0.0000 after 2 run(s), below 0.05; the runs stopped there."),
        "{stdout}"
    );
    assert!(!stdout.contains("run_0003"), "{stdout}");
    let top = common::assert_valid(&dir.path().join("report/results.json"));
    // Stopping because the figure settled is finishing, not being interrupted.
    assert_eq!(
        (&top["finished"], &top["interrupted"]),
        (&Value::Bool(true), &Value::Bool(false))
    );
    let rep = &top["repetitions"];
    assert_eq!(rep["runs"].as_array().unwrap().len(), 2);
    let c = &rep["convergence"];
    assert_eq!(
        (
            &c["converged"],
            &c["after_runs"],
            &c["mode"],
            &c["threshold"],
            &c["value"]
        ),
        (
            &Value::Bool(true),
            &Value::from(2),
            &Value::from("cv"),
            &Value::from(0.05),
            &Value::from(0.0)
        )
    );
    let agg = json(
        &dir.path()
            .join("artifacts/aggregate/profile_export_aiperf_aggregate.json"),
    );
    assert_eq!(agg["metadata"]["num_successful_runs"], 2);

    // Throughput's interval never gets a billionth of its mean wide: every run is made.
    let narrow = [
        "--convergence-metric",
        "request_throughput",
        "--convergence-threshold",
        "0.000000001",
    ];
    let (out, dir) = repeated(&server, "3", &narrow).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let top = common::assert_valid(&dir.path().join("report/results.json"));
    let c = &top["repetitions"]["convergence"];
    assert_eq!(
        (&c["converged"], &c["after_runs"], &c["mode"]),
        (
            &Value::Bool(false),
            &Value::from(3),
            &Value::from("ci-width")
        )
    );
    // The width it gives is the interval's of the three runs' throughputs.
    let f = &top["repetitions"]["levels"][0]["figures"]["request_throughput_avg"];
    let width = (f["ci_high"].as_f64().unwrap() - f["ci_low"].as_f64().unwrap())
        / f["mean"].as_f64().unwrap();
    assert!(
        (c["value"].as_f64().unwrap() - width).abs() < 1e-9,
        "{c} vs {width}"
    );
    assert_eq!(top["finished"], true);

    // The distribution test: the second run's latencies against the first's, as the
    // runs' own AIPerf records give them.
    let ks = [
        "--convergence-metric",
        "request_latency",
        "--convergence-mode",
        "distribution",
    ];
    let (out, dir) = repeated(&server, "2", &ks).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let top = common::assert_valid(&dir.path().join("report/results.json"));
    let c = &top["repetitions"]["convergence"];
    let (first, second) = (
        record_latencies(&dir, "run_0001"),
        record_latencies(&dir, "run_0002"),
    );
    assert_eq!((first.len(), second.len()), (20, 20));
    let expected = inferperf::measure::two_sample::ks_test(&first, &second).unwrap();
    let p = c["value"].as_f64().unwrap();
    // The records keep milliseconds to the nanosecond: the same orderings, the same p.
    assert!((p - expected.p_value).abs() < 1e-9, "{p} vs {expected:?}");
    assert_eq!(c["converged"], p > 0.05);
    assert_eq!(c["after_runs"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_value_of_a_sweep_stops_on_its_own_in_trial_folders() {
    // AIPerf 0.13 run beside it (`--concurrency 1,2 --parameter-sweep-mode independent
    // --num-profile-runs 4 --convergence-metric request_count --convergence-mode cv`) made
    // concurrency_N/profile_runs/trial_0001 and trial_0002 for each value.
    let server = common::start_server(&["chat=llm:ttft_ms=1,itl_ms=1,output_tokens=4"]).await;
    let before = answered(&server).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let artifacts = dir.path().join("artifacts");
    let mut args = vec!["profile"];
    args.extend(common::chat_flags(&addr, tokenizer.to_str().unwrap(), &[]));
    args.extend(["--concurrency", "1,2", "--request-count", "10"]);
    args.extend([
        "--num-profile-runs",
        "4",
        "--artifact-dir",
        artifacts.to_str().unwrap(),
    ]);
    args.extend([
        "--convergence-metric",
        "request_count",
        "--convergence-mode",
        "cv",
    ]);
    let out = common::run_cli(&args).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    // Two values, two runs each, each run with its pre-flight request.
    assert_eq!(answered(&server).await - before, 2.0 * 2.0 * 11.0);
    for value in ["concurrency_1", "concurrency_2"] {
        let runs = artifacts.join(value).join("profile_runs");
        let mut folders: Vec<String> = std::fs::read_dir(&runs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        folders.sort();
        assert_eq!(folders, ["trial_0001", "trial_0002"], "{value}");
        let agg = json(
            &artifacts
                .join(value)
                .join("aggregate/profile_export_aiperf_aggregate.json"),
        );
        assert_eq!(agg["metadata"]["num_successful_runs"], 2, "{value}");
    }
}

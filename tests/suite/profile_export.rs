//! `--profile-export-file` from the real binary against the embedded server: one experiment
//! per level holding every request of every window (its count is the windows' count in the
//! results file), the window boundaries around the requests, the inputs each request carried;
//! an existing path is refused and left alone, and a timeline run, which has no windows, is
//! refused with a sentence.

use crate::common;

use serde_json::Value;

use inferperf::results;

fn export_args<'a>(url: &'a str, export: &'a str, results: &'a str) -> Vec<&'a str> {
    vec![
        "-m",
        "slow",
        "-u",
        url,
        "-p",
        "200",
        "-r",
        "3",
        "-s",
        "50",
        "--profile-export-file",
        export,
        "--results-file",
        results,
    ]
}

/// Runs the 2 ms model with the load flags given, writing the export and the results
/// file; returns the exit code, the export and the results file.
async fn exported_run(load: &[&str]) -> (Option<i32>, Value, results::ResultsFile) {
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("profile_export.json");
    let results_path = tmp.path().join("results.json");
    let url = common::url(&server, "http");
    let mut args = export_args(
        &url,
        export.to_str().unwrap(),
        results_path.to_str().unwrap(),
    );
    args.extend(load);
    let output = common::run_cli(&args).await;
    let code = output.status.code();
    assert!(matches!(code, Some(0 | 2)), "{}", common::stderr(&output));
    let value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    (code, value, results::read(&results_path).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_every_window_is_exported_level_by_level() {
    let (code, value, file) = exported_run(&["--concurrency-range", "1:2"]).await;
    assert_eq!(code, Some(0));
    let experiments = value["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 2);
    assert_eq!(value["service_kind"], "triton");
    for (c, (experiment, level)) in experiments.iter().zip(&file.levels).enumerate() {
        assert_eq!(
            experiment["experiment"],
            serde_json::json!({"mode": "concurrency", "value": c + 1})
        );
        let requests = experiment["requests"].as_array().unwrap();
        let ok: u64 = level.windows.iter().map(|w| w.ok).sum();
        assert_eq!(requests.len() as u64, ok, "every window's requests");
        let bounds: Vec<u64> = experiment["window_boundaries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .collect();
        assert_eq!(bounds.len(), level.windows.len() + 1);
        assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
        let (first, last) = (bounds[0], *bounds.last().unwrap());
        for request in requests {
            let sent = request["timestamp"].as_u64().unwrap();
            let answers = request["response_timestamps"].as_array().unwrap();
            assert_eq!(answers.len(), 1, "{request}");
            let answered = answers[0].as_u64().unwrap();
            // A 2 ms model: each answer comes after its send, inside the level's windows.
            assert!(sent < answered && answered - sent >= 2_000_000, "{request}");
            assert!(first <= answered && answered <= last, "{request}");
            let input = request["request_inputs"]["INPUT0"].as_array().unwrap();
            assert!(!input.is_empty() && input.iter().all(Value::is_number));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_level_is_a_request_rate_experiment() {
    let (_, value, _) = exported_run(&["--request-rate-range", "50"]).await;
    let experiment = &value["experiments"][0];
    assert_eq!(
        experiment["experiment"],
        serde_json::json!({"mode": "request_rate", "value": 50.0})
    );
    assert!(!experiment["requests"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_path_or_a_timeline_run_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let taken = tmp.path().join("taken.json");
    std::fs::write(&taken, "mine").unwrap();
    let results_path = tmp.path().join("r.json");
    let fresh = tmp.path().join("fresh.json");
    let missing_folder = tmp.path().join("no/such/folder/x.json");
    let cases = [
        (vec![taken.to_str().unwrap()], "already exists"),
        (
            vec![
                fresh.to_str().unwrap(),
                "--ramp",
                "5s",
                "--concurrency-range",
                "1:4",
            ],
            "--ramp or --load-steps",
        ),
        (vec![""], "a value is required"),
    ];
    for (flags, says) in cases {
        let mut args = vec!["-m", "slow", "-u", "127.0.0.1:1", "--profile-export-file"];
        args.extend(flags.iter().copied());
        args.extend(["--results-file", results_path.to_str().unwrap()]);
        let output = common::run_cli(&args).await;
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "mine");
    assert!(!fresh.exists());
    // A folder that does not exist is found when the run starts, before it measures.
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let url = common::url(&server, "http");
    let args = export_args(
        &url,
        missing_folder.to_str().unwrap(),
        results_path.to_str().unwrap(),
    );
    let output = common::run_cli(&args).await;
    let stderr = common::stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cannot be written"), "{stderr}");
}

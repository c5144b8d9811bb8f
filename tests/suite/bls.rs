//! `--bls-composing-models` against the embedded server's `bls` kind, whose every request
//! calls two `sleep` models inside its own compute: the Server block shows each composing
//! model with the counts the server's own statistics give, the BLS model's compute spans
//! its calls (so the breakdown is the model's own, never the calls added to it), and bad
//! values and definitions are one sentence each.

use crate::common;

use common::{profile, run_cli, served, start_server, stderr, stdout, url};
use inferperf_server::{LocalServer, ModelDef};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn composing_models_are_broken_down_over_http_and_grpc() {
    let server =
        start_server(&["pre=sleep:ms=1", "net=sleep:ms=2", "pipe=bls:calls=pre+net"]).await;
    for protocol in ["http", "grpc"] {
        let before = [served(&server, "pre"), served(&server, "net")];
        let u = url(&server, protocol);
        let results = profile(&[
            "-m",
            "pipe",
            "-u",
            &u,
            "-i",
            protocol,
            "--concurrency-range",
            "2",
            "--request-count",
            "120",
            "--bls-composing-models",
            "pre,net:1",
            "--no-progress",
        ])
        .await;
        let merged = &results[0].merged;
        assert_eq!(merged.error_count(), 0, "{protocol}: {:?}", merged.errors);
        assert_eq!(merged.ok, 120, "{protocol}");
        let window = merged.server.as_ref().expect("a server block");
        assert!(window.bls, "{protocol}");
        let names: Vec<&str> = window.composing.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["pre", "net"], "{protocol}");
        let after = [served(&server, "pre"), served(&server, "net")];
        for (i, model) in window.composing.iter().enumerate() {
            assert_eq!(model.success.count, after[i] - before[i], "{protocol}");
            assert_eq!(model.success.count, 120, "{protocol}: {}", model.name);
        }
        assert_eq!(window.model.success.count, 120, "{protocol}");
        // Each request's compute spans both calls (1 ms + 2 ms of sleep): the breakdown is
        // the BLS model's own, not the calls' times added to it.
        let b = window.breakdown();
        assert!(b.compute_infer >= 3000.0, "{protocol}: {b:?}");
        assert!(b.compute_infer <= b.request, "{protocol}: {b:?}");
        assert!(b.request < merged.mean_latency_us(), "{protocol}: {b:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_and_results_file_name_the_composing_models() {
    let server = start_server(&["pre=sleep:ms=1", "pipe=bls:calls=pre"]).await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let u = url(&server, "http");
    let out = run_cli(&[
        "-m",
        "pipe",
        "-u",
        &u,
        "--request-count",
        "50",
        "--bls-composing-models",
        "pre",
        "--results-file",
        results.to_str().unwrap(),
        "--no-progress",
    ])
    .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("    Composing models (called by the BLS model, inside its compute):\n    pre:\n      Inference count: 50\n"),
        "{text}"
    );
    let doc = common::assert_valid(&results);
    let server_record = &doc["levels"][0]["windows"][0]["server"];
    assert_eq!(server_record["bls"], true, "{server_record}");
    assert_eq!(server_record["composing"][0]["name"], "pre");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composing_model_the_server_does_not_know_costs_only_the_breakdown() {
    let server = start_server(&["pre=sleep:ms=1", "pipe=bls:calls=pre"]).await;
    let u = url(&server, "http");
    let args = [
        "-m",
        "pipe",
        "-u",
        &u,
        "--request-count",
        "20",
        "--no-progress",
    ];
    for (flag, missing) in [("nope", "nope"), ("pre:7", "pre:7")] {
        let mut all = args.to_vec();
        all.extend(["--bls-composing-models", flag]);
        let out = run_cli(&all).await;
        let text = stdout(&out) + &stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(
            text.contains(&format!("do not list composing model '{missing}'")),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_values_are_one_sentence_with_exit_3() {
    let server = start_server(&["pre=sleep:ms=1", "pipe=bls:calls=pre"]).await;
    let u = url(&server, "http");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--bls-composing-models", "pre:x"],
            "has a version that is not a whole number",
        ),
        (&["--bls-composing-models", ",pre"], "has no model name"),
        (
            &[
                "--bls-composing-models",
                "pre",
                "--service-kind",
                "openai",
                "--endpoint",
                "v1/chat/completions",
            ],
            "only --service-kind triton has",
        ),
    ];
    for (extra, sentence) in cases {
        let mut all = vec!["-m", "pipe", "-u", &u, "--request-count", "5"];
        all.extend_from_slice(extra);
        let out = run_cli(&all).await;
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{extra:?}: {text}");
        assert!(text.contains(sentence), "{extra:?}: {text}");
        assert_eq!(text.trim().lines().count(), 1, "{text}");
    }
}

#[tokio::test]
async fn a_bls_definition_that_cannot_call_is_refused() {
    let cases = [
        (
            vec!["p=bls:calls=missing"],
            "calls=missing names no served model",
        ),
        (vec!["s=add_sub", "p=bls:calls=s"], "takes other inputs"),
        (
            vec!["i=identity:shape=4", "p=bls:calls=i"],
            "another datatype or shape",
        ),
        (vec!["q=bls", "p=bls:calls=q"], "is a bls model itself"),
        (
            vec!["p=bls:calls=a++b"],
            "expected model names joined by '+'",
        ),
    ];
    for (defs, sentence) in cases {
        let parsed: Result<Vec<ModelDef>, String> = defs
            .iter()
            .map(|d| d.parse::<ModelDef>().map_err(|e| e.to_string()))
            .collect();
        let error = match parsed {
            Err(e) => e,
            Ok(models) => match LocalServer::new(models) {
                Ok(_) => panic!("{defs:?} was accepted"),
                Err(e) => e.to_string(),
            },
        };
        assert!(error.contains(sentence), "{defs:?}: {error}");
    }
}

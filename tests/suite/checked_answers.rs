//! Answers are checked, never trusted: against the embedded server's `fail` model in its
//! `bad_body` mode (success status, no outputs) a share of requests becomes `bad response`
//! errors, over HTTP and gRPC; `validation_data` that matches gives no error, and one wrong
//! value gives a `validation` error on every request that carries it, with the first
//! mismatch shown once in the report.

use crate::common;

use common::*;
use inferperf::backend::{ErrorKind, Malformation};
use serde_json::json;

const MISSING: ErrorKind = ErrorKind::BadResponse(Malformation::MissingOutput);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_counted_as_bad_responses() {
    let server = start_server(&["bad=fail:mode=bad_body,rate=0.3"]).await;
    for protocol in ["http", "grpc"] {
        let results = profile(&[
            "-m",
            "bad",
            "-u",
            &url(&server, protocol),
            "-i",
            protocol,
            "--concurrency-range",
            "4",
            "-p",
            "700",
            "-s",
            "50",
        ])
        .await;
        let w = &results[0].merged;
        let bad = w.errors.get(&MISSING).copied().unwrap_or(0);
        assert_eq!(bad, w.error_count(), "{protocol}: {:?}", w.errors);
        let rate = w.error_rate();
        assert!(
            (rate - 0.3).abs() <= 0.05,
            "{protocol}: bad response rate {rate:.3} of {} requests",
            w.completed()
        );
        assert!(w.ok > 0, "{protocol}");
        let note = w.notes.iter().find(|n| n.kind == MISSING).expect("a note");
        assert_eq!(note.text, "the answer lacks output 'OUTPUT0'");
    }
}

/// Two identity requests, the second of whose validation data is wrong in `wrong` places.
fn validation_file(dir: &std::path::Path, wrong: bool) -> String {
    let values: Vec<f32> = (0..16).map(|i| i as f32 + 0.25).collect();
    let mut expected = values.clone();
    if wrong {
        expected[7] = 99.5;
    }
    let path = dir.join(if wrong { "wrong.json" } else { "right.json" });
    let doc = json!({
        "data": [{"INPUT0": values}, {"INPUT0": values}],
        "validation_data": [{"OUTPUT0": values}, {"OUTPUT0": expected}],
    });
    std::fs::write(&path, doc.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_data_is_compared_with_every_answer() {
    let server = start_server(&["identity=identity"]).await;
    let dir = tempfile::tempdir().unwrap();
    let right = validation_file(dir.path(), false);
    let wrong = validation_file(dir.path(), true);
    let runs = [
        ("http", "binary"),
        ("http", "json"),
        ("grpc", "binary"),
        ("local", "binary"),
    ];
    for (protocol, format) in runs {
        for (file, wrong) in [(&right, false), (&wrong, true)] {
            let mut flags = vec![
                "-m",
                "identity",
                "--input-data",
                file,
                "--request-count",
                "100",
                "--output-tensor-format",
                format,
            ];
            let url = url(&server, protocol);
            match protocol {
                "local" => {
                    flags.extend(["--service-kind", "local", "--model", "identity=identity"])
                }
                _ => flags.extend(["-u", &url, "-i", protocol]),
            }
            let results = profile(&flags).await;
            let w = &results[0].merged;
            let how = format!("{protocol} {format} wrong={wrong}");
            if !wrong {
                assert_eq!((w.ok, w.error_count()), (100, 0), "{how}: {:?}", w.errors);
                continue;
            }
            // One slot alternates the two requests: every second one carries the wrong value.
            assert_eq!(w.errors.get(&ErrorKind::Validation), Some(&50), "{how}");
            assert_eq!(w.ok, 50, "{how}");
            let note = &w.notes[0];
            assert_eq!(
                note.text, "output 'OUTPUT0' element 7: expected 99.5, got 7.25",
                "{how}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_values_are_caught_only_by_validation_data() {
    let server = start_server(&["liar=fail:mode=wrong_values,rate=1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let right = validation_file(dir.path(), false);
    let base = [
        "-m",
        "liar",
        "-u",
        &url(&server, "http"),
        "--request-count",
        "20",
    ];
    // Right shapes and datatypes: without expected values the answers look correct.
    let plain = profile(&base).await;
    assert_eq!(plain[0].merged.error_count(), 0);
    let mut flags = base.to_vec();
    flags.extend(["--input-data", &right]);
    let checked = profile(&flags).await;
    let w = &checked[0].merged;
    assert_eq!(
        w.errors.get(&ErrorKind::Validation),
        Some(&20),
        "{:?}",
        w.errors
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_mismatch_is_shown_once_and_the_tolerance_is_a_flag() {
    let server = start_server(&["identity=identity"]).await;
    let dir = tempfile::tempdir().unwrap();
    let wrong = validation_file(dir.path(), true);
    let base = [
        "-m",
        "identity",
        "-u",
        &url(&server, "http"),
        "--input-data",
        &wrong,
        "--request-count",
        "40",
    ];
    let out = run_cli(&base).await;
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        report.contains("    Errors: 20 (50.00%): validation × 20\n"),
        "{report}"
    );
    let first = "    First validation error: output 'OUTPUT0' element 7: expected 99.5, got 7.25\n";
    assert_eq!(report.matches(first).count(), 1, "{report}");
    // A tolerance wide enough to take 99.5 for 7.25 lets every answer pass.
    let mut loose = base.to_vec();
    loose.extend(["--validation-tolerance", "100"]);
    let out = run_cli(&loose).await;
    assert!(!stdout(&out).contains("Errors:"), "{}", stdout(&out));
    let mut bad = base.to_vec();
    bad.extend(["--validation-tolerance", "-1"]);
    let out = run_cli(&bad).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("--validation-tolerance -1 must be"));
}

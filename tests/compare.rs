//! `inferperf compare` on real runs against the embedded server: a run compared with itself
//! is within noise on every figure and passes its gate (exit 0); a model 20% slower fails
//! `--fail-on 'p50>+10%'` (exit 1) and says worse for p50; a bad `--fail-on`, a file that
//! does not read, and an unfinished run are told in one sentence.

mod common;

use std::path::{Path, PathBuf};

use inferperf::server::RunningServer;

/// Profiles model `m` at concurrency 1 and 2 and writes its results file to `path`.
async fn run_to(server: &RunningServer, path: &Path) {
    let url = common::url(server, "http");
    let output = common::run_cli(&[
        "-m",
        "m",
        "-u",
        &url,
        "--concurrency-range",
        "1:2",
        "-p",
        "400",
        "-s",
        "20",
        "--results-file",
        path.to_str().unwrap(),
    ])
    .await;
    assert!(
        path.exists(),
        "no results file: {}",
        common::stderr(&output)
    );
}

async fn compare(args: &[&str]) -> std::process::Output {
    let mut all = vec!["compare"];
    all.extend(args);
    let output = common::run_cli(&all).await;
    println!("$ inferperf {}", all.join(" "));
    print!("{}", common::stdout(&output));
    eprint!("{}", common::stderr(&output));
    println!("(exit {:?})", output.status.code());
    output
}

fn verdict_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("throughput") || l.starts_with('p') || l.starts_with("avg")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_against_itself_is_within_noise() {
    let server = common::start_server(&["m=sleep:ms=5"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let a: PathBuf = tmp.path().join("a.json");
    run_to(&server, &a).await;
    let a = a.to_str().unwrap();

    let output = compare(&[a, a, "--fail-on", "throughput<-5%,p99>+10%"]).await;
    assert_eq!(output.status.code(), Some(0));
    let text = common::stdout(&output);
    let lines = verdict_lines(&text);
    assert_eq!(lines.len(), 2 * 3, "throughput, p50, p99 per level: {text}");
    assert!(lines.iter().all(|l| l.ends_with("within noise")), "{text}");
    assert!(text.contains("no figure moved past its limit"), "{text}");
    assert!(!text.contains("Unmatched"), "{text}");

    // A bad --fail-on and an unreadable file: one sentence, exit 3.
    let bad = compare(&[a, a, "--fail-on", "p99>-10%"]).await;
    assert_eq!(bad.status.code(), Some(3));
    let err = common::stderr(&bad);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--fail-on"), "{err}");
    let missing = tmp.path().join("nowhere.json");
    let missing = compare(&[a, missing.to_str().unwrap()]).await;
    assert_eq!(missing.status.code(), Some(3));
    let err = common::stderr(&missing);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("nowhere.json"), "{err}");

    // An unfinished run warns; a level only one run has is listed as unmatched.
    let mut raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a).unwrap()).unwrap();
    raw["finished"] = false.into();
    raw["levels"].as_array_mut().unwrap().pop();
    let partial = tmp.path().join("partial.json");
    std::fs::write(&partial, raw.to_string()).unwrap();
    let output = compare(&[a, partial.to_str().unwrap()]).await;
    assert_eq!(output.status.code(), Some(0));
    assert!(
        common::stderr(&output).contains("is not finished"),
        "{}",
        common::stderr(&output)
    );
    let text = common::stdout(&output);
    assert!(
        text.contains("Unmatched levels: concurrency 2 only in"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slower_model_fails_the_p50_gate() {
    let fast = common::start_server(&["m=sleep:ms=10"]).await;
    let slow = common::start_server(&["m=sleep:ms=12"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("fast.json");
    let b = tmp.path().join("slow.json");
    run_to(&fast, &a).await;
    run_to(&slow, &b).await;

    let output = compare(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--fail-on",
        "p50>+10%",
    ])
    .await;
    assert_eq!(output.status.code(), Some(1));
    let text = common::stdout(&output);
    let p50: Vec<&str> = verdict_lines(&text)
        .into_iter()
        .filter(|l| l.trim_start().starts_with("p50"))
        .collect();
    assert_eq!(p50.len(), 2, "{text}");
    assert!(p50.iter().all(|l| l.ends_with("worse")), "{text}");
    assert!(text.contains("FAIL"), "{text}");
    assert!(text.contains("p50>+10%"), "{text}");
}

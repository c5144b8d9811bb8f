//! The bad-input corpus (`tests/bad_inputs/cases.jsonl`): every case is a command line — a
//! flag, a data file, a URL, a model definition of `serve` — that must end with one
//! sentence on standard error, the expected exit code (3 for a bad option, 99 otherwise)
//! and a phrase of the expected sentence; never a panic, an abort or a hang. `{U}` is the
//! embedded server's address, `{D}` a copy of `tests/bad_inputs/data/`, and the argument
//! `<non-UTF-8>` is replaced by bytes that are not UTF-8.

use crate::common;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Semaphore;

/// Longer than any case takes on a busy machine; a case that runs into it hangs.
const HANG: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize)]
struct Case {
    args: Vec<String>,
    exit: i32,
    says: String,
}

/// What a case did, or why it is wrong.
async fn run_case(case: Case, url: String, data: String) -> Result<(), String> {
    let fill = |s: &str| s.replace("{U}", &url).replace("{D}", &data);
    let args: Vec<OsString> = case
        .args
        .iter()
        .map(|a| match a.as_str() {
            "<non-UTF-8>" => OsString::from_vec(b"model\xff".to_vec()),
            _ => OsString::from(fill(a)),
        })
        .collect();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{:?}: cannot start: {e}", case.args))?;
    let output = tokio::time::timeout(HANG, child.wait_with_output())
        .await
        .map_err(|_| format!("{:?}: no end after {HANG:?} (a hang)", case.args))?
        .map_err(|e| format!("{:?}: {e}", case.args))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let says = fill(&case.says);
    let problem = if stderr.contains("panicked") {
        Some("a panic")
    } else if output.status.code() != Some(case.exit) {
        Some("the wrong exit code")
    } else if lines.len() != 1 || !lines[0].starts_with("error: ") {
        Some("not one 'error: ' line")
    } else if !stderr.contains(&says) {
        Some("not the expected sentence")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(format!(
            "{:?}: {problem}: exit {:?} (expected {}), expected to say {says:?}, said:\n{stderr}",
            case.args,
            output.status.code(),
            case.exit
        )),
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_is_one_sentence_and_the_right_exit_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_inputs");
    let cases: Vec<Case> = std::fs::read_to_string(root.join("cases.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    copy_dir(&root.join("data"), &data);
    let server = common::start_server(&["identity=identity", "echo=echo", "chat=llm"]).await;
    let url = common::url(&server, "http");
    let data = data.to_str().unwrap().to_string();
    let slots = Arc::new(Semaphore::new(4));
    let mut runs = tokio::task::JoinSet::new();
    let total = cases.len();
    for case in cases {
        let (url, data, slots) = (url.clone(), data.clone(), slots.clone());
        runs.spawn(async move {
            let _slot = slots.acquire_owned().await.unwrap();
            run_case(case, url, data).await
        });
    }
    let mut failures = Vec::new();
    while let Some(result) = runs.join_next().await {
        if let Err(failure) = result.unwrap() {
            failures.push(failure);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

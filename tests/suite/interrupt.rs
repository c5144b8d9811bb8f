//! Ctrl-C in every phase of a run, on the real binary: resolving against a server that
//! accepts and never answers, warm-up and levels whose requests the server holds for 20 s,
//! the open loop, a `--request-count` run, a `--ramp` plan, `serve` and `demo`. The first
//! SIGINT must end the process within a second of it — never the request timeout — with
//! exit 130 (0 for `serve`) and the reports written with what was measured.

use crate::common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_inferperf");
/// How long after SIGINT the process may take to exit.
const WITHIN: Duration = Duration::from_secs(1);

fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("inferperf starts")
}

fn sigint(child: &Child) {
    // SAFETY: signals the child this test started and still holds.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

/// Sends SIGINT after `after`, and returns the exit code and how long the exit took.
fn interrupt_after(mut child: Child, after: Duration) -> (Option<i32>, Duration) {
    std::thread::sleep(after);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before Ctrl-C"
    );
    sigint(&child);
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), sent.elapsed());
        }
        if sent.elapsed() > Duration::from_secs(40) {
            let _ = child.kill();
            panic!("still running 40 s after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn assert_prompt(phase: &str, (code, took): (Option<i32>, Duration), expected: i32) {
    assert_eq!(code, Some(expected), "{phase}: exit code");
    assert!(took <= WITHIN, "{phase}: exited {took:?} after Ctrl-C");
}

/// The results file says the run was interrupted, and holds `levels` levels.
fn assert_written(dir: &Path, levels: usize) {
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        file["finished"], false,
        "an interrupted run is not finished"
    );
    assert_eq!(file["interrupted"], true);
    assert_eq!(file["levels"].as_array().map(Vec::len), Some(levels));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_every_phase_within_a_second() {
    let server = common::start_server(&["held=sleep:ms=20000", "quick=sleep:ms=1"]).await;
    let url = common::url(&server, "http");
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name).display().to_string();
    let stalled = TcpListener::bind("127.0.0.1:0").unwrap();
    let stalled_url = stalled.local_addr().unwrap().to_string();
    let half = Duration::from_millis(1500);
    let timeout = ["--request-timeout", "30", "--no-progress"];

    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&timeout);
        spawn(&all)
    };
    let discovery = run(&["-m", "identity", "-u", &stalled_url]);
    assert_prompt("discovery", interrupt_after(discovery, half), 130);

    let d = dir("warmup");
    let warmup = run(&[
        "-m",
        "held",
        "-u",
        &url,
        "--warmup-request-count",
        "4",
        "--report-dir",
        &d,
    ]);
    assert_prompt("warm-up", interrupt_after(warmup, half), 130);
    assert_written(Path::new(&d), 0);

    let d = dir("level");
    let level = run(&["-m", "held", "-u", &url, "-p", "60000", "--report-dir", &d]);
    assert_prompt("inside a level", interrupt_after(level, half), 130);
    assert_written(Path::new(&d), 1);

    let d = dir("levels");
    let levels = run(&[
        "-m",
        "quick",
        "-u",
        &url,
        "--concurrency-range",
        "1:50",
        "-p",
        "300",
        "--report-dir",
        &d,
    ]);
    assert_prompt(
        "between levels",
        interrupt_after(levels, Duration::from_secs(3)),
        130,
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(&d).join("results.json")).unwrap())
            .unwrap();
    assert!(
        file["levels"].as_array().unwrap().len() >= 2,
        "the levels measured are kept"
    );

    let d = dir("rate");
    let rate = run(&[
        "-m",
        "held",
        "-u",
        &url,
        "--request-rate-range",
        "20",
        "-p",
        "60000",
        "--report-dir",
        &d,
    ]);
    assert_prompt("open loop", interrupt_after(rate, half), 130);
    assert_written(Path::new(&d), 1);

    let count = run(&["-m", "held", "-u", &url, "--request-count", "4"]);
    assert_prompt("--request-count", interrupt_after(count, half), 130);

    let ramp = run(&[
        "-m",
        "held",
        "-u",
        &url,
        "--concurrency-range",
        "1:8",
        "--ramp",
        "20s",
    ]);
    assert_prompt("--ramp", interrupt_after(ramp, half), 130);

    let serve = spawn(&[
        "serve",
        "--http-port",
        "0",
        "--grpc-port",
        "0",
        "--metrics-port",
        "0",
    ]);
    assert_prompt("serve", interrupt_after(serve, half), 0);

    let d = dir("demo");
    let demo = spawn(&["demo", "--out", &d, "--no-progress"]);
    assert_prompt("demo", interrupt_after(demo, Duration::from_secs(3)), 130);
    drop(stalled);
}

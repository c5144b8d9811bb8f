//! The live progress line: the real binary against the embedded server, its standard error
//! a terminal (a pseudo-terminal opened here) or a pipe, its standard output always a pipe.
//! Under a terminal the line shows the level, its place in the sweep, the window out of -r,
//! the figures and the stability; in a pipe, or with --no-progress, nothing is written; and
//! the report on standard output never holds a piece of it. Also: Ctrl-C (SIGINT) ends a
//! run with exit code 130 after writing its report.

use crate::common;

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A pseudo-terminal of 200 columns: (the side the test reads, the side the child writes).
fn open_pty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 50,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills two new descriptors, which are owned from here on.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and nothing else owns them.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

/// What a run wrote: standard output, and standard error (a terminal or a pipe).
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the binary with standard error on a pseudo-terminal when `terminal`, else a pipe.
fn run(args: &[&str], terminal: bool) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_inferperf"));
    command
        .args(args)
        .stdout(Stdio::piped())
        .stdin(Stdio::null());
    if !terminal {
        let out = command
            .stderr(Stdio::piped())
            .output()
            .expect("inferperf runs");
        return Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
    }
    let (mut master, slave) = open_pty();
    let child = command
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("inferperf runs");
    // The command (and with it the test's copy of the terminal's child side) is dropped
    // here, so reading ends when the child exits.
    drop(command);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Linux answers EIO once the last writer has closed the terminal.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    });
    let out = child.wait_with_output().expect("inferperf ends");
    let seen = reader.join().expect("reader");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&seen).into_owned(),
    }
}

/// The run measured its levels: exit 0, or 2 when a level was not stable in its 4 windows
/// (a busy machine), which is beside the point here.
fn assert_measured(run: &Run) {
    assert!(
        matches!(run.code, Some(0 | 2)),
        "exit {:?}\n{}\n{}",
        run.code,
        run.stdout,
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_shows_on_a_terminal_only() {
    let server = start_server(&["slow=sleep:ms=5,instances=4"]).await;
    let url = url(&server, "http");
    let args = [
        "-m",
        "slow",
        "-u",
        &url,
        "--concurrency-range",
        "1:2",
        "-p",
        "400",
        "-r",
        "4",
        "-s",
        "50",
    ];
    let shown = tokio::task::block_in_place(|| run(&args, true));
    assert_measured(&shown);
    for needle in [
        "level 1 of 2: concurrency 1 | window 1/4 | measuring",
        "level 2 of 2: concurrency 2 | window 2/4 | last window ",
        " infer/sec, p99 ",
        " 0 errors | stability: 1 of 3 windows",
        "| stability: 2 of 3 windows, spread ",
        "(-s 50%)",
    ] {
        assert!(
            shown.stderr.contains(needle),
            "missing {needle:?} on the terminal:\n{:?}",
            shown.stderr
        );
    }
    // The line is cleared before each report: the terminal's last line is not left behind.
    assert!(
        shown.stderr.ends_with("\r\x1b[2K") || shown.stderr.ends_with("\x1b[2K\r"),
        "the line is cleared at the end: {:?}",
        &shown.stderr[shown.stderr.len().saturating_sub(40)..]
    );
    // The report is whole, and nothing of the line is in it.
    assert!(shown.stdout.contains("Request concurrency: 2"));
    assert!(shown
        .stdout
        .contains("Inferences/Second vs. Client Average Batch Latency"));
    for piece in ["level 1 of", "window 1/4", "stability:", "\x1b["] {
        assert!(!shown.stdout.contains(piece), "{piece:?} in the report");
    }

    // In a pipe: not one byte.
    let piped = tokio::task::block_in_place(|| run(&args, false));
    assert_measured(&piped);
    assert_eq!(piped.stderr, "", "standard error is a pipe");
    assert!(piped.stdout.contains("Request concurrency: 2"));

    // --no-progress on a terminal: not one byte either.
    let mut quiet = args.to_vec();
    quiet.push("--no-progress");
    let quiet = tokio::task::block_in_place(|| run(&quiet, true));
    assert_measured(&quiet);
    assert_eq!(quiet.stderr, "", "--no-progress");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_plan_shows_its_time_left() {
    let server = start_server(&["slow=sleep:ms=5,instances=4"]).await;
    let url = url(&server, "http");
    let args = [
        "-m",
        "slow",
        "-u",
        &url,
        "--concurrency-range",
        "1:4",
        "--ramp",
        "3s",
    ];
    let shown = tokio::task::block_in_place(|| run(&args, true));
    assert_eq!(shown.code, Some(0), "{}\n{}", shown.stdout, shown.stderr);
    for needle in [
        "load plan 0s of 3s, 3s left, target concurrency 1",
        "load plan 2s of 3s, 1s left, target concurrency ",
        "| last second ",
    ] {
        assert!(
            shown.stderr.contains(needle),
            "missing {needle:?} on the terminal:\n{:?}",
            shown.stderr
        );
    }
    assert!(!shown.stdout.contains("load plan"), "{}", shown.stdout);
    // Every per-second line of the report is whole.
    assert!(shown.stdout.contains("        2-3 "), "{}", shown.stdout);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_the_run_with_130_after_its_report() {
    let server = start_server(&["slow=sleep:ms=5,instances=4"]).await;
    let url = url(&server, "http");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args([
            "-m",
            "slow",
            "-u",
            &url,
            "--concurrency-range",
            "1:64",
            "-p",
            "500",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("inferperf runs");
    // Interrupt in the middle of the sweep: once the first level was reported, while the
    // second is being measured.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut seen = String::new();
    let started = Instant::now();
    while !seen.contains("Where the time went") {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(30), async {
            use tokio::io::AsyncReadExt;
            stdout.read(&mut buf).await.expect("read")
        })
        .await
        .expect("the first level is reported");
        assert!(n > 0, "inferperf ended early:\n{seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = child.id().expect("running") as libc::pid_t;
    // SAFETY: sends SIGINT to the child this test started and still holds.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncReadExt;
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).await.expect("read");
        rest
    })
    .await
    .expect("inferperf ends after Ctrl-C");
    let out = child.wait_with_output().await.expect("inferperf ends");
    let all = seen + &rest;
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{:?}\n{all}\n{err}",
        out.status
    );
    assert!(
        err.contains("Interrupted: finishing the current window"),
        "{err}"
    );
    // The levels measured are reported, the last one marked as cut short.
    assert!(
        all.contains("Inferences/Second vs. Client Average Batch Latency"),
        "{all}"
    );
    assert!(all.contains("Concurrency: 1, throughput: "), "{all}");
    assert!(
        all.contains("Concurrency: 2, throughput: ") && all.contains(" usec (interrupted)\n"),
        "{all}"
    );
    assert!(!all.contains("Request concurrency: 3"), "{all}");
    server.shutdown().await;
}

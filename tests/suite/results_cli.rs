//! How the real binary writes its results file: an unusable path stops the run before it
//! starts (exit 3); the file is on disk after each level, and a run cut short with SIGINT
//! leaves a file valid against docs/results.schema.json with every level it finished
//! (unchanged) and `"interrupted": true` (and a complete `--profile-export-file`); a write that
//! fails during the run is one sentence naming the path and exit 99, after the measurement.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::assert_valid;
use inferperf::results;

/// Waits until `path` reads as a results file with at least `levels` levels; returns it.
async fn wait_for_levels(
    path: &Path,
    levels: usize,
    child: &mut tokio::process::Child,
) -> results::ResultsFile {
    let started = Instant::now();
    loop {
        if let Ok(file) = results::read(path) {
            assert!(!file.finished, "the run is still going");
            if file.levels.len() >= levels {
                return file;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("inferperf ended early: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no {levels} levels in {}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn spawn(args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("inferperf starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_path_stops_the_run_before_it_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "taken").unwrap();
    // Nothing listens on port 1: a run that got as far as the server would fail with 99.
    let base = [
        "-m",
        "identity",
        "-u",
        "127.0.0.1:1",
        "--concurrency-range",
        "1",
    ];
    let inside_a_file = file.join("r.json");
    let cases = [
        (vec!["--report-dir", file.to_str().unwrap()], "--report-dir"),
        (
            vec!["--results-file", tmp.path().to_str().unwrap()],
            "is a folder",
        ),
        (
            vec!["--results-file", inside_a_file.to_str().unwrap()],
            "cannot create the folder",
        ),
        (
            vec!["--report-dir", "a", "--results-file", "b.json"],
            "drop --results-file",
        ),
    ];
    for (flags, says) in cases {
        let args: Vec<&str> = base.iter().copied().chain(flags.iter().copied()).collect();
        let output = common::run_cli(&args).await;
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one sentence: {stderr}");
    }
    assert!(!Path::new("a").exists() && !Path::new("b.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_short_by_sigint_keeps_every_finished_level() {
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("report");
    let export = tmp.path().join("profile_export.json");
    let url = common::url(&server, "http");
    let mut child = spawn(&[
        "-m",
        "slow",
        "-u",
        &url,
        "--concurrency-range",
        "1:40",
        "-p",
        "200",
        "-r",
        "3",
        "--report-dir",
        dir.to_str().unwrap(),
        "--profile-export-file",
        export.to_str().unwrap(),
    ]);
    let path = dir.join("results.json");
    let before = wait_for_levels(&path, 2, &mut child).await;
    let pid = child.id().expect("running") as i32;
    // SAFETY: kill only sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the run ends after Ctrl-C")
        .unwrap();
    // Cut short by Ctrl-C: exit 130 once the file is complete.
    assert_eq!(output.status.code(), Some(130), "{:?}", output.status);
    assert_valid(&path);
    let file = results::read(&path).expect("a valid file");
    // Complete, and not "finished": the run did not end as asked.
    assert!(
        !file.finished && file.interrupted,
        "{:?}",
        (file.finished, file.interrupted)
    );
    assert!(file.levels.len() >= 2, "{} levels", file.levels.len());
    assert!(file.levels.len() < 40, "the sweep stopped");
    // Every level finished before the signal is there as it was written, in order; the
    // sweep's levels are concurrency 1, 2, 3, ... with none skipped.
    assert_eq!(file.levels[..before.levels.len()], before.levels[..]);
    for (i, level) in file.levels.iter().enumerate() {
        assert_eq!(level.load, results::LevelLoad::Concurrency(i as u32 + 1));
    }
    for level in &file.levels[..file.levels.len() - 1] {
        assert_ne!(
            level.end,
            results::LevelEndRecord::Interrupted,
            "{}",
            level.why
        );
    }
    let last = file.levels.last().unwrap();
    if last.end == results::LevelEndRecord::Interrupted {
        assert!(
            last.why.starts_with("Stopped early (Ctrl-C"),
            "{}",
            last.why
        );
    }
    for level in &file.levels {
        assert!(!level.windows.is_empty());
        level.merged.latency.distribution().expect("decodes");
    }
    assert!(file.ended_at.is_some() && file.error.is_none());
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), file.levels.len() + 1, "{csv}");
    // The profile export is closed too, one experiment per level.
    let text = std::fs::read_to_string(&export).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).expect("a complete export");
    let experiments = value["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), file.levels.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_fails_during_the_run_is_one_sentence_and_exit_99() {
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("gone");
    let path = folder.join("results.json");
    let url = common::url(&server, "http");
    let mut child = spawn(&[
        "-m",
        "slow",
        "-u",
        &url,
        "--concurrency-range",
        "1:3",
        "-p",
        "200",
        "-r",
        "3",
        "--results-file",
        path.to_str().unwrap(),
    ]);
    wait_for_levels(&path, 0, &mut child).await;
    std::fs::remove_dir_all(&folder).unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the run ends")
        .unwrap();
    let stdout = common::stdout(&output);
    let stderr = common::stderr(&output);
    assert_eq!(output.status.code(), Some(99), "{stderr}");
    assert!(
        stdout.contains("Concurrency: 3,"),
        "every level is still measured and reported: {stdout}"
    );
    let expected = format!("error: Cannot write the results file {}:", path.display());
    assert!(stderr.starts_with(&expected), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

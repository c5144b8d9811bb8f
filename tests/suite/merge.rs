//! `inferperf merge` against the embedded server: two shards of one closed-loop run, each a
//! process writing its own results file, merge into one run whose windows hold exactly the
//! shards' requests (histogram counts add up), whose throughput is the shards' together and
//! whose median lies between theirs; every report is written (CSV one row per level,
//! `--per-url-csv` a row per level and server, results.json valid against the schema,
//! report.html). Files of different runs, a single
//! file, a missing file and a file that is not a results file are refused with one sentence
//! and exit 3.

use crate::common;

use std::path::Path;
use std::time::SystemTime;

use common::assert_valid;
use inferperf::results::{self, LevelRecord, ResultsFile, WindowRecord};

/// The flags of the run the shards share: two levels of short windows on a 2 ms model.
fn run_flags(url: &str) -> Vec<String> {
    [
        "-m",
        "slow",
        "-u",
        url,
        "--concurrency-range",
        "2:4:2",
        "-p",
        "500",
        "-r",
        "4",
        "-s",
        "50",
        "--no-progress",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Runs shard `index` of 2 with `--report-dir dir/run`: it writes `dir/run/shard-INDEX/`.
async fn shard(url: &str, dir: &Path, index: u32) -> std::process::Output {
    let mut args = run_flags(url);
    args.extend([
        "--shard".to_string(),
        format!("{index}/2"),
        "--report-dir".to_string(),
        dir.join("run").display().to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::run_cli(&args).await
}

fn at(text: &str) -> SystemTime {
    humantime::parse_rfc3339(text).expect("an RFC 3339 time")
}

/// Seconds from the merged run's start to the shard's: what places the shard's windows on
/// the merged run's clock.
fn offset(shard: &ResultsFile, merged: &ResultsFile) -> f64 {
    let (s, m) = (at(&shard.started_at), at(&merged.started_at));
    match s.duration_since(m) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The window of a shard's level that starts within half a window of `w` (merged clock).
fn partner<'a>(level: &'a LevelRecord, shift: f64, w: &WindowRecord) -> &'a WindowRecord {
    let start = w.start_s.expect("a start");
    level
        .windows
        .iter()
        .find(|s| (s.start_s.unwrap() + shift - start).abs() <= s.duration_s / 2.0 + 1e-3)
        .unwrap_or_else(|| panic!("no shard window near {start}"))
}

fn p50(w: &WindowRecord) -> f64 {
    w.latency.percentiles.get(50.0).expect("p50 is written")
}

/// Every merged window is its shards' windows added: the same requests, their throughputs
/// together, a median between theirs.
fn assert_windows_add_up(merged: &ResultsFile, shards: &[ResultsFile]) {
    for (l, level) in merged.levels.iter().enumerate() {
        assert!(!level.windows.is_empty(), "level {l} has windows");
        for w in &level.windows {
            let parts: Vec<&WindowRecord> = shards
                .iter()
                .map(|s| partner(&s.levels[l], offset(s, merged), w))
                .collect();
            let count: u64 = parts.iter().map(|p| p.latency.count).sum();
            assert_eq!(w.latency.count, count, "level {l}: histogram counts add up");
            assert_eq!(w.ok, parts.iter().map(|p| p.ok).sum::<u64>());
            let throughput: f64 = parts.iter().map(|p| p.throughput).sum();
            let off = (w.throughput - throughput).abs() / throughput;
            assert!(off < 0.03, "level {l}: {} vs {throughput}", w.throughput);
            let (lo, hi) = parts
                .iter()
                .map(|p| p50(p))
                .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
            assert!(lo <= p50(w) && p50(w) <= hi, "p50 {} in {lo}..{hi}", p50(w));
        }
        let merged_count: u64 = level
            .merged_windows
            .iter()
            .map(|&i| level.windows[i].latency.count)
            .sum();
        assert_eq!(level.merged.latency.count, merged_count);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_merge_into_one_run() {
    let server = common::start_server(&["slow=sleep:ms=2"]).await;
    let url = common::url(&server, "http");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (a, b) = tokio::join!(shard(&url, dir, 0), shard(&url, dir, 1));
    for out in [&a, &b] {
        assert!(
            matches!(out.status.code(), Some(0 | 2)),
            "{}",
            common::stderr(out)
        );
    }
    // A report folder and a results file: merge takes either.
    let inputs = [
        dir.join("run/shard-0"),
        dir.join("run/shard-1/results.json"),
    ];
    let merged_dir = dir.join("merged");
    let csv = dir.join("merged.csv");
    let per_url = dir.join("per_url.csv");
    let out = common::run_cli(&[
        "merge",
        inputs[0].to_str().unwrap(),
        inputs[1].to_str().unwrap(),
        "--report-dir",
        merged_dir.to_str().unwrap(),
        "-f",
        csv.to_str().unwrap(),
        "--per-url-csv",
        per_url.to_str().unwrap(),
    ])
    .await;
    let stdout = common::stdout(&out);
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{stdout}{}",
        common::stderr(&out)
    );
    assert!(stdout.contains("Merged 2 shards"), "{stdout}");
    assert!(stdout.contains("Request concurrency: 4"), "{stdout}");

    let shards: Vec<ResultsFile> = inputs.iter().map(|p| results::read(p).unwrap()).collect();
    let merged_path = merged_dir.join("results.json");
    assert_valid(&merged_path);
    let merged = results::read(&merged_path).unwrap();
    assert_eq!(merged.merged_from.len(), 2);
    assert!(merged.settings.shard.is_none());
    assert_eq!(merged.levels.len(), 2);
    assert_windows_add_up(&merged, &shards);

    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        rows.lines().count(),
        1 + 2,
        "a header and a row per level: {rows}"
    );
    assert!(merged_dir.join("results.csv").exists());
    assert!(merged_dir.join("report.html").exists());
    assert_per_url_csv(&per_url, &url, &merged);

    merges_a_run_folder(dir, &merged).await;
    refuses_another_run(&inputs, dir).await;
}

/// merge's `--per-url-csv` is a run's: with one server, a row per level naming it, whose
/// requests are the merged level's.
fn assert_per_url_csv(path: &Path, url: &str, merged: &ResultsFile) {
    let text = std::fs::read_to_string(path).expect("merge writes --per-url-csv");
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert_eq!(
        header,
        "Concurrency,URL,Inferences/Second,p50 latency,p99 latency,Requests,Errors"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), merged.levels.len(), "{text}");
    for (row, level) in rows.iter().zip(&merged.levels) {
        assert_eq!(row[1], url, "{text}");
        let requests: u64 = row[5].parse().unwrap();
        assert_eq!(requests, level.merged.completed, "{text}");
        assert!(requests > 0, "{text}");
    }
    assert_eq!((rows[0][0], rows[1][0]), ("2", "4"), "{text}");
}

/// The folder the shards' `--report-dir` made stands for its `shard-I` folders.
async fn merges_a_run_folder(dir: &Path, merged: &ResultsFile) {
    let again = dir.join("again.json");
    let out = common::run_cli(&[
        "merge",
        dir.join("run").to_str().unwrap(),
        "--results-file",
        again.to_str().unwrap(),
    ])
    .await;
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{}",
        common::stderr(&out)
    );
    let again = results::read(&again).unwrap();
    assert_eq!(again.levels, merged.levels, "the same merge");
}

/// A shard of a run with other settings is refused, naming the setting and both values.
async fn refuses_another_run(inputs: &[std::path::PathBuf], dir: &Path) {
    let text = std::fs::read_to_string(&inputs[1]).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["settings"]["measurement_interval_ms"] = 700.into();
    let other = dir.join("other.json");
    std::fs::write(&other, value.to_string()).unwrap();
    let out = common::run_cli(&[
        "merge",
        inputs[0].to_str().unwrap(),
        other.to_str().unwrap(),
    ])
    .await;
    let said = common::stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("settings.measurement_interval_ms")
            && said.contains("has 500")
            && said.contains("has 700"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_two_shards_is_refused_in_one_sentence() {
    let tmp = tempfile::tempdir().unwrap();
    let not_results = tmp.path().join("notes.json");
    std::fs::write(&not_results, r#"{"hello": 1}"#).unwrap();
    let missing = tmp.path().join("missing.json");
    let cases: [(Vec<&str>, &str); 3] = [
        (vec!["merge", "only.json"], "at least 2 shards (1 given)"),
        (
            vec![
                "merge",
                missing.to_str().unwrap(),
                not_results.to_str().unwrap(),
            ],
            "No results file at",
        ),
        (
            vec![
                "merge",
                not_results.to_str().unwrap(),
                not_results.to_str().unwrap(),
            ],
            "is not an inferperf results file",
        ),
    ];
    for (args, says) in cases {
        let out = common::run_cli(&args).await;
        let said = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(said.contains(says), "{args:?}: {said}");
        assert!(!said.contains("panicked"));
    }
}

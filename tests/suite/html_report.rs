//! The HTML report against the embedded server: a sweep with `--report-dir` writes
//! `report.html` beside `results.json`, self-contained (nothing fetched, no script), with
//! every chart there and not empty, well under 2 MiB; `inferperf report` rebuilds the same
//! page from the results file, and refuses bad input in one sentence with exit code 3. A
//! `--ramp` run's page has its per-second timeline.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{run_cli, start_server, stderr, url};
use inferperf::load::profiler::Interrupt;

/// Every `<svg>…</svg>` of the page.
fn charts(page: &str) -> Vec<&str> {
    page.split("<svg")
        .skip(1)
        .map(|rest| &rest[..rest.find("</svg>").expect("each chart is closed")])
        .collect()
}

/// Nothing in the page is fetched: no remote src/href, no script, no external style.
fn assert_self_contained(page: &str) {
    let lower = page.to_lowercase();
    for bad in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "<script",
        "<link",
        "@import",
        "url(",
    ] {
        assert!(!lower.contains(bad), "the page holds {bad}");
    }
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_writes_a_self_contained_report_that_report_rebuilds() {
    let server = start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let cfg = common::config(&[
        "-m",
        "slow",
        "-u",
        &url(&server, "http"),
        "--concurrency-range",
        "1:3",
        "-p",
        "150",
        "-r",
        "4",
        "--percentile",
        "97.5",
        "--report-dir",
        dir.to_str().unwrap(),
    ]);
    inferperf::commands::profile::profile(&cfg, Arc::new(Interrupt::default()))
        .await
        .expect("the run completes");
    let path = dir.join("report.html");
    let page = std::fs::read_to_string(&path).expect("report.html is written");
    assert_self_contained(&page);
    assert!(page.len() < 2 << 20, "{} bytes", page.len());
    // The curve, a percentile plot per level, the breakdown, two window charts per level,
    // client CPU and send lag.
    let levels = 3;
    let svgs = charts(&page);
    assert_eq!(svgs.len(), 1 + levels + 1 + 2 * levels + 2, "charts");
    for svg in &svgs {
        let marks = svg.matches("class=\"mark\"").count();
        let titles = svg.matches("<title>").count();
        assert!(
            marks > 0 && titles >= marks,
            "a chart without marks: {svg:.200}"
        );
    }
    // The curve has p50, p90, p99 and the stabilizing percentile, a point per level each.
    assert!(svgs[0].contains(">p97.5<") && svgs[0].contains(">p90<"));
    assert_eq!(svgs[0].matches("<circle").count(), 4 * levels);
    assert!(page.contains("concurrency 3") && page.contains("Settings"));
    // Each level's windows: a point per window, the merged ones filled, the others hollow
    // (no filled dot drawn over them).
    let file = inferperf::results::read(dir.join("results.json")).unwrap();
    for (i, level) in file.levels.iter().enumerate() {
        let unmerged = level.windows.len() - level.merged_windows.len();
        for svg in &svgs[2 + levels + 2 * i..][..2] {
            assert!(
                svg.contains("aria-label=\"Windows, concurrency"),
                "{svg:.100}"
            );
            let per_window = if svg.contains(": throughput\"") { 1 } else { 2 };
            let circles = svg.matches("<circle").count();
            assert_eq!(circles, per_window * level.windows.len(), "{svg:.100}");
            assert_eq!(
                svg.matches("fill=\"white\"").count(),
                per_window * unmerged,
                "{svg:.100}"
            );
        }
    }

    // `inferperf report` rebuilds the page from the results file (and from the folder).
    let again = tmp.path().join("again.html");
    let out = run_cli(&[
        "report",
        dir.join("results.json").to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), page);
    let from_dir = tmp.path().join("dir.html");
    let out = run_cli(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        from_dir.to_str().unwrap(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&from_dir).unwrap(), page);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_refuses_what_is_not_a_results_file() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing.json");
    let junk = tmp.path().join("junk.json");
    std::fs::write(&junk, "not json").unwrap();
    for input in [&missing, &junk] {
        let out_file = tmp.path().join("x.html");
        let out = run_cli(&[
            "report",
            input.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ])
        .await;
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
        assert!(!Path::new(&out_file).exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_report_has_its_timeline() {
    let server = start_server(&["noop=noop"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ramp");
    let out = run_cli(&[
        "-m",
        "noop",
        "-u",
        &url(&server, "http"),
        "--ramp",
        "2s",
        "--request-rate-range",
        "100:300",
        "--report-dir",
        dir.to_str().unwrap(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_self_contained(&page);
    assert!(page.contains("Timeline"));
    let svgs = charts(&page);
    assert_eq!(svgs.len(), 2, "throughput and latency per second");
    for svg in svgs {
        assert!(svg.matches("<circle class=\"mark\"").count() >= 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_marks_its_knee_on_the_curve() {
    let server = start_server(&["slow=sleep:ms=2"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("search");
    let out = run_cli(&[
        "-m",
        "slow",
        "-u",
        &url(&server, "http"),
        "--concurrency-range",
        "1:16",
        "--binary-search",
        "--latency-threshold",
        "10",
        "-p",
        "150",
        "--report-dir",
        dir.to_str().unwrap(),
    ])
    .await;
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", stderr(&out));
    let file = inferperf::results::read(&dir).unwrap();
    let knee = file.knee.expect("a search has a knee");
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let curve = charts(&page)[0];
    let name = match file.levels[knee].load {
        inferperf::results::LevelLoad::Concurrency(c) => format!("knee: concurrency {c}"),
        other => panic!("{other:?}"),
    };
    assert!(curve.contains(&name), "{curve:.400}");
    assert_eq!(page.matches("◆ knee").count(), 1, "the table marks it too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unstable_level_says_so_in_the_table() {
    // An exponential service time: no three windows of 150 ms agree within 1%.
    let server = start_server(&["wild=sleep:ms=2,dist=exponential"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("unstable");
    let out = run_cli(&[
        "-m",
        "wild",
        "-u",
        &url(&server, "http"),
        "-p",
        "150",
        "-s",
        "1",
        "-r",
        "3",
        "--report-dir",
        dir.to_str().unwrap(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        page.contains("<td class=\"l bad\">no (unstable)</td>"),
        "the Stable cell"
    );
}

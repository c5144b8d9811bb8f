//! `inferperf compare` on real runs against the embedded server: a run compared with itself
//! is within noise on every figure and passes its gate (exit 0); a model 20% slower fails
//! `--fail-on 'p50>+10%'` (exit 1) and says worse for p50; a bad `--fail-on`, a file that
//! does not read, and an unfinished run are told in one sentence. `-o FILE.html` writes one
//! self-contained, well-formed page with a series per run in each overlay (also when the
//! gate fails, whose exit code it keeps), bounded in size for 20 levels × 3 runs; an -o
//! path that cannot be written is one sentence and exit 99.

use crate::common;

use std::path::{Path, PathBuf};

use inferperf_server::RunningServer;

/// Profiles model `m` at concurrency 1 and 2 and writes its results file to `path`.
async fn run_to(server: &RunningServer, path: &Path) {
    run_with(server, path, &["--concurrency-range", "1:2", "-p", "400"]).await;
}

/// Profiles model `m` with these load flags (`-s 20`) into the results file `path`.
async fn run_with(server: &RunningServer, path: &Path, load: &[&str]) {
    let url = common::url(server, "http");
    let mut args = vec!["-m", "m", "-u", &url, "-s", "20", "--results-file"];
    args.push(path.to_str().unwrap());
    args.extend_from_slice(load);
    let output = common::run_cli(&args).await;
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

/// Every `<svg>…</svg>` of the page.
fn charts(page: &str) -> Vec<&str> {
    page.split("<svg")
        .skip(1)
        .map(|rest| &rest[..rest.find("</svg>").expect("each chart is closed")])
        .collect()
}

/// The chart whose title is `title`.
fn chart<'p>(page: &'p str, title: &str) -> &'p str {
    charts(page)
        .into_iter()
        .find(|c| c.contains(&format!(">{title}</text>")))
        .unwrap_or_else(|| panic!("no chart '{title}'"))
}

/// The distinct stroke colours of the chart's lines, in order of appearance.
fn line_colors(chart: &str) -> Vec<&str> {
    let mut colors = Vec::new();
    for line in chart.split("<polyline").skip(1) {
        let color = line
            .split("stroke=\"")
            .nth(1)
            .and_then(|c| c.split('"').next())
            .expect("a line has a colour");
        if !colors.contains(&color) {
            colors.push(color);
        }
    }
    colors
}

/// The page is well-formed: every element opened is closed in order (void elements and
/// `<x/>` aside), nothing is fetched, no script.
fn assert_well_formed(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
    let lower = page.to_lowercase();
    for bad in ["<script", "src=", "href=", "<link", "@import", "url("] {
        assert!(!lower.contains(bad), "the page holds {bad}");
    }
    let mut open: Vec<&str> = Vec::new();
    for tag in page.split('<').skip(2) {
        let tag = &tag[..tag.find('>').expect("each tag ends")];
        let name = tag
            .trim_start_matches('/')
            .split([' ', '/'])
            .next()
            .unwrap();
        if tag.ends_with('/') || name == "meta" {
            continue;
        }
        if tag.starts_with('/') {
            assert_eq!(open.pop(), Some(name), "</{name}> closes what was not open");
        } else {
            open.push(name);
        }
    }
    assert!(open.is_empty(), "never closed: {open:?}");
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

    // A run that is not whole fails the gate, each reason in one sentence, unless
    // --allow-partial accepts it; its levels are compared as they are either way.
    let mut raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a).unwrap()).unwrap();
    raw["finished"] = false.into();
    raw["error"] = "the server went away".into();
    raw["levels"].as_array_mut().unwrap().pop();
    let partial = tmp.path().join("partial.json");
    std::fs::write(&partial, raw.to_string()).unwrap();
    let output = compare(&[a, partial.to_str().unwrap(), "--fail-on", "p99>+50%"]).await;
    assert_eq!(output.status.code(), Some(1));
    let text = common::stdout(&output);
    assert!(
        text.contains("ended on an error (the server went away)"),
        "{text}"
    );
    assert!(text.contains("lacks 1 of"), "{text}");
    assert!(
        text.contains("Unmatched levels: concurrency 2 only in"),
        "{text}"
    );
    let accepted = compare(&[a, partial.to_str().unwrap(), "--allow-partial"]).await;
    assert_eq!(accepted.status.code(), Some(0));
    let text = common::stdout(&accepted);
    assert!(text.contains("Accepted (--allow-partial)"), "{text}");
    // A level in which no request succeeded is no measurement of the server.
    let mut raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a).unwrap()).unwrap();
    raw["levels"][0]["merged"]["ok"] = 0.into();
    let empty = tmp.path().join("empty.json");
    std::fs::write(&empty, raw.to_string()).unwrap();
    let output = compare(&[a, empty.to_str().unwrap()]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(common::stdout(&output).contains("no request succeeded"));

    // An -o path that cannot be written: one sentence, exit 99, no file left behind.
    let nowhere = tmp.path().join("no-such-dir").join("compare.html");
    let output = compare(&[a, a, "-o", nowhere.to_str().unwrap()]).await;
    assert_eq!(output.status.code(), Some(99));
    let err = common::stderr(&output);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("compare.html") && err.trim_end().ends_with('.'),
        "{err}"
    );
    assert!(!tmp.path().join("no-such-dir").exists());

    // 20 levels × 3 runs: the page stays small, a spread of 12 distributions drawn.
    let mut raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a).unwrap()).unwrap();
    let level = raw["levels"][0].clone();
    raw["levels"] = (1..=20)
        .map(|c| {
            let mut l = level.clone();
            l["load"] = serde_json::json!({ "concurrency": c });
            l
        })
        .collect();
    let mut runs = Vec::new();
    for name in ["x.json", "y.json", "z.json"] {
        let path = tmp.path().join(name);
        std::fs::write(&path, raw.to_string()).unwrap();
        runs.push(path.to_str().unwrap().to_string());
    }
    let page_path = tmp.path().join("many.html");
    let mut args: Vec<&str> = runs.iter().map(String::as_str).collect();
    args.extend(["-o", page_path.to_str().unwrap()]);
    let output = compare(&args).await;
    assert_eq!(output.status.code(), Some(0));
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert_well_formed(&page);
    println!("20 levels × 3 runs: {} bytes", page.len());
    assert!(page.len() < 2 << 20, "{} bytes", page.len());
    let distributions = charts(&page)
        .iter()
        .filter(|c| c.contains(">Latency percentiles, "))
        .count();
    assert_eq!(distributions, 12);
    assert!(page.contains("12 of the 20 loads"));
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
    assert!(!text.contains(".html"), "no page without -o: {text}");

    // The page of three runs (the fast one twice): written although the gate fails, whose
    // exit code is kept; its path printed after the table.
    let page_path = tmp.path().join("compare.html");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let output = compare(&[
        a,
        b,
        a,
        "--fail-on",
        "p50>+10%",
        "-o",
        page_path.to_str().unwrap(),
    ])
    .await;
    assert_eq!(output.status.code(), Some(1));
    let text = common::stdout(&output);
    assert_eq!(text.lines().last(), page_path.to_str(), "{text}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert_well_formed(&page);
    println!("3 runs × 2 levels: {} bytes", page.len());
    assert!(page.len() < 256 << 10, "{} bytes", page.len());
    // The runs, the gate and the verdicts as the console has them.
    for run in ["A: fast.json", "B: slow.json", "C: fast.json"] {
        assert!(page.contains(run), "{run}");
    }
    assert!(page.contains("class=\"l bad\">worse</td>"));
    assert!(page.contains("class=\"l noise\">within noise</td>"));
    assert!(page.contains("<li class=\"bad\">FAIL "));
    for line in verdict_lines(&text) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert!(
            page.contains(&format!("<td class=\"l\">{}</td>", cells[0])),
            "{line}"
        );
    }
    // A series per run in each overlay (two, p50 and p99, in the latency charts).
    let colors = line_colors(chart(&page, "Throughput against the load"));
    assert_eq!(colors.len(), 3, "{colors:?}");
    for title in ["Latency against throughput", "Latency against the load"] {
        let c = chart(&page, title);
        assert_eq!(line_colors(c), colors, "{title}");
        assert_eq!(c.matches("<polyline").count(), 6, "{title}");
        assert_eq!(
            c.matches("stroke-dasharray").count(),
            3 + 1,
            "{title}: p99 dashed"
        );
    }
    for load in ["concurrency 1", "concurrency 2"] {
        let c = chart(&page, &format!("Latency percentiles, {load}"));
        assert_eq!(line_colors(c), colors, "{load}");
        assert!(
            c.contains("p99.9") || c.contains(">p99<"),
            "{load}: the tail on the axis"
        );
    }
    // Hover shows the numbers.
    assert!(page.contains("<title>B: slow.json, concurrency 2: "));
}

/// Two LLM servers, one generating twice as fast: the page draws both runs' Pareto curves
/// (output tokens/s against tokens/s per user) over each other, a colour per run, and the
/// faster one lies further right at every level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_runs_have_their_pareto_curves_overlaid() {
    let tmp = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(tmp.path());
    let mut files = Vec::new();
    for (name, itl) in [("fast", 2), ("slow", 4)] {
        let model = format!("chat=llm:ttft_ms=5,itl_ms={itl},output_tokens=16");
        let server = common::start_server(&[&model]).await;
        let addr = server.http_addr.to_string();
        let path = tmp.path().join(format!("{name}.json"));
        let extra = [
            "--concurrency-range",
            "1:2",
            "-p",
            "500",
            "--max-trials",
            "3",
            "--results-file",
            path.to_str().unwrap(),
        ];
        let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), &extra);
        common::profile_with_reports(&flags).await;
        files.push(path);
    }
    let page_path = tmp.path().join("llm.html");
    let output = compare(&[
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
        "-o",
        page_path.to_str().unwrap(),
    ])
    .await;
    assert!(output.status.code().is_some_and(|c| c <= 1), "{output:?}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert_well_formed(&page);
    let pareto = chart(&page, "Output tokens/s against tokens/s per user");
    assert_eq!(line_colors(pareto).len(), 2, "a curve per run");
    let per_user = |file: &PathBuf| -> Vec<f64> {
        let file = inferperf::results::read(file).unwrap();
        (file.levels.iter())
            .map(|l| l.merged.tokens.as_ref().unwrap().per_user_throughput.mean)
            .collect()
    };
    let (fast, slow) = (per_user(&files[0]), per_user(&files[1]));
    assert!(
        fast.iter().zip(&slow).all(|(f, s)| f > s),
        "{fast:?} {slow:?}"
    );
}

/// Profiles model `m` at concurrency 2, three times (`--num-profile-runs 3`), into `path`.
async fn repeated_run_to(server: &RunningServer, path: &Path) {
    run_with(
        server,
        path,
        &[
            "--concurrency-range",
            "2",
            "-p",
            "300",
            "--num-profile-runs",
            "3",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_runs_are_judged_against_their_own_variation() {
    let fast = common::start_server(&["m=sleep:ms=10"]).await;
    let slow = common::start_server(&["m=sleep:ms=13"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let (a, again, b) = (
        tmp.path().join("a.json"),
        tmp.path().join("again.json"),
        tmp.path().join("slow.json"),
    );
    repeated_run_to(&fast, &a).await;
    repeated_run_to(&fast, &again).await;
    repeated_run_to(&slow, &b).await;
    let (a, again, b) = (
        a.to_str().unwrap(),
        again.to_str().unwrap(),
        b.to_str().unwrap(),
    );
    // 30% slower on every run: the change is beyond the runs' variation and names the test.
    let output = compare(&[a, b, "--fail-on", "p50>+10%"]).await;
    assert_eq!(output.status.code(), Some(1));
    let text = common::stdout(&output);
    let fail = text
        .lines()
        .find(|l| l.contains("FAIL"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(fail.contains("Welch's t-test over 3 and 3 runs"), "{text}");
    assert!(fail.contains("at 95%"), "{text}");
    assert!(!text.contains("run-to-run variation is unknown"), "{text}");
    // The same server again: the means' change is within the runs' variation.
    let output = compare(&[a, again, "--fail-on", "p50>+10%"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", common::stdout(&output));
    // A single run on one side: the variation is unknown, and compare says what to do.
    let single = tmp.path().join("single.json");
    run_to(&fast, &single).await;
    let output = compare(&[a, single.to_str().unwrap()]).await;
    let text = common::stdout(&output);
    assert!(text.contains("run-to-run variation is unknown"), "{text}");
    assert!(text.contains("--num-profile-runs 3"), "{text}");
}

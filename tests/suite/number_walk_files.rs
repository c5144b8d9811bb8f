//! Every numeric field of the files inferperf reads, tried with the values that break
//! programs (see `number_walk` for the flags): perf_analyzer's input-data JSON (tensor
//! values, shapes, `--fixed-schedule` timestamps, validation data, OpenAI payloads), the
//! `--request-intervals` file, and every number of a results file as `compare`, `merge` and
//! `report` read it. A data file's number must be refused with exit 3 in one sentence naming
//! the file, or run; a results file's must be refused (exit 3) or read, never a panic or a
//! hang; and a figure of any size is printed so a person can read it.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::number_walk::{run_all, Context, World, BAD};

/// (what, context, flags before the file, file text with `{}` for the number, JSON).
#[rustfmt::skip]
const DATA_FILES: &[(&str, Context, &str, &str, bool)] = &[
    ("tensor value", Context::Http, "--input-data",
     r#"{"data": [{"INPUT0": [{}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}]}"#, true),
    ("tensor shape", Context::Http, "--input-data",
     r#"{"data": [{"INPUT0": {"content": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "shape": [{}]}}]}"#, true),
    ("timestamp", Context::Http, "--fixed-schedule --input-data",
     r#"{"data": [{"INPUT0": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "timestamp": {}}]}"#, true),
    ("validation value", Context::Http, "--input-data",
     r#"{"data": [{"INPUT0": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}], "validation_data": [{"OUTPUT0": [{}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}]}"#, true),
    ("sequence stream value", Context::Seq, "--input-data",
     r#"{"data": [[{"INPUT": [{}]}, {"INPUT": [1]}]]}"#, true),
    ("payload max_tokens", Context::Llm, "--input-data",
     r#"{"data": [{"payload": [{"messages": [{"role": "user", "content": "hi"}], "max_tokens": {}}]}]}"#, true),
    ("interval", Context::Http, "--request-intervals", "{}\n", false),
    ("second interval", Context::Http, "--request-intervals", "1000\n{}\n", false),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_numeric_field_of_a_data_file_refuses_or_runs_every_bad_number() {
    let world = World::new().await;
    let mut cases = Vec::new();
    for (index, (what, context, flags, text, json)) in DATA_FILES.iter().enumerate() {
        for (n, bad) in BAD.iter().enumerate() {
            let number = match (*json, *bad) {
                (true, "x") => "\"x\"",
                (_, other) => other,
            };
            let file = world.dir.path().join(format!("data-{index}-{n}.txt"));
            std::fs::write(&file, text.replace("{}", number)).unwrap();
            let mut added: Vec<String> = flags.split_whitespace().map(String::from).collect();
            added.push(file.display().to_string());
            let args = world.args(*context, &added);
            let name = format!("{what} {number} ({})", file.display());
            cases.push((name, args, false, vec![file.display().to_string()]));
        }
    }
    let total = cases.len();
    let failures = run_all(cases).await;
    eprintln!("number walk of data files: {total} files tried");
    assert!(
        failures.is_empty(),
        "{} of {total}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The JSON values a results file's number is replaced by (NaN and inf are not JSON).
fn bad_json() -> Vec<Value> {
    let big: Value = serde_json::from_str("18446744073709551616").unwrap();
    vec![
        Value::from(0),
        Value::from(-1),
        Value::from(1e-300),
        Value::from(1e300),
        big,
        Value::from("x"),
        Value::Null,
    ]
}

/// The path of every number in `doc`, the first item of each list standing for the list.
fn number_paths(doc: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match doc {
        Value::Object(map) => {
            for (key, value) in map {
                at.push(key.clone());
                number_paths(value, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                at.push("0".into());
                number_paths(first, at, out);
                at.pop();
            }
        }
        Value::Number(_) => out.push(at.clone()),
        _ => {}
    }
}

/// `doc` with the number at `path` replaced by `value`.
fn replaced(doc: &Value, path: &[String], value: &Value) -> Value {
    let mut doc = doc.clone();
    let pointer = format!("/{}", path.join("/").replace('~', "~0"));
    *doc.pointer_mut(&pointer).expect("the path exists") = value.clone();
    doc
}

/// Runs `job` on a thread of its own; a panic or a run past 20 s is a failure.
fn guarded(
    name: String,
    job: impl FnOnce() -> Result<i32, inferperf_wire::error::RunError> + Send + 'static,
) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let _ = tx.send(result);
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Err(_) => Err(format!("{name}: no end after 20 s (a hang)")),
        Ok(Err(_)) => Err(format!("{name}: a panic")),
        Ok(Ok(Ok(_))) => Ok(()),
        Ok(Ok(Err(e))) if e.exit_code() == 3 && !e.to_string().contains('\n') => Ok(()),
        Ok(Ok(Err(e))) => Err(format!("{name}: exit {} ({e})", e.exit_code())),
    }
}

/// The shards of a two-process run against the world's server, in `dir/run/shard-I/`.
async fn shards(world: &World) -> [PathBuf; 2] {
    let run = world.dir.path().join("run");
    let url = world.server.http_addr.to_string();
    let one = |index: u32| {
        let mut args: Vec<String> = [
            "-m",
            "identity",
            "-u",
            &url,
            "--concurrency-range",
            "2",
            "-p",
            "100",
            "-s",
            "100",
            "-r",
            "3",
            "--no-progress",
            "--shard",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend([
            format!("{index}/2"),
            "--report-dir".into(),
            run.display().to_string(),
        ]);
        async move { crate::number_walk::run(&args, false).await.unwrap() }
    };
    let (a, b) = tokio::join!(one(0), one(1));
    for ran in [a, b] {
        assert!(matches!(ran.code, Some(0 | 2)), "{}", ran.stderr);
    }
    [0, 1].map(|i| run.join(format!("shard-{i}")).join("results.json"))
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_number_of_a_results_file_is_read_or_refused_by_compare_merge_and_report() {
    let world = World::new().await;
    let shard_files = shards(&world).await;
    let out = world.dir.path().join("walk");
    std::fs::create_dir_all(&out).unwrap();
    let baseline = world.results[0].clone();
    let doc = read(&world.results[1]);
    let shard_doc = read(&shard_files[1]);
    let mut failures = Vec::new();
    let mut tried = 0;
    for (kind, source) in [("results", &doc), ("shard", &shard_doc)] {
        let mut paths = Vec::new();
        number_paths(source, &mut Vec::new(), &mut paths);
        for path in &paths {
            for value in bad_json() {
                tried += 1;
                let file = out.join(format!("{kind}.json"));
                std::fs::write(&file, replaced(source, path, &value).to_string()).unwrap();
                let name = format!("{kind} /{} = {value}", path.join("/"));
                let result = match kind {
                    "results" => {
                        let runs = vec![baseline.clone(), file.clone()];
                        let html = out.join("report.html");
                        guarded(format!("compare {name}"), move || {
                            let request = inferperf::commands::compare::CompareRequest {
                                paths: &runs,
                                fail_on: Some("p99>+10%"),
                                output: None,
                                allow_partial: false,
                            };
                            inferperf::commands::compare::run(&request)
                        })
                        .and_then(|_| {
                            let file = file.clone();
                            guarded(format!("report {name}"), move || {
                                inferperf::commands::report::run(&file, &html)
                            })
                        })
                    }
                    _ => {
                        let args = inferperf::cli::MergeArgs {
                            shards: vec![shard_files[0].clone(), file.clone()],
                            csv_file: None,
                            report_dir: None,
                            results_file: Some(out.join("merged.json")),
                            per_url_csv: None,
                            allow_missing: false,
                        };
                        guarded(format!("merge {name}"), move || {
                            inferperf::commands::merge::run(&args)
                        })
                    }
                };
                if let Err(e) = result {
                    failures.push(e);
                }
            }
        }
    }
    eprintln!("number walk of results files: {tried} files tried");
    assert!(
        failures.is_empty(),
        "{} of {tried}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_figure_of_any_size_is_printed_short() {
    let world = World::new().await;
    let mut doc = read(&world.results[1]);
    let merged = doc["levels"][0]["merged"].clone();
    let mut huge = merged.clone();
    huge["throughput"] = Value::from(1e300);
    huge["latency"]["percentiles"]["p99"] = Value::from(1e300);
    huge["latency"]["mean"] = Value::from(1e-300);
    doc["levels"][0]["merged"] = huge;
    let file = world.dir.path().join("huge.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let html = world.dir.path().join("huge.html");
    let (a, b, h) = (
        world.results[0].display().to_string(),
        file.display().to_string(),
        html.display().to_string(),
    );
    let out = crate::common::run_cli(&["compare", &a, &b, "-o", &h]).await;
    let text = crate::common::stdout(&out) + &std::fs::read_to_string(&html).unwrap_or_default();
    let longest = crate::number_walk::longest_digits(&text);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        crate::common::stderr(&out)
    );
    assert!(
        longest < 20,
        "a number of {longest} digits was printed:\n{}",
        crate::common::stdout(&out)
    );
}

//! A sharded run against the embedded server, as real processes: four `--shard i/4`
//! processes at 2,000 req/s in all, started together with `--start-at`, merged by
//! `inferperf merge`, measure what one process at 2,000 req/s measures — throughput within
//! 1% of the asked rate, p50 within 5% of what single processes measure, every percentile
//! within the shards' own — and the merged histograms hold exactly the shards' requests.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

const RATE: f64 = 2000.0;
const SHARDS: u32 = 4;

/// Profile flags of every run here: a warm-up, then one level of exactly three 2-s windows.
fn load_flags(url: &str) -> Vec<String> {
    [
        "-m",
        "slow",
        "-u",
        url,
        "--request-rate-range",
        "2000",
        "-p",
        "2000",
        "-r",
        "3",
        "-s",
        "100",
        "--no-progress",
        "--warmup-request-count",
        "1000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results file")).expect("JSON")
}

fn level(file: &Value) -> &Value {
    &file["levels"][0]
}

fn percentile(record: &Value, name: &str) -> f64 {
    record["latency"]["percentiles"][name]
        .as_f64()
        .expect("percentile")
}

fn count(record: &Value) -> u64 {
    record["latency"]["count"].as_u64().expect("count")
}

async fn run(args: Vec<String>) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::run_cli(&args).await
}

/// Runs one unsharded process; returns its results file.
async fn run_single(url: &str, dir: &Path) -> Value {
    let mut args = load_flags(url);
    args.extend(["--report-dir".to_string(), dir.display().to_string()]);
    let out = run(args).await;
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{}",
        common::stderr(&out)
    );
    read(&dir.join("results.json"))
}

/// Runs the four shards together; returns their results files.
async fn run_shards(url: &str, dir: &Path) -> Vec<PathBuf> {
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 2.0;
    let runs = (0..SHARDS).map(|i| {
        let mut args = load_flags(url);
        args.extend([
            "--shard".to_string(),
            format!("{i}/{SHARDS}"),
            "--start-at".to_string(),
            format!("@{start:.3}"),
            "--report-dir".to_string(),
            dir.display().to_string(),
        ]);
        run(args)
    });
    for out in futures::future::join_all(runs).await {
        assert!(
            matches!(out.status.code(), Some(0 | 2)),
            "a shard failed: {}",
            common::stderr(&out)
        );
    }
    (0..SHARDS)
        .map(|i| dir.join(format!("shard-{i}")).join("results.json"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_shards_merged_measure_what_one_process_measures() {
    // The server runs as a process of its own, as in a real run: inside this test's runtime
    // it would share threads with the test and tilt the single process's tail.
    let (_server, url) = serve_apart();
    let tmp = tempfile::tempdir().unwrap();

    let first_single = run_single(&url, &tmp.path().join("single-1")).await;
    let shard_files = run_shards(&url, &tmp.path().join("sharded")).await;
    let shards: Vec<Value> = shard_files.iter().map(|p| read(p)).collect();
    for (i, shard) in shards.iter().enumerate() {
        assert_eq!(shard["settings"]["shard"]["index"], i as u64);
        let rate = level(shard)["merged"]["throughput"].as_f64().unwrap();
        assert!(
            (rate - RATE / 4.0).abs() < RATE / 4.0 * 0.02,
            "shard {i} sent {rate}/s"
        );
    }

    let second_single = run_single(&url, &tmp.path().join("single-2")).await;
    let merged_dir = tmp.path().join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(shard_files.iter().map(|p| p.display().to_string()));
    args.extend(["--report-dir".to_string(), merged_dir.display().to_string()]);
    let out = run(args).await;
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "merge: {}",
        common::stderr(&out)
    );
    let merged = common::assert_valid(&merged_dir.join("results.json"));
    assert!(merged_dir.join("results.csv").is_file() && merged_dir.join("report.html").is_file());

    let whole = &level(&merged)["merged"];
    let throughput = whole["throughput"].as_f64().unwrap();
    assert!(
        (throughput - RATE).abs() <= RATE * 0.01,
        "merged throughput {throughput}/s"
    );
    let shard_requests: u64 = shards.iter().map(|s| count(&level(s)["merged"])).sum();
    assert_eq!(
        count(whole),
        shard_requests,
        "the merged histogram holds every shard's requests"
    );
    // A percentile of the union of the shards' requests lies between the shards' own
    // values of it (up to the histograms' 3-digit precision): exact whatever the load.
    for name in ["p50", "p99"] {
        let each: Vec<f64> = shards
            .iter()
            .map(|s| percentile(&level(s)["merged"], name))
            .collect();
        let low = each.iter().cloned().fold(f64::MAX, f64::min);
        let high = each.iter().cloned().fold(0.0, f64::max);
        let all = percentile(whole, name);
        assert!(
            all >= low * 0.999 && all <= high * 1.001,
            "{name}: merged {all} ns outside the shards' {low}..{high} ns"
        );
    }
    // The median of the merged shards is the median one process measures, within 5% of the
    // range of two single-process runs (one before the shards, one after). The p99 is not
    // compared so: its tail holds the scheduling of four client processes on two cores
    // beside the server, 11% below to 40% above the single runs in CI and here (the
    // margin was widened three times), which says how busy the machine was, not whether
    // merging is right; the shards' own bounds above are the exact check of every
    // percentile.
    let runs = [&first_single, &second_single].map(|f| percentile(&level(f)["merged"], "p50"));
    let (low, high) = (runs[0].min(runs[1]), runs[0].max(runs[1]));
    let all = percentile(whole, "p50");
    assert!(
        all >= low * 0.95 && all <= high * 1.05,
        "p50: merged {all} ns, single process {low}..{high} ns"
    );
}

/// The server process, killed when the test ends, also when an assertion fails.
struct ServerProcess(std::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `inferperf serve` on free ports with the 5 ms model of 32 instances; its HTTP address.
fn serve_apart() -> (ServerProcess, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args([
            "serve",
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--model",
            "slow=sleep:ms=5,instances=32",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("inferperf serve starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines
        .find_map(|l| l.ok().filter(|l| l.contains("HTTP on ")))
        .expect("inferperf serve says where it listens");
    let url = ready
        .split("HTTP on ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_string();
    // Keep reading its standard output so that it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (ServerProcess(child), url)
}

//! `--shared-memory system` against the embedded server over HTTP and gRPC: the run
//! succeeds and the server counts what it reports; outputs are read back from their regions
//! when validation_data asks, so a wrong answer is caught there; every region is gone from
//! /dev/shm and from the server's status after a run, after Ctrl-C, and what a dead run left
//! is removed by the next one. The flags that cannot work with it are refused.

use crate::common;
use crate::fault_proxy;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{profile, run_cli, served, start_server, stderr, url};
use inferperf::backend::{ErrorKind, Payload};
use inferperf_server::{RunningServer, ShmPlace};
use inferperf_wire::shm::{Mapping, PREFIX, SHM_DIR};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_inferperf");

/// The names the server lists as registered.
fn registered(server: &RunningServer) -> Vec<String> {
    let regions = server.local.shm().status("").expect("status");
    regions.into_iter().map(|r| r.name).collect()
}

/// The objects in /dev/shm of process `pid`'s runs.
fn objects_of(pid: u32) -> Vec<String> {
    let prefix = format!("{PREFIX}{pid}_");
    let entries = std::fs::read_dir(SHM_DIR).expect("/dev/shm");
    (entries.flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// A pid that no process has now (a child that has exited and been reaped).
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("true runs");
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_over_http_and_grpc_count_what_the_server_counts() {
    let server = start_server(&["id_http=identity", "id_grpc=identity", "add=add_sub"]).await;
    let runs = [("id_http", "http"), ("id_grpc", "grpc"), ("add", "grpc")];
    for (model, protocol) in runs {
        let before = served(&server, model);
        let flags = [
            "-m",
            model,
            "-u",
            &url(&server, protocol),
            "-i",
            protocol,
            "--shared-memory",
            "system",
            "--output-shared-memory-size",
            "4096",
            "--concurrency-range",
            "4",
            "--request-count",
            "200",
            "--no-progress",
        ];
        let results = profile(&flags).await;
        let merged = &results[0].merged;
        assert_eq!(merged.error_count(), 0, "{model}: {:?}", merged.errors);
        assert_eq!(merged.ok, 200, "{model}");
        assert_eq!(served(&server, model) - before, 200, "{model}");
        // The requests name regions and carry no tensor data.
        let prepared = inferperf::commands::profile::prepare(&common::config(&flags))
            .await
            .unwrap();
        for request in prepared.requests.iter() {
            let bytes = match &request.payload {
                Payload::Http(b) | Payload::Grpc(b) => b.clone(),
                Payload::Local(_) => panic!("{model}: an in-process request"),
            };
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.contains("shared_memory_region"), "{model}: {text}");
            assert!(!text.contains("binary_data_size"), "{model}: {text}");
            assert!(bytes.len() < 700, "{model}: {} bytes", bytes.len());
        }
        prepared
            .target
            .shm()
            .unwrap()
            .cleanup(&prepared.target)
            .await;
    }
}

fn validation_file(dir: &std::path::Path, wrong: bool) -> String {
    let values: Vec<f32> = (0..16).map(|i| i as f32 + 0.25).collect();
    let mut expected = values.clone();
    if wrong {
        expected[7] = 99.5;
    }
    let path = dir.join(if wrong { "wrong.json" } else { "right.json" });
    let doc = json!({
        "data": [{"INPUT0": values}, {"INPUT0": values}],
        "validation_data": [{"OUTPUT0": values}, {"OUTPUT0": expected}],
    });
    std::fs::write(&path, doc.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_data_reads_the_output_regions() {
    let server = start_server(&["identity=identity", "liar=fail:mode=wrong_values,rate=1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let right = validation_file(dir.path(), false);
    let wrong = validation_file(dir.path(), true);
    for protocol in ["http", "grpc"] {
        let u = url(&server, protocol);
        let run = |model: &'static str, file: String| {
            let u = u.clone();
            async move {
                let flags = [
                    "-m",
                    model,
                    "-u",
                    &u,
                    "-i",
                    protocol,
                    "--shared-memory",
                    "system",
                    "--input-data",
                    &file,
                    "--concurrency-range",
                    "3",
                    "--request-count",
                    "60",
                    "--no-progress",
                ];
                profile(&flags).await.remove(0).merged
            }
        };
        let before = registered(&server);
        let fine = run("identity", right.clone()).await;
        assert_eq!(
            (fine.ok, fine.error_count()),
            (60, 0),
            "{protocol}: {:?}",
            fine.errors
        );
        // The answers went through the output regions: slot 0's holds the values.
        let values: Vec<u8> = (0..16)
            .flat_map(|i| (i as f32 + 0.25).to_le_bytes())
            .collect();
        let out = (registered(&server).into_iter())
            .find(|n| n.ends_with("_out000000") && !before.contains(n))
            .expect("slot 0's output region");
        let place = ShmPlace {
            region: out,
            offset: 0,
            byte_size: 64,
        };
        let written = server.local.shm().read(&place).unwrap();
        assert_eq!(written.to_vec(), values, "{protocol}");
        // Every second request expects 99.5 where the model answers 7.25.
        let half = run("identity", wrong.clone()).await;
        assert_eq!(
            half.errors.get(&ErrorKind::Validation),
            Some(&30),
            "{protocol}"
        );
        assert_eq!(
            half.notes[0].text, "output 'OUTPUT0' element 7: expected 99.5, got 7.25",
            "{protocol}"
        );
        // Right form, wrong numbers: only the values in the region tell.
        let lies = run("liar", right.clone()).await;
        assert_eq!(
            lies.errors.get(&ErrorKind::Validation),
            Some(&60),
            "{protocol}"
        );
        assert_eq!(lies.ok, 0, "{protocol}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_leaves_no_region_on_the_server_or_in_dev_shm() {
    let server = start_server(&["identity=identity"]).await;
    let dir = tempfile::tempdir().unwrap();
    for protocol in ["http", "grpc"] {
        let before = served(&server, "identity");
        let results = dir.path().join(format!("{protocol}.json"));
        let child = Command::new(BIN)
            .args([
                "-m",
                "identity",
                "-u",
                &url(&server, protocol),
                "-i",
                protocol,
            ])
            .args(["--shared-memory", "system", "--concurrency-range", "3"])
            .args(["--request-count", "50", "--no-progress", "--results-file"])
            .arg(&results)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("inferperf starts");
        let pid = child.id();
        let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await;
        let out = out.unwrap().unwrap();
        assert_eq!(out.status.code(), Some(0), "{protocol}: {}", stderr(&out));
        assert_eq!(served(&server, "identity") - before, 50, "{protocol}");
        assert_eq!(registered(&server), Vec::<String>::new(), "{protocol}");
        assert_eq!(objects_of(pid), Vec::<String>::new(), "{protocol}");
        let written = common::assert_valid(&results);
        assert_eq!(written["settings"]["shared_memory"], "system", "{protocol}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_mid_run_unregisters_and_unlinks() {
    let server = start_server(&["slow=sleep:ms=5"]).await;
    for protocol in ["http", "grpc"] {
        let u = url(&server, protocol);
        let mut child = Command::new(BIN)
            .args([
                "-m",
                "slow",
                "-u",
                &u,
                "-i",
                protocol,
                "--shared-memory",
                "system",
            ])
            .args(["--concurrency-range", "2", "-p", "10000", "--no-progress"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("inferperf starts");
        let pid = child.id();
        let started = Instant::now();
        while registered(&server).len() < 3 && started.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            registered(&server).len() >= 3,
            "{protocol}: {:?}",
            registered(&server)
        );
        assert!(!objects_of(pid).is_empty(), "{protocol}");
        // SAFETY: signals the child this test started and still holds.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        let status = tokio::task::spawn_blocking(move || child.wait())
            .await
            .unwrap();
        assert_eq!(status.unwrap().code(), Some(130), "{protocol}");
        assert_eq!(registered(&server), Vec::<String>::new(), "{protocol}");
        assert_eq!(objects_of(pid), Vec::<String>::new(), "{protocol}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_runs_regions_are_removed_by_the_next_run() {
    let server = start_server(&["identity=identity"]).await;
    let dead = dead_pid();
    let name = format!("{PREFIX}{dead}_0_in0");
    let key = format!("/{name}");
    let left = Mapping::create(&key, 64).expect("a region");
    server
        .local
        .shm()
        .register(&name, &key, 0, 64)
        .expect("registers");
    // As a killed run leaves it: the object stays in /dev/shm.
    std::mem::forget(left);
    let out = run_cli(&[
        "-m",
        "identity",
        "-u",
        &url(&server, "http"),
        "--shared-memory",
        "system",
        "--request-count",
        "10",
        "--no-progress",
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(objects_of(dead), Vec::<String>::new());
    assert_eq!(registered(&server), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_that_cannot_use_it_are_refused_with_one_sentence() {
    let server = start_server(&["identity=identity"]).await;
    let u = url(&server, "grpc");
    let cases: [(&[&str], &str); 4] = [
        (
            &["--shared-memory", "cuda"],
            "needs a GPU build of inferperf with CUDA",
        ),
        (
            &["--shared-memory", "system", "--streaming"],
            "does not work with --streaming",
        ),
        (
            &["--shared-memory", "system", "--service-kind", "openai"],
            "not with this --service-kind",
        ),
        (
            &["--shared-memory", "tmpfs"],
            "is not one of none, system or cuda",
        ),
    ];
    for (flags, words) in cases {
        let mut args = vec![
            "-m",
            "identity",
            "-u",
            &u,
            "-i",
            "grpc",
            "--request-count",
            "4",
        ];
        args.extend_from_slice(flags);
        let out = run_cli(&args).await;
        assert_eq!(out.status.code(), Some(3), "{flags:?}: {}", stderr(&out));
        let said = stderr(&out);
        assert!(said.contains(words), "{flags:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{flags:?}: {said}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_registration_is_one_sentence_and_exit_99() {
    use std::sync::Arc;
    let server = start_server(&["identity=identity"]).await;
    // Discovery (server metadata, model metadata, configuration) passes; every call of the
    // extension after it is refused as a server without it would.
    let plan: fault_proxy::Plan = Arc::new(|n| match n {
        0..=2 => fault_proxy::Fault::Pass,
        _ => fault_proxy::Fault::Status(400),
    });
    let proxy = fault_proxy::start(server.http_addr, plan).await;
    let child = Command::new(BIN)
        .args(["-m", "identity", "-u", &proxy.addr.to_string()])
        .args([
            "--shared-memory",
            "system",
            "--request-count",
            "10",
            "--no-progress",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("inferperf starts");
    let pid = child.id();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await;
    let out = out.unwrap().unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(99), "{said}");
    assert!(
        said.contains("refused to register the shared-memory region"),
        "{said}"
    );
    assert!(said.contains("HTTP 400"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert_eq!(objects_of(pid), Vec::<String>::new());
    assert_eq!(served(&server, "identity"), 0);
}

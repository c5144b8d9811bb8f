//! Sequence (stateful) models against the embedded server's `sequence` kind, over HTTP and
//! gRPC: the server's count of sequences started and completed agrees with what inferperf
//! reports and it rejects none of inferperf's requests (a request of a sequence that is not
//! live, or that lacks the START flag, would be rejected); running sums checked against
//! expected outputs prove each stream's requests arrive in order on their own id.

use crate::common;

use common::{profile, run_cli, start_server, stderr, stdout, url};
use inferperf_server::RunningServer;

fn sequence_counts(server: &RunningServer, model: &str) -> (u64, u64, u64, u64) {
    let (_, c) = (server.local.sequence_statistics().into_iter())
        .find(|(name, _)| name == model)
        .expect("a sequence model");
    (c.started, c.completed, c.rejected, c.live)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_sequences_match_the_server_over_http_and_grpc() {
    let server = start_server(&["seq_http=sequence", "seq_grpc=sequence"]).await;
    for protocol in ["http", "grpc"] {
        let u = url(&server, protocol);
        let model = format!("seq_{protocol}");
        let results = profile(&[
            "-m",
            &model,
            "-u",
            &u,
            "-i",
            protocol,
            "--concurrency-range",
            "4",
            "--request-count",
            "200",
            "--sequence-length",
            "5",
            "--sequence-length-variation",
            "0",
            "--no-progress",
        ])
        .await;
        let merged = &results[0].merged;
        assert_eq!(merged.error_count(), 0, "{protocol}: {:?}", merged.errors);
        assert_eq!(merged.ok, 200);
        let (started, completed, rejected, live) = sequence_counts(&server, &model);
        assert_eq!(rejected, 0, "{protocol}");
        // A sequence the request count cut short (at most one per slot) is ended by one
        // more, unmeasured request: the server holds no open sequence after the run.
        assert_eq!((started, live), (completed, 0), "{protocol}");
        let cut_short = completed - merged.sequences_ended;
        assert!(
            cut_short <= 4,
            "{protocol}: {completed} {}",
            merged.sequences_ended
        );
        assert!(
            merged.sequences_ended >= 200 / 5 - 4,
            "{protocol}: {}",
            merged.sequences_ended
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_serial_sequences_over_grpc_with_string_ids() {
    let server = start_server(&["sseq=sequence:string_ids=true"]).await;
    let u = url(&server, "grpc");
    let out = run_cli(&[
        "-m",
        "sseq",
        "-u",
        &u,
        "-i",
        "grpc",
        "--request-rate-range",
        "400",
        "--num-of-sequences",
        "3",
        "--serial-sequences",
        "--sequence-length",
        "4",
        "--measurement-interval",
        "400",
        "-s",
        "100",
        "--no-progress",
    ])
    .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("Sequences/s"), "{text}");
    let (started, completed, rejected, live) = sequence_counts(&server, "sseq");
    assert_eq!(
        rejected, 0,
        "numeric ids or overlapping steps would be rejected"
    );
    assert!(completed > 20, "{completed}");
    // The sequences each level's end cut short are ended by one more, unmeasured request
    // each: none is left open on the server.
    assert_eq!(
        (live, started),
        (0, completed),
        "{started} {completed} {live}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_stream_data_is_played_in_order_per_sequence() {
    let server = start_server(&["seq=sequence"]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("streams.json");
    let doc = serde_json::json!({
        "data": [
            [{"INPUT": [1]}, {"INPUT": [2]}, {"INPUT": [3]}],
            [{"INPUT": [10]}, {"INPUT": [20]}],
        ],
        "validation_data": [
            [{"OUTPUT": [1]}, {"OUTPUT": [3]}, {"OUTPUT": [6]}],
            [{"OUTPUT": [10]}, {"OUTPUT": [30]}],
        ],
    });
    std::fs::write(&data, doc.to_string()).unwrap();
    let data = data.display().to_string();
    for protocol in ["http", "grpc"] {
        let u = url(&server, protocol);
        let results = profile(&[
            "-m",
            "seq",
            "-u",
            &u,
            "-i",
            protocol,
            "--concurrency-range",
            "2",
            "--request-count",
            "60",
            "--input-data",
            &data,
            "--no-progress",
        ])
        .await;
        let merged = &results[0].merged;
        assert_eq!(merged.error_count(), 0, "{protocol}: {:?}", merged.notes);
        assert!(merged.sequences_ended >= 60 / 3 - 2, "{protocol}");
    }
    assert_eq!(sequence_counts(&server, "seq").2, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_records_sequence_ids_and_a_small_id_range_is_refused() {
    let server = start_server(&["seq=sequence", "identity=identity"]).await;
    let u = url(&server, "http");
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export.json");
    let out = run_cli(&[
        "-m",
        "seq",
        "-u",
        &u,
        "--concurrency-range",
        "2",
        "--request-count",
        "20",
        "--sequence-id-range",
        "100:102",
        "--profile-export-file",
        export.to_str().unwrap(),
        "--no-progress",
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    let requests = doc["experiments"][0]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 20);
    for r in requests {
        let id = r["sequence_id"].as_u64().unwrap();
        assert!((100..102).contains(&id), "{r}");
    }
    let small = run_cli(&[
        "-m",
        "seq",
        "-u",
        &u,
        "--concurrency-range",
        "4",
        "--sequence-id-range",
        "1:3",
    ])
    .await;
    assert_eq!(small.status.code(), Some(3));
    assert!(
        stderr(&small).contains("--sequence-id-range holds 2 ids"),
        "{}",
        stderr(&small)
    );
    let ramp = run_cli(&[
        "-m",
        "seq",
        "-u",
        &u,
        "--ramp",
        "1s",
        "--concurrency-range",
        "1:2",
        "--no-progress",
    ])
    .await;
    assert_eq!(ramp.status.code(), Some(3), "{}", stderr(&ramp));
    assert!(
        stderr(&ramp).contains("is a sequence model"),
        "{}",
        stderr(&ramp)
    );
    let plain = run_cli(&[
        "-m",
        "identity",
        "-u",
        &u,
        "--concurrency-range",
        "1",
        "--request-count",
        "5",
        "--sequence-length",
        "3",
        "--no-progress",
    ])
    .await;
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert!(
        stdout(&plain).contains("is not a sequence model"),
        "{}",
        stdout(&plain)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_sequences_stay_on_their_server_over_several_urls() {
    let first = start_server(&["seq=sequence"]).await;
    let second = start_server(&["seq=sequence"]).await;
    let (a, b) = (url(&first, "http"), url(&second, "http"));
    let out = run_cli(&[
        "-m",
        "seq",
        "-u",
        &a,
        "-u",
        &b,
        "--request-rate-range",
        "400",
        // One step of a sequence in flight at a time: overlapping steps may reach the
        // server out of order (a step before its START) and be rejected there for that.
        "--serial-sequences",
        "--num-of-sequences",
        "4",
        "--sequence-length",
        "5",
        "--sequence-length-variation",
        "0",
        "--measurement-interval",
        "400",
        "-s",
        "100",
        "--no-progress",
    ])
    .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    // A step sent to the server that did not see its sequence start would be rejected
    // there: each sequence's requests must all go to one server.
    for (name, server) in [("first", &first), ("second", &second)] {
        let (started, completed, rejected, live) = sequence_counts(server, "seq");
        assert_eq!(rejected, 0, "{name}: a sequence was split across servers");
        assert!(completed > 5, "{name}: {completed}");
        assert_eq!((live, started), (0, completed), "{name}");
    }
}

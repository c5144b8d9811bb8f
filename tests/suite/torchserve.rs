//! `--service-kind torchserve` through the real binary: against the embedded server's
//! TorchServe routes, every request inferperf counts is one the server counted and the
//! `Server:` block shows queue and compute from the TorchServe metric names; the server-wide
//! `Requests2XX/4XX/5XX` line (and results.json's `server.answers`) counts the run's
//! successes as 2XX and its HTTP 400 / 503 errors as 4XX / 5XX; a
//! `TORCHSERVE_INPUT` file arrives byte for byte at `/predictions/M/V` (checked by a small
//! capturing server here); an unregistered model is one sentence and exit 99.

use crate::common;

use std::sync::{Arc, Mutex};

use common::*;
use inferperf_server::{self as server, RunningServer, ServeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The embedded server with its metrics page, so the `Server:` block can be read.
async fn start_with_metrics(models: &[&str]) -> RunningServer {
    server::start(ServeOptions {
        host: "127.0.0.1".parse().unwrap(),
        http_port: 0,
        grpc_port: 0,
        metrics_port: Some(0),
        models: models.iter().map(|m| m.parse().unwrap()).collect(),
        statistics: true,
        tls: None,
    })
    .await
    .expect("embedded server starts")
}

/// The number after `label` on the first line that has it.
fn figure(text: &str, label: &str) -> f64 {
    let line = text.lines().find(|l| l.contains(label)).unwrap_or_else(|| {
        panic!("no '{label}' in:\n{text}");
    });
    let after = &line[line.find(label).unwrap() + label.len()..];
    let number: String = after
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number
        .parse()
        .unwrap_or_else(|_| panic!("no number in '{line}'"))
}

/// Profiles `model` over TorchServe's API with the server's metrics page, at `concurrency`
/// for `count` requests: the process's output and its standard output.
async fn profile_torchserve(
    server: &RunningServer,
    model: &str,
    concurrency: &str,
    count: &str,
) -> (std::process::Output, String) {
    profile_torchserve_with(server, model, concurrency, count, &[]).await
}

/// [`profile_torchserve`] with more flags.
async fn profile_torchserve_with(
    server: &RunningServer,
    model: &str,
    concurrency: &str,
    count: &str,
    more: &[&str],
) -> (std::process::Output, String) {
    let url = server.http_addr.to_string();
    let metrics = format!("{}/metrics", server.metrics_addr.unwrap());
    let args = [
        "-m",
        model,
        "--service-kind",
        "torchserve",
        "-u",
        &url,
        "--metrics-url",
        &metrics,
        "--shape",
        "TORCHSERVE_INPUT:16",
        "--concurrency-range",
        concurrency,
        "--request-count",
        count,
    ];
    let args: Vec<&str> = args.iter().chain(more).copied().collect();
    let out = run_cli(&args).await;
    let text = stdout(&out);
    (out, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_match_the_servers_count_and_the_server_block_splits_them() {
    let server = start_with_metrics(&["slow=sleep:ms=2,max_batch=0"]).await;
    let (out, text) = profile_torchserve(&server, "slow", "4", "200").await;
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let sent = figure(&text, "Request count:") as u64;
    let counted = server
        .local
        .statistics("slow")
        .unwrap()
        .inference_stats
        .unwrap();
    let counted = counted.success.unwrap().count;
    // The server counts every request, the run those of its window (up to 4 in flight at
    // the end are the server's only).
    assert!(
        counted >= sent && counted <= sent + 4,
        "inferperf {sent}, server {counted}"
    );
    assert!(!text.contains("Error"), "{text}");
    let served = figure(&text, "Successful request count:") as u64;
    assert!(
        served >= sent && served <= counted,
        "{served} of {counted}:\n{text}"
    );
    // Four in flight on one 2 ms instance: about 6 ms queued, 2 ms computing.
    let queue = figure(&text, "+ queue");
    let compute = figure(&text, "compute infer");
    assert!((1900.0..4000.0).contains(&compute), "{text}");
    assert!(queue >= 2000.0, "{text}");
    server.shutdown().await;
}

/// The server-wide line's 2XX, 4XX and 5XX counts.
fn server_wide(text: &str) -> [u64; 3] {
    let line = (text.lines())
        .find(|l| l.contains("Server-wide answers"))
        .unwrap_or_else(|| panic!("no server-wide line in:\n{text}"));
    let counts: Vec<u64> = (line.rsplit(':').next().unwrap().split('/'))
        .map(|n| n.trim().parse().unwrap())
        .collect();
    [counts[0], counts[1], counts[2]]
}

/// TorchServe counts answers by status class only for the whole server: the run prints
/// them under the `Server:` block and they agree with the errors the client saw, a 400 as
/// 4XX and a 503 as 5XX; a run whose requests all succeed has them all as 2XX.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_wide_answer_classes_match_the_clients_successes_and_errors() {
    let server = start_with_metrics(&["good=identity:max_batch=0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let (out, text) = profile_torchserve_with(
        &server,
        "good",
        "1",
        "200",
        &["--results-file", results.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert_eq!(server_wide(&text), [200, 0, 0], "{text}");
    // results.json keeps them in the server section of the level's windows.
    let file = inferperf::results::read(&results).unwrap();
    let merged = &file.levels[0].merged;
    let answers = merged
        .server
        .as_ref()
        .and_then(|s| s.answers)
        .expect("answers");
    let classes = [answers.status_2xx, answers.status_4xx, answers.status_5xx];
    assert_eq!(classes, [200, 0, 0], "{answers:?}");
    assert_eq!(figure(&text, "Request count:") as u64, 200, "{text}");
    // The server's own count holds discovery's describe-model call too.
    let all = server.local.torchserve_answers().read();
    assert!(all[0] >= 200 && all[1..] == [0, 0], "{all:?}");
    server.shutdown().await;
    for (code, class) in [(400, 1), (503, 2)] {
        let model = format!("flaky=fail:rate=0.3,code={code},max_batch=0");
        let server = start_with_metrics(&[&model]).await;
        let (out, text) = profile_torchserve(&server, "flaky", "1", "300").await;
        assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
        let counts = server_wide(&text);
        // One request in flight, so the window's answers are exactly the run's requests: its
        // successes and its HTTP errors, in the error's class.
        let succeeded = figure(&text, "Request count:") as u64;
        let failed = figure(&text, "Errors:") as u64;
        let mut expected = [succeeded, 0, 0];
        expected[class] = failed;
        assert_eq!(counts, expected, "HTTP {code}: {text}");
        assert_eq!(counts[0] + counts[class], 300, "{counts:?}");
        assert!((40..=140).contains(&counts[class]), "{counts:?}");
        assert!(text.contains(&format!("HTTP {code}")), "{text}");
        let all = server.local.torchserve_answers().read();
        assert!(
            all[class] >= counts[class] && all[0] >= counts[0],
            "{all:?} vs {counts:?}"
        );
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unregistered_model_is_one_sentence_and_exit_99() {
    let server = start_with_metrics(&["identity=identity"]).await;
    let url = server.http_addr.to_string();
    for version in ["", "7"] {
        let mut args = vec!["-m", "nothing", "--service-kind", "torchserve", "-u", &url];
        if !version.is_empty() {
            args = vec![
                "-m",
                "identity",
                "-x",
                version,
                "--service-kind",
                "torchserve",
                "-u",
                &url,
            ];
        }
        let out = run_cli(&args).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(99), "{err}");
        assert!(err.contains("registered"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    server.shutdown().await;
}

/// What the capturing server saw: each request's line and body.
type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A server that answers describe-model for `echo` and 200 to any POST, recording them.
async fn capturing_server() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_connection(stream, record.clone()));
        }
    });
    (addr, seen)
}

async fn serve_connection(mut stream: tokio::net::TcpStream, seen: Seen) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let length: usize = (head.lines())
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        while buf.len() < end + 4 + length {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[end + 4..end + 4 + length].to_vec();
        buf.drain(..end + 4 + length);
        let line = head.lines().next().unwrap_or_default().to_string();
        let answer = match line.starts_with("GET /models/echo") {
            true => {
                r#"[{"modelName":"echo","modelVersion":"3","workers":[{"id":"1","status":"READY"}]}]"#
            }
            false => "ok",
        };
        seen.lock().unwrap().push((line, body));
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torchserve_input_files_arrive_byte_exact_at_the_version_path() {
    let dir = std::env::temp_dir().join(format!("inferperf-ts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let first: Vec<u8> = (0..=255u8).collect();
    let second = b"\r\n\r\nsecond body \x00\xff".to_vec();
    let (a, b) = (dir.join("a.bin"), dir.join("b.bin"));
    std::fs::write(&a, &first).unwrap();
    std::fs::write(&b, &second).unwrap();
    let data = serde_json::json!({"data": [
        {"TORCHSERVE_INPUT": [a.display().to_string()]},
        {"TORCHSERVE_INPUT": [b.display().to_string()]},
    ]});
    let json = dir.join("input.json");
    std::fs::write(&json, data.to_string()).unwrap();
    let (addr, seen) = capturing_server().await;
    let json = json.display().to_string();
    let args = [
        "-m",
        "echo",
        "-x",
        "3",
        "--service-kind",
        "torchserve",
        "-u",
        &addr,
        "--torchserve-management-url",
        &addr,
        "--input-data",
        &json,
        "--concurrency-range",
        "1",
        "--request-count",
        "4",
    ];
    let out = run_cli(&args).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].0, "GET /models/echo/3 HTTP/1.1");
    let posts: Vec<&(String, Vec<u8>)> =
        seen.iter().filter(|(l, _)| l.starts_with("POST")).collect();
    assert!(posts.len() >= 4, "{seen:?}");
    for (k, (line, body)) in posts.iter().enumerate() {
        assert_eq!(line, "POST /predictions/echo/3 HTTP/1.1");
        let expected = if k % 2 == 0 { &first } else { &second };
        assert_eq!(body, expected, "request {k}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

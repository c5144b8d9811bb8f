//! `--artifact-dir` end to end: the real binary against the embedded server's `llm` model,
//! whose timing is known, writes GenAI-Perf's folder per level with every request of the
//! level in `profile_export.json`, and prints GenAI-Perf's table.

use crate::common;

use serde_json::Value;

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_writes_every_request_and_genai_perfs_figures() {
    let server = common::start_server(&["chat=llm:ttft_ms=20,itl_ms=2,output_tokens=8"]).await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("artifacts");
    let url = common::url(&server, "http");
    let output = common::run_cli(&[
        "profile",
        "-m",
        "chat",
        "-u",
        &url,
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
        "--streaming",
        "--output-tokens-mean",
        "8",
        "--synthetic-input-tokens-mean",
        "10",
        "--concurrency-range",
        "2",
        "--request-count",
        "20",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("inferperf | LLM Metrics"), "{stdout}");
    assert!(stdout.contains("Time To First Token (ms)"), "{stdout}");

    let inputs = read_json(&dir.join("inputs.json"));
    let payload = &inputs["data"][0]["payload"][0];
    assert_eq!(payload["model"], "chat");
    assert_eq!(payload["stream"], true);

    let folder = dir.join("chat-openai-chat-concurrency2");
    let export = read_json(&folder.join("profile_export.json"));
    let experiment = &export["experiments"][0];
    assert_eq!(experiment["experiment"]["mode"], "concurrency");
    assert_eq!(experiment["experiment"]["value"], 2);
    let requests = experiment["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 20, "every request of the level");
    for request in requests {
        let sent = request["timestamp"].as_u64().unwrap();
        let times: Vec<u64> = request["response_timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .collect();
        assert_eq!(times.len(), 8, "one answer per token: {request}");
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        let ttft_ms = (times[0] - sent) as f64 / 1e6;
        assert!((19.0..200.0).contains(&ttft_ms), "TTFT {ttft_ms} ms");
        assert_eq!(request["output_tokens"], 8);
        let body: Value =
            serde_json::from_str(request["request_inputs"]["payload"].as_str().unwrap()).unwrap();
        assert_eq!(body["model"], "chat");
    }
    let bounds = experiment["window_boundaries"].as_array().unwrap();
    assert_eq!(
        bounds.len(),
        2,
        "one window from the first send to the last answer"
    );
    let first_sent = requests
        .iter()
        .map(|r| r["timestamp"].as_u64().unwrap())
        .min();
    assert!(bounds[0].as_u64() <= first_sent);

    let genai = read_json(&folder.join("profile_export_genai_perf.json"));
    assert_eq!(genai["request_count"]["avg"], 20.0);
    let ttft = genai["time_to_first_token"]["avg"].as_f64().unwrap();
    assert!((19.0..200.0).contains(&ttft), "{ttft}");
    assert_eq!(genai["output_sequence_length"]["avg"], 8.0);
    let csv = std::fs::read_to_string(folder.join("profile_export_genai_perf.csv")).unwrap();
    assert!(csv.contains("\r\nRequest Count (count),20.00\r\n"), "{csv}");

    let aiperf = read_json(&folder.join("profile_export_aiperf.json"));
    assert_eq!(aiperf["request_count"]["avg"], 20.0);
    assert_eq!(aiperf["inter_chunk_latency"]["count"], 20 * 7);
    let csv = std::fs::read_to_string(folder.join("profile_export_aiperf.csv")).unwrap();
    assert!(csv.contains("\r\nRequest Error Rate (%),0.00\r\n"), "{csv}");
}

//! `--gpu-telemetry` against the embedded server's DCGM exporter page, whose power is its
//! stated model (`gpu_watts_idle` + `gpu_watts_per_sequence` x sequences in a slot): at 4
//! requests in flight on a batch of 8 the GPU draws 50 + 4 x 20 = 130 W, its energy over
//! the level is that power over the level's time (less for the moments the client holds
//! fewer in flight), and the output tokens per joule follow.

use inferperf::measure::server::gpu_figures::GpuTelemetry;
use inferperf::measure::server::gpu_series::GpuField;
use inferperf_server::{self as server, ServeOptions};

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_energy_and_tokens_per_joule_follow_the_power_model() {
    let model = "chat=llm:ttft_ms=20,itl_ms=5,max_batch=8,output_tokens=16,gpu_watts_idle=50,gpu_watts_per_sequence=20";
    let server = server::start(ServeOptions {
        http_port: 0,
        grpc_port: 0,
        metrics_port: Some(0),
        models: vec![model.parse().unwrap()],
        ..ServeOptions::default()
    })
    .await
    .unwrap();
    let addr = server.http_addr.to_string();
    let page = format!("http://{}/gpu/metrics", server.metrics_addr.unwrap());
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let artifacts = dir.path().join("artifacts");
    let extra = [
        "--artifact-dir",
        artifacts.to_str().unwrap(),
        "--concurrency-range",
        "4",
        "--gpu-telemetry",
        &page,
        "--metrics-interval",
        "100",
        "-p",
        "1500",
        "--max-trials",
        "3",
    ];
    let flags = common::chat_flags(&addr, tokenizer.to_str().unwrap(), &extra);
    let level = common::profile_with_reports(&flags).await.remove(0);
    let metrics = level
        .merged
        .metrics
        .clone()
        .expect("the DCGM page was scraped");
    let w = &level.merged;
    let tokens = w.tokens.as_ref().unwrap().output_tokens.sum() as f64;
    let telemetry = GpuTelemetry::of(&metrics, tokens).unwrap();
    let gpus = &telemetry.gpus;
    assert_eq!(gpus.len(), 1, "{gpus:?}");
    let gpu = &gpus[0];
    assert_eq!(gpu.uuid, "GPU-inferperf-0000");
    // The sequences in a slot, on average: fewer than 4 only for the client's own time
    // between an answer and the next send (longer on a busy machine).
    let in_flight = (w.throughput() * w.mean_latency_us() / 1e6).min(4.0);
    let model_watts = 50.0 + 20.0 * in_flight;
    let power = gpu.power_watts.unwrap();
    // 4 in a slot: 130 W. A slot freed a moment after its answer's last event has reached
    // the client, whose next request already holds another, counts one sequence more (150 W,
    // seen on a loaded machine, as a real engine's count can also show): a reading is the
    // model's at a whole number of sequences, at least the 4 held, at most the batch of 8.
    let sequences = (power.max - 50.0) / 20.0;
    assert!(
        sequences.fract() == 0.0 && (4.0..=8.0).contains(&sequences),
        "{power:?}"
    );
    assert!((50.0..=power.max).contains(&power.avg), "{power:?}");
    // The energy over the level's windows, over their time: the model's mean power. The
    // time is the client's, between two scrapes, each read some way into its round trip, so
    // it may fall short of the server's own by a scrape's latency (1% is 15 ms of a window).
    let energy = &metrics.series[&GpuField::EnergyMillijoules.key(&gpu.uuid)];
    let mean_watts = energy.increase / 1e3 / energy.seconds;
    assert!(
        mean_watts <= power.max * 1.01 && mean_watts >= model_watts * 0.9,
        "{mean_watts} W, the model's {model_watts} W at {in_flight:.2} in flight"
    );
    assert_eq!(gpu.energy_joules, Some(energy.increase / 1e3));
    let per_joule = telemetry.output_tokens_per_joule.unwrap();
    assert_eq!(gpu.output_tokens_per_joule, Some(per_joule), "one GPU");
    // The level's output tokens over the GPU's energy (whose mean power follows the model,
    // above).
    let counted_per_joule = tokens / (energy.increase / 1e3);
    assert!(
        (per_joule - counted_per_joule).abs() <= counted_per_joule * 1e-9,
        "{per_joule} tokens/J, the counts' {counted_per_joule}"
    );
    // AIPerf's export: its power-efficiency metrics and the GPU under `telemetry_data`.
    let path = artifacts.join("chat-openai-chat-concurrency4/profile_export_aiperf.json");
    let export: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let exported = export["nvidia_output_tokens_per_joule"]["avg"]
        .as_f64()
        .unwrap();
    assert!(
        (exported - per_joule).abs() < 1e-9,
        "{exported} vs {per_joule}"
    );
    let exported_gpu =
        &export["telemetry_data"]["endpoints"][&page[7..page.len() - 8]]["gpus"]["gpu_0"];
    assert_eq!(exported_gpu["gpu_uuid"], "GPU-inferperf-0000", "{export}");
    // The export's maximum is the client's (130 W, or 150 W on a loaded machine, above).
    assert_eq!(
        exported_gpu["metrics"]["nvidia_power_usage"]["max"].as_f64(),
        Some(power.max)
    );
    let utilization = gpu.utilization.unwrap();
    // Read with the power, of the same sequences: 4 of 8 slots (50%), or more with the
    // power's maximum (6 of 8 seen beside the fuzz build).
    assert_eq!(
        utilization.max,
        100.0 * sequences / 8.0,
        "{sequences} of 8 slots: {utilization:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nvml_without_a_driver_is_one_sentence_and_the_run_goes_on() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1,output_tokens=4"]).await;
    let addr = server.http_addr.to_string();
    let args = [
        "profile",
        "-m",
        "chat",
        "--endpoint-type",
        "chat",
        "-u",
        &addr,
        "--gpu-telemetry",
        "nvml",
        "--request-count",
        "5",
    ];
    let out = common::run_cli(&args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    if std::path::Path::new("/proc/driver/nvidia").exists() {
        return;
    }
    let said: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("GPU telemetry:"))
        .collect();
    assert_eq!(said.len(), 1, "{stdout}");
    assert!(said[0].contains("libnvidia-ml.so.1"), "{stdout}");
}

//! Prometheus text on `--metrics-port`, as Triton serves it on its port 8002: the
//! `nv_inference_*` counters per model and version with Triton's meanings (taken from the
//! same statistics the extension reports), plus the process's CPU time and resident
//! memory read from /proc, so a client can see what the server spent. The same counters are
//! also given under TorchServe's names (`ts_inference_requests_total`, …), and each `llm`
//! model's under vLLM's ([`vllm`]). The same page is on the HTTP port too.

use std::convert::Infallible;
use std::fmt::Write as _;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;

use super::reply::{body_reply, no_route, Reply};

#[path = "vllm_metrics.rs"]
mod vllm;
use crate::local::LocalServer;
use crate::process::{process_cpu_seconds, process_resident_bytes};
use inferperf_wire::proto::{InferStatistics, ModelStatistics, StatisticDuration};

const TEXT: HeaderValue = HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");

/// Answers `GET /metrics`.
pub(crate) async fn handle(
    server: LocalServer,
    req: Request<Incoming>,
) -> Result<Reply, Infallible> {
    let reply = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => page(&server),
        (&Method::GET, "/gpu/metrics") => gpu_page(&server),
        (_, path) => no_route(path),
    };
    Ok(reply)
}

/// The metrics page as a reply.
pub(crate) fn page(server: &LocalServer) -> Reply {
    body_reply(StatusCode::OK, Bytes::from(render(server)), TEXT)
}

/// The DCGM exporter page of the GPUs the `llm` models stand for (see
/// [`crate::gpu_power`]).
pub(crate) fn gpu_page(server: &LocalServer) -> Reply {
    let mut out = String::with_capacity(2048);
    crate::gpu_power::write_dcgm(&mut out, &server.gpu_readings());
    body_reply(StatusCode::OK, Bytes::from(out), TEXT)
}

/// One per-model counter: name, help text and how to read it from the statistics.
struct Counter {
    name: &'static str,
    help: &'static str,
    value: fn(&ModelStatistics) -> u64,
}

/// One duration statistic of the model (zero when absent).
fn stat(
    s: &ModelStatistics,
    pick: fn(&InferStatistics) -> Option<StatisticDuration>,
) -> StatisticDuration {
    s.inference_stats
        .as_ref()
        .and_then(pick)
        .unwrap_or_default()
}

const COUNTERS: [Counter; 9] = [
    Counter {
        name: "nv_inference_request_success",
        help: "Number of successful inference requests, all batch sizes",
        value: |s| stat(s, |i| i.success).count,
    },
    Counter {
        name: "nv_inference_request_failure",
        help: "Number of failed inference requests, all batch sizes",
        value: |s| stat(s, |i| i.fail).count,
    },
    Counter {
        name: "nv_inference_count",
        help: "Number of inferences performed (does not include cached requests)",
        value: |s| s.inference_count,
    },
    Counter {
        name: "nv_inference_exec_count",
        help: "Number of model executions performed (does not include cached requests)",
        value: |s| s.execution_count,
    },
    Counter {
        name: "nv_inference_request_duration_us",
        help: "Cumulative inference request duration in microseconds (includes cached requests)",
        value: |s| stat(s, |i| i.success).ns / 1000,
    },
    Counter {
        name: "nv_inference_queue_duration_us",
        help: "Cumulative inference queuing duration in microseconds (includes cached requests)",
        value: |s| stat(s, |i| i.queue).ns / 1000,
    },
    Counter {
        name: "nv_inference_compute_input_duration_us",
        help: "Cumulative compute input duration in microseconds (does not include cached requests)",
        value: |s| stat(s, |i| i.compute_input).ns / 1000,
    },
    Counter {
        name: "nv_inference_compute_infer_duration_us",
        help: "Cumulative compute inference duration in microseconds (does not include cached requests)",
        value: |s| stat(s, |i| i.compute_infer).ns / 1000,
    },
    Counter {
        name: "nv_inference_compute_output_duration_us",
        help: "Cumulative inference compute output duration in microseconds (does not include cached requests)",
        value: |s| stat(s, |i| i.compute_output).ns / 1000,
    },
];

/// The whole metrics page.
pub(crate) fn render(server: &LocalServer) -> String {
    let stats = server.all_statistics();
    let mut out = String::with_capacity(4096);
    for c in &COUNTERS {
        let _ = writeln!(
            out,
            "# HELP {} {}\n# TYPE {} counter",
            c.name, c.help, c.name
        );
        for s in &stats {
            let _ = writeln!(
                out,
                "{}{{model=\"{}\",version=\"{}\"}} {}",
                c.name,
                s.name,
                s.version,
                (c.value)(s)
            );
        }
    }
    write_torchserve(&mut out, &stats, server.torchserve_answers().read());
    vllm::write(&mut out, &server.llm_metrics());
    write_process(&mut out);
    out
}

/// How one family's value is read from a model's statistics.
type Reading = fn(&ModelStatistics) -> f64;

/// TorchServe's names for the same counters, so a TorchServe client reads its breakdown
/// here: requests, inference latency (which holds the queue, as TorchServe's does) and queue
/// latency per model, and `Requests2XX/4XX/5XX`, the answers on the TorchServe routes by
/// status class, for the whole server (as TorchServe counts them).
fn write_torchserve(out: &mut String, stats: &[ModelStatistics], answers: [u64; 3]) {
    let families: [(&str, Reading); 3] = [
        ("ts_inference_requests_total", |s| {
            stat(s, |i| i.success).count as f64
        }),
        ("ts_inference_latency_microseconds", |s| {
            stat(s, |i| i.success).ns as f64 / 1000.0
        }),
        ("ts_queue_latency_microseconds", |s| {
            stat(s, |i| i.queue).ns as f64 / 1000.0
        }),
    ];
    for (name, value) in families {
        let _ = writeln!(
            out,
            "# HELP {name} TorchServe's {name}\n# TYPE {name} counter"
        );
        for s in stats {
            let _ = writeln!(
                out,
                "{name}{{model_name=\"{}\",model_version=\"default\",hostname=\"inferperf\",}} {:.3}",
                s.name,
                value(s)
            );
        }
    }
    let classes = ["Requests2XX", "Requests4XX", "Requests5XX"];
    for (name, count) in classes.iter().zip(answers) {
        let _ = writeln!(
            out,
            "# HELP {name} Answers of this status class on the TorchServe routes\n# TYPE {name} counter\n{name}{{Level=\"Host\",Hostname=\"inferperf\",}} {count}"
        );
    }
}

fn write_process(out: &mut String) {
    if let Some(cpu) = process_cpu_seconds() {
        let _ = writeln!(
            out,
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
             # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {cpu}"
        );
    }
    if let Some(rss) = process_resident_bytes() {
        let _ = writeln!(
            out,
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n\
             # TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}"
        );
    }
}

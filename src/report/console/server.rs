//! The lines that say where a level's time went: perf_analyzer's `Server:` block from the
//! statistics delta (one block per composing model of an ensemble), the client's own CPU
//! cost with a warning when the client was the limit, and one line splitting the latency
//! into client send, network and server overhead, queue, compute and client receive.

use crate::apis::Capabilities;
use crate::measure::server::stats::{ModelCounters, ServerWindow};
use crate::measure::window::WindowStats;
use crate::results::Settings;

use crate::report::format::usec;

/// Client CPU above this share of what its threads can use means the client limited the load.
const CLIENT_BUSY_SHARE: f64 = 0.8;

/// The machine's CPU cores available to this process.
pub fn available_cores() -> f64 {
    std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
}

/// The most CPU the client can use, in cores: its sending threads (`--client-threads`), no
/// more than the machine has.
pub fn client_capacity(settings: &Settings) -> f64 {
    (settings.client_threads as f64).min(available_cores())
}

/// perf_analyzer's `Server:` block, and the composing models of an ensemble or a BLS model.
pub fn server_lines(server: &ServerWindow) -> Vec<String> {
    let mut lines = vec!["  Server: ".to_string()];
    lines.extend(model_lines(
        &server.model,
        "    ",
        server.composing.is_empty() || server.bls,
    ));
    if server.bls && !server.composing.is_empty() {
        lines.push("    Composing models (called by the BLS model, inside its compute):".into());
    } else if !server.composing.is_empty() {
        let b = server.breakdown();
        lines.push(format!(
            "    Composing models (queue {} usec + compute {} usec in total):",
            usec(b.queue),
            usec(b.compute())
        ));
    }
    for model in &server.composing {
        lines.push(format!("    {}:", model.name));
        lines.extend(model_lines(model, "      ", true));
    }
    if let Some(a) = &server.answers {
        lines.push(format!(
            "    Server-wide answers, all models (2XX/4XX/5XX): {} / {} / {}",
            a.ok, a.client_errors, a.server_errors
        ));
    }
    lines
}

/// Counts and average request latency of one model; `split` adds the latency's parts.
fn model_lines(m: &ModelCounters, indent: &str, split: bool) -> Vec<String> {
    let mut lines = vec![
        format!("{indent}Inference count: {}", m.inference_count),
        format!("{indent}Execution count: {}", m.execution_count),
    ];
    if m.uses_cache() {
        lines.push(format!("{indent}Cache hit count: {}", m.cache_hit.count));
        lines.push(format!("{indent}Cache miss count: {}", m.cache_miss.count));
    }
    lines.push(format!(
        "{indent}Successful request count: {}",
        m.success.count
    ));
    let mut latency = format!(
        "{indent}Avg request latency: {} usec",
        usec(m.avg_request_us())
    );
    if split {
        latency.push_str(&format!(
            " (overhead {} usec + queue {} usec + {})",
            usec(m.avg_overhead_us()),
            usec(m.queue.avg_us()),
            compute_text(m)
        ));
    }
    lines.push(latency);
    lines
}

fn compute_text(m: &ModelCounters) -> String {
    if m.uses_cache() {
        return format!(
            "cache hit/miss {} usec",
            usec(m.cache_hit.avg_us() + m.cache_miss.avg_us())
        );
    }
    format!(
        "compute input {} usec + compute infer {} usec + compute output {} usec",
        usec(m.compute_input.avg_us()),
        usec(m.compute_infer.avg_us()),
        usec(m.compute_output.avg_us())
    )
}

/// CPU the client used during the level, per request and in cores, and the most it could.
pub struct ClientCost {
    pub usec_per_request: f64,
    pub cores: f64,
    pub capacity: f64,
}

impl ClientCost {
    pub fn of(settings: &Settings, w: &WindowStats) -> Option<ClientCost> {
        let secs = w.duration.as_secs_f64();
        let requests = w.completed();
        if secs <= 0.0 || requests == 0 || w.client_cpu.is_zero() {
            return None;
        }
        let cpu = w.client_cpu.as_secs_f64();
        Some(ClientCost {
            usec_per_request: cpu * 1e6 / requests as f64,
            cores: cpu / secs,
            capacity: client_capacity(settings),
        })
    }

    /// Whether the client was busy enough to have limited the load.
    pub fn saturated(&self) -> bool {
        self.cores >= CLIENT_BUSY_SHARE * self.capacity
    }

    /// `0.95 of 1 client thread (2 cores)`.
    pub fn usage(&self, settings: &Settings) -> String {
        let threads = settings.client_threads;
        let plural = if threads == 1 { "" } else { "s" };
        format!(
            "{:.2} of {threads} client thread{plural} ({} cores)",
            self.cores,
            available_cores()
        )
    }
}

/// `Client CPU: … usec per request …`, and a warning when the client was the limit (closed
/// loop; open-loop levels name the cause in their late-send warning).
pub fn client_cost_lines(settings: &Settings, w: &WindowStats, open_loop: bool) -> Vec<String> {
    let Some(cost) = ClientCost::of(settings, w) else {
        return Vec::new();
    };
    // In-process models or server: the process's CPU is the client's and theirs together.
    let in_process = Capabilities::named(&settings.service_kind).and_then(|api| api.in_process);
    let shared = in_process.or(settings.server_in_process.then_some("server"));
    let usage = match shared {
        Some(what) => format!(
            "{:.2} cores of {}, client and in-process {what} together",
            cost.cores,
            available_cores()
        ),
        None => cost.usage(settings),
    };
    let tokens = w.tokens.as_ref().map_or(0, |t| t.output_tokens.sum());
    let per_token = match tokens {
        0 => String::new(),
        n => format!(
            "{:.1} usec per output token, ",
            w.client_cpu.as_secs_f64() * 1e6 / n as f64
        ),
    };
    let mut lines = vec![format!(
        "    Client CPU: {:.1} usec per request, {per_token}{usage}",
        cost.usec_per_request,
    )];
    // With the server in this process, its CPU is in the figure too: a busy process says
    // nothing about which side limited the load.
    if cost.saturated() && !open_loop && shared.is_none() {
        lines.push(format!(
            "  [WARNING] The client used {}: inferperf, not the server, limited this load. Add --client-threads, or run the client on another machine.",
            cost.usage(settings)
        ));
    }
    lines
}

/// One part of the latency.
struct Part {
    name: &'static str,
    us: f64,
}

/// `Where the time went: client send … + network+server overhead … + queue … + compute …
/// + client receive …` in µs and as shares of the latency.
pub fn time_split_line(w: &WindowStats) -> Option<String> {
    if w.ok == 0 {
        return None;
    }
    if w.tokens.is_some() && w.inter_response.count() > 0 {
        return Some(stream_split_line(w));
    }
    let latency = w.mean_latency_us();
    let service = w.mean_service_us();
    let (send, recv) = (w.avg_send_us(), w.avg_recv_us());
    let mut parts = Vec::new();
    if latency - service >= 0.5 {
        parts.push(Part {
            name: "client queue (late sends)",
            us: latency - service,
        });
    }
    parts.push(Part {
        name: "client send",
        us: send,
    });
    let between = (service - send - recv).max(0.0);
    match &w.server {
        Some(server) => {
            let b = server.breakdown();
            let accounted = b.accounted();
            parts.push(Part {
                name: "network+server overhead",
                us: (between - accounted).max(0.0),
            });
            parts.push(Part {
                name: "queue",
                us: b.queue,
            });
            parts.push(Part {
                name: if b.cache_hit + b.cache_miss > 0.0 {
                    "compute and cache"
                } else {
                    "compute"
                },
                us: b.compute() + b.cache_hit + b.cache_miss,
            });
        }
        None => parts.push(Part {
            name: "network+server",
            us: between,
        }),
    }
    parts.push(Part {
        name: "client receive",
        us: recv,
    });
    let total: f64 = parts.iter().map(|p| p.us).sum();
    let text = parts_text(&parts, latency);
    Some(format!(
        "  Where the time went: {} = {} usec of {} usec latency",
        text.join(" + "),
        usec(total),
        usec(latency)
    ))
}

/// A streamed generation's time as it went: client send, time to first token (network,
/// queue and prefill), generation from the first token to the last (the server's decode),
/// and beside them the client's own CPU per request (reading and parsing the events, spent
/// within those parts, not after them).
fn stream_split_line(w: &WindowStats) -> String {
    let latency = w.mean_latency_us();
    let late = (latency - w.mean_service_us()).max(0.0);
    let send = w.avg_send_us();
    let first = w.first_response.mean() / 1e3;
    let mut parts = Vec::new();
    if late >= 0.5 {
        parts.push(Part {
            name: "client queue (late sends)",
            us: late,
        });
    }
    parts.push(Part {
        name: "client send",
        us: send,
    });
    parts.push(Part {
        name: "time to first token (network, queue, prefill)",
        us: (first - late - send).max(0.0),
    });
    parts.push(Part {
        name: "generation (first to last token: the server's decode)",
        us: (latency - first).max(0.0),
    });
    let text = parts_text(&parts, latency);
    let own = match w.completed() {
        0 => String::new(),
        n if !w.client_cpu.is_zero() => format!(
            "; the client's own CPU: {} usec per request, within those parts",
            usec(w.client_cpu.as_secs_f64() * 1e6 / n as f64)
        ),
        _ => String::new(),
    };
    format!(
        "  Where the time went: {} = {} usec latency{own}",
        text.join(" + "),
        usec(latency)
    )
}

/// Each part as `name N usec (S%)` of `latency`.
fn parts_text(parts: &[Part], latency: f64) -> Vec<String> {
    parts
        .iter()
        .map(|p| {
            format!(
                "{} {} usec ({:.1}%)",
                p.name,
                usec(p.us),
                share(p.us, latency)
            )
        })
        .collect()
}

fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::server::stats::Timed;
    use crate::measure::window::WindowStats;
    use crate::report::test_window;

    fn counters(name: &str, n: u64) -> ModelCounters {
        ModelCounters {
            name: name.into(),
            inference_count: n,
            execution_count: n / 2,
            success: Timed {
                count: n,
                ns: n * 900_000,
            },
            queue: Timed {
                count: n,
                ns: n * 100_000,
            },
            compute_input: Timed {
                count: n,
                ns: n * 10_000,
            },
            compute_infer: Timed {
                count: n,
                ns: n * 700_000,
            },
            compute_output: Timed {
                count: n,
                ns: n * 20_000,
            },
            ..ModelCounters::default()
        }
    }

    fn window_with_server() -> WindowStats {
        // 1000 µs client latency, 64 µs send, 16 µs receive (see test_window).
        let mut w = test_window(&[1000; 10], &[], 1.0);
        w.server = Some(ServerWindow {
            model: counters("m", 10),
            composing: Vec::new(),
            bls: false,
            answers: None,
        });
        w
    }

    #[test]
    fn server_block_has_perf_analyzer_lines() {
        let w = window_with_server();
        let lines = server_lines(w.server.as_ref().unwrap());
        assert_eq!(lines[0], "  Server: ");
        assert_eq!(lines[1], "    Inference count: 10");
        assert_eq!(lines[2], "    Execution count: 5");
        assert_eq!(lines[3], "    Successful request count: 10");
        assert_eq!(
            lines[4],
            "    Avg request latency: 900 usec (overhead 70 usec + queue 100 usec + compute input 10 usec + compute infer 700 usec + compute output 20 usec)"
        );
    }

    #[test]
    fn ensemble_gets_a_block_per_composing_model() {
        let server = ServerWindow {
            model: counters("ens", 4),
            composing: vec![counters("a", 4), counters("b", 4)],
            bls: false,
            answers: None,
        };
        let lines = server_lines(&server);
        assert_eq!(lines[4], "    Avg request latency: 900 usec");
        assert!(
            lines[5].contains("queue 200 usec + compute 1460 usec"),
            "{}",
            lines[5]
        );
        assert_eq!(lines[6], "    a:");
        assert!(lines[10].starts_with("      Avg request latency: 900 usec (overhead"));
        assert_eq!(lines[11], "    b:");
    }

    #[test]
    fn time_split_adds_up_to_the_latency() {
        let line = time_split_line(&window_with_server()).unwrap();
        assert_eq!(
            line,
            "  Where the time went: client send 64 usec (6.4%) + network+server overhead 90 usec (9.0%) + queue 100 usec (10.0%) + compute 730 usec (73.0%) + client receive 16 usec (1.6%) = 1000 usec of 1000 usec latency"
        );
        let mut plain = window_with_server();
        plain.server = None;
        assert!(time_split_line(&plain)
            .unwrap()
            .contains("network+server 920 usec (92.0%)"));
    }

    #[test]
    fn client_cost_is_per_request_and_in_cores() {
        let settings = crate::report::test_settings();
        let mut w = test_window(&[1000; 100], &[], 2.0);
        w.client_cpu = std::time::Duration::from_micros(500);
        let lines = client_cost_lines(&settings, &w, false);
        assert!(
            lines[0].starts_with("    Client CPU: 5.0 usec per request, 0.00 of 1 client thread ("),
            "{}",
            lines[0]
        );
        assert_eq!(lines.len(), 1);
        w.client_cpu = inferperf_wire::number::saturating_secs(2.0 * available_cores());
        let lines = client_cost_lines(&settings, &w, false);
        assert!(
            lines[1].contains("not the server, limited this load"),
            "{lines:?}"
        );
        // The demo's server runs in the client's process: the figure is labelled so, and
        // a busy process is no sign that the client limited the load.
        let mut demo = settings.clone();
        demo.server_in_process = true;
        let lines = client_cost_lines(&demo, &w, false);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("    Client CPU: ")
                && lines[0].contains(" usec per request, ")
                && lines[0].ends_with(&format!(
                    " cores of {}, client and in-process server together",
                    available_cores()
                )),
            "{lines:?}"
        );
    }
}

//! The `llm` models' part of the metrics page, under vLLM's names and labels
//! (`model_name="…"`), or SGLang's (`metrics=sglang`), so that a client that scrapes such
//! an engine reads the embedded one the same way and finds the truth of what it sent: the
//! prefix cache's queried and hit tokens, the requests running and waiting, the cache's
//! fill, the prompt and generated tokens, preemptions (none: the engine never preempts),
//! the finished requests by reason, the TTFT, inter-token and end-to-end histograms, and
//! `inferperf:requests_abandoned_total`, the requests whose client left before the answer
//! was complete. Counters carry `_total` on the page, as the engines' Prometheus clients
//! write them.

use std::fmt::Write as _;

use crate::def::EngineNames;
use crate::llm::engine_timings::{EngineTimings, LatencyHistogram};
use crate::llm::{EngineGauges, ModelNumbers};
use crate::stats::TokenCounts;

/// One family: its vLLM and SGLang names (`None`: the engine has none), type, help, and
/// its value for a model.
struct Family {
    names: [Option<&'static str>; 2],
    kind: &'static str,
    help: &'static str,
    value: fn(&TokenCounts, &EngineGauges) -> f64,
}

impl Family {
    fn name(&self, names: EngineNames) -> Option<&'static str> {
        self.names[names as usize]
    }
}

const FAMILIES: [Family; 9] = [
    Family {
        names: [Some("vllm:num_requests_running"), Some("sglang:num_running_reqs")],
        kind: "gauge",
        help: "Number of requests in model execution batches (holding a slot: prefill or decode).",
        value: |_, g| g.running as f64,
    },
    Family {
        names: [Some("vllm:num_requests_waiting"), Some("sglang:num_queue_reqs")],
        kind: "gauge",
        help: "Number of requests waiting to be processed (for a free slot).",
        value: |_, g| g.waiting as f64,
    },
    Family {
        names: [Some("vllm:kv_cache_usage_perc"), Some("sglang:token_usage")],
        kind: "gauge",
        help: "KV-cache usage. 1 means 100 percent usage (prefix cache blocks held over its capacity in blocks; 0 without a prefix cache).",
        value: |_, g| g.cache_usage,
    },
    Family {
        names: [Some("vllm:prefix_cache_queries_total"), None],
        kind: "counter",
        help: "Prefix cache queries, in terms of number of queried tokens.",
        value: |_, g| g.cache_queries as f64,
    },
    Family {
        names: [Some("vllm:prefix_cache_hits_total"), Some("sglang:cached_tokens_total")],
        kind: "counter",
        help: "Prefix cache hits, in terms of number of cached tokens.",
        value: |_, g| g.cache_hits as f64,
    },
    Family {
        names: [Some("vllm:prompt_tokens_total"), Some("sglang:prompt_tokens_total")],
        kind: "counter",
        help: "Number of prefill tokens processed (prompt tokens of the accepted requests).",
        value: |t, _| t.prompt_tokens as f64,
    },
    Family {
        names: [Some("vllm:generation_tokens_total"), Some("sglang:generation_tokens_total")],
        kind: "counter",
        help: "Number of generation tokens processed.",
        value: |t, _| t.completion_tokens as f64,
    },
    Family {
        names: [Some("inferperf:requests_abandoned_total"); 2],
        kind: "counter",
        help: "Requests whose client went away before the answer was complete (their slot or place in the queue freed).",
        value: |t, _| t.cancelled as f64,
    },
    Family {
        names: [Some("vllm:num_preemptions_total"), Some("sglang:num_retracted_reqs_total")],
        kind: "counter",
        help: "Cumulative number of preemptions (the embedded engine never preempts).",
        value: |_, _| 0.0,
    },
];

/// The timing histograms: vLLM's and SGLang's names, help, and which one.
type Timing = (
    [&'static str; 2],
    &'static str,
    fn(&EngineTimings) -> &LatencyHistogram,
);

const TIMINGS: [Timing; 3] = [
    (
        [
            "vllm:time_to_first_token_seconds",
            "sglang:time_to_first_token_seconds",
        ],
        "Histogram of time to first token in seconds (arrival to the first event).",
        |t| &t.ttft,
    ),
    (
        [
            "vllm:inter_token_latency_seconds",
            "sglang:inter_token_latency_seconds",
        ],
        "Histogram of inter-token latency in seconds (between a sequence's events).",
        |t| &t.itl,
    ),
    (
        [
            "vllm:e2e_request_latency_seconds",
            "sglang:e2e_request_latency_seconds",
        ],
        "Histogram of end to end request latency in seconds (arrival to the last event).",
        |t| &t.e2e,
    ),
];

/// Writes the families of every `llm` model (nothing without one), each under the names
/// its engine has.
pub(crate) fn write(out: &mut String, models: &[ModelNumbers]) {
    for names in [EngineNames::Vllm, EngineNames::Sglang] {
        let models: Vec<&ModelNumbers> = models.iter().filter(|m| m.names == names).collect();
        if models.is_empty() {
            continue;
        }
        write_families(out, names, &models);
        write_timings(out, names, &models);
        if names == EngineNames::Vllm {
            write_finished(out, &models);
        }
    }
}

fn write_families(out: &mut String, names: EngineNames, models: &[&ModelNumbers]) {
    for family in &FAMILIES {
        let Some(name) = family.name(names) else {
            continue;
        };
        let _ = writeln!(
            out,
            "# HELP {name} {}\n# TYPE {name} {}",
            family.help, family.kind
        );
        for model in models {
            let value = (family.value)(&model.tokens, &model.gauges);
            let _ = writeln!(out, "{name}{{model_name=\"{}\"}} {value}", model.name);
        }
    }
}

fn write_timings(out: &mut String, names: EngineNames, models: &[&ModelNumbers]) {
    for (family_names, help, which) in &TIMINGS {
        let name = family_names[names as usize];
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for model in models {
            let labels = format!("model_name=\"{}\"", model.name);
            which(&model.timings).write(out, name, &labels);
        }
    }
}

/// `vllm:request_success_total` by `finished_reason`: `stop`, `length`, and `abort` for
/// the abandoned requests.
fn write_finished(out: &mut String, models: &[&ModelNumbers]) {
    let name = "vllm:request_success_total";
    let _ = writeln!(
        out,
        "# HELP {name} Count of successfully processed requests.\n# TYPE {name} counter"
    );
    for ModelNumbers {
        name: model,
        tokens,
        gauges,
        ..
    } in models.iter().copied()
    {
        let length = gauges.finished_length;
        let reasons = [
            ("stop", tokens.completed.saturating_sub(length)),
            ("length", length),
            ("abort", tokens.cancelled),
        ];
        for (reason, count) in reasons {
            let _ = writeln!(
                out,
                "{name}{{model_name=\"{model}\",finished_reason=\"{reason}\"}} {count}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn each_family_has_help_type_and_one_line_per_model() {
        let tokens = TokenCounts {
            completed: 5,
            cancelled: 1,
            prompt_tokens: 80,
            ..TokenCounts::default()
        };
        let gauges = EngineGauges {
            running: 2,
            cache_queries: 80,
            cache_hits: 32,
            cache_usage: 0.25,
            finished_length: 3,
            ..EngineGauges::default()
        };
        let model = |names| ModelNumbers {
            name: "m".into(),
            names,
            tokens,
            gauges,
            timings: Arc::default(),
        };
        model(EngineNames::Vllm)
            .timings
            .ttft
            .observe(std::time::Duration::from_millis(30));
        let mut out = String::new();
        write(&mut out, &[model(EngineNames::Vllm)]);
        for line in [
            "# TYPE vllm:time_to_first_token_seconds histogram",
            "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 0",
            "vllm:num_preemptions_total{model_name=\"m\"} 0",
            "# TYPE vllm:prefix_cache_hits_total counter",
            "vllm:prefix_cache_hits_total{model_name=\"m\"} 32",
            "vllm:prefix_cache_queries_total{model_name=\"m\"} 80",
            "# TYPE vllm:num_requests_running gauge",
            "vllm:num_requests_running{model_name=\"m\"} 2",
            "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25",
            "vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 2",
            "vllm:request_success_total{model_name=\"m\",finished_reason=\"length\"} 3",
            "vllm:request_success_total{model_name=\"m\",finished_reason=\"abort\"} 1",
            "inferperf:requests_abandoned_total{model_name=\"m\"} 1",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
        let mut none = String::new();
        write(&mut none, &[]);
        assert!(none.is_empty());
        let mut sglang = String::new();
        write(&mut sglang, &[model(EngineNames::Sglang)]);
        for line in [
            "sglang:num_running_reqs{model_name=\"m\"} 2",
            "sglang:cached_tokens_total{model_name=\"m\"} 32",
            "sglang:token_usage{model_name=\"m\"} 0.25",
            "# TYPE sglang:inter_token_latency_seconds histogram",
        ] {
            assert!(sglang.lines().any(|l| l == line), "{line} in\n{sglang}");
        }
        assert!(!sglang.contains("vllm:"), "{sglang}");
    }
}

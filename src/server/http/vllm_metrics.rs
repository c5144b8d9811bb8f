//! The `llm` models' part of the metrics page, under vLLM's names and labels
//! (`model_name="…"`), so that a client that scrapes a vLLM server reads the embedded one
//! the same way and finds the truth of what it sent: the prefix cache's queried and hit
//! tokens, the requests running and waiting, the cache's fill, the prompt and generated
//! tokens, the finished requests by reason, and `inferperf:requests_abandoned_total`, the
//! requests whose client left before the answer was complete. Counters carry `_total` on
//! the page, as vLLM's Prometheus client writes them.

use std::fmt::Write as _;

use crate::server::llm::EngineGauges;
use crate::server::stats::TokenCounts;

/// One model's numbers: its name, what the OpenAI route counted, the engines' state.
type ModelNumbers = (String, TokenCounts, EngineGauges);

/// One family: name, type, help, and its value for a model.
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&TokenCounts, &EngineGauges) -> f64,
}

const FAMILIES: [Family; 8] = [
    Family {
        name: "vllm:num_requests_running",
        kind: "gauge",
        help: "Number of requests in model execution batches (holding a slot: prefill or decode).",
        value: |_, g| g.running as f64,
    },
    Family {
        name: "vllm:num_requests_waiting",
        kind: "gauge",
        help: "Number of requests waiting to be processed (for a free slot).",
        value: |_, g| g.waiting as f64,
    },
    Family {
        name: "vllm:kv_cache_usage_perc",
        kind: "gauge",
        help: "KV-cache usage. 1 means 100 percent usage (prefix cache blocks held over its capacity in blocks; 0 without a prefix cache).",
        value: |_, g| g.cache_usage,
    },
    Family {
        name: "vllm:prefix_cache_queries_total",
        kind: "counter",
        help: "Prefix cache queries, in terms of number of queried tokens.",
        value: |_, g| g.cache_queries as f64,
    },
    Family {
        name: "vllm:prefix_cache_hits_total",
        kind: "counter",
        help: "Prefix cache hits, in terms of number of cached tokens.",
        value: |_, g| g.cache_hits as f64,
    },
    Family {
        name: "vllm:prompt_tokens_total",
        kind: "counter",
        help: "Number of prefill tokens processed (prompt tokens of the accepted requests).",
        value: |t, _| t.prompt_tokens as f64,
    },
    Family {
        name: "vllm:generation_tokens_total",
        kind: "counter",
        help: "Number of generation tokens processed.",
        value: |t, _| t.completion_tokens as f64,
    },
    Family {
        name: "inferperf:requests_abandoned_total",
        kind: "counter",
        help: "Requests whose client went away before the answer was complete (their slot or place in the queue freed).",
        value: |t, _| t.cancelled as f64,
    },
];

/// Writes the vLLM families of every `llm` model (nothing without one).
pub fn write(out: &mut String, models: &[ModelNumbers]) {
    if models.is_empty() {
        return;
    }
    for family in &FAMILIES {
        let name = family.name;
        let _ = writeln!(
            out,
            "# HELP {name} {}\n# TYPE {name} {}",
            family.help, family.kind
        );
        for (model, tokens, gauges) in models {
            let value = (family.value)(tokens, gauges);
            let _ = writeln!(out, "{name}{{model_name=\"{model}\"}} {value}");
        }
    }
    write_finished(out, models);
}

/// `vllm:request_success_total` by `finished_reason`: `stop`, `length`, and `abort` for
/// the abandoned requests.
fn write_finished(out: &mut String, models: &[ModelNumbers]) {
    let name = "vllm:request_success_total";
    let _ = writeln!(
        out,
        "# HELP {name} Count of successfully processed requests.\n# TYPE {name} counter"
    );
    for (model, tokens, gauges) in models {
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
        let mut out = String::new();
        write(&mut out, &[("m".into(), tokens, gauges)]);
        for line in [
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
    }
}

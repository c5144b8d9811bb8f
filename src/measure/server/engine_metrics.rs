//! What an LLM serving engine says it was doing (`--server-metrics`): the engine recognised
//! from its metric names (vLLM, SGLang, TGI, llama.cpp's server, Triton, TensorRT-LLM) or
//! named with `--server-metrics-preset`, and each of its series that means something —
//! requests running and waiting, KV-cache usage, prefix-cache hits and lookups,
//! preemptions, prompt and generated tokens, finished requests, and its TTFT, inter-token
//! and end-to-end histograms — tracked under one key per meaning (`engine:ROLE`, and
//! `engine:ROLE|LE` for a histogram's buckets), so that the scraper keeps them as it keeps
//! any series and a level's figures come out of its merged window
//! ([`super::engine_figures`]).

use std::collections::BTreeMap;

pub use crate::config::Engine;
use crate::prometheus::MetricSample;

/// What a tracked series means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Running,
    Waiting,
    KvUsage,
    CacheHits,
    CacheQueries,
    Preemptions,
    PromptTokens,
    GenerationTokens,
    Requests,
    Ttft,
    Itl,
    E2e,
}

impl Role {
    pub fn key(self) -> &'static str {
        match self {
            Role::Running => "engine:running",
            Role::Waiting => "engine:waiting",
            Role::KvUsage => "engine:kv_usage",
            Role::CacheHits => "engine:cache_hits",
            Role::CacheQueries => "engine:cache_queries",
            Role::Preemptions => "engine:preemptions",
            Role::PromptTokens => "engine:prompt_tokens",
            Role::GenerationTokens => "engine:generation_tokens",
            Role::Requests => "engine:requests",
            Role::Ttft => "engine:ttft",
            Role::Itl => "engine:itl",
            Role::E2e => "engine:e2e",
        }
    }

    pub fn is_counter(self) -> bool {
        !matches!(self, Role::Running | Role::Waiting | Role::KvUsage)
    }

    pub fn is_histogram(self) -> bool {
        matches!(self, Role::Ttft | Role::Itl | Role::E2e)
    }
}

/// One engine's series: (role, family name). A sample of the family (a counter's samples
/// carry `_total`; a histogram's `_bucket`) counts for the role, its labels added up.
type Names = &'static [(Role, &'static str)];

const VLLM: Names = &[
    (Role::Running, "vllm:num_requests_running"),
    (Role::Waiting, "vllm:num_requests_waiting"),
    (Role::KvUsage, "vllm:kv_cache_usage_perc"),
    (Role::KvUsage, "vllm:gpu_cache_usage_perc"),
    (Role::CacheHits, "vllm:prefix_cache_hits"),
    (Role::CacheQueries, "vllm:prefix_cache_queries"),
    (Role::Preemptions, "vllm:num_preemptions"),
    (Role::PromptTokens, "vllm:prompt_tokens"),
    (Role::GenerationTokens, "vllm:generation_tokens"),
    (Role::Requests, "vllm:request_success"),
    (Role::Ttft, "vllm:time_to_first_token_seconds"),
    (Role::Itl, "vllm:inter_token_latency_seconds"),
    (Role::Itl, "vllm:time_per_output_token_seconds"),
    (Role::E2e, "vllm:e2e_request_latency_seconds"),
];
const SGLANG: Names = &[
    (Role::Running, "sglang:num_running_reqs"),
    (Role::Waiting, "sglang:num_queue_reqs"),
    (Role::KvUsage, "sglang:token_usage"),
    (Role::CacheHits, "sglang:cached_tokens"),
    (Role::CacheQueries, "sglang:prompt_tokens"),
    (Role::Preemptions, "sglang:num_retracted_reqs"),
    (Role::PromptTokens, "sglang:prompt_tokens"),
    (Role::GenerationTokens, "sglang:generation_tokens"),
    (Role::Requests, "sglang:num_requests"),
    (Role::Ttft, "sglang:time_to_first_token_seconds"),
    (Role::Itl, "sglang:inter_token_latency_seconds"),
    (Role::Itl, "sglang:time_per_output_token_seconds"),
    (Role::E2e, "sglang:e2e_request_latency_seconds"),
];
const TGI: Names = &[
    (Role::Running, "tgi_batch_current_size"),
    (Role::Waiting, "tgi_queue_size"),
    (Role::Requests, "tgi_request_success"),
    (Role::Itl, "tgi_request_mean_time_per_token_duration"),
    (Role::E2e, "tgi_request_duration"),
];
const LLAMA_CPP: Names = &[
    (Role::Running, "llamacpp:requests_processing"),
    (Role::Waiting, "llamacpp:requests_deferred"),
    (Role::KvUsage, "llamacpp:kv_cache_usage_ratio"),
    (Role::PromptTokens, "llamacpp:prompt_tokens"),
    (Role::GenerationTokens, "llamacpp:tokens_predicted"),
];
const TRITON: Names = &[
    (Role::Waiting, "nv_inference_pending_request_count"),
    (Role::Requests, "nv_inference_request_success"),
];
const TRT_LLM: Names = &[
    (Role::Ttft, "trtllm:time_to_first_token_seconds"),
    (Role::Itl, "trtllm:time_per_output_token_seconds"),
    (Role::E2e, "trtllm:e2e_request_latency_seconds"),
    (Role::Requests, "trtllm:request_success"),
];

impl Engine {
    fn names(self) -> Names {
        match self {
            Engine::Vllm => VLLM,
            Engine::Sglang => SGLANG,
            Engine::Tgi => TGI,
            Engine::LlamaCpp => LLAMA_CPP,
            Engine::Triton => TRITON,
            Engine::TrtLlm => TRT_LLM,
        }
    }

    /// The family name the engine gives a role (the first, where it has two).
    pub fn family(self, role: Role) -> Option<&'static str> {
        (self.names().iter()).find_map(|&(r, name)| (r == role).then_some(name))
    }

    /// The name prefix that marks the engine's series.
    fn prefix(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm:",
            Engine::Sglang => "sglang:",
            Engine::Tgi => "tgi_",
            Engine::LlamaCpp => "llamacpp:",
            Engine::Triton => "nv_inference_",
            Engine::TrtLlm => "trtllm:",
        }
    }

    /// The engine a page comes from: the first whose prefix its series have (TensorRT-LLM
    /// and the LLM engines before Triton, whose `nv_` names a TensorRT-LLM page may carry).
    pub fn recognise(samples: &[MetricSample]) -> Option<Engine> {
        let order = [
            Engine::Vllm,
            Engine::Sglang,
            Engine::TrtLlm,
            Engine::Tgi,
            Engine::LlamaCpp,
            Engine::Triton,
        ];
        order
            .into_iter()
            .find(|e| samples.iter().any(|s| s.name.starts_with(e.prefix())))
    }

    /// The engine's tracked values of one scrape: each role's samples added up, a
    /// histogram's buckets by bound; a role the page gives under two names (an old and a
    /// new one) takes the first it has.
    pub fn values(self, samples: &[MetricSample]) -> BTreeMap<String, f64> {
        let mut values = BTreeMap::new();
        let mut taken: Vec<Role> = Vec::new();
        for &(role, family) in self.names() {
            if taken.contains(&role) {
                continue;
            }
            let mut found = false;
            for sample in samples {
                let Some(key) = sample_key(role, family, sample) else {
                    continue;
                };
                found = true;
                *values.entry(key).or_insert(0.0) += sample.value;
            }
            if found {
                taken.push(role);
            }
        }
        values
    }
}

/// The key a sample counts under for `role` of `family`, if it is one of the family's.
fn sample_key(role: Role, family: &str, sample: &MetricSample) -> Option<String> {
    let name = sample.name.as_str();
    if role.is_histogram() {
        let rest = name.strip_prefix(family)?;
        return match rest {
            "_bucket" => Some(format!("{}|{}", role.key(), sample.label("le")?)),
            _ => None,
        };
    }
    if role == Role::Requests && sample.label("finished_reason") == Some("abort") {
        return None;
    }
    let matches =
        name == family || (role.is_counter() && name.strip_suffix("_total") == Some(family));
    matches.then(|| role.key().to_string())
}

/// Whether a tracked key is a counter (its increase over a window is what it says).
pub fn is_engine_counter(key: &str) -> bool {
    let role = key.split('|').next().unwrap_or(key);
    ROLES.iter().any(|r| r.key() == role && r.is_counter())
}

/// Every role, in the order the figures list them.
pub const ROLES: [Role; 12] = [
    Role::Running,
    Role::Waiting,
    Role::KvUsage,
    Role::CacheHits,
    Role::CacheQueries,
    Role::Preemptions,
    Role::PromptTokens,
    Role::GenerationTokens,
    Role::Requests,
    Role::Ttft,
    Role::Itl,
    Role::E2e,
];

#[cfg(test)]
#[path = "engine_metrics_tests.rs"]
mod tests;

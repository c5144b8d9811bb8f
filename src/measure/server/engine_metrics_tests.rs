//! Unit tests of the engine metrics: recognition, tracked keys, and a level's figures.

use super::*;
use crate::prometheus;

fn samples(text: &str) -> Vec<MetricSample> {
    prometheus::parse(text).unwrap().samples
}

const VLLM_PAGE: &str = "\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name=\"m\"} 3
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{model_name=\"m\"} 40
# TYPE vllm:request_success_total counter
vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 5
vllm:request_success_total{model_name=\"m\",finished_reason=\"length\"} 2
vllm:request_success_total{model_name=\"m\",finished_reason=\"abort\"} 9
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.01\"} 1
vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 7
vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 0.5
vllm:time_to_first_token_seconds_count{model_name=\"m\"} 7
";

#[test]
fn an_engine_is_recognised_by_its_names_and_its_series_tracked_by_meaning() {
    let page = samples(VLLM_PAGE);
    assert_eq!(Engine::recognise(&page), Some(Engine::Vllm));
    let values = Engine::Vllm.values(&page);
    assert_eq!(values["engine:running"], 3.0);
    assert_eq!(values["engine:cache_hits"], 40.0);
    assert_eq!(values["engine:requests"], 7.0, "aborted requests left out");
    assert_eq!(values["engine:ttft|0.01"], 1.0);
    assert_eq!(values["engine:ttft|+Inf"], 7.0);
    assert!(
        !values.contains_key("engine:ttft"),
        "sum and count are not buckets"
    );
    assert!(is_engine_counter("engine:ttft|0.01"));
    assert!(is_engine_counter("engine:requests"));
    assert!(!is_engine_counter("engine:running"));
    let triton = samples("nv_inference_request_success{model=\"m\",version=\"1\"} 4\n");
    assert_eq!(Engine::recognise(&triton), Some(Engine::Triton));
    assert_eq!(Engine::recognise(&samples("up 1\n")), None);
}

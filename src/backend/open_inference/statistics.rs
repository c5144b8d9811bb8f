//! The statistics extension's JSON answer (`GET /v2/models/stats`, and Triton in process
//! through its C API) read into the protobuf `ModelStatistics` that every source of server
//! statistics becomes.

use serde_json::Value;

use inferperf_wire::proto::{InferStatistics, ModelStatistics, StatisticDuration};

/// The extension's JSON (`{"model_stats": [...]}`) as protobuf messages; `None` when the
/// answer is not in that form.
pub fn parse_statistics_json(json: &Value) -> Option<Vec<ModelStatistics>> {
    let list = json.get("model_stats")?.as_array()?;
    Some(list.iter().map(model_statistics).collect())
}

fn model_statistics(m: &Value) -> ModelStatistics {
    let stats = &m["inference_stats"];
    ModelStatistics {
        name: m["name"].as_str().unwrap_or_default().to_string(),
        version: m["version"].as_str().unwrap_or_default().to_string(),
        last_inference: number(&m["last_inference"]),
        inference_count: number(&m["inference_count"]),
        execution_count: number(&m["execution_count"]),
        inference_stats: Some(InferStatistics {
            success: duration(&stats["success"]),
            fail: duration(&stats["fail"]),
            queue: duration(&stats["queue"]),
            compute_input: duration(&stats["compute_input"]),
            compute_infer: duration(&stats["compute_infer"]),
            compute_output: duration(&stats["compute_output"]),
            cache_hit: duration(&stats["cache_hit"]),
            cache_miss: duration(&stats["cache_miss"]),
        }),
        batch_stats: Vec::new(),
        response_stats: Default::default(),
    }
}

/// A counter that may come as a JSON number or (from some servers) a string.
fn number(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

fn duration(v: &Value) -> Option<StatisticDuration> {
    Some(StatisticDuration {
        count: number(&v["count"]),
        ns: number(&v["ns"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn triton_statistics_json_is_read() {
        let answer = json!({"model_stats": [{
            "name": "m", "version": "1", "last_inference": 1700000000000u64,
            "inference_count": 12, "execution_count": 3,
            "inference_stats": {
                "success": {"count": 4, "ns": 4000}, "fail": {"count": 1, "ns": 10},
                "queue": {"count": 4, "ns": 400}, "compute_input": {"count": 4, "ns": "40"},
                "compute_infer": {"count": 4, "ns": 3000}, "compute_output": {"count": 4, "ns": 80},
                "cache_hit": {"count": 0, "ns": 0}
            },
            "batch_stats": []
        }]});
        let stats = parse_statistics_json(&answer).expect("model_stats");
        let s = &stats[0];
        assert_eq!(
            (s.name.as_str(), s.inference_count, s.execution_count),
            ("m", 12, 3)
        );
        let i = s.inference_stats.unwrap();
        assert_eq!(i.success.unwrap().ns, 4000);
        assert_eq!(i.compute_input.unwrap().ns, 40);
        assert_eq!(i.cache_miss.unwrap().count, 0);
        assert!(parse_statistics_json(&json!({"error": "x"})).is_none());
    }
}

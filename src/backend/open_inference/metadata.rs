//! What a model is, as the Open Inference Protocol's metadata and Triton's model
//! configuration say it — in their JSON form (the REST answers, Triton in process) and their
//! protobuf form (the gRPC answers, the embedded models in process) — read into
//! [`Discovered`] and [`ConfigFacts`].

use serde_json::Value;

use crate::backend::{server_datatype, ConfigFacts, Discovered, Target};
use inferperf_wire::error::RunResult;
use inferperf_wire::model::{DataType, Scheduler, TensorSpec};
use inferperf_wire::proto;

/// Model metadata: `{name, versions, platform, inputs: [{name, datatype, shape}], outputs}`.
pub fn parse_metadata(meta: &Value, target: &Target) -> RunResult<Discovered> {
    Ok(Discovered {
        name: meta["name"].as_str().unwrap_or(&target.model).to_string(),
        version: target.version.clone(),
        platform: meta["platform"].as_str().unwrap_or_default().to_string(),
        inputs: parse_tensors(&meta["inputs"])?,
        outputs: parse_tensors(&meta["outputs"])?,
        ..Default::default()
    })
}

fn parse_tensors(list: &Value) -> RunResult<Vec<TensorSpec>> {
    let Some(items) = list.as_array() else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap_or_default().to_string();
            let datatype: DataType = server_datatype(t["datatype"].as_str().unwrap_or(""), &name)?;
            let shape = t["shape"]
                .as_array()
                .map(|dims| dims.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default();
            Ok(TensorSpec {
                name,
                datatype,
                shape,
            })
        })
        .collect()
}

/// Names in first-seen order without repeats (an ensemble may call a model twice).
pub fn unique(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = Vec::new();
    for name in names {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}

/// Triton's JSON model configuration.
pub fn parse_config(config: &Value) -> ConfigFacts {
    let scheduler = if config
        .get("ensemble_scheduling")
        .is_some_and(|v| !v.is_null())
    {
        Scheduler::Ensemble
    } else if config
        .get("sequence_batching")
        .is_some_and(|v| !v.is_null())
    {
        Scheduler::Sequence
    } else if config.get("dynamic_batching").is_some_and(|v| !v.is_null()) {
        Scheduler::Dynamic
    } else {
        Scheduler::None
    };
    ConfigFacts {
        max_batch_size: config["max_batch_size"].as_u64().unwrap_or(0) as u32,
        scheduler,
        decoupled: config["model_transaction_policy"]["decoupled"]
            .as_bool()
            .unwrap_or(false),
        response_cache: config["response_cache"]["enable"]
            .as_bool()
            .unwrap_or(false),
        composing_models: config["ensemble_scheduling"]["step"]
            .as_array()
            .map(|steps| {
                let names = steps.iter().filter_map(|s| s["model_name"].as_str());
                unique(names.map(String::from))
            })
            .unwrap_or_default(),
        string_sequence_ids: string_correlation_ids_json(&config["sequence_batching"]),
    }
}

/// Whether a sequence batcher's `CORRID` control input is `TYPE_STRING`.
fn string_correlation_ids_json(batching: &Value) -> bool {
    let controls = batching["control_input"].as_array().into_iter().flatten();
    controls
        .flat_map(|input| input["control"].as_array().into_iter().flatten())
        .any(|c| c["kind"] == "CONTROL_SEQUENCE_CORRID" && c["data_type"] == "TYPE_STRING")
}

/// What discovery read, from the protobuf metadata answer (gRPC and in-process).
pub fn discovered(
    target: &Target,
    extensions: Vec<String>,
    metadata: proto::ModelMetadataResponse,
    config: Option<ConfigFacts>,
) -> RunResult<Discovered> {
    Ok(Discovered {
        extensions,
        name: metadata.name,
        version: target.version.clone(),
        platform: metadata.platform,
        inputs: tensors(metadata.inputs)?,
        outputs: tensors(metadata.outputs)?,
        config,
    })
}

fn tensors(
    list: Vec<proto::model_metadata_response::TensorMetadata>,
) -> RunResult<Vec<TensorSpec>> {
    list.into_iter()
        .map(|t| {
            Ok(TensorSpec {
                datatype: server_datatype(&t.datatype, &t.name)?,
                name: t.name,
                shape: t.shape,
            })
        })
        .collect()
}

pub fn config_facts(config: &proto::ModelConfig) -> ConfigFacts {
    use proto::model_config::SchedulingChoice;
    let scheduler = match config.scheduling_choice {
        Some(SchedulingChoice::DynamicBatching(_)) => Scheduler::Dynamic,
        Some(SchedulingChoice::SequenceBatching(_)) => Scheduler::Sequence,
        Some(SchedulingChoice::EnsembleScheduling(_)) => Scheduler::Ensemble,
        None => Scheduler::None,
    };
    ConfigFacts {
        max_batch_size: config.max_batch_size.max(0) as u32,
        scheduler,
        decoupled: config
            .model_transaction_policy
            .as_ref()
            .is_some_and(|p| p.decoupled),
        response_cache: config.response_cache.as_ref().is_some_and(|c| c.enable),
        composing_models: match &config.scheduling_choice {
            Some(SchedulingChoice::EnsembleScheduling(e)) => {
                unique(e.step.iter().map(|s| s.model_name.clone()))
            }
            _ => Vec::new(),
        },
        string_sequence_ids: match &config.scheduling_choice {
            Some(SchedulingChoice::SequenceBatching(s)) => string_correlation_ids(s),
            _ => false,
        },
    }
}

/// Whether a sequence batcher's `CORRID` control input is `TYPE_STRING`.
fn string_correlation_ids(batching: &proto::ModelSequenceBatching) -> bool {
    use proto::model_sequence_batching::control::Kind;
    let string = inferperf_wire::model::DataType::Bytes.config_enum();
    (batching.control_input.iter())
        .flat_map(|input| &input.control)
        .any(|c| c.kind == Kind::ControlSequenceCorrid as i32 && c.data_type == string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn triton_config_json_is_read() {
        let facts = parse_config(&json!({
            "max_batch_size": 8,
            "dynamic_batching": {"preferred_batch_size": [4]},
            "model_transaction_policy": {"decoupled": false},
            "response_cache": {"enable": true}
        }));
        assert_eq!(facts.max_batch_size, 8);
        assert_eq!(facts.scheduler, Scheduler::Dynamic);
        assert!(facts.response_cache);
        assert_eq!(parse_config(&json!({})).scheduler, Scheduler::None);
        let sequence = parse_config(&json!({"sequence_batching": {"control_input": [
            {"name": "CORRID", "control": [
                {"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_STRING"}]}]}}));
        assert_eq!(sequence.scheduler, Scheduler::Sequence);
        assert!(sequence.string_sequence_ids);
        let numeric = parse_config(&json!({"sequence_batching": {}}));
        assert!(!numeric.string_sequence_ids);
    }

    #[test]
    fn unknown_datatype_names_the_tensor() {
        let err =
            parse_tensors(&json!([{"name": "X", "datatype": "FP8", "shape": [1]}])).unwrap_err();
        assert!(err.to_string().contains("'X'"), "{err}");
    }
}

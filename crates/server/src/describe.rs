//! What the server says about itself and its models: server metadata, model metadata and
//! Triton's model configuration, built once as the gRPC (protobuf) messages and written as
//! the HTTP JSON objects from those same messages, so both front ends and the in-process
//! API describe a model identically.

use serde_json::{json, Value};

use super::def::ModelKind;
use super::models::Model;
use inferperf_wire::model::{DataType, TensorSpec};
use inferperf_wire::proto::model_config::SchedulingChoice;
use inferperf_wire::proto::model_instance_group::Kind;
use inferperf_wire::proto::model_metadata_response::TensorMetadata;
use inferperf_wire::proto::{
    ModelConfig, ModelDynamicBatching, ModelInput, ModelInstanceGroup, ModelMetadataResponse,
    ModelOutput, ModelTransactionPolicy, ServerMetadataResponse,
};

/// The platform and backend names the server reports for every model.
const PLATFORM: &str = "inferperf";

/// The protocol extensions the server advertises.
pub(crate) const EXTENSIONS: [&str; 4] = [
    "binary_tensor_data",
    "model_configuration",
    "statistics",
    "system_shared_memory",
];

pub(crate) fn server_metadata(statistics: bool) -> ServerMetadataResponse {
    let offered = EXTENSIONS
        .iter()
        .filter(|e| statistics || **e != "statistics");
    ServerMetadataResponse {
        name: "inferperf".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        extensions: offered.map(|e| e.to_string()).collect(),
    }
}

pub(crate) fn server_metadata_json(statistics: bool) -> Value {
    let m = server_metadata(statistics);
    json!({"name": m.name, "version": m.version, "extensions": m.extensions})
}

fn tensor_metadata(specs: &[TensorSpec], shape: &[i64]) -> Vec<TensorMetadata> {
    let meta = |t: &TensorSpec| TensorMetadata {
        name: t.name.clone(),
        datatype: t.datatype.as_str().to_string(),
        shape: shape.to_vec(),
    };
    specs.iter().map(meta).collect()
}

/// The model's metadata; shapes carry a leading -1 when the model batches.
pub(crate) fn metadata(model: &Model) -> ModelMetadataResponse {
    let shape = model.def.metadata_shape();
    ModelMetadataResponse {
        name: model.name().to_string(),
        versions: vec!["1".to_string()],
        platform: PLATFORM.to_string(),
        inputs: tensor_metadata(&model.inputs, &shape),
        outputs: tensor_metadata(&model.outputs, &shape),
    }
}

pub(crate) fn metadata_json(m: &ModelMetadataResponse) -> Value {
    let tensors = |ts: &[TensorMetadata]| -> Vec<Value> {
        let tensor =
            |t: &TensorMetadata| json!({"name": t.name, "datatype": t.datatype, "shape": t.shape});
        ts.iter().map(tensor).collect()
    };
    json!({
        "name": m.name,
        "versions": m.versions,
        "platform": m.platform,
        "inputs": tensors(&m.inputs),
        "outputs": tensors(&m.outputs),
    })
}

/// The model's configuration in Triton's protobuf form.
pub(crate) fn config(model: &Model) -> ModelConfig {
    let def = &model.def;
    let input = |t: &TensorSpec| ModelInput {
        name: t.name.clone(),
        data_type: t.datatype.config_enum(),
        dims: t.shape.clone(),
        optional: false,
    };
    let output = |t: &TensorSpec| ModelOutput {
        name: t.name.clone(),
        data_type: t.datatype.config_enum(),
        dims: t.shape.clone(),
    };
    let batching = def.dynamic_batching().then(|| {
        SchedulingChoice::DynamicBatching(ModelDynamicBatching {
            preferred_batch_size: (def.preferred_batch.iter())
                .map(|&b| i32::try_from(b).unwrap_or(i32::MAX))
                .collect(),
            max_queue_delay_microseconds: def.queue_delay_us.unwrap_or(0),
            preserve_ordering: false,
        })
    });
    let batching = match def.kind {
        ModelKind::Sequence { string_ids } => Some(sequence_batching(string_ids)),
        _ => batching,
    };
    ModelConfig {
        name: model.name().to_string(),
        platform: PLATFORM.to_string(),
        backend: PLATFORM.to_string(),
        max_batch_size: i32::try_from(def.kserve_max_batch()).unwrap_or(i32::MAX),
        input: model.inputs.iter().map(input).collect(),
        output: model.outputs.iter().map(output).collect(),
        instance_group: vec![ModelInstanceGroup {
            name: format!("{}_0", model.name()),
            count: i32::try_from(def.instances).unwrap_or(i32::MAX),
            kind: Kind::Cpu as i32,
        }],
        scheduling_choice: batching,
        model_transaction_policy: Some(ModelTransactionPolicy {
            decoupled: model.decoupled(),
        }),
        ..Default::default()
    }
}

/// Triton's sequence batcher, with a `CORRID` control of the correlation ids' type.
fn sequence_batching(string_ids: bool) -> SchedulingChoice {
    use inferperf_wire::proto::model_sequence_batching::{
        control::Kind as ControlKind, Control, ControlInput,
    };
    let data_type = if string_ids {
        DataType::Bytes
    } else {
        DataType::Uint64
    };
    SchedulingChoice::SequenceBatching(inferperf_wire::proto::ModelSequenceBatching {
        max_sequence_idle_microseconds: 1_000_000,
        control_input: vec![ControlInput {
            name: "CORRID".into(),
            control: vec![Control {
                kind: ControlKind::ControlSequenceCorrid as i32,
                data_type: data_type.config_enum(),
            }],
        }],
    })
}

/// Triton's spelling of a datatype in the model configuration.
fn config_type(data_type: i32) -> String {
    match DataType::from_config_enum(data_type) {
        Some(DataType::Bytes) => "TYPE_STRING".to_string(),
        Some(other) => format!("TYPE_{}", other.as_str()),
        None => "TYPE_INVALID".to_string(),
    }
}

fn tensor_json(name: &str, data_type: i32, dims: &[i64]) -> Value {
    json!({"name": name, "data_type": config_type(data_type), "dims": dims})
}

fn group_json(g: &ModelInstanceGroup) -> Value {
    json!({"name": g.name, "count": g.count, "kind": kind_name(g.kind)})
}

/// The configuration as Triton's HTTP endpoint writes it.
pub(crate) fn config_json(c: &ModelConfig) -> Value {
    let inputs: Vec<Value> = (c.input.iter())
        .map(|t| tensor_json(&t.name, t.data_type, &t.dims))
        .collect();
    let outputs: Vec<Value> = (c.output.iter())
        .map(|t| tensor_json(&t.name, t.data_type, &t.dims))
        .collect();
    let groups: Vec<Value> = c.instance_group.iter().map(group_json).collect();
    let mut out = json!({
        "name": c.name,
        "platform": c.platform,
        "backend": c.backend,
        "max_batch_size": c.max_batch_size,
        "input": inputs,
        "output": outputs,
        "instance_group": groups,
        "model_transaction_policy": {
            "decoupled": c.model_transaction_policy.as_ref().is_some_and(|p| p.decoupled),
        },
    });
    if let Some(SchedulingChoice::SequenceBatching(s)) = &c.scheduling_choice {
        let controls: Vec<Value> = (s.control_input.iter())
            .map(|input| {
                let control: Vec<Value> = (input.control.iter())
                    .map(|c| json!({"kind": "CONTROL_SEQUENCE_CORRID", "data_type": config_type(c.data_type)}))
                    .collect();
                json!({"name": input.name, "control": control})
            })
            .collect();
        out["sequence_batching"] = json!({
            "max_sequence_idle_microseconds": s.max_sequence_idle_microseconds,
            "control_input": controls,
        });
    }
    if let Some(SchedulingChoice::DynamicBatching(d)) = &c.scheduling_choice {
        out["dynamic_batching"] = json!({
            "preferred_batch_size": d.preferred_batch_size,
            "max_queue_delay_microseconds": d.max_queue_delay_microseconds,
            "preserve_ordering": d.preserve_ordering,
        });
    }
    out
}

fn kind_name(kind: i32) -> &'static str {
    match Kind::try_from(kind) {
        Ok(Kind::Gpu) => "KIND_GPU",
        Ok(Kind::Cpu) => "KIND_CPU",
        Ok(Kind::Model) => "KIND_MODEL",
        _ => "KIND_AUTO",
    }
}

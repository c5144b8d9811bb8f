//! What the server says about the model, read by the adapter's discovery into
//! [`Discovered`] and settled into the run's `ModelSpec`: batching, the scheduler, whether the
//! model is decoupled.

use super::Target;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{ModelSpec, TensorSpec};

/// Reads what the server says about the model into a `ModelSpec`, and checks that the run
/// can measure it (a decoupled model answers only over a stream).
pub async fn discover(target: &Target) -> RunResult<ModelSpec> {
    let spec = target.api.discover(target).await?.into_spec();
    if spec.decoupled && !target.streaming {
        return Err(RunError::bad_option(format!(
            "Model '{}' is decoupled: it answers over a gRPC stream only (perhaps many answers per request); add -i grpc --streaming.",
            spec.name
        )));
    }
    Ok(spec)
}

/// What discovery read, before the batch dimension is settled.
#[derive(Debug, Default)]
pub struct Discovered {
    pub extensions: Vec<String>,
    pub name: String,
    pub version: String,
    pub platform: String,
    /// Shapes as the metadata gives them (with the batch dimension for batching models).
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    /// Triton's model configuration, when the server answered for it.
    pub config: Option<ConfigFacts>,
}

/// The parts of Triton's model configuration that matter to a run.
#[derive(Debug, Default, Clone)]
pub struct ConfigFacts {
    pub max_batch_size: u32,
    pub scheduler: inferperf_wire::model::Scheduler,
    pub decoupled: bool,
    pub response_cache: bool,
    /// The models an ensemble's steps call, in step order.
    pub composing_models: Vec<String>,
    /// The sequence batcher's `CORRID` control is `TYPE_STRING`.
    pub string_sequence_ids: bool,
}

impl Discovered {
    /// Settles batching: from the configuration when there is one; without it a leading -1
    /// on every input of rank ≥ 2 is taken as the batch dimension (limit unknown).
    fn into_spec(self) -> ModelSpec {
        let assumed_batching = !self.inputs.is_empty()
            && self
                .inputs
                .iter()
                .all(|t| t.shape.len() >= 2 && t.shape[0] == -1);
        let (max_batch_size, facts) = match &self.config {
            Some(c) => (c.max_batch_size, c.clone()),
            None if assumed_batching => (u32::MAX, ConfigFacts::default()),
            None => (0, ConfigFacts::default()),
        };
        let strip = |tensors: Vec<TensorSpec>| -> Vec<TensorSpec> {
            tensors
                .into_iter()
                .map(|mut t| {
                    if max_batch_size > 0 && !t.shape.is_empty() {
                        t.shape.remove(0);
                    }
                    t
                })
                .collect()
        };
        ModelSpec {
            name: self.name,
            version: self.version,
            platform: self.platform,
            inputs: strip(self.inputs),
            outputs: strip(self.outputs),
            max_batch_size,
            scheduler: facts.scheduler,
            decoupled: facts.decoupled,
            response_cache: facts.response_cache,
            composing_models: facts.composing_models,
            has_config: self.config.is_some(),
            server_extensions: self.extensions,
            string_sequence_ids: facts.string_sequence_ids,
        }
    }
}

/// Parses a datatype named by the server, with a sentence naming the tensor when unknown.
pub fn server_datatype(text: &str, tensor: &str) -> RunResult<inferperf_wire::model::DataType> {
    text.parse().map_err(|_| {
        RunError::failed(format!(
            "The server declares tensor '{tensor}' with datatype '{text}', which inferperf does not know."
        ))
    })
}

//! Several servers of one model in one run (`-u a,b,c`): each URL is its own [`Target`]
//! with its own connections and its own encoded requests (an HTTP request carries its
//! server's `Host`), and discovery must read the same model from each, so that the load
//! spread over them is the same load. This exists so that the drivers only pick a replica
//! by index and never look at URLs.

use std::sync::Arc;

use super::{discover, Request, RequestShape, Target};
use crate::config::TargetConfig;
use crate::data::Dataset;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{ModelSpec, TensorSpec};

/// One server of the run, with the dataset's requests encoded for it.
#[derive(Debug, Clone)]
pub struct Replica {
    pub target: Arc<Target>,
    pub requests: Arc<Vec<Request>>,
}

/// Every server of the run, in `-u` order; a sample's replica index points into it.
#[derive(Debug, Clone)]
pub struct Replicas {
    pub list: Vec<Replica>,
}

impl Replicas {
    /// One server: the run as it is without replicas.
    pub fn single(target: Arc<Target>, requests: Arc<Vec<Request>>) -> Replicas {
        Replicas {
            list: vec![Replica { target, requests }],
        }
    }

    /// Encodes the dataset for each target.
    pub fn encode(
        targets: &[Arc<Target>],
        model: &ModelSpec,
        dataset: &Dataset,
    ) -> RunResult<Replicas> {
        let list = targets
            .iter()
            .map(|target| {
                Ok(Replica {
                    target: target.clone(),
                    requests: Arc::new(target.encode(model, dataset)?),
                })
            })
            .collect::<RunResult<Vec<_>>>()?;
        Ok(Replicas { list })
    }

    /// The servers with the dataset encoded for the warm-up, when its requests differ from
    /// the measured ones (`--cache-bust warmup_isolation_*`); `None` when they do not.
    pub fn for_warm_up(&self, model: &ModelSpec, dataset: &Dataset) -> RunResult<Option<Replicas>> {
        let mut changed = false;
        let list = (self.list.iter())
            .map(|replica| match replica.target.for_warm_up() {
                Some(target) => {
                    changed = true;
                    let target = Arc::new(target);
                    let requests = Arc::new(target.encode(model, dataset)?);
                    Ok(Replica { target, requests })
                }
                None => Ok(replica.clone()),
            })
            .collect::<RunResult<Vec<_>>>()?;
        Ok(changed.then_some(Replicas { list }))
    }

    /// The first server: the one server-side statistics and metrics are read from.
    pub fn first(&self) -> &Replica {
        &self.list[0]
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The replica that in-flight slot (or send) `index` goes to: round-robin.
    pub fn for_index(&self, index: usize) -> (u16, &Replica) {
        let replica = index % self.list.len().max(1);
        (replica as u16, &self.list[replica])
    }
}

/// Resolves every `-u` server, for requests of `shape`.
pub async fn resolve_all(cfg: &TargetConfig, shape: RequestShape) -> RunResult<Vec<Arc<Target>>> {
    let mut targets = Vec::with_capacity(cfg.urls.len());
    for url in &cfg.urls {
        targets.push(Arc::new(Target::resolve_at(cfg, shape, url).await?));
    }
    Ok(targets)
}

/// Reads the model from every server; the first one's answer is the run's, and a server
/// that describes the model otherwise is named.
pub async fn discover_all(targets: &[Arc<Target>]) -> RunResult<ModelSpec> {
    let Some((first, others)) = targets.split_first() else {
        return Err(RunError::failed("internal: no server to profile"));
    };
    let model = discover(first).await?;
    for target in others {
        let theirs = discover(target).await?;
        if let Some(difference) = difference(&model, &theirs) {
            return Err(RunError::failed(format!(
                "The server at {} describes model '{}' differently from {} ({difference}): every -u must serve the same model.",
                target.peer.authority, first.model, first.peer.authority
            )));
        }
    }
    Ok(model)
}

/// What differs between two servers' descriptions of the model, if anything that shapes
/// the requests does.
fn difference(ours: &ModelSpec, theirs: &ModelSpec) -> Option<String> {
    if ours.name != theirs.name {
        return Some(format!("name '{}' instead of '{}'", theirs.name, ours.name));
    }
    if ours.max_batch_size != theirs.max_batch_size {
        return Some(format!(
            "max batch size {} instead of {}",
            theirs.max_batch_size, ours.max_batch_size
        ));
    }
    tensors_difference("input", &ours.inputs, &theirs.inputs)
        .or_else(|| tensors_difference("output", &ours.outputs, &theirs.outputs))
}

fn tensors_difference(kind: &str, ours: &[TensorSpec], theirs: &[TensorSpec]) -> Option<String> {
    let names = |list: &[TensorSpec]| list.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    if names(ours) != names(theirs) {
        return Some(format!(
            "{kind}s {:?} instead of {:?}",
            names(theirs),
            names(ours)
        ));
    }
    ours.iter().zip(theirs).find_map(|(a, b)| {
        if a.datatype != b.datatype {
            Some(format!(
                "{kind} '{}' has datatype {} instead of {}",
                a.name, b.datatype, a.datatype
            ))
        } else if a.shape != b.shape {
            Some(format!(
                "{kind} '{}' has shape {:?} instead of {:?}",
                a.name, b.shape, a.shape
            ))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferperf_wire::model::DataType;

    fn model(shape: Vec<i64>) -> ModelSpec {
        ModelSpec {
            name: "m".into(),
            version: String::new(),
            platform: String::new(),
            inputs: vec![TensorSpec {
                name: "IN".into(),
                datatype: DataType::Fp32,
                shape,
            }],
            outputs: Vec::new(),
            max_batch_size: 0,
            scheduler: Default::default(),
            decoupled: false,
            response_cache: false,
            composing_models: Vec::new(),
            has_config: false,
            server_extensions: Vec::new(),
            string_sequence_ids: false,
        }
    }

    #[test]
    fn a_different_shape_is_named() {
        assert_eq!(difference(&model(vec![4]), &model(vec![4])), None);
        let said = difference(&model(vec![4]), &model(vec![8])).unwrap();
        assert_eq!(said, "input 'IN' has shape [8] instead of [4]");
    }
}

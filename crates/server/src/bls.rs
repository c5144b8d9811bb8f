//! The `bls` kind: a model whose every request calls other served models before it answers,
//! as a Triton Python model calls its composing models through BLS. It exists so that a
//! client's `--bls-composing-models` breakdown has a server with a known truth: the calls
//! run inside the BLS model's compute (its `compute_infer` spans them) and each call counts
//! in the called model's own statistics, as Triton counts them.

use std::collections::BTreeMap;
use std::time::Instant;

use super::def::ModelKind;
use super::error::InferError;
use super::served::Served;
use inferperf_wire::{InferRequest, InferResponse};

/// Checks every `bls` model's calls when the server is built: each names another served
/// model that is neither a `bls` model nor OpenAI-only nor decoupled, and that takes the
/// BLS model's inputs (same datatype and dimensions), since each call forwards them.
pub(super) fn check_calls(models: &BTreeMap<String, Served>) -> anyhow::Result<()> {
    for served in models.values() {
        let ModelKind::Bls { calls } = &served.model.def.kind else {
            continue;
        };
        let caller = &served.model.def;
        for call in calls {
            let Some(callee) = models.get(call) else {
                anyhow::bail!("model '{}': calls={call} names no served model; define it with another --model", caller.name);
            };
            let def = &callee.model.def;
            let why = match &def.kind {
                ModelKind::Bls { .. } => Some("is a bls model itself (calls do not nest)"),
                k if k.openai() || k.decoupled() => Some("is not a unary KServe model"),
                ModelKind::AddSub | ModelKind::Sequence { .. } => {
                    Some("takes other inputs than the bls model's INPUT0")
                }
                _ if def.datatype != caller.datatype || def.dims != caller.dims => {
                    Some("has another datatype or shape than the bls model")
                }
                _ => None,
            };
            if let Some(why) = why {
                anyhow::bail!("model '{}': calls={call}, but '{call}' {why}", caller.name);
            }
        }
    }
    Ok(())
}

/// One request to a `bls` model: its calls in turn, each on the request's inputs, then its
/// own identity answer. A call that fails fails the request (counted as a failure of the
/// BLS model too).
pub(super) async fn infer(
    bls: &Served,
    calls: &[&Served],
    request: InferRequest,
    arrival: Instant,
) -> Result<InferResponse, InferError> {
    let job = bls.model.check(request.clone(), arrival)?;
    let started = Instant::now();
    for callee in calls {
        let mut call = request.clone();
        call.id = String::new();
        if let Err(error) = callee.infer(call, Instant::now()).await {
            bls.model.record_failed(arrival);
            return Err(error);
        }
    }
    bls.model.answer_after_calls(job, started)
}

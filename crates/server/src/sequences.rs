//! The `sequence` model kind's state: an accumulator keyed by correlation id with Triton's
//! sequence-batching rules. A request must carry `sequence_id`; `sequence_start` begins (or
//! restarts) the id's sequence at 0; a request for an id with no live sequence is rejected
//! as Triton rejects it; each request adds its INPUT to the id's sum, which the answer
//! carries; `sequence_end` frees the id. Counted: sequences started and completed, and
//! requests rejected — the truth a load tester's sequence figures are checked against.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::InferError;

/// The live sequences of one model and its counters.
#[derive(Debug, Default)]
pub(crate) struct SequenceBook {
    live: Mutex<HashMap<String, i64>>,
    started: AtomicU64,
    completed: AtomicU64,
    rejected: AtomicU64,
}

/// A snapshot of a [`SequenceBook`]'s counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SequenceCounts {
    pub started: u64,
    pub completed: u64,
    pub rejected: u64,
    /// Sequences started and not ended yet.
    pub live: u64,
}

impl SequenceBook {
    /// Applies one request of `model` carrying `value`: the running sum of its sequence.
    pub(crate) fn step(
        &self,
        model: &str,
        params: &Map<String, Value>,
        value: i64,
        string_ids: bool,
    ) -> Result<i64, InferError> {
        let stepped = match params.get("sequence_id") {
            Some(Value::Number(_)) if string_ids => Err(InferError::BadRequest(format!(
                "sequence batching of model '{model}' expects a string correlation ID, not a number"
            ))),
            _ => self.apply(model, params, value),
        };
        if stepped.is_err() {
            self.rejected.fetch_add(1, Ordering::Relaxed);
        }
        stepped
    }

    fn apply(
        &self,
        model: &str,
        params: &Map<String, Value>,
        value: i64,
    ) -> Result<i64, InferError> {
        let id = match params.get("sequence_id") {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => n.to_string(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => {
                return Err(InferError::BadRequest(format!(
                    "inference request to model '{model}' must specify a non-zero or non-empty correlation ID"
                )))
            }
        };
        let flag = |name: &str| params.get(name).and_then(Value::as_bool).unwrap_or(false);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if flag("sequence_start") {
            live.insert(id.clone(), 0);
            self.started.fetch_add(1, Ordering::Relaxed);
        }
        let Some(sum) = live.get_mut(&id) else {
            return Err(InferError::BadRequest(format!(
                "inference request for sequence {id} to model '{model}' must specify the START flag on the first request of the sequence"
            )));
        };
        *sum = sum.wrapping_add(value);
        let total = *sum;
        if flag("sequence_end") {
            live.remove(&id);
            self.completed.fetch_add(1, Ordering::Relaxed);
        }
        Ok(total)
    }

    pub(crate) fn counts(&self) -> SequenceCounts {
        let live = self.live.lock().map_or(0, |l| l.len() as u64);
        SequenceCounts {
            started: self.started.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            live,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn sums_run_per_id_and_triton_rules_reject_the_rest() {
        let book = SequenceBook::default();
        let start = params(json!({"sequence_id": 5, "sequence_start": true}));
        assert_eq!(book.step("m", &start, 2, false).unwrap(), 2);
        assert_eq!(
            book.step("m", &params(json!({"sequence_id": 5})), 3, false)
                .unwrap(),
            5
        );
        let other =
            params(json!({"sequence_id": "a", "sequence_start": true, "sequence_end": true}));
        assert_eq!(book.step("m", &other, 7, false).unwrap(), 7);
        let end = params(json!({"sequence_id": 5, "sequence_end": true}));
        assert_eq!(book.step("m", &end, 1, false).unwrap(), 6);
        let err = book
            .step("m", &params(json!({"sequence_id": 5})), 1, false)
            .unwrap_err();
        assert!(
            format!("{err:?}").contains("must specify the START flag"),
            "{err:?}"
        );
        let err = book.step("m", &params(json!({})), 1, false).unwrap_err();
        assert!(format!("{err:?}").contains("correlation ID"), "{err:?}");
        let numeric = params(json!({"sequence_id": 9, "sequence_start": true}));
        assert!(book.step("m", &numeric, 1, true).is_err());
        let counts = book.counts();
        assert_eq!(
            (
                counts.started,
                counts.completed,
                counts.rejected,
                counts.live
            ),
            (2, 2, 3, 0)
        );
    }
}

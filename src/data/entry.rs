//! User-provided request data (`--input-data FILE.json` or `--input-data DIR`): the
//! [`Entry`] both loaders produce, the shape rules every entry's tensors follow, and the
//! step that turns entries into the dataset's requests — batching them the way
//! perf_analyzer does — so that the JSON and directory loaders only read and check values.

use std::collections::BTreeMap;

use bytes::BytesMut;

use super::values::RawTensor;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{ModelSpec, TensorSpec};
use inferperf_wire::Tensor;

/// One step of user data: what one request carries at batch size 1.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    /// Every model input. Shapes exclude the batch dimension for a batching model; data is
    /// raw little-endian bytes (BYTES: 4-byte length + bytes per element).
    pub inputs: Vec<Tensor>,
    /// `"timestamp"` in milliseconds, for `--fixed-schedule`.
    pub timestamp_ms: Option<f64>,
    /// The outputs `validation_data` (or the directory's output files) expects, if any.
    pub expected: Option<Vec<Tensor>>,
    /// Where the entry comes from, for messages (`in.json data[2]`, or the directory).
    pub origin: String,
    /// For a text-generation model: the prompt (then `inputs` is empty).
    pub prompt: Option<Prompt>,
    /// The stream (sequence) of multi-stream input data the entry is a step of, in order.
    pub stream: Option<u32>,
    /// For a turn of a multi-turn session: which session and where in it.
    pub turn: Option<Turn>,
}

/// A turn of a multi-turn chat session. A session's turns are consecutive entries, in
/// order; each turn's request carries the conversation so far (the earlier prompts and the
/// answers the server gave), which the driver puts together as the session runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Turn {
    /// The session's number in the dataset (0, 1, …).
    pub session: u32,
    /// The turn's place in its session (0: the first).
    pub number: u32,
    /// How many turns the session has.
    pub of: u32,
    /// Milliseconds to wait after the previous turn's answer before sending this one.
    pub delay_ms: Option<f64>,
    /// Whether the turn is sent with the session's earlier prompts and answers (a chat's
    /// turn), or as it is given (a request that only has to wait for the one before it:
    /// AIPerf's single_turn lines of one `session_id`, a recorded `messages` or `payload`).
    pub history: bool,
}

/// One prompt of an LLM run, protocol-free: its text and how long an answer to ask for —
/// or, from perf_analyzer's OpenAI input format, a whole request body to send as given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prompt {
    pub text: String,
    /// Input tokens as inferperf counts them (words), when the server does not count them.
    pub input_tokens: u32,
    /// The answer's length to ask for; `None` lets the server decide.
    pub max_tokens: Option<u32>,
    /// A request body given by the user, sent as it is.
    pub body: Option<String>,
    /// A system message sent before the conversation (`--shared-system-prompt-length`).
    pub system: Option<std::sync::Arc<str>>,
    /// Chat messages given by a trace (`messages`), sent in place of the text's one user
    /// message; `text` then holds their contents, for counting.
    pub messages: Option<std::sync::Arc<serde_json::Value>>,
    /// AIPerf's synthetic images, audio and videos sent with the text (`None`: text only).
    pub media: Option<std::sync::Arc<super::media::Media>>,
    /// What the prompt carries beyond its text (AIPerf's datasets: more texts, media,
    /// tools, extra fields, a context message).
    pub parts: Option<std::sync::Arc<super::parts::Parts>>,
    /// The passages of a rankings request, whose query is `text` (AIPerf's texts named
    /// `query` and `passages`).
    pub passages: Option<std::sync::Arc<[String]>>,
    /// Tool definitions a trace gave beside its messages (`tools`), sent as the body's
    /// `tools` by the types that take them.
    pub tools: Option<std::sync::Arc<serde_json::Value>>,
}

/// Groups entries into requests as perf_analyzer does. A model that does not batch sends
/// each entry as one request. A batching model with `-b B` fills request `k` with entries
/// `k·B, k·B+1, …, k·B+B-1` (wrapping around the list), makes `max(1, n / B)` distinct
/// requests from `n` entries, and prepends the batch dimension; a single entry is thus
/// repeated B times. The result's shapes are full request shapes; its timestamp is the
/// first entry's.
pub fn batch_entries(entries: &[Entry], model: &ModelSpec, batch: u32) -> RunResult<Vec<Entry>> {
    if entries.is_empty() {
        return Err(RunError::bad_option(
            "--input-data gives no entries: put at least one entry in \"data\".",
        ));
    }
    if !model.batches() {
        return Ok(entries.to_vec());
    }
    let batch = batch.max(1) as usize;
    let requests = (entries.len() / batch).max(1);
    (0..requests)
        .map(|k| {
            let group: Vec<&Entry> = (0..batch)
                .map(|i| &entries[(k * batch + i) % entries.len()])
                .collect();
            join(&group)
        })
        .collect()
}

/// Stacks the entries of one batch along a new first dimension.
fn join(group: &[&Entry]) -> RunResult<Entry> {
    let first = group[0];
    let inputs = stack(group, |e| Some(&e.inputs), "input")?;
    let expected = if group.iter().all(|e| e.expected.is_some()) {
        Some(stack(group, |e| e.expected.as_ref(), "output")?)
    } else {
        None
    };
    Ok(Entry {
        inputs,
        timestamp_ms: first.timestamp_ms,
        expected,
        origin: first.origin.clone(),
        prompt: None,
        stream: first.stream,
        turn: None,
    })
}

fn stack<'a>(
    group: &[&'a Entry],
    tensors: impl Fn(&'a Entry) -> Option<&'a Vec<Tensor>>,
    kind: &str,
) -> RunResult<Vec<Tensor>> {
    let first = tensors(group[0]).map(Vec::as_slice).unwrap_or_default();
    let mut out = Vec::with_capacity(first.len());
    for tensor in first {
        let mut data = BytesMut::with_capacity(tensor.data.len() * group.len());
        for entry in group {
            let other = tensors(entry)
                .into_iter()
                .flatten()
                .find(|t| t.name == tensor.name);
            let Some(other) = other.filter(|t| t.shape == tensor.shape) else {
                return Err(RunError::bad_option(format!(
                    "--input-data {} and {} are sent in one batch, but their {kind} '{}' differs in shape or presence ({:?} in the first); give the entries of a batch the same shapes, or use -b 1.",
                    group[0].origin, entry.origin, tensor.name, tensor.shape
                )));
            };
            data.extend_from_slice(&other.data);
        }
        let mut shape = Vec::with_capacity(tensor.shape.len() + 1);
        shape.push(group.len() as i64);
        shape.extend_from_slice(&tensor.shape);
        out.push(Tensor {
            name: tensor.name.clone(),
            datatype: tensor.datatype,
            shape,
            data: data.freeze(),
        });
    }
    Ok(out)
}

/// Where a tensor's shape may come from, in the order they are tried.
pub struct ShapeSources<'a> {
    /// `"shape"` in the entry.
    pub given: Option<&'a [i64]>,
    /// `--shape NAME:dims` (inputs only).
    pub flag: Option<&'a [i64]>,
}

/// Settles the shape (without the batch dimension) of user data for `spec` and builds the
/// tensor: the entry's `"shape"`, else `--shape`, else the model's fixed shape, else the
/// shape the nested arrays describe, else the one variable dimension inferred from the
/// element count. The element count must fill the shape exactly.
pub fn settle(spec: &TensorSpec, raw: RawTensor, sources: ShapeSources) -> Result<Tensor, String> {
    let declared = &spec.shape;
    let shape = if let Some(given) = sources.given {
        check_fits(declared, given, "its \"shape\"")?;
        given.to_vec()
    } else if let Some(flag) = sources.flag {
        check_fits(declared, flag, "--shape")?;
        flag.to_vec()
    } else if spec.is_fixed() {
        declared.clone()
    } else if let Some(nested) = raw
        .nested_shape
        .as_ref()
        .filter(|n| n.len() == declared.len() && fits(declared, n))
    {
        nested.clone()
    } else {
        infer_one_dim(declared, raw.count).ok_or_else(|| {
            format!(
                "the model's shape {declared:?} is variable and {} values do not settle it; give \"shape\" with the values ({{\"content\": [...], \"shape\": [...]}}), or pass --shape {}:d1,d2 for every entry",
                raw.count, spec.name
            )
        })?
    };
    let needed = element_count(&shape)
        .ok_or_else(|| format!("shape {shape:?} is too large; give a smaller shape"))?;
    if needed != raw.count {
        return Err(format!(
            "{} values do not fill shape {shape:?} ({needed} elements); give exactly {needed} values in row-major order, or a \"shape\" that matches them",
            raw.count
        ));
    }
    Ok(Tensor {
        name: spec.name.clone(),
        datatype: spec.datatype,
        shape,
        data: raw.data,
    })
}

/// Whether `shape` has the declared rank and agrees on every fixed dimension. A model
/// that declares no shape at all takes any shape.
fn fits(declared: &[i64], shape: &[i64]) -> bool {
    declared.is_empty()
        || (declared.len() == shape.len()
            && declared.iter().zip(shape).all(|(&d, &s)| d < 0 || d == s))
}

fn check_fits(declared: &[i64], shape: &[i64], what: &str) -> Result<(), String> {
    if shape.iter().any(|&d| d < 0) {
        return Err(format!(
            "{what} {shape:?} has a negative dimension; give every dimension as a whole number ≥ 0"
        ));
    }
    if !fits(declared, shape) {
        return Err(format!(
            "{what} {shape:?} does not fit the model's shape {declared:?}; give every dimension without the batch dimension, with fixed dimensions as the model has them"
        ));
    }
    Ok(())
}

/// Fills the single variable dimension of `declared` so that the shape holds `count`
/// elements; `None` when there is more than one, or the count does not divide evenly.
fn infer_one_dim(declared: &[i64], count: usize) -> Option<Vec<i64>> {
    if declared.iter().filter(|&&d| d < 0).count() != 1 {
        return None;
    }
    let fixed: usize = declared
        .iter()
        .filter(|&&d| d >= 0)
        .map(|&d| d as usize)
        .product();
    // Division rather than `is_multiple_of`, which needs Rust 1.87.
    if fixed == 0 || count / fixed * fixed != count {
        return None;
    }
    let dim = (count / fixed) as i64;
    Some(
        declared
            .iter()
            .map(|&d| if d < 0 { dim } else { d })
            .collect(),
    )
}

fn element_count(shape: &[i64]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
}

/// `--shape` for `name`, if given.
pub fn flag_shape<'a>(shapes: &'a BTreeMap<String, Vec<i64>>, name: &str) -> Option<&'a [i64]> {
    shapes.get(name).map(Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use inferperf_wire::model::DataType;

    fn spec(shape: Vec<i64>) -> TensorSpec {
        TensorSpec {
            name: "X".into(),
            datatype: DataType::Uint8,
            shape,
        }
    }

    fn raw(count: usize) -> RawTensor {
        RawTensor {
            data: Bytes::from(vec![7u8; count]),
            count,
            nested_shape: None,
        }
    }

    const NONE: ShapeSources<'static> = ShapeSources {
        given: None,
        flag: None,
    };

    #[test]
    fn shapes_come_from_the_entry_the_flag_the_model_or_the_count() {
        let given = ShapeSources {
            given: Some(&[2, 3]),
            flag: Some(&[6, 1]),
        };
        assert_eq!(
            settle(&spec(vec![-1, 3]), raw(6), given).unwrap().shape,
            vec![2, 3]
        );
        let flag = ShapeSources {
            given: None,
            flag: Some(&[3, 2]),
        };
        assert_eq!(
            settle(&spec(vec![-1, -1]), raw(6), flag).unwrap().shape,
            vec![3, 2]
        );
        assert_eq!(settle(&spec(vec![4]), raw(4), NONE).unwrap().shape, vec![4]);
        assert_eq!(
            settle(&spec(vec![-1, 2]), raw(6), NONE).unwrap().shape,
            vec![3, 2]
        );
        let nested = RawTensor {
            nested_shape: Some(vec![1, 6]),
            ..raw(6)
        };
        assert_eq!(
            settle(&spec(vec![-1, -1]), nested, NONE).unwrap().shape,
            vec![1, 6]
        );
    }

    #[test]
    fn shapes_that_cannot_hold_the_values_are_refused() {
        let err = settle(&spec(vec![4]), raw(3), NONE).unwrap_err();
        assert!(err.contains("3 values do not fill shape [4]"), "{err}");
        let err = settle(&spec(vec![-1, -1]), raw(6), NONE).unwrap_err();
        assert!(err.contains("--shape X:"), "{err}");
        let bad = ShapeSources {
            given: Some(&[2, 4]),
            flag: None,
        };
        assert!(settle(&spec(vec![-1, 3]), raw(8), bad).is_err());
        assert!(settle(&spec(vec![-1, 4]), raw(6), NONE).is_err());
    }

    fn entry(value: u8, shape: Vec<i64>) -> Entry {
        let count = shape.iter().product::<i64>() as usize;
        Entry {
            inputs: vec![Tensor {
                name: "X".into(),
                datatype: DataType::Uint8,
                shape,
                data: Bytes::from(vec![value; count]),
            }],
            timestamp_ms: Some(value as f64),
            expected: None,
            origin: format!("data[{value}]"),
            prompt: None,
            stream: None,
            turn: None,
        }
    }

    #[test]
    fn batches_take_consecutive_entries_like_perf_analyzer() {
        let model = ModelSpec {
            max_batch_size: 8,
            ..Default::default()
        };
        let entries = vec![entry(0, vec![2]), entry(1, vec![2]), entry(2, vec![2])];
        let batched = batch_entries(&entries, &model, 2).unwrap();
        assert_eq!(batched.len(), 1);
        assert_eq!(batched[0].inputs[0].shape, vec![2, 2]);
        assert_eq!(&batched[0].inputs[0].data[..], &[0, 0, 1, 1]);
        let single = batch_entries(&entries[..1], &model, 3).unwrap();
        assert_eq!(&single[0].inputs[0].data[..], &[0, 0, 0, 0, 0, 0]);
        let per_entry = batch_entries(&entries, &model, 1).unwrap();
        assert_eq!(per_entry.len(), 3);
        assert_eq!(per_entry[2].timestamp_ms, Some(2.0));
        let mixed = vec![entry(0, vec![2]), entry(1, vec![3])];
        let err = batch_entries(&mixed, &model, 2).unwrap_err();
        assert!(err.to_string().contains("data[1]"), "{err}");
        let unbatched = ModelSpec::default();
        assert_eq!(batch_entries(&entries, &unbatched, 1).unwrap(), entries);
    }
}

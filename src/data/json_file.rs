//! Reads perf_analyzer's JSON input-data files (`--input-data FILE.json`, repeatable) into
//! [`Entry`] values, so that users can replay their own inputs — and the outputs they
//! expect — with the files they already have for perf_analyzer.
//!
//! The format: `{"data": [{INPUT: VALUE, ...}, ...], "validation_data": [{OUTPUT: VALUE},
//! ...]}`. A VALUE is a flat or nested array in row-major order (numbers; booleans for
//! BOOL; strings for BYTES), `{"content": ARRAY | {"b64": ...}, "shape": [dims]}`, or
//! `{"b64": "..."}` (base64 of the raw little-endian bytes). An entry may carry
//! `"timestamp"` (milliseconds, a number or a one-element array). Sequence files, whose
//! `data` is a list of streams (lists of entries), are read stream after stream into one
//! list: inferperf does not run sequences yet, so their entries are replayed in order.
//! perf_analyzer's TorchServe entries, `{"TORCHSERVE_INPUT": ["<path>"]}`, name a file whose
//! bytes are the request body ([`super::torchserve`]); dynamic gRPC entries,
//! `{"message_generator": "<command>"}`, name a command whose output is the request's
//! messages ([`super::message_generator`]).
//! Every problem is one sentence naming the file, the entry (`data[2]`, `data[1][0]`) and
//! the tensor.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::entry::{self, Entry, ShapeSources};
use super::values;
use super::{message_generator, torchserve};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{ModelSpec, TensorSpec};
use inferperf_wire::Tensor;

/// Entry keys of perf_analyzer's format that inferperf does not handle yet, and why.
const UNSUPPORTED_KEYS: [(&str, &str); 5] = [
    ("payload", "OpenAI payloads are not supported yet"),
    ("session_id", "multi-turn sessions are not supported yet"),
    (
        "delay",
        "multi-turn sessions (\"delay\") are not supported yet",
    ),
    (
        "message_generator",
        "message generators apply to --service-kind dynamic_grpc only",
    ),
    (
        "TORCHSERVE_INPUT",
        "TorchServe bodies apply to --service-kind torchserve only",
    ),
];

/// Reads one JSON input-data file for `model`; `shapes` are the `--shape` flags.
pub fn read(
    path: &Path,
    model: &ModelSpec,
    shapes: &BTreeMap<String, Vec<i64>>,
) -> RunResult<Vec<Entry>> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        RunError::bad_option(format!(
            "--input-data {file} cannot be read ({e}); check the path and its permissions."
        ))
    })?;
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| {
        RunError::bad_option(format!(
            "--input-data {file} is not valid JSON ({e}); fix the file (the format is {{\"data\": [{{\"INPUT\": [values]}}, ...]}})."
        ))
    })?;
    parse(&file, &doc, model, shapes)
}

/// Reads the entries of a parsed document; `file` names it in messages.
pub fn parse(
    file: &str,
    doc: &Value,
    model: &ModelSpec,
    shapes: &BTreeMap<String, Vec<i64>>,
) -> RunResult<Vec<Entry>> {
    let fail = |msg: String| RunError::bad_option(format!("--input-data {file}: {msg}."));
    let Some(top) = doc.as_object() else {
        return Err(fail(
            "the file is not a JSON object; write {\"data\": [{\"INPUT\": [values]}, ...]}".into(),
        ));
    };
    if let Some(key) = top.keys().find(|k| *k != "data" && *k != "validation_data") {
        return Err(fail(format!(
            "the top-level key '{key}' is unknown; the file holds \"data\" and optionally \"validation_data\""
        )));
    }
    let Some(data) = top.get("data") else {
        return Err(fail(
            "there is no \"data\" list; write {\"data\": [{\"INPUT\": [values]}, ...]}".into(),
        ));
    };
    let steps = steps("data", data).map_err(fail)?;
    let checks = match top.get("validation_data") {
        None => vec![None; steps.len()],
        Some(validation) => aligned("validation_data", validation, &steps).map_err(fail)?,
    };
    let reader = Reader {
        file,
        model,
        shapes,
    };
    let streams = stream_of_each_step(data);
    steps
        .iter()
        .zip(checks)
        .zip(streams)
        .map(|(((at, step), check), stream)| {
            let entry = reader.entry(at, step, check)?;
            Ok(Entry { stream, ..entry })
        })
        .collect()
}

/// Per step of `data`, the stream (sequence) it belongs to when `data` is a list of
/// streams; `None` for a plain list of entries.
fn stream_of_each_step(data: &Value) -> Vec<Option<u32>> {
    let items = data.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = Vec::new();
    for (s, item) in items.iter().enumerate() {
        match item.as_array() {
            Some(stream) => out.extend(stream.iter().map(|_| Some(s as u32))),
            None => out.push(None),
        }
    }
    out
}

/// The entries of a `data` (or `validation_data`) list with their positions: a list of
/// entries, or a list of streams that are lists of entries.
fn steps<'a>(name: &str, list: &'a Value) -> Result<Vec<(String, &'a Value)>, String> {
    let Some(items) = list.as_array() else {
        return Err(format!(
            "\"{name}\" is not a list; write \"{name}\": [{{...}}, ...]"
        ));
    };
    if items.is_empty() {
        return Err(format!("\"{name}\" is empty; give at least one entry"));
    }
    let streams = items.iter().filter(|i| i.is_array()).count();
    if streams == 0 {
        return Ok(items
            .iter()
            .enumerate()
            .map(|(k, step)| (format!("{name}[{k}]"), step))
            .collect());
    }
    if streams != items.len() {
        return Err(format!(
            "\"{name}\" mixes entries and lists of entries (streams); use one form throughout"
        ));
    }
    let mut out = Vec::new();
    for (s, stream) in items.iter().enumerate() {
        for (k, step) in stream.as_array().into_iter().flatten().enumerate() {
            out.push((format!("{name}[{s}][{k}]"), step));
        }
    }
    Ok(out)
}

/// The `validation_data` entries, one per `data` entry (perf_analyzer requires the same
/// layout in both lists).
fn aligned<'a>(
    name: &str,
    list: &'a Value,
    data: &[(String, &Value)],
) -> Result<Vec<Option<&'a Value>>, String> {
    let checks = steps(name, list)?;
    let same = checks.len() == data.len()
        && checks
            .iter()
            .zip(data)
            .all(|((a, _), (b, _))| a[name.len()..] == b["data".len()..]);
    if !same {
        return Err(format!(
            "\"{name}\" does not line up with \"data\" ({} entries against {}); give one validation entry per data entry, in the same layout",
            checks.len(),
            data.len()
        ));
    }
    Ok(checks.into_iter().map(|(_, v)| Some(v)).collect())
}

struct Reader<'a> {
    file: &'a str,
    model: &'a ModelSpec,
    shapes: &'a BTreeMap<String, Vec<i64>>,
}

impl Reader<'_> {
    fn fail(&self, at: &str, msg: impl std::fmt::Display) -> RunError {
        RunError::bad_option(format!("--input-data {}: {at}{msg}.", self.file))
    }

    fn entry(&self, at: &str, step: &Value, check: Option<&Value>) -> RunResult<Entry> {
        let Some(fields) = step.as_object() else {
            return Err(self.fail(
                at,
                " is not an object of input names to values; write {\"INPUT\": [values], ...}",
            ));
        };
        let mut timestamp_ms = None;
        for (key, value) in fields {
            if self.model.inputs.iter().any(|i| &i.name == key) {
                continue;
            }
            match key.as_str() {
                "timestamp" => timestamp_ms = Some(timestamp(value).map_err(|m| self.fail(at, m))?),
                "model" if value.as_str() == Some(self.model.name.as_str()) => {}
                "model" => {
                    return Err(self.fail(
                        at,
                        format!(
                            " names model {value}, but this run profiles '{}'; remove \"model\" or profile that model with -m",
                            self.model.name
                        ),
                    ))
                }
                _ => return Err(self.fail(at, unknown_key(key, self.model))),
            }
        }
        let missing: Vec<&str> = self
            .model
            .inputs
            .iter()
            .filter(|i| !fields.contains_key(&i.name))
            .map(|i| i.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(self.fail(
                at,
                format!(
                    " lacks input {} of model '{}'; give every input in every entry",
                    quoted(&missing),
                    self.model.name
                ),
            ));
        }
        let inputs = self
            .model
            .inputs
            .iter()
            .map(|spec| {
                let flag = entry::flag_shape(self.shapes, &spec.name);
                let value = &fields[&spec.name];
                if torchserve::is_body_input(spec) {
                    torchserve::read_body(value)
                } else if message_generator::is_generator_input(spec) {
                    message_generator::run_generator(value)
                } else {
                    tensor(spec, value, flag)
                }
                .map_err(|m| self.fail(at, format!(", input '{}': {m}", spec.name)))
            })
            .collect::<RunResult<Vec<Tensor>>>()?;
        let expected = match check {
            Some(check) => self.expected(&at.replacen("data", "validation_data", 1), check)?,
            None => None,
        };
        Ok(Entry {
            inputs,
            timestamp_ms,
            expected,
            origin: format!("{} {at}", self.file),
            prompt: None,
            stream: None,
            turn: None,
        })
    }

    /// The outputs one `validation_data` entry expects (`None` when it names none).
    fn expected(&self, at: &str, check: &Value) -> RunResult<Option<Vec<Tensor>>> {
        let Some(fields) = check.as_object() else {
            return Err(self.fail(
                at,
                " is not an object of output names to values; write {\"OUTPUT\": [values], ...}",
            ));
        };
        let mut out = Vec::with_capacity(fields.len());
        for (key, value) in fields {
            let Some(spec) = self.model.outputs.iter().find(|o| &o.name == key) else {
                return Err(self.fail(
                    at,
                    format!(
                        ": '{key}' is not an output of model '{}' (its outputs: {})",
                        self.model.name,
                        names(&self.model.outputs)
                    ),
                ));
            };
            out.push(
                tensor(spec, value, None)
                    .map_err(|m| self.fail(at, format!(", output '{key}': {m}")))?,
            );
        }
        Ok((!out.is_empty()).then_some(out))
    }
}

/// Why an entry key is refused.
fn unknown_key(key: &str, model: &ModelSpec) -> String {
    if let Some((_, why)) = UNSUPPORTED_KEYS.iter().find(|(k, _)| *k == key) {
        return format!(": \"{key}\" is given, but {why}; give the model's inputs instead");
    }
    format!(
        ": '{key}' is not an input of model '{}' (its inputs: {}); name entry values after the model's inputs",
        model.name,
        names(&model.inputs)
    )
}

fn names(tensors: &[TensorSpec]) -> String {
    let all: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
    if all.is_empty() {
        "none listed".into()
    } else {
        all.join(", ")
    }
}

fn quoted(names: &[&str]) -> String {
    let all: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    all.join(", ")
}

/// The latest `"timestamp"`: a day after the start, in milliseconds.
const MAX_TIMESTAMP_MS: f64 = inferperf_wire::number::A_DAY_MS;

/// `"timestamp"`: milliseconds from 0 to a day, as a number or a one-element array.
fn timestamp(value: &Value) -> Result<f64, String> {
    let number = match value {
        Value::Array(items) if items.len() == 1 => items[0].as_f64(),
        other => other.as_f64(),
    };
    number
        .filter(|ms| ms.is_finite() && (0.0..=MAX_TIMESTAMP_MS).contains(ms))
        .ok_or_else(|| {
            format!(
                ": \"timestamp\" is {value}; give milliseconds from 0 to {MAX_TIMESTAMP_MS} (a day) as a number or a one-element list, such as [12.5]"
            )
        })
}

/// One tensor value in any of the format's forms, with its shape settled.
fn tensor(spec: &TensorSpec, value: &Value, flag: Option<&[i64]>) -> Result<Tensor, String> {
    let (raw, given) = match value {
        Value::Array(_) => (values::encode_json(spec.datatype, value)?, None),
        Value::Object(fields) => {
            let given = fields.get("shape").map(shape).transpose()?;
            (object_content(spec, fields)?, given)
        }
        other => {
            return Err(format!(
                "the value {} is not a list, {{\"content\": [...], \"shape\": [...]}} or {{\"b64\": \"...\"}}; write one of those forms",
                short(other)
            ))
        }
    };
    let sources = ShapeSources {
        given: given.as_deref(),
        flag,
    };
    entry::settle(spec, raw, sources)
}

/// The data of an object value: `{"b64": ...}` or `{"content": ...}` (plus `"shape"`).
fn object_content(
    spec: &TensorSpec,
    fields: &Map<String, Value>,
) -> Result<values::RawTensor, String> {
    if let Some(key) = fields
        .keys()
        .find(|k| !["content", "shape", "b64"].contains(&k.as_str()))
    {
        return Err(format!(
            "the key '{key}' is unknown; a value object holds \"content\" (or \"b64\") and optionally \"shape\""
        ));
    }
    match (fields.get("b64"), fields.get("content")) {
        (Some(b64), None) => b64_content(spec, b64),
        (None, Some(Value::Array(_))) => values::encode_json(spec.datatype, &fields["content"]),
        (None, Some(Value::Object(inner))) if inner.len() == 1 && inner.contains_key("b64") => {
            b64_content(spec, &inner["b64"])
        }
        (None, Some(other)) => Err(format!(
            "\"content\" is {}, not a list or {{\"b64\": \"...\"}}; give the values as a list",
            short(other)
        )),
        (Some(_), Some(_)) => Err(
            "both \"b64\" and \"content\" are given; give the data once".into(),
        ),
        (None, None) => Err(
            "the value object has neither \"content\" nor \"b64\"; write {\"content\": [values], \"shape\": [dims]}".into(),
        ),
    }
}

fn b64_content(spec: &TensorSpec, value: &Value) -> Result<values::RawTensor, String> {
    let Some(text) = value.as_str() else {
        return Err(format!(
            "\"b64\" is {}, not a string; give the base64 text of the raw bytes",
            short(value)
        ));
    };
    values::from_raw(spec.datatype, values::decode_b64(text)?)
}

/// `"shape"`: a list of whole dimensions ≥ 0.
fn shape(value: &Value) -> Result<Vec<i64>, String> {
    let dims = value.as_array().and_then(|items| {
        items
            .iter()
            .map(|d| d.as_i64().filter(|&d| d >= 0))
            .collect::<Option<Vec<i64>>>()
    });
    dims.ok_or_else(|| {
        format!(
            "\"shape\" is {}; give a list of whole dimensions ≥ 0 without the batch dimension, such as [3, 224]",
            short(value)
        )
    })
}

/// A JSON value shown in a message, cut short when long.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferperf_wire::model::DataType;
    use serde_json::json;

    fn spec(name: &str, datatype: DataType, shape: Vec<i64>) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            datatype,
            shape,
        }
    }

    fn model() -> ModelSpec {
        ModelSpec {
            name: "m".into(),
            inputs: vec![
                spec("A", DataType::Int32, vec![2]),
                spec("S", DataType::Bytes, vec![-1]),
            ],
            outputs: vec![spec("OUT", DataType::Fp32, vec![-1, 2])],
            ..Default::default()
        }
    }

    fn entries(doc: Value) -> RunResult<Vec<Entry>> {
        parse("f.json", &doc, &model(), &BTreeMap::new())
    }

    fn error(doc: Value) -> String {
        let err = entries(doc).unwrap_err();
        assert_eq!(err.exit_code(), inferperf_wire::error::EXIT_BAD_OPTION);
        err.to_string()
    }

    #[test]
    fn every_value_form_is_read() {
        let got = entries(json!({"data": [
            {"A": [1, 2], "S": ["x", "yz"], "timestamp": [5]},
            {"A": {"content": [[3], [4]], "shape": [2]}, "S": {"b64": "aGk="}, "timestamp": 7.5},
            {"A": {"b64": "BQAAAAYAAAA="}, "S": {"content": {"b64": "aGk="}, "shape": [1]}},
        ]}))
        .unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(&got[0].inputs[0].data[..], &[1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(got[0].inputs[1].shape, vec![2]);
        assert_eq!(got[0].timestamp_ms, Some(5.0));
        assert_eq!(got[1].timestamp_ms, Some(7.5));
        assert_eq!(&got[1].inputs[0].data[..], &[3, 0, 0, 0, 4, 0, 0, 0]);
        assert_eq!(&got[1].inputs[1].data[..], b"\x02\0\0\0hi");
        assert_eq!(&got[2].inputs[0].data[..], &[5, 0, 0, 0, 6, 0, 0, 0]);
        assert_eq!(got[2].timestamp_ms, None);
        assert_eq!(got[2].origin, "f.json data[2]");
    }

    #[test]
    fn validation_data_and_streams_are_read() {
        let got = entries(json!({
            "data": [[{"A": [1, 2], "S": ["a"]}], [{"A": [3, 4], "S": ["b"]}]],
            "validation_data": [[{"OUT": [1.0, 2.0]}], [{}]],
        }))
        .unwrap();
        assert_eq!(got.len(), 2);
        let expected = got[0].expected.as_ref().unwrap();
        assert_eq!(expected[0].shape, vec![1, 2]);
        assert_eq!(got[1].expected, None);
        assert_eq!(got[1].origin, "f.json data[1][0]");
        assert_eq!((got[0].stream, got[1].stream), (Some(0), Some(1)));
    }

    #[test]
    fn bad_entries_get_one_sentence_each() {
        let ok_s = json!(["s"]);
        for (doc, needle) in [
            (json!([1]), "not a JSON object"),
            (json!({"dat": []}), "'dat' is unknown"),
            (json!({"data": []}), "is empty"),
            (json!({"data": [{"S": ok_s}]}), "data[0] lacks input 'A'"),
            (
                json!({"data": [{"A": [1], "S": ok_s}]}),
                "data[0], input 'A': 1 values do not fill shape [2]",
            ),
            (
                json!({"data": [{"A": [1, 1e10], "S": ok_s}]}),
                "element 1 is 10000000000.0",
            ),
            (
                json!({"data": [{"A": [1, 2], "S": ok_s, "B": [1]}]}),
                "'B' is not an input of model 'm' (its inputs: A, S)",
            ),
            (
                json!({"data": [{"A": [1, 2], "S": ok_s, "payload": {}}]}),
                "OpenAI payloads are not supported yet",
            ),
            (
                json!({"data": [{"A": [1, 2], "S": ok_s, "timestamp": "x"}]}),
                "\"timestamp\" is \"x\"",
            ),
            (
                json!({"data": [{"A": {"content": [1, 2], "shape": [3]}, "S": ok_s}]}),
                "does not fit the model's shape [2]",
            ),
            (
                json!({"data": [{"A": {"b64": "AAA"}, "S": ok_s}]}),
                "not a whole number of INT32 elements",
            ),
            (
                json!({"data": [{"A": {"b64": "@@"}, "S": ok_s}]}),
                "not valid base64",
            ),
            (
                json!({"data": [{"A": {"shape": [2]}, "S": ok_s}]}),
                "neither \"content\" nor \"b64\"",
            ),
            (
                json!({"data": [{"A": 3, "S": ok_s}]}),
                "the value 3 is not a list",
            ),
            (
                json!({"data": [[{"A": [1, 2], "S": ok_s}], {"A": [1, 2]}]}),
                "mixes entries",
            ),
            (
                json!({"data": [{"A": [1, 2], "S": ok_s}], "validation_data": []}),
                "is empty",
            ),
            (
                json!({"data": [{"A": [1, 2], "S": ok_s}], "validation_data": [{}, {}]}),
                "does not line up",
            ),
            (
                json!({"data": [{"A": [1, 2], "S": ok_s}], "validation_data": [{"X": [1]}]}),
                "validation_data[0]: 'X' is not an output",
            ),
            (
                json!({"data": [{"A": [1, 2], "S": ok_s}], "validation_data": [{"OUT": [1]}]}),
                "validation_data[0], output 'OUT'",
            ),
        ] {
            let msg = error(doc.clone());
            assert!(msg.contains(needle), "{doc}: {msg}");
            assert!(msg.starts_with("--input-data f.json"), "{msg}");
            assert!(msg.ends_with('.'), "{msg}");
        }
    }

    #[test]
    fn files_that_cannot_be_read_or_parsed_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, "{\"data\": [").unwrap();
        let err = read(&path, &model(), &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad.json is not valid JSON"), "{err}");
        let err = read(&dir.path().join("none.json"), &model(), &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot be read"), "{err}");
    }
}

//! Reads perf_analyzer's directory input data (`--input-data DIR`): one file per model
//! input, named after the input, holding the raw little-endian bytes of one batch-1
//! tensor in row-major order (BYTES inputs: a text file with one element per line). Files
//! named after outputs are optional and hold the outputs to expect. The directory makes
//! exactly one [`Entry`]; it exists so that data dumped from a pipeline can be replayed
//! without writing JSON.

use std::collections::BTreeMap;
use std::path::Path;

use super::entry::{self, Entry, ShapeSources};
use super::values::{self, RawTensor};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{DataType, ModelSpec, TensorSpec};
use inferperf_wire::Tensor;

/// Reads the directory's files for `model`; `shapes` are the `--shape` flags.
pub fn read(
    dir: &Path,
    model: &ModelSpec,
    shapes: &BTreeMap<String, Vec<i64>>,
) -> RunResult<Entry> {
    let shown = dir.display().to_string();
    let fail = |msg: String| RunError::bad_option(format!("--input-data {shown}: {msg}."));
    check_names(dir, model).map_err(fail)?;
    let mut inputs = Vec::with_capacity(model.inputs.len());
    for spec in &model.inputs {
        let path = dir.join(&spec.name);
        if !path.is_file() {
            return Err(fail(format!(
                "there is no file '{}' for input '{}'; put one file per input, named after it, holding its raw batch-1 data",
                spec.name, spec.name
            )));
        }
        let flag = entry::flag_shape(shapes, &spec.name);
        inputs.push(
            tensor(&path, spec, flag).map_err(|m| fail(format!("input '{}': {m}", spec.name)))?,
        );
    }
    let mut expected = Vec::new();
    for spec in &model.outputs {
        let path = dir.join(&spec.name);
        if model.inputs.iter().any(|i| i.name == spec.name) || !path.is_file() {
            continue;
        }
        expected.push(
            tensor(&path, spec, None).map_err(|m| fail(format!("output '{}': {m}", spec.name)))?,
        );
    }
    Ok(Entry {
        inputs,
        timestamp_ms: None,
        expected: (!expected.is_empty()).then_some(expected),
        origin: shown.clone(),
        prompt: None,
        stream: None,
        turn: None,
    })
}

/// Refuses files that are not named after an input or output (hidden files are skipped),
/// so that a misspelt name is not silently ignored.
fn check_names(dir: &Path, model: &ModelSpec) -> Result<(), String> {
    let listing = std::fs::read_dir(dir).map_err(|e| {
        format!("the directory cannot be read ({e}); check the path and its permissions")
    })?;
    for item in listing {
        let item = item.map_err(|e| format!("the directory cannot be listed ({e})"))?;
        let name = item.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let known = model
            .inputs
            .iter()
            .chain(&model.outputs)
            .any(|t| t.name == name);
        if !known {
            return Err(format!(
                "the file '{name}' is not named after an input or output of model '{}' (inputs: {}; outputs: {}); rename or remove it",
                model.name,
                names(&model.inputs),
                names(&model.outputs)
            ));
        }
    }
    Ok(())
}

fn names(tensors: &[TensorSpec]) -> String {
    let all: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
    if all.is_empty() {
        "none listed".into()
    } else {
        all.join(", ")
    }
}

/// One tensor file: raw element bytes, or lines for BYTES.
fn tensor(path: &Path, spec: &TensorSpec, flag: Option<&[i64]>) -> Result<Tensor, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("the file cannot be read ({e}); check its permissions"))?;
    if bytes.is_empty() {
        return Err("the file is empty; give the tensor's raw batch-1 data".into());
    }
    let raw: RawTensor = if spec.datatype == DataType::Bytes {
        values::from_lines(&bytes)?
    } else {
        values::from_raw(spec.datatype, bytes)?
    };
    entry::settle(spec, raw, ShapeSources { given: None, flag })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> ModelSpec {
        let spec = |name: &str, datatype, shape| TensorSpec {
            name: name.into(),
            datatype,
            shape,
        };
        ModelSpec {
            name: "m".into(),
            inputs: vec![
                spec("IN", DataType::Int16, vec![-1]),
                spec("TEXT", DataType::Bytes, vec![2]),
            ],
            outputs: vec![spec("OUT", DataType::Int16, vec![-1])],
            ..Default::default()
        }
    }

    fn dir(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, data) in files {
            std::fs::write(dir.path().join(name), data).unwrap();
        }
        dir
    }

    fn read_dir(files: &[(&str, &[u8])]) -> RunResult<Entry> {
        let d = dir(files);
        read(d.path(), &model(), &BTreeMap::new())
    }

    #[test]
    fn one_file_per_tensor_makes_one_entry() {
        let entry = read_dir(&[
            ("IN", &[1, 0, 2, 0, 3, 0]),
            ("TEXT", b"ab\ncd\n"),
            ("OUT", &[1, 0]),
            (".hidden", b"x"),
        ])
        .unwrap();
        assert_eq!(entry.inputs[0].shape, vec![3]);
        assert_eq!(&entry.inputs[1].data[..], b"\x02\0\0\0ab\x02\0\0\0cd");
        assert_eq!(entry.expected.unwrap()[0].shape, vec![1]);
        let flagged = dir(&[("IN", &[1, 0, 2, 0]), ("TEXT", b"a\nb")]);
        let shapes = BTreeMap::from([("IN".to_string(), vec![2])]);
        let entry = read(flagged.path(), &model(), &shapes).unwrap();
        assert_eq!(entry.expected, None);
        assert_eq!(entry.inputs[0].shape, vec![2]);
    }

    #[test]
    fn bad_directories_get_one_sentence_each() {
        for (files, needle) in [
            (vec![("TEXT", &b"a\nb"[..])], "no file 'IN' for input 'IN'"),
            (
                vec![("IN", &[1][..]), ("TEXT", b"a\nb")],
                "1 bytes are not a whole number of INT16",
            ),
            (
                vec![("IN", &[][..]), ("TEXT", b"a\nb")],
                "input 'IN': the file is empty",
            ),
            (
                vec![("IN", &[1, 0][..]), ("TEXT", b"a")],
                "input 'TEXT': 1 values do not fill shape [2]",
            ),
            (
                vec![("IN", &[1, 0][..]), ("TEXT", b"a\nb"), ("in", b"x")],
                "the file 'in' is not named",
            ),
        ] {
            let err = read_dir(&files).unwrap_err();
            assert_eq!(err.exit_code(), inferperf_wire::error::EXIT_BAD_OPTION);
            assert!(err.to_string().contains(needle), "{err}");
        }
    }
}

//! Whether an answer is a correct answer to its request, whatever protocol carried it: every
//! requested output is there with the datatype and shape the model declares, and — when the
//! input data gives `validation_data` — holds the expected values (integers, BOOL and BYTES
//! exactly; floats within the tolerance of `--validation-tolerance`). An adapter decodes the
//! answer into tensors and hands them here; a wrong one becomes a [`Failure`] that says what
//! was wrong, so the report can show the first.

use crate::data::Entry;
use inferperf_wire::model::{DataType, ModelSpec, TensorSpec};
use inferperf_wire::{Tensor, WireError};

use super::outcome::{ErrorKind, Failure, Malformation};

/// What a correct answer to one request looks like.
#[derive(Debug, Clone, Default)]
pub struct AnswerCheck {
    /// The outputs the request asks for, with the datatype the model declares and the shape
    /// it must have (the batch dimension filled in; -1 where the model leaves a dimension
    /// open). Empty when the model declares no outputs: any well-formed answer then passes.
    pub outputs: Vec<TensorSpec>,
    /// The values `validation_data` expects, by output name.
    pub expected: Option<Vec<Tensor>>,
    /// The float tolerance: `|got − expected| ≤ tolerance × max(1, |expected|)`.
    pub tolerance: f64,
}

impl AnswerCheck {
    /// The check of the request built from `entry` for `model`.
    pub fn new(model: &ModelSpec, entry: &Entry, tolerance: f64) -> AnswerCheck {
        let batch = batch_of(model, entry);
        let outputs = model
            .outputs
            .iter()
            .map(|spec| {
                let mut shape = Vec::with_capacity(spec.shape.len() + 1);
                shape.extend(batch);
                shape.extend_from_slice(&spec.shape);
                TensorSpec {
                    name: spec.name.clone(),
                    datatype: spec.datatype,
                    shape,
                }
            })
            .collect();
        AnswerCheck {
            outputs,
            expected: entry.expected.clone(),
            tolerance,
        }
    }

    /// Checks the outputs of one answer (already decoded, so well-formed as tensors).
    pub fn check(&self, outputs: &[Tensor]) -> Result<(), Failure> {
        for spec in &self.outputs {
            let Some(got) = outputs.iter().find(|t| t.name == spec.name) else {
                return Err(Failure::bad(
                    Malformation::MissingOutput,
                    format!("the answer lacks output '{}'", spec.name),
                ));
            };
            check_declared(spec, got)?;
        }
        match &self.expected {
            Some(expected) => self.check_values(expected, outputs),
            None => Ok(()),
        }
    }

    fn check_values(&self, expected: &[Tensor], outputs: &[Tensor]) -> Result<(), Failure> {
        for want in expected {
            let Some(got) = outputs.iter().find(|t| t.name == want.name) else {
                return Err(Failure::bad(
                    Malformation::MissingOutput,
                    format!(
                        "the answer lacks output '{}', which validation_data gives",
                        want.name
                    ),
                ));
            };
            compare(want, got, self.tolerance)?;
        }
        Ok(())
    }
}

/// The batch dimension of the request, when the model batches: the first dimension of its
/// first input.
fn batch_of(model: &ModelSpec, entry: &Entry) -> Option<i64> {
    if !model.batches() {
        return None;
    }
    entry.inputs.first().and_then(|t| t.shape.first().copied())
}

/// The datatype and shape the model declares for an output.
fn check_declared(spec: &TensorSpec, got: &Tensor) -> Result<(), Failure> {
    if got.datatype != spec.datatype {
        return Err(Failure::bad(
            Malformation::WrongDatatype,
            format!(
                "output '{}' is {}, but the model declares {}",
                got.name, got.datatype, spec.datatype
            ),
        ));
    }
    // A model that declares no shape for an output leaves it open.
    if spec.shape.is_empty() {
        return Ok(());
    }
    let fits = got.shape.len() == spec.shape.len()
        && spec
            .shape
            .iter()
            .zip(&got.shape)
            .all(|(&want, &have)| want < 0 || want == have);
    if !fits {
        return Err(Failure::bad(
            Malformation::WrongShape,
            format!(
                "output '{}' has shape {:?}, but the request needs {:?}",
                got.name, got.shape, spec.shape
            ),
        ));
    }
    Ok(())
}

/// Compares an output with the values `validation_data` expects.
fn compare(want: &Tensor, got: &Tensor, tolerance: f64) -> Result<(), Failure> {
    let mismatch = |detail: String| Failure::new(ErrorKind::Validation, detail);
    if got.datatype != want.datatype || got.shape != want.shape {
        return Err(mismatch(format!(
            "output '{}' is {} {:?}, but validation_data expects {} {:?}",
            got.name, got.datatype, got.shape, want.datatype, want.shape
        )));
    }
    if got.data == want.data {
        return Ok(());
    }
    let differs = match want.datatype {
        DataType::Fp16 | DataType::Bf16 | DataType::Fp32 | DataType::Fp64 => {
            first_float_difference(want, got, tolerance)
        }
        DataType::Bytes => first_bytes_difference(want, got),
        _ => first_exact_difference(want, got),
    };
    match differs {
        Some((index, expected, actual)) => Err(mismatch(format!(
            "output '{}' element {index}: expected {expected}, got {actual}",
            got.name
        ))),
        None => Ok(()),
    }
}

/// The first float element further from the expected value than the tolerance allows.
fn first_float_difference(
    want: &Tensor,
    got: &Tensor,
    tolerance: f64,
) -> Option<(usize, String, String)> {
    let expected = float_values(want);
    let actual = float_values(got);
    expected
        .iter()
        .zip(&actual)
        .position(|(&e, &a)| !close(e, a, tolerance))
        .map(|i| {
            let shown = |v: f64| inferperf_wire::number::readable(v);
            (i, shown(expected[i]), shown(actual[i]))
        })
}

/// Two floats agree when both are NaN, or within `tolerance × max(1, |expected|)`.
fn close(expected: f64, actual: f64, tolerance: f64) -> bool {
    if expected.is_nan() || actual.is_nan() {
        return expected.is_nan() && actual.is_nan();
    }
    if expected == actual {
        return true;
    }
    (actual - expected).abs() <= tolerance * expected.abs().max(1.0)
}

fn float_values(t: &Tensor) -> Vec<f64> {
    let data = &t.data[..];
    match t.datatype {
        DataType::Fp16 => data
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        DataType::Bf16 => data
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        DataType::Fp32 => data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
        _ => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
    }
}

/// The first element whose bytes differ (integers and BOOL), shown as the value it holds.
fn first_exact_difference(want: &Tensor, got: &Tensor) -> Option<(usize, String, String)> {
    let size = want.datatype.element_size().unwrap_or(1).max(1);
    let index = want
        .data
        .chunks_exact(size)
        .zip(got.data.chunks_exact(size))
        .position(|(a, b)| a != b)?;
    let value = |t: &Tensor| integer_text(t.datatype, &t.data[index * size..(index + 1) * size]);
    Some((index, value(want), value(got)))
}

/// An integer or BOOL element as text.
fn integer_text(datatype: DataType, bytes: &[u8]) -> String {
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    let unsigned = u64::from_le_bytes(raw);
    let bits = bytes.len() as u32 * 8;
    match datatype {
        DataType::Bool => (unsigned != 0).to_string(),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let shift = 64 - bits;
            (((unsigned << shift) as i64) >> shift).to_string()
        }
        _ => unsigned.to_string(),
    }
}

/// The first BYTES element that differs, shown as text (lossy) when it is not UTF-8.
fn first_bytes_difference(want: &Tensor, got: &Tensor) -> Option<(usize, String, String)> {
    let expected = want.bytes_elements().ok()?;
    let actual = got.bytes_elements().ok()?;
    if expected.len() != actual.len() {
        return Some((
            expected.len().min(actual.len()),
            format!("{} elements", expected.len()),
            format!("{} elements", actual.len()),
        ));
    }
    let index = expected.iter().zip(&actual).position(|(a, b)| a != b)?;
    let text = |b: &[u8]| format!("{:?}", String::from_utf8_lossy(b));
    Some((index, text(expected[index]), text(actual[index])))
}

/// What a decoding error says about the answer.
pub fn wire_failure(e: WireError) -> Failure {
    let sort = match &e {
        WireError::HeaderLength { .. } | WireError::BinaryMissing { .. } => Malformation::Truncated,
        WireError::TrailingBinary { .. } => Malformation::Overlong,
        WireError::UnknownDatatype { .. } => Malformation::WrongDatatype,
        WireError::NegativeDim { .. }
        | WireError::ShapeOverflow { .. }
        | WireError::DataSize { .. }
        | WireError::ElementCount { .. } => Malformation::WrongShape,
        WireError::Server(_) => Malformation::ErrorBody,
        _ => Malformation::Unreadable,
    };
    Failure::bad(sort, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn fp32(name: &str, shape: Vec<i64>, values: &[f32]) -> Tensor {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor {
            name: name.into(),
            datatype: DataType::Fp32,
            shape,
            data: Bytes::from(data),
        }
    }

    fn model(batching: bool) -> ModelSpec {
        ModelSpec {
            outputs: vec![TensorSpec {
                name: "OUT".into(),
                datatype: DataType::Fp32,
                shape: vec![2],
            }],
            max_batch_size: if batching { 8 } else { 0 },
            ..Default::default()
        }
    }

    fn entry(batch: i64, expected: Option<Vec<Tensor>>) -> Entry {
        Entry {
            inputs: vec![fp32("IN", vec![batch, 2], &[0.0, 0.0])],
            timestamp_ms: None,
            expected,
            origin: "test".into(),
            prompt: None,
            stream: None,
            turn: None,
        }
    }

    #[test]
    fn outputs_must_be_there_with_the_declared_datatype_and_shape() {
        let check = AnswerCheck::new(
            &model(true),
            &entry(1, None),
            crate::cli::DEFAULT_VALIDATION_TOLERANCE,
        );
        assert_eq!(check.outputs[0].shape, vec![1, 2]);
        assert!(check.check(&[fp32("OUT", vec![1, 2], &[1.0, 2.0])]).is_ok());
        let missing = check.check(&[]).unwrap_err();
        assert_eq!(
            missing.kind,
            ErrorKind::BadResponse(Malformation::MissingOutput)
        );
        assert!(missing.detail.unwrap().contains("'OUT'"));
        let shape = check.check(&[fp32("OUT", vec![2, 2], &[1.0; 4])]);
        assert_eq!(
            shape.unwrap_err().kind,
            ErrorKind::BadResponse(Malformation::WrongShape)
        );
        let mut int = fp32("OUT", vec![1, 2], &[1.0, 2.0]);
        int.datatype = DataType::Int32;
        assert_eq!(
            check.check(&[int]).unwrap_err().kind,
            ErrorKind::BadResponse(Malformation::WrongDatatype)
        );
    }

    #[test]
    fn validation_data_is_compared_within_the_tolerance() {
        let want = fp32("OUT", vec![2], &[1.0, 2.0]);
        let check = AnswerCheck::new(&model(false), &entry(1, Some(vec![want])), 1e-5);
        assert!(check.check(&[fp32("OUT", vec![2], &[1.0, 2.0])]).is_ok());
        assert!(check
            .check(&[fp32("OUT", vec![2], &[1.0, 2.000001])])
            .is_ok());
        let wrong = check
            .check(&[fp32("OUT", vec![2], &[1.0, 2.5])])
            .unwrap_err();
        assert_eq!(wrong.kind, ErrorKind::Validation);
        assert_eq!(
            wrong.detail.unwrap(),
            "output 'OUT' element 1: expected 2, got 2.5"
        );
    }

    #[test]
    fn integers_and_strings_are_compared_exactly() {
        let ints = |v: &[i32]| Tensor {
            name: "N".into(),
            datatype: DataType::Int32,
            shape: vec![v.len() as i64],
            data: Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()),
        };
        let found = compare(&ints(&[1, -2]), &ints(&[1, -3]), 0.5).unwrap_err();
        assert_eq!(
            found.detail.unwrap(),
            "output 'N' element 1: expected -2, got -3"
        );
        let text = |s: &[&str]| Tensor {
            name: "S".into(),
            datatype: DataType::Bytes,
            shape: vec![s.len() as i64],
            data: inferperf_wire::encode_bytes_elements("S", s).unwrap(),
        };
        let found = compare(&text(&["a", "b"]), &text(&["a", "c"]), 0.0).unwrap_err();
        assert_eq!(
            found.detail.unwrap(),
            "output 'S' element 1: expected \"b\", got \"c\""
        );
        assert!(close(f64::NAN, f64::NAN, 0.0));
        assert!(!close(1.0, f64::NAN, 1.0));
    }
}

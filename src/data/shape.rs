//! Resolves the concrete shape of each input from the model's declared shape, `--shape`
//! and the batch size, and says exactly which flag to pass when it cannot.

use std::collections::BTreeMap;

use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{ModelSpec, TensorSpec};

/// The full shape of `input` in one request, the batch dimension included when the model
/// batches.
pub fn request_shape(
    input: &TensorSpec,
    model: &ModelSpec,
    shapes: &BTreeMap<String, Vec<i64>>,
    batch_size: u32,
) -> RunResult<Vec<i64>> {
    let dims = match shapes.get(&input.name) {
        // Without a model configuration the batch dimension is only assumed (a leading -1):
        // a --shape that spells it out, as the server's metadata does, is taken whole.
        Some(given) if model.max_batch_size == u32::MAX && given.len() == input.shape.len() + 1 => {
            let mut declared = input.clone();
            declared.shape.insert(0, -1);
            return merge_given_shape(&declared, given);
        }
        Some(given) => merge_given_shape(input, given)?,
        None if input.is_fixed() => input.shape.clone(),
        None => {
            return Err(RunError::bad_option(format!(
                "Input '{}' has the variable shape {:?} in the model's metadata: pass --shape {}:d1,d2,... (without the batch dimension).",
                input.name, input.shape, input.name
            )))
        }
    };
    let mut full = Vec::with_capacity(dims.len() + 1);
    if model.batches() {
        full.push(batch_size as i64);
    }
    full.extend(dims);
    Ok(full)
}

/// Checks a `--shape` against the declared shape: same rank, fixed dimensions equal.
fn merge_given_shape(input: &TensorSpec, given: &[i64]) -> RunResult<Vec<i64>> {
    let declared = &input.shape;
    // A model with no declared shape (some servers list none) takes --shape as it is.
    if declared.is_empty() {
        return Ok(given.to_vec());
    }
    let compatible =
        declared.len() == given.len() && declared.iter().zip(given).all(|(&d, &g)| d < 0 || d == g);
    if !compatible {
        return Err(RunError::bad_option(format!(
            "--shape {}:{} does not fit the model's shape {:?} for input '{}' (give every dimension without the batch dimension; fixed dimensions must match).",
            input.name,
            join_dims(given),
            declared,
            input.name
        )));
    }
    Ok(given.to_vec())
}

/// Rejects `--shape` names that are not inputs of the model, and a batch size the model
/// cannot take.
pub fn check_request_flags(
    model: &ModelSpec,
    shapes: &BTreeMap<String, Vec<i64>>,
    batch_size: u32,
) -> RunResult<()> {
    for name in shapes.keys() {
        if !model.inputs.iter().any(|i| &i.name == name) {
            let known: Vec<&str> = model.inputs.iter().map(|i| i.name.as_str()).collect();
            return Err(RunError::bad_option(format!(
                "--shape names '{name}', which is not an input of model '{}' (its inputs: {}).",
                model.name,
                known.join(", ")
            )));
        }
    }
    if batch_size > 1 && !model.batches() {
        return Err(RunError::bad_option(format!(
            "Model '{}' does not batch (max_batch_size 0): -b must be 1.",
            model.name
        )));
    }
    if model.batches() && model.max_batch_size != u32::MAX && batch_size > model.max_batch_size {
        return Err(RunError::bad_option(format!(
            "-b {batch_size} is above model '{}''s max_batch_size {}: use -b {} or less.",
            model.name, model.max_batch_size, model.max_batch_size
        )));
    }
    Ok(())
}

fn join_dims(dims: &[i64]) -> String {
    dims.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferperf_wire::model::DataType;

    fn model(shape: Vec<i64>, max_batch: u32) -> ModelSpec {
        ModelSpec {
            name: "m".into(),
            inputs: vec![TensorSpec {
                name: "IN".into(),
                datatype: DataType::Fp32,
                shape,
            }],
            max_batch_size: max_batch,
            ..Default::default()
        }
    }

    #[test]
    fn batch_dimension_is_prepended_for_batching_models() {
        let m = model(vec![16], 8);
        let shape = request_shape(&m.inputs[0], &m, &BTreeMap::new(), 4).unwrap();
        assert_eq!(shape, vec![4, 16]);
        let m = model(vec![16], 0);
        assert_eq!(
            request_shape(&m.inputs[0], &m, &BTreeMap::new(), 1).unwrap(),
            vec![16]
        );
    }

    #[test]
    fn variable_dims_need_shape_flag() {
        let m = model(vec![-1, 3], 0);
        let err = request_shape(&m.inputs[0], &m, &BTreeMap::new(), 1).unwrap_err();
        assert!(err.to_string().contains("--shape IN:"), "{err}");
        let shapes = BTreeMap::from([("IN".to_string(), vec![5, 3])]);
        assert_eq!(
            request_shape(&m.inputs[0], &m, &shapes, 1).unwrap(),
            vec![5, 3]
        );
        let wrong = BTreeMap::from([("IN".to_string(), vec![5, 4])]);
        assert!(request_shape(&m.inputs[0], &m, &wrong, 1).is_err());
    }

    #[test]
    fn an_assumed_batch_dimension_may_be_spelled_out() {
        let m = model(vec![16], u32::MAX);
        let full = BTreeMap::from([("IN".to_string(), vec![1, 16])]);
        assert_eq!(
            request_shape(&m.inputs[0], &m, &full, 1).unwrap(),
            vec![1, 16]
        );
        let short = BTreeMap::from([("IN".to_string(), vec![16])]);
        assert_eq!(
            request_shape(&m.inputs[0], &m, &short, 2).unwrap(),
            vec![2, 16]
        );
    }

    #[test]
    fn flags_are_checked_against_the_model() {
        let m = model(vec![16], 0);
        assert!(check_request_flags(&m, &BTreeMap::new(), 2).is_err());
        let unknown = BTreeMap::from([("NOPE".to_string(), vec![1])]);
        assert!(check_request_flags(&m, &unknown, 1).is_err());
        assert!(check_request_flags(&model(vec![16], 8), &BTreeMap::new(), 9).is_err());
    }
}

//! perf_analyzer's TorchServe input data: an entry `{"TORCHSERVE_INPUT": ["<path>"]}` names
//! a file whose bytes are the whole request body. The file is read once, when the dataset is
//! built, into a UINT8 tensor of that name, so that the TorchServe adapter sends its bytes as
//! they are and the rest of the dataset (cycling, sharding) treats it like any input.

use bytes::Bytes;
use serde_json::Value;

use inferperf_wire::model::{DataType, TensorSpec};
use inferperf_wire::Tensor;

/// The input name perf_analyzer's TorchServe data uses.
pub const INPUT: &str = "TORCHSERVE_INPUT";

/// The input TorchServe's data fills: the body's bytes, of any length.
pub fn input_spec() -> TensorSpec {
    TensorSpec {
        name: INPUT.to_string(),
        datatype: DataType::Uint8,
        shape: vec![-1],
    }
}

/// Whether `spec` is the TorchServe body input.
pub fn is_body_input(spec: &TensorSpec) -> bool {
    spec.name == INPUT && spec.datatype == DataType::Uint8
}

/// Reads the file a `TORCHSERVE_INPUT` value names; `Err` is the phrase to report.
pub fn read_body(value: &Value) -> Result<Tensor, String> {
    let path = match value {
        Value::Array(items) if items.len() == 1 => items[0].as_str(),
        Value::String(path) => Some(path.as_str()),
        _ => None,
    }
    .ok_or("the value must be a list holding one file path, [\"<path>\"], as perf_analyzer's TorchServe data has")?;
    let bytes = std::fs::read(path)
        .map_err(|e| format!("the file '{path}' cannot be read ({e}); check the path"))?;
    Ok(Tensor {
        name: INPUT.to_string(),
        datatype: DataType::Uint8,
        shape: vec![bytes.len() as i64],
        data: Bytes::from(bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_file_becomes_the_body() {
        let dir = std::env::temp_dir().join(format!("ts-input-{}", std::process::id()));
        std::fs::write(&dir, b"\x00\x01body").unwrap();
        let path = dir.display().to_string();
        let tensor = read_body(&serde_json::json!([path])).unwrap();
        assert_eq!(&tensor.data[..], b"\x00\x01body");
        assert_eq!(tensor.shape, vec![6]);
        assert!(read_body(&serde_json::json!([1])).is_err());
        assert!(read_body(&serde_json::json!(["/no/such/file"]))
            .unwrap_err()
            .contains("/no/such/file"));
        std::fs::remove_file(dir).unwrap();
    }
}

//! Turns user-given tensor values (JSON arrays, base64 text, raw files) into the raw
//! little-endian bytes the wire module sends, checking every value against the model's
//! datatype, so that a value that does not fit (300 for UINT8, a string for FP32) is found
//! when the dataset is built and reported with its position, never sent or truncated.
//!
//! Every error here is a phrase saying what is wrong and what to do; the loaders put the
//! file, the entry and the tensor in front of it.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use half::{bf16, f16};
use serde_json::Value;

use inferperf_wire as wire;
use inferperf_wire::model::DataType;

/// Tensor data read from the user, before its shape is known for sure.
#[derive(Debug, Clone, PartialEq)]
pub struct RawTensor {
    /// Little-endian element bytes (BYTES: 4-byte length + bytes per element).
    pub data: Bytes,
    /// Number of elements in `data`.
    pub count: usize,
    /// The shape nested JSON arrays describe, when they are regular.
    pub nested_shape: Option<Vec<i64>>,
}

/// The leaves of a (possibly nested) JSON array in row-major order, and the shape of the
/// nesting when every level holds arrays of equal length.
pub fn flatten(value: &Value) -> (Vec<&Value>, Option<Vec<i64>>) {
    let mut leaves = Vec::new();
    let shape = flatten_into(value, &mut leaves);
    (leaves, shape)
}

fn flatten_into<'a>(value: &'a Value, out: &mut Vec<&'a Value>) -> Option<Vec<i64>> {
    let Value::Array(items) = value else {
        out.push(value);
        return Some(Vec::new());
    };
    let mut inner: Option<Option<Vec<i64>>> = None;
    for item in items {
        let shape = flatten_into(item, out);
        inner = match inner {
            None => Some(shape),
            Some(previous) if previous == shape => Some(previous),
            Some(_) => Some(None),
        };
    }
    let inner = match inner {
        // An empty array: one dimension of 0.
        None => Some(Vec::new()),
        Some(shape) => shape,
    };
    inner.map(|rest| std::iter::once(items.len() as i64).chain(rest).collect())
}

/// Encodes JSON scalars as elements of `datatype`.
pub fn encode_json(datatype: DataType, value: &Value) -> Result<RawTensor, String> {
    let (leaves, nested_shape) = flatten(value);
    let data = if datatype == DataType::Bytes {
        let mut strings = Vec::with_capacity(leaves.len());
        for (index, leaf) in leaves.iter().enumerate() {
            match leaf {
                Value::String(s) => strings.push(s.as_bytes()),
                other => {
                    return Err(format!(
                        "element {index} is {}, not a string; BYTES values are JSON strings",
                        shown(other)
                    ))
                }
            }
        }
        wire::encode_bytes_elements("", &strings).map_err(|e| e.to_string())?
    } else {
        let size = datatype.element_size().unwrap_or(1);
        let mut out = BytesMut::with_capacity(leaves.len() * size);
        for (index, leaf) in leaves.iter().enumerate() {
            put_element(&mut out, datatype, leaf).map_err(|why| {
                format!(
                    "element {index} is {}, {why}; use values that fit the model's datatype",
                    shown(leaf)
                )
            })?;
        }
        out.freeze()
    };
    Ok(RawTensor {
        data,
        count: leaves.len(),
        nested_shape,
    })
}

/// A JSON value as the error message shows it (long strings cut short).
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Appends one element, or says why the value does not fit the datatype.
fn put_element(out: &mut BytesMut, datatype: DataType, value: &Value) -> Result<(), String> {
    match datatype {
        DataType::Bool => out.put_u8(boolean(value)?),
        DataType::Uint8 => out.put_u8(integer(value, datatype, 0, u8::MAX as i128)? as u8),
        DataType::Uint16 => out.put_u16_le(integer(value, datatype, 0, u16::MAX as i128)? as u16),
        DataType::Uint32 => out.put_u32_le(integer(value, datatype, 0, u32::MAX as i128)? as u32),
        DataType::Uint64 => out.put_u64_le(integer(value, datatype, 0, u64::MAX as i128)? as u64),
        DataType::Int8 => out.put_i8(signed::<i8>(value, datatype)? as i8),
        DataType::Int16 => out.put_i16_le(signed::<i16>(value, datatype)? as i16),
        DataType::Int32 => out.put_i32_le(signed::<i32>(value, datatype)? as i32),
        DataType::Int64 => out.put_i64_le(signed::<i64>(value, datatype)? as i64),
        DataType::Fp16 => {
            let v = float(value, datatype, f16::MAX.to_f64())?;
            out.put_u16_le(f16::from_f64(v).to_bits())
        }
        DataType::Bf16 => {
            let v = float(value, datatype, bf16::MAX.to_f64())?;
            out.put_u16_le(bf16::from_f64(v).to_bits())
        }
        DataType::Fp32 => out.put_f32_le(float(value, datatype, f32::MAX as f64)? as f32),
        DataType::Fp64 => out.put_f64_le(float(value, datatype, f64::MAX)?),
        DataType::Bytes => return Err("not a string".into()),
    }
    Ok(())
}

fn boolean(value: &Value) -> Result<u8, String> {
    match value {
        Value::Bool(b) => Ok(*b as u8),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(0),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(1),
        _ => Err("not a boolean (BOOL takes true or false)".into()),
    }
}

/// The range of a signed integer type, for [`integer`].
fn signed<T>(value: &Value, datatype: DataType) -> Result<i128, String> {
    let bits = 8 * std::mem::size_of::<T>() as u32;
    let max = (1i128 << (bits - 1)) - 1;
    integer(value, datatype, -max - 1, max)
}

/// A whole number within `min..=max`; integral floats such as 3.0 are accepted.
fn integer(value: &Value, datatype: DataType, min: i128, max: i128) -> Result<i128, String> {
    let Value::Number(n) = value else {
        return Err(format!("not a number ({datatype} takes whole numbers)"));
    };
    let whole = if let Some(i) = n.as_i64() {
        Some(i as i128)
    } else if let Some(u) = n.as_u64() {
        Some(u as i128)
    } else {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e30)
            .map(|f| f as i128)
    };
    match whole {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(_) => Err(format!(
            "which is out of range for {datatype} ({min} to {max})"
        )),
        None if n.as_f64().is_some_and(|f| f.fract() == 0.0) => Err(format!(
            "which is out of range for {datatype} ({min} to {max})"
        )),
        None => Err(format!("not a whole number ({datatype} takes integers)")),
    }
}

/// A number whose magnitude fits the float type (rounding is fine, overflow to infinity
/// is not).
fn float(value: &Value, datatype: DataType, max: f64) -> Result<f64, String> {
    let Some(v) = value.as_f64() else {
        return Err(format!("not a number ({datatype} takes numbers)"));
    };
    if v.abs() > max {
        return Err(format!(
            "which is out of range for {datatype} (magnitude at most {max:e})"
        ));
    }
    Ok(v)
}

/// Decodes base64 text (standard alphabet; padding optional, whitespace ignored).
pub fn decode_b64(text: &str) -> Result<Vec<u8>, String> {
    let engine = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    engine
        .decode(compact.as_bytes())
        .map_err(|e| format!("the \"b64\" text is not valid base64 ({e}); encode the raw tensor bytes with standard base64"))
}

/// Raw bytes as tensor data of `datatype`. For BYTES, bytes that are already in the
/// serialized layout (4-byte little-endian length + bytes per element, what perf_analyzer
/// sends as-is) are taken as they are; any other bytes are one string element.
pub fn from_raw(datatype: DataType, raw: Vec<u8>) -> Result<RawTensor, String> {
    if datatype == DataType::Bytes {
        if let Ok(count) = wire::count_bytes_elements("", &raw) {
            if count > 0 {
                return Ok(RawTensor {
                    data: Bytes::from(raw),
                    count,
                    nested_shape: None,
                });
            }
        }
        let data = wire::encode_bytes_elements("", [&raw]).map_err(|e| e.to_string())?;
        return Ok(RawTensor {
            data,
            count: 1,
            nested_shape: None,
        });
    }
    let size = datatype.element_size().unwrap_or(1);
    if raw.len() / size * size != raw.len() {
        return Err(format!(
            "{} bytes are not a whole number of {datatype} elements ({size} bytes each); give the raw little-endian bytes of the tensor",
            raw.len()
        ));
    }
    Ok(RawTensor {
        count: raw.len() / size,
        data: Bytes::from(raw),
        nested_shape: None,
    })
}

/// BYTES elements from a text file: one element per line (a final newline ends the last
/// line rather than starting an empty element).
pub fn from_lines(raw: &[u8]) -> Result<RawTensor, String> {
    let body = raw.strip_suffix(b"\n").unwrap_or(raw);
    let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let data = wire::encode_bytes_elements("", &lines).map_err(|e| e.to_string())?;
    Ok(RawTensor {
        data,
        count: lines.len(),
        nested_shape: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_arrays_flatten_row_major_with_their_shape() {
        let value = json!([[1, 2, 3], [4, 5, 6]]);
        let (leaves, shape) = flatten(&value);
        assert_eq!(leaves.len(), 6);
        assert_eq!(leaves[3], &json!(4));
        assert_eq!(shape, Some(vec![2, 3]));
        let ragged = json!([[1, 2], [3]]);
        assert_eq!(flatten(&ragged).1, None);
        assert_eq!(flatten(&json!([])).1, Some(vec![0]));
    }

    #[test]
    fn integers_are_range_checked() {
        let t = encode_json(DataType::Uint8, &json!([0, 255, 3.0])).unwrap();
        assert_eq!(&t.data[..], &[0, 255, 3]);
        let err = encode_json(DataType::Uint8, &json!([1, 300])).unwrap_err();
        assert!(
            err.contains("element 1 is 300") && err.contains("0 to 255"),
            "{err}"
        );
        let err = encode_json(DataType::Int8, &json!([-129])).unwrap_err();
        assert!(err.contains("-128 to 127"), "{err}");
        let err = encode_json(DataType::Int32, &json!([1.5])).unwrap_err();
        assert!(err.contains("not a whole number"), "{err}");
        let err = encode_json(DataType::Int64, &json!([1e20])).unwrap_err();
        assert!(err.contains("out of range"), "{err}");
        let t = encode_json(DataType::Uint64, &json!([u64::MAX])).unwrap();
        assert_eq!(&t.data[..], &u64::MAX.to_le_bytes());
        let t = encode_json(DataType::Int16, &json!([-2])).unwrap();
        assert_eq!(&t.data[..], &(-2i16).to_le_bytes());
    }

    #[test]
    fn floats_bools_and_strings_convert() {
        let t = encode_json(DataType::Fp32, &json!([1.5, -2])).unwrap();
        assert_eq!(&t.data[..4], &1.5f32.to_le_bytes());
        assert!(encode_json(DataType::Fp16, &json!([70000])).is_err());
        assert!(encode_json(DataType::Fp32, &json!([1e39])).is_err());
        assert!(encode_json(DataType::Fp32, &json!(["x"])).is_err());
        let t = encode_json(DataType::Bool, &json!([true, false, 1])).unwrap();
        assert_eq!(&t.data[..], &[1, 0, 1]);
        assert!(encode_json(DataType::Bool, &json!([2])).is_err());
        let t = encode_json(DataType::Bytes, &json!(["hi", ""])).unwrap();
        assert_eq!(&t.data[..], b"\x02\0\0\0hi\0\0\0\0");
        assert_eq!(t.count, 2);
        let err = encode_json(DataType::Bytes, &json!([3])).unwrap_err();
        assert!(err.contains("not a string"), "{err}");
    }

    #[test]
    fn raw_bytes_are_checked_against_the_element_size() {
        let t = from_raw(DataType::Int32, vec![1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        assert_eq!(t.count, 2);
        assert!(from_raw(DataType::Int32, vec![1, 2, 3]).is_err());
        let plain = from_raw(DataType::Bytes, b"hello".to_vec()).unwrap();
        assert_eq!((plain.count, &plain.data[..]), (1, &b"\x05\0\0\0hello"[..]));
        let serialized = from_raw(DataType::Bytes, b"\x01\0\0\0a\x01\0\0\0b".to_vec()).unwrap();
        assert_eq!(serialized.count, 2);
        assert_eq!(decode_b64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_b64("aGk\n").unwrap(), b"hi");
        assert!(decode_b64("!!").is_err());
        let lines = from_lines(b"a\nbc\n").unwrap();
        assert_eq!(
            (lines.count, &lines.data[..]),
            (2, &b"\x01\0\0\0a\x02\0\0\0bc"[..])
        );
    }
}

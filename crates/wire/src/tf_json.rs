//! TF Serving's REST tensors: a tensor as a JSON value nested as its shape (BYTES elements as
//! strings, or `{"b64": …}` when they are not UTF-8), and back given the datatype the
//! signature declares (JSON does not carry it). The request and answer bodies that hold
//! these values — columnar `inputs`/`outputs` or row-wise `instances`/`predictions` — are
//! put together by the adapter and the embedded server; this module does the tensors.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::{BufMut, BytesMut};
use half::{bf16, f16};
use serde_json::{json, Map, Value};

use super::{encode_bytes_elements, Tensor, WireError};
use crate::model::DataType;

/// The tensor's elements nested as its shape (a scalar for shape `[]`).
pub fn to_json(t: &Tensor) -> Result<Value, WireError> {
    t.validate()?;
    let leaves = leaves(t)?;
    Ok(nest(&mut leaves.into_iter(), &t.shape))
}

/// The tensor split along its first axis, one value per row (TF Serving's `instances`).
pub fn rows(t: &Tensor) -> Result<Vec<Value>, WireError> {
    match to_json(t)? {
        Value::Array(rows) => Ok(rows),
        scalar => Ok(vec![scalar]),
    }
}

/// A nested JSON value as a tensor of `datatype`, its shape read from the nesting.
pub fn from_json(name: &str, datatype: DataType, value: &Value) -> Result<Tensor, WireError> {
    let mut values = Vec::new();
    let shape = flatten(value, &mut values).ok_or_else(|| bad(name, "the nesting is ragged"))?;
    let data = if datatype == DataType::Bytes {
        let elements: Result<Vec<Vec<u8>>, WireError> =
            values.iter().map(|v| string_element(name, v)).collect();
        encode_bytes_elements(name, elements?)?
    } else {
        let mut out = BytesMut::with_capacity(values.len() * 8);
        for (index, v) in values.iter().enumerate() {
            put(&mut out, datatype, v).ok_or_else(|| WireError::BadValue {
                tensor: name.to_string(),
                datatype,
                index,
                value: v.to_string(),
            })?;
        }
        out.freeze()
    };
    Tensor::checked(name.to_string(), datatype, shape, data)
}

/// Rows (one value each, or one object of named values each) stacked into named columns.
pub fn columns(rows: &[Value], names: &[&str]) -> Result<Map<String, Value>, WireError> {
    let mut out = Map::new();
    for name in names {
        let column = rows.iter().map(|row| match row {
            Value::Object(fields) => fields
                .get(*name)
                .cloned()
                .ok_or_else(|| bad(name, "a row lacks it")),
            _ if names.len() == 1 => Ok(row.clone()),
            _ => Err(bad(
                name,
                "rows must be objects when there are several tensors",
            )),
        });
        out.insert(
            name.to_string(),
            Value::Array(column.collect::<Result<_, _>>()?),
        );
    }
    Ok(out)
}

fn bad(name: &str, detail: &str) -> WireError {
    WireError::TfJson {
        tensor: name.to_string(),
        detail: detail.to_string(),
    }
}

fn leaves(t: &Tensor) -> Result<Vec<Value>, WireError> {
    let d = &t.data[..];
    let not_finite = |index: usize, value: f64| WireError::NotFinite {
        tensor: t.name.clone(),
        datatype: t.datatype,
        index,
        value: value.to_string(),
    };
    let floats = |values: Vec<f64>| -> Result<Vec<Value>, WireError> {
        let finite = values.iter().position(|v| !v.is_finite());
        match finite {
            Some(i) => Err(not_finite(i, values[i])),
            None => Ok(values.into_iter().map(Value::from).collect()),
        }
    };
    Ok(match t.datatype {
        DataType::Bool => d.iter().map(|&b| Value::Bool(b != 0)).collect(),
        DataType::Uint8 => d.iter().map(|&b| Value::from(b)).collect(),
        DataType::Int8 => d.iter().map(|&b| Value::from(b as i8)).collect(),
        DataType::Uint16 => chunks::<2>(d)
            .map(|c| u16::from_le_bytes(c).into())
            .collect(),
        DataType::Int16 => chunks::<2>(d)
            .map(|c| i16::from_le_bytes(c).into())
            .collect(),
        DataType::Uint32 => chunks::<4>(d)
            .map(|c| u32::from_le_bytes(c).into())
            .collect(),
        DataType::Int32 => chunks::<4>(d)
            .map(|c| i32::from_le_bytes(c).into())
            .collect(),
        DataType::Uint64 => chunks::<8>(d)
            .map(|c| u64::from_le_bytes(c).into())
            .collect(),
        DataType::Int64 => chunks::<8>(d)
            .map(|c| i64::from_le_bytes(c).into())
            .collect(),
        DataType::Fp16 => floats(
            chunks::<2>(d)
                .map(|c| f16::from_le_bytes(c).to_f64())
                .collect(),
        )?,
        DataType::Bf16 => floats(
            chunks::<2>(d)
                .map(|c| bf16::from_le_bytes(c).to_f64())
                .collect(),
        )?,
        DataType::Fp32 => floats(
            chunks::<4>(d)
                .map(|c| f32::from_le_bytes(c) as f64)
                .collect(),
        )?,
        DataType::Fp64 => floats(chunks::<8>(d).map(f64::from_le_bytes).collect())?,
        DataType::Bytes => (t.bytes_elements()?.into_iter())
            .map(|e| match std::str::from_utf8(e) {
                Ok(text) => Value::from(text),
                Err(_) => json!({ "b64": STANDARD.encode(e) }),
            })
            .collect(),
    })
}

fn chunks<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    data.chunks_exact(N).map(|c| c.try_into().unwrap_or([0; N]))
}

fn nest(leaves: &mut impl Iterator<Item = Value>, shape: &[i64]) -> Value {
    match shape.split_first() {
        None => leaves.next().unwrap_or(Value::Null),
        Some((&n, rest)) => Value::Array((0..n).map(|_| nest(leaves, rest)).collect()),
    }
}

/// The leaves in row-major order and the shape, or `None` when the nesting is ragged.
fn flatten<'a>(value: &'a Value, out: &mut Vec<&'a Value>) -> Option<Vec<i64>> {
    let Value::Array(items) = value else {
        out.push(value);
        return Some(Vec::new());
    };
    let mut inner: Option<Vec<i64>> = None;
    for item in items {
        let shape = flatten(item, out)?;
        if inner.as_ref().is_some_and(|s| *s != shape) {
            return None;
        }
        inner = Some(shape);
    }
    let rest = inner.unwrap_or_default();
    Some(std::iter::once(items.len() as i64).chain(rest).collect())
}

fn string_element(name: &str, value: &Value) -> Result<Vec<u8>, WireError> {
    match value {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        Value::Object(o) if o.len() == 1 && o.get("b64").is_some_and(Value::is_string) => {
            let text = o["b64"].as_str().unwrap_or_default();
            STANDARD
                .decode(text)
                .map_err(|e| bad(name, &format!("its b64 value is not base64 ({e})")))
        }
        other => Err(bad(
            name,
            &format!("{other} is not a string or {{\"b64\": …}}"),
        )),
    }
}

/// Appends one JSON number or boolean as an element of `datatype`; `None` if it does not fit.
fn put(out: &mut BytesMut, datatype: DataType, v: &Value) -> Option<()> {
    let int = || -> Option<i128> {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i128))
    };
    match datatype {
        DataType::Bool => out.put_u8(v.as_bool()? as u8),
        DataType::Uint8 => out.put_u8(u8::try_from(int()?).ok()?),
        DataType::Int8 => out.put_i8(i8::try_from(int()?).ok()?),
        DataType::Uint16 => out.put_u16_le(u16::try_from(int()?).ok()?),
        DataType::Int16 => out.put_i16_le(i16::try_from(int()?).ok()?),
        DataType::Uint32 => out.put_u32_le(u32::try_from(int()?).ok()?),
        DataType::Int32 => out.put_i32_le(i32::try_from(int()?).ok()?),
        DataType::Uint64 => out.put_u64_le(u64::try_from(int()?).ok()?),
        DataType::Int64 => out.put_i64_le(i64::try_from(int()?).ok()?),
        DataType::Fp16 => out.put_slice(&f16::from_f64(v.as_f64()?).to_le_bytes()),
        DataType::Bf16 => out.put_slice(&bf16::from_f64(v.as_f64()?).to_le_bytes()),
        DataType::Fp32 => out.put_f32_le(v.as_f64()? as f32),
        DataType::Fp64 => out.put_f64_le(v.as_f64()?),
        DataType::Bytes => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn every_datatype_goes_there_and_back() {
        for datatype in DataType::ALL {
            let data = match datatype {
                DataType::Bool => Bytes::from_static(&[1, 0, 1, 1, 0, 0]),
                DataType::Bytes => {
                    encode_bytes_elements("t", [&b"a"[..], b"", b"\xff", b"d", b"e", b"f"]).unwrap()
                }
                DataType::Fp16 => Bytes::from([f16::from_f32(1.5).to_le_bytes(); 6].concat()),
                DataType::Bf16 => Bytes::from([bf16::from_f32(-2.0).to_le_bytes(); 6].concat()),
                DataType::Fp32 => Bytes::from([0.25f32.to_le_bytes(); 6].concat()),
                DataType::Fp64 => Bytes::from([1e300f64.to_le_bytes(); 6].concat()),
                other => Bytes::from(vec![7u8; 6 * other.element_size().unwrap()]),
            };
            let t = Tensor {
                name: "t".into(),
                datatype,
                shape: vec![2, 3],
                data,
            };
            let value = to_json(&t).unwrap();
            assert_eq!(value.as_array().unwrap().len(), 2, "{datatype}");
            assert_eq!(from_json("t", datatype, &value).unwrap(), t, "{datatype}");
        }
    }

    #[test]
    fn rows_and_columns_agree() {
        let rows = vec![
            json!({"a": [1, 2], "b": "x"}),
            json!({"a": [3, 4], "b": "y"}),
        ];
        let cols = columns(&rows, &["a", "b"]).unwrap();
        assert_eq!(cols["a"], json!([[1, 2], [3, 4]]));
        let single = columns(&[json!(1), json!(2)], &["a"]).unwrap();
        assert_eq!(single["a"], json!([1, 2]));
        assert!(from_json("r", DataType::Int32, &json!([[1], [2, 3]])).is_err());
        assert!(from_json("r", DataType::Uint8, &json!([300])).is_err());
    }
}

//! TF Serving's tensors (`tensorflow.TensorProto`) beside ours, both ways, shared by the
//! client adapter and the embedded server so that both sides agree on every datatype. A
//! fixed-width tensor goes out as `tensor_content` (its raw little-endian elements, which
//! are exactly our layout) and BYTES as `string_val`; coming in, `tensor_content` or any
//! typed list that fits the dtype is read, including TensorFlow's rule that a single value
//! fills the whole shape.

use bytes::{BufMut, Bytes, BytesMut};

use super::{element_count, encode_bytes_elements, split_bytes_elements, Tensor, WireError};
use crate::model::DataType;
use crate::proto::tensorflow::tensor_shape_proto::Dim;
use crate::proto::tensorflow::{DataType as TfType, TensorProto, TensorShapeProto};

/// TensorFlow's dtype for one of our datatypes (BYTES is DT_STRING).
pub fn tf_dtype(datatype: DataType) -> TfType {
    match datatype {
        DataType::Bool => TfType::DtBool,
        DataType::Uint8 => TfType::DtUint8,
        DataType::Uint16 => TfType::DtUint16,
        DataType::Uint32 => TfType::DtUint32,
        DataType::Uint64 => TfType::DtUint64,
        DataType::Int8 => TfType::DtInt8,
        DataType::Int16 => TfType::DtInt16,
        DataType::Int32 => TfType::DtInt32,
        DataType::Int64 => TfType::DtInt64,
        DataType::Fp16 => TfType::DtHalf,
        DataType::Bf16 => TfType::DtBfloat16,
        DataType::Fp32 => TfType::DtFloat,
        DataType::Fp64 => TfType::DtDouble,
        DataType::Bytes => TfType::DtString,
    }
}

/// Our datatype for a TensorFlow dtype, when there is one (complex, quantized, resource and
/// variant tensors have none).
pub fn from_tf_dtype(dtype: i32) -> Option<DataType> {
    Some(match TfType::try_from(dtype).ok()? {
        TfType::DtBool => DataType::Bool,
        TfType::DtUint8 => DataType::Uint8,
        TfType::DtUint16 => DataType::Uint16,
        TfType::DtUint32 => DataType::Uint32,
        TfType::DtUint64 => DataType::Uint64,
        TfType::DtInt8 => DataType::Int8,
        TfType::DtInt16 => DataType::Int16,
        TfType::DtInt32 => DataType::Int32,
        TfType::DtInt64 => DataType::Int64,
        TfType::DtHalf => DataType::Fp16,
        TfType::DtBfloat16 => DataType::Bf16,
        TfType::DtFloat => DataType::Fp32,
        TfType::DtDouble => DataType::Fp64,
        TfType::DtString => DataType::Bytes,
        _ => return None,
    })
}

/// TensorFlow's name of a dtype number (`DT_FLOAT`), for messages and REST metadata.
pub fn tf_dtype_name(dtype: i32) -> String {
    TfType::try_from(dtype).map_or_else(|_| format!("dtype {dtype}"), |t| t.as_str_name().into())
}

/// A shape as TensorFlow writes it.
pub fn tf_shape(shape: &[i64]) -> TensorShapeProto {
    TensorShapeProto {
        dim: shape
            .iter()
            .map(|&size| Dim {
                size,
                name: String::new(),
            })
            .collect(),
        unknown_rank: false,
    }
}

/// The dimensions of a TensorFlow shape (none for an unknown rank).
pub fn dims(shape: Option<&TensorShapeProto>) -> Vec<i64> {
    shape.map_or_else(Vec::new, |s| s.dim.iter().map(|d| d.size).collect())
}

/// Our tensor as a `TensorProto`.
pub fn to_tensor_proto(t: &Tensor) -> Result<TensorProto, WireError> {
    t.validate()?;
    let mut proto = TensorProto {
        dtype: tf_dtype(t.datatype) as i32,
        tensor_shape: Some(tf_shape(&t.shape)),
        ..Default::default()
    };
    if t.datatype == DataType::Bytes {
        let elements = split_bytes_elements(&t.name, &t.data)?;
        proto.string_val = elements.into_iter().map(<[u8]>::to_vec).collect();
    } else {
        proto.tensor_content = t.data.to_vec();
    }
    Ok(proto)
}

/// A `TensorProto` as our tensor named `name`, its values checked against its shape.
pub fn from_tensor_proto(name: &str, proto: &TensorProto) -> Result<Tensor, WireError> {
    let datatype = from_tf_dtype(proto.dtype).ok_or_else(|| WireError::UnknownDatatype {
        tensor: name.to_string(),
        datatype: tf_dtype_name(proto.dtype),
    })?;
    let shape = dims(proto.tensor_shape.as_ref());
    let count = element_count(name, &shape)?;
    let data = if datatype == DataType::Bytes {
        let elements = fill(&proto.string_val, count, name, &shape)?;
        encode_bytes_elements(name, elements)?
    } else if !proto.tensor_content.is_empty() {
        Bytes::copy_from_slice(&proto.tensor_content)
    } else {
        typed_values(name, datatype, &shape, count, proto)?
    };
    Tensor::checked(name.to_string(), datatype, shape, data)
}

/// `count` elements from a list of `count`, or of one that fills the shape (TensorFlow's
/// rule for typed lists), or of none for an empty shape.
fn fill<'a, T>(
    values: &'a [T],
    count: usize,
    name: &str,
    shape: &[i64],
) -> Result<Vec<&'a T>, WireError> {
    match values.len() {
        n if n == count => Ok(values.iter().collect()),
        1 => Ok(std::iter::repeat_n(&values[0], count).collect()),
        n => Err(WireError::ElementCount {
            tensor: name.to_string(),
            shape: shape.to_vec(),
            expected: count,
            actual: n,
        }),
    }
}

/// The raw bytes of the typed list that fits the dtype.
fn typed_values(
    name: &str,
    datatype: DataType,
    shape: &[i64],
    count: usize,
    p: &TensorProto,
) -> Result<Bytes, WireError> {
    let mut out = BytesMut::with_capacity(count * datatype.element_size().unwrap_or(1));
    macro_rules! put {
        ($list:expr, $each:expr) => {
            for v in fill(&$list, count, name, shape)? {
                $each(&mut out, *v);
            }
        };
    }
    match datatype {
        DataType::Fp32 => put!(p.float_val, |o: &mut BytesMut, v: f32| o.put_f32_le(v)),
        DataType::Fp64 => put!(p.double_val, |o: &mut BytesMut, v: f64| o.put_f64_le(v)),
        DataType::Fp16 | DataType::Bf16 | DataType::Uint16 | DataType::Int16 => {
            let list = if matches!(datatype, DataType::Fp16 | DataType::Bf16) {
                &p.half_val
            } else {
                &p.int_val
            };
            put!(list, |o: &mut BytesMut, v: i32| o.put_u16_le(v as u16))
        }
        DataType::Int32 => put!(p.int_val, |o: &mut BytesMut, v: i32| o.put_i32_le(v)),
        DataType::Int8 | DataType::Uint8 => {
            put!(p.int_val, |o: &mut BytesMut, v: i32| o.put_u8(v as u8))
        }
        DataType::Int64 => put!(p.int64_val, |o: &mut BytesMut, v: i64| o.put_i64_le(v)),
        DataType::Uint32 => put!(p.uint32_val, |o: &mut BytesMut, v: u32| o.put_u32_le(v)),
        DataType::Uint64 => put!(p.uint64_val, |o: &mut BytesMut, v: u64| o.put_u64_le(v)),
        DataType::Bool => put!(p.bool_val, |o: &mut BytesMut, v: bool| o.put_u8(v as u8)),
        DataType::Bytes => {}
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(datatype: DataType, shape: Vec<i64>, data: Bytes) -> Tensor {
        Tensor {
            name: "t".into(),
            datatype,
            shape,
            data,
        }
    }

    #[test]
    fn every_datatype_goes_there_and_back() {
        for datatype in DataType::ALL {
            let data = match datatype.element_size() {
                Some(size) => Bytes::from((0..(6 * size) as u8).collect::<Vec<_>>()),
                None => encode_bytes_elements("t", ["a", "", "ccc", "d", "e", "\u{1}"]).unwrap(),
            };
            let t = tensor(datatype, vec![2, 3], data);
            let proto = to_tensor_proto(&t).unwrap();
            assert_eq!(from_tf_dtype(proto.dtype), Some(datatype));
            assert_eq!(from_tensor_proto("t", &proto).unwrap(), t, "{datatype}");
        }
    }

    #[test]
    fn typed_lists_are_read_and_one_value_fills_the_shape() {
        let proto = TensorProto {
            dtype: TfType::DtInt8 as i32,
            tensor_shape: Some(tf_shape(&[3])),
            int_val: vec![-1, 2, 3],
            ..Default::default()
        };
        let t = from_tensor_proto("x", &proto).unwrap();
        assert_eq!(&t.data[..], &[255, 2, 3]);
        let filled = TensorProto {
            dtype: TfType::DtFloat as i32,
            tensor_shape: Some(tf_shape(&[2, 2])),
            float_val: vec![1.5],
            ..Default::default()
        };
        let t = from_tensor_proto("x", &filled).unwrap();
        assert_eq!(t.data.len(), 16);
        let short = TensorProto {
            float_val: vec![1.0, 2.0],
            ..filled
        };
        assert!(matches!(
            from_tensor_proto("x", &short),
            Err(WireError::ElementCount { expected: 4, .. })
        ));
        let complex = TensorProto {
            dtype: TfType::DtComplex64 as i32,
            ..Default::default()
        };
        let err = from_tensor_proto("x", &complex).unwrap_err().to_string();
        assert!(err.contains("DT_COMPLEX64"), "{err}");
    }
}

//! Tensor element data in JSON: the `data` array of a tensor, read into a flat list of JSON
//! scalars (nested arrays are flattened row-major) and converted to raw bytes once the
//! datatype is known, and raw bytes written back as a JSON array without building a
//! `serde_json::Value`. FP16/BF16 travel as JSON numbers and round-trip exactly.

use std::cell::RefCell;
use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};
use half::{bf16, f16};
use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use super::WireError;
use crate::model::DataType;

/// One JSON scalar of a `data` array.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Bool(bool),
    Uint(u64),
    Int(i64),
    Float(f64),
    Str(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Uint(u) => write!(f, "{u}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A tensor's `data`, flattened.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FlatData(pub Vec<Scalar>);

impl<'de> Deserialize<'de> for FlatData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut out = Vec::new();
        FlattenInto(&mut out).deserialize(deserializer)?;
        Ok(FlatData(out))
    }
}

/// Appends every scalar of a (possibly nested) JSON array to the vector.
struct FlattenInto<'a>(&'a mut Vec<Scalar>);

impl<'de> DeserializeSeed<'de> for FlattenInto<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FlattenInto<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers, booleans or strings")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push(Scalar::Bool(v));
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.0.push(Scalar::Int(v));
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.0.push(Scalar::Uint(v));
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.0.push(Scalar::Float(v));
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.push(Scalar::Str(v.to_string()));
        Ok(())
    }

    fn visit_string<E>(self, v: String) -> Result<(), E> {
        self.0.push(Scalar::Str(v));
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if let Some(hint) = seq.size_hint() {
            self.0.reserve(hint);
        }
        while seq.next_element_seed(FlattenInto(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// Converts JSON scalars into raw tensor bytes of the datatype.
pub(crate) fn scalars_to_bytes(
    tensor: &str,
    datatype: DataType,
    values: &[Scalar],
) -> Result<Bytes, WireError> {
    let size = datatype.element_size().unwrap_or(8);
    let mut out = BytesMut::with_capacity(values.len() * size);
    for (index, value) in values.iter().enumerate() {
        put_scalar(&mut out, datatype, value).ok_or_else(|| WireError::BadValue {
            tensor: tensor.to_string(),
            datatype,
            index,
            value: value.to_string(),
        })?;
    }
    Ok(out.freeze())
}

/// The scalar as an integer, when it is one.
fn integer(value: &Scalar) -> Option<i128> {
    match value {
        Scalar::Uint(u) => Some(i128::from(*u)),
        Scalar::Int(i) => Some(i128::from(*i)),
        _ => None,
    }
}

/// The scalar as a float, when it is a number.
fn float(value: &Scalar) -> Option<f64> {
    match value {
        Scalar::Uint(u) => Some(*u as f64),
        Scalar::Int(i) => Some(*i as f64),
        Scalar::Float(x) => Some(*x),
        _ => None,
    }
}

/// Appends one element; `None` when the scalar does not fit the datatype.
fn put_scalar(out: &mut BytesMut, datatype: DataType, value: &Scalar) -> Option<()> {
    macro_rules! int {
        ($t:ty) => {
            out.put_slice(&<$t>::try_from(integer(value)?).ok()?.to_le_bytes())
        };
    }
    match datatype {
        DataType::Bool => match value {
            Scalar::Bool(b) => out.put_u8(u8::from(*b)),
            _ => return None,
        },
        DataType::Uint8 => int!(u8),
        DataType::Uint16 => int!(u16),
        DataType::Uint32 => int!(u32),
        DataType::Uint64 => int!(u64),
        DataType::Int8 => int!(i8),
        DataType::Int16 => int!(i16),
        DataType::Int32 => int!(i32),
        DataType::Int64 => int!(i64),
        DataType::Fp16 => out.put_slice(&f16::from_f64(float(value)?).to_le_bytes()),
        DataType::Bf16 => out.put_slice(&bf16::from_f64(float(value)?).to_le_bytes()),
        DataType::Fp32 => out.put_f32_le(float(value)? as f32),
        DataType::Fp64 => out.put_f64_le(float(value)?),
        DataType::Bytes => match value {
            Scalar::Str(s) => {
                out.put_u32_le(u32::try_from(s.len()).ok()?);
                out.put_slice(s.as_bytes());
            }
            _ => return None,
        },
    }
    Some(())
}

/// Holds the first problem met while serializing, so the caller gets a typed [`WireError`]
/// instead of serde's string error.
#[derive(Default)]
pub(crate) struct EncodeErrors(RefCell<Option<WireError>>);

impl EncodeErrors {
    fn fail<E: serde::ser::Error>(&self, error: WireError) -> E {
        let message = error.to_string();
        let mut slot = self.0.borrow_mut();
        if slot.is_none() {
            *slot = Some(error);
        }
        E::custom(message)
    }

    pub(crate) fn take(&self) -> Option<WireError> {
        self.0.borrow_mut().take()
    }
}

/// Raw tensor bytes, serialized as a flat JSON array. The data must be validated first.
pub(crate) struct DataView<'a> {
    pub tensor: &'a str,
    pub datatype: DataType,
    pub data: &'a [u8],
    pub errors: &'a EncodeErrors,
}

/// Fixed-size little-endian chunks of the data, as arrays.
fn chunks<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    data.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    })
}

impl Serialize for DataView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        macro_rules! each {
            ($t:ty) => {
                for a in chunks(self.data) {
                    seq.serialize_element(&<$t>::from_le_bytes(a))?;
                }
            };
        }
        match self.datatype {
            DataType::Bool => {
                for b in self.data {
                    seq.serialize_element(&(*b != 0))?;
                }
            }
            DataType::Uint8 => each!(u8),
            DataType::Uint16 => each!(u16),
            DataType::Uint32 => each!(u32),
            DataType::Uint64 => each!(u64),
            DataType::Int8 => each!(i8),
            DataType::Int16 => each!(i16),
            DataType::Int32 => each!(i32),
            DataType::Int64 => each!(i64),
            DataType::Fp16 => self.floats(
                &mut seq,
                chunks(self.data).map(|a| f16::from_le_bytes(a).to_f32()),
            )?,
            DataType::Bf16 => self.floats(
                &mut seq,
                chunks(self.data).map(|a| bf16::from_le_bytes(a).to_f32()),
            )?,
            DataType::Fp32 => self.floats(&mut seq, chunks(self.data).map(f32::from_le_bytes))?,
            DataType::Fp64 => self.floats(&mut seq, chunks(self.data).map(f64::from_le_bytes))?,
            DataType::Bytes => self.strings(&mut seq)?,
        }
        seq.end()
    }
}

impl DataView<'_> {
    /// Writes finite floats; NaN and infinities have no JSON form and are an error.
    fn floats<Q, T>(&self, seq: &mut Q, values: impl Iterator<Item = T>) -> Result<(), Q::Error>
    where
        Q: SerializeSeq,
        T: Float + Serialize,
    {
        for (index, value) in values.enumerate() {
            if !value.finite() {
                return Err(self.errors.fail(WireError::NotFinite {
                    tensor: self.tensor.to_string(),
                    datatype: self.datatype,
                    index,
                    value: value.describe(),
                }));
            }
            seq.serialize_element(&value)?;
        }
        Ok(())
    }

    /// Writes BYTES elements as JSON strings; an element that is not UTF-8 is an error.
    fn strings<Q: SerializeSeq>(&self, seq: &mut Q) -> Result<(), Q::Error> {
        let elements = super::split_bytes_elements(self.tensor, self.data)
            .map_err(|e| self.errors.fail::<Q::Error>(e))?;
        for (index, element) in elements.into_iter().enumerate() {
            let text = std::str::from_utf8(element).map_err(|_| {
                self.errors.fail::<Q::Error>(WireError::NotUtf8 {
                    tensor: self.tensor.to_string(),
                    index,
                })
            })?;
            seq.serialize_element(text)?;
        }
        Ok(())
    }
}

/// The two float widths JSON output handles.
trait Float: Copy {
    fn finite(self) -> bool;
    fn describe(self) -> String;
}

impl Float for f32 {
    fn finite(self) -> bool {
        self.is_finite()
    }
    fn describe(self) -> String {
        self.to_string()
    }
}

impl Float for f64 {
    fn finite(self) -> bool {
        self.is_finite()
    }
    fn describe(self) -> String {
        self.to_string()
    }
}

/// Turns a serde_json error met while writing into the recorded [`WireError`], if any.
pub(crate) fn encode_error(errors: &EncodeErrors, error: serde_json::Error) -> WireError {
    errors.take().unwrap_or_else(|| WireError::Json {
        what: "message",
        detail: error.to_string(),
    })
}

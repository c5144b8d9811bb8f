//! How a `fail` model spoils an answer it reports as a success, so that a client's answer
//! checks have something to catch: [`wrong_values`] keeps a tensor's name, datatype and
//! shape but changes every element (numbers +1, BOOL flipped, BYTES lengthened), never
//! giving back the right answer.

use bytes::Bytes;
use half::{bf16, f16};

use inferperf_wire::model::DataType;
use inferperf_wire::{encode_bytes_elements, split_bytes_elements, Tensor};

/// The tensor with every element changed; same name, datatype and shape.
pub(crate) fn wrong_values(t: Tensor) -> Tensor {
    let data = match t.datatype {
        DataType::Bool => t.data.iter().map(|&b| u8::from(b == 0)).collect(),
        DataType::Bytes => wrong_strings(&t.name, &t.data),
        DataType::Fp16 => bump_each(&t.data, 2, bump_fp16),
        DataType::Bf16 => bump_each(&t.data, 2, bump_bf16),
        DataType::Fp32 => bump_each(&t.data, 4, bump_fp32),
        DataType::Fp64 => bump_each(&t.data, 8, bump_fp64),
        integer => bump_each(&t.data, integer.element_size().unwrap_or(1), add_one),
    };
    Tensor { data, ..t }
}

/// Applies `bump` to each `size`-byte element; an element `bump` leaves as it was (a float
/// too large to move by 1, an infinity) gets its lowest bit flipped instead.
fn bump_each(data: &[u8], size: usize, bump: fn(&mut [u8])) -> Bytes {
    let mut out = data.to_vec();
    let mut before = [0u8; 8];
    for element in out.chunks_exact_mut(size.clamp(1, 8)) {
        let saved = &mut before[..element.len()];
        saved.copy_from_slice(element);
        bump(element);
        if element == saved {
            element[0] ^= 1;
        }
    }
    Bytes::from(out)
}

/// Adds 1 to a little-endian two's-complement integer of any width, wrapping.
fn add_one(element: &mut [u8]) {
    for byte in element {
        let (sum, carry) = byte.overflowing_add(1);
        *byte = sum;
        if !carry {
            return;
        }
    }
}

fn bump_fp16(e: &mut [u8]) {
    if let Ok(b) = <[u8; 2]>::try_from(&*e) {
        let x = f16::from_le_bytes(b).to_f32() + 1.0;
        e.copy_from_slice(&f16::from_f32(x).to_le_bytes());
    }
}

fn bump_bf16(e: &mut [u8]) {
    if let Ok(b) = <[u8; 2]>::try_from(&*e) {
        let x = bf16::from_le_bytes(b).to_f32() + 1.0;
        e.copy_from_slice(&bf16::from_f32(x).to_le_bytes());
    }
}

fn bump_fp32(e: &mut [u8]) {
    if let Ok(b) = <[u8; 4]>::try_from(&*e) {
        e.copy_from_slice(&(f32::from_le_bytes(b) + 1.0).to_le_bytes());
    }
}

fn bump_fp64(e: &mut [u8]) {
    if let Ok(b) = <[u8; 8]>::try_from(&*e) {
        e.copy_from_slice(&(f64::from_le_bytes(b) + 1.0).to_le_bytes());
    }
}

/// Each BYTES element with a `!` appended; data that is not valid BYTES layout gets every
/// byte inverted instead.
fn wrong_strings(name: &str, data: &Bytes) -> Bytes {
    let lengthened = split_bytes_elements(name, data).ok().and_then(|elements| {
        let changed = elements.iter().map(|e| [*e, b"!"].concat());
        encode_bytes_elements(name, changed).ok()
    });
    lengthened.unwrap_or_else(|| data.iter().map(|b| !b).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(datatype: DataType, shape: Vec<i64>, data: Vec<u8>) -> Tensor {
        Tensor {
            name: "OUTPUT0".into(),
            datatype,
            shape,
            data: Bytes::from(data),
        }
    }

    #[test]
    fn every_element_changes_and_the_shape_stays() {
        let ints: Vec<u8> = [0i32, -1, i32::MAX, 41]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let out = wrong_values(tensor(DataType::Int32, vec![4], ints));
        let values: Vec<i32> = (out.data.chunks_exact(4))
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(values, [1, 0, i32::MIN, 42]);
        assert_eq!((out.shape, out.datatype), (vec![4], DataType::Int32));

        let floats: Vec<u8> = [0.5f32, 3e30, f32::INFINITY]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let out = wrong_values(tensor(DataType::Fp32, vec![3], floats.clone()));
        assert_eq!(out.data.len(), floats.len());
        for (a, b) in out.data.chunks_exact(4).zip(floats.chunks_exact(4)) {
            assert_ne!(a, b);
        }
        assert_eq!(&out.data[..4], &1.5f32.to_le_bytes());

        let out = wrong_values(tensor(DataType::Bool, vec![3], vec![0, 1, 1]));
        assert_eq!(&out.data[..], &[1, 0, 0]);

        let half = f16::from_f32(2048.0).to_le_bytes().to_vec();
        assert_ne!(
            wrong_values(tensor(DataType::Fp16, vec![1], half.clone())).data,
            half
        );
    }

    #[test]
    fn strings_are_lengthened_and_bad_layout_is_inverted() {
        let data = encode_bytes_elements("x", ["", "ab"]).unwrap();
        let out = wrong_values(tensor(DataType::Bytes, vec![2], data.to_vec()));
        let elements = split_bytes_elements("x", &out.data).unwrap();
        assert_eq!(elements, [&b"!"[..], &b"ab!"[..]]);
        let out = wrong_values(tensor(DataType::Bytes, vec![1], vec![9, 0]));
        assert_eq!(&out.data[..], &[!9u8, !0u8]);
    }
}

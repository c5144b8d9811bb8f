//! gRPC message compression (`--grpc-compression-algorithm`): a request message is
//! compressed once, when the dataset is encoded, and framed with gRPC's compressed flag; an
//! answer the server compressed (it may only pick the encoding we advertised) is inflated
//! here, never past `--max-response-bytes`. gRPC's `deflate` is the zlib format.

use std::io::{Read, Write};

use bytes::{BufMut, Bytes, BytesMut};
use flate2::read::{GzDecoder, ZlibDecoder};
use flate2::write::{GzEncoder, ZlibEncoder};

use crate::config::GrpcCompression;

/// The `grpc-encoding` name of an algorithm.
pub fn encoding_name(compression: GrpcCompression) -> &'static str {
    match compression {
        GrpcCompression::Gzip => "gzip",
        GrpcCompression::Deflate => "deflate",
    }
}

/// A protobuf message in gRPC's length-prefixed framing, compressed (flag 1) when asked.
pub fn frame(message: &[u8], compression: Option<GrpcCompression>) -> Bytes {
    let (flag, body) = match compression {
        None => (0, Bytes::copy_from_slice(message)),
        Some(algorithm) => (1, compress(algorithm, message)),
    };
    let mut framed = BytesMut::with_capacity(5 + body.len());
    framed.put_u8(flag);
    framed.put_u32(body.len() as u32);
    framed.put_slice(&body);
    framed.freeze()
}

fn compress(algorithm: GrpcCompression, message: &[u8]) -> Bytes {
    let level = flate2::Compression::default();
    // Writing into a Vec cannot fail.
    let written = match algorithm {
        GrpcCompression::Gzip => {
            let mut encoder = GzEncoder::new(Vec::new(), level);
            encoder.write_all(message).and_then(|_| encoder.finish())
        }
        GrpcCompression::Deflate => {
            let mut encoder = ZlibEncoder::new(Vec::new(), level);
            encoder.write_all(message).and_then(|_| encoder.finish())
        }
    };
    Bytes::from(written.unwrap_or_default())
}

/// Inflates a compressed message; more than `limit` bytes inflated, or a body that is not
/// in the algorithm's format, is the error's sentence.
pub fn decompress(algorithm: GrpcCompression, body: &[u8], limit: usize) -> Result<Bytes, String> {
    let mut out = Vec::new();
    let cap = limit as u64 + 1;
    let read = match algorithm {
        GrpcCompression::Gzip => GzDecoder::new(body).take(cap).read_to_end(&mut out),
        GrpcCompression::Deflate => ZlibDecoder::new(body).take(cap).read_to_end(&mut out),
    };
    let name = encoding_name(algorithm);
    read.map_err(|e| {
        format!("the server's {name}-compressed gRPC message cannot be inflated ({e})")
    })?;
    if out.len() > limit {
        return Err(format!(
            "the server's {name}-compressed gRPC message inflates past the limit of {limit} bytes (--max-response-bytes)"
        ));
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_algorithms_round_trip_and_respect_the_limit() {
        let message = b"tensor tensor tensor tensor tensor tensor".repeat(20);
        for algorithm in [GrpcCompression::Gzip, GrpcCompression::Deflate] {
            let framed = frame(&message, Some(algorithm));
            assert_eq!(framed[0], 1);
            let len = u32::from_be_bytes([framed[1], framed[2], framed[3], framed[4]]) as usize;
            assert_eq!(framed.len(), 5 + len);
            assert!(len < message.len());
            let back = decompress(algorithm, &framed[5..], message.len()).unwrap();
            assert_eq!(&back[..], &message[..]);
            let over = decompress(algorithm, &framed[5..], message.len() - 1).unwrap_err();
            assert!(over.contains("--max-response-bytes"), "{over}");
        }
        assert!(decompress(GrpcCompression::Gzip, b"not gzip", 100).is_err());
        assert_eq!(&frame(b"abc", None)[..], b"\0\0\0\0\x03abc");
    }
}

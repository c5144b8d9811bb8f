//! gRPC's length-prefixed messages: a byte of flags (compressed or not), four bytes of
//! length, the protobuf message. [`frame`] writes one, compressed with the encoding
//! `--grpc-compression-algorithm` names (gRPC's `deflate` is the zlib format); a
//! [`MessageReader`] cuts them out of the DATA chunks of a stream as they arrive and
//! inflates one the server compressed (it may only pick the encoding advertised), never
//! past the client's limit. The client's HTTP/2 connections feed it; no I/O here.

use std::io::{Read, Write};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use flate2::read::{GzDecoder, ZlibDecoder};
use flate2::write::{GzEncoder, ZlibEncoder};

/// The largest message read or written by default: far above any tensor a model takes.
pub const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// `--grpc-compression-algorithm` (none is no compression).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrpcCompression {
    Gzip,
    Deflate,
}

/// Why a message cannot be taken, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageError {
    /// Its length is over the reader's limit.
    TooLarge(String),
    /// Compressed when that was not asked for, or not in the advertised format.
    Unreadable(String),
}

/// The `grpc-encoding` name of an algorithm.
pub fn encoding_name(compression: GrpcCompression) -> &'static str {
    match compression {
        GrpcCompression::Gzip => "gzip",
        GrpcCompression::Deflate => "deflate",
    }
}

/// A protobuf message in gRPC's length-prefixed framing, compressed (flag 1) when asked.
pub fn frame(message: &[u8], compression: Option<GrpcCompression>) -> Bytes {
    let compressed = compression.map(|algorithm| compress(algorithm, message));
    let body = compressed.as_deref().unwrap_or(message);
    let mut framed = BytesMut::with_capacity(5 + body.len());
    framed.put_u8(u8::from(compressed.is_some()));
    framed.put_u32(body.len() as u32);
    framed.put_slice(body);
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

/// Gathers the framed messages of one direction of a stream from its DATA chunks: each
/// message is handed out as soon as its last byte is in (without a copy when it came in one
/// chunk), the client gives the chunks' flow-control capacity back as it pushes them.
#[derive(Debug)]
pub struct MessageReader {
    pending: Bytes,
    /// The largest message taken (`--max-response-bytes`).
    limit: usize,
    /// The encoding advertised, in which a message flagged compressed is inflated.
    compression: Option<GrpcCompression>,
}

impl Default for MessageReader {
    fn default() -> Self {
        MessageReader::limited(MAX_MESSAGE)
    }
}

impl MessageReader {
    /// A reader that takes messages of at most `limit` bytes.
    pub fn limited(limit: usize) -> Self {
        MessageReader {
            pending: Bytes::new(),
            limit,
            compression: None,
        }
    }

    /// A reader of messages of at most `limit` bytes, inflated from `compression`.
    pub fn with(limit: usize, compression: Option<GrpcCompression>) -> Self {
        MessageReader {
            compression,
            ..MessageReader::limited(limit)
        }
    }

    /// The next whole message already received, if any.
    pub fn next_message(&mut self) -> Result<Option<Bytes>, MessageError> {
        if self.pending.len() < 5 {
            return Ok(None);
        }
        let compressed = match (self.pending[0], self.compression) {
            (0, _) => None,
            (1, Some(algorithm)) => Some(algorithm),
            _ => {
                return Err(MessageError::Unreadable(
                    "the server sent a compressed gRPC message, which was not asked for".into(),
                ))
            }
        };
        let len = u32::from_be_bytes([
            self.pending[1],
            self.pending[2],
            self.pending[3],
            self.pending[4],
        ]) as usize;
        if len > self.limit {
            return Err(MessageError::TooLarge(format!(
                    "the server announced a gRPC message of {len} bytes, over the limit of {} (--max-response-bytes)",
                self.limit
            )));
        }
        if self.pending.len() < 5 + len {
            return Ok(None);
        }
        let mut message = self.pending.split_to(5 + len);
        message.advance(5);
        match compressed {
            None => Ok(Some(message)),
            Some(algorithm) => decompress(algorithm, &message, self.limit)
                .map(Some)
                .map_err(MessageError::Unreadable),
        }
    }

    /// Adds a received chunk after the bytes not handed out yet.
    pub fn push(&mut self, chunk: Bytes) {
        if self.pending.is_empty() {
            self.pending = chunk;
        } else {
            let mut joined = BytesMut::with_capacity(self.pending.len() + chunk.len());
            joined.extend_from_slice(&self.pending);
            joined.extend_from_slice(&chunk);
            self.pending = joined.freeze();
        }
    }

    /// Bytes received beyond the messages handed out.
    pub fn leftover(&self) -> usize {
        self.pending.len()
    }
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

    #[test]
    fn messages_are_framed_and_read_back_whole() {
        let framed = frame(b"abc", None);
        let mut reader = MessageReader::default();
        reader.push(framed.slice(..4));
        assert_eq!(reader.next_message().unwrap(), None);
        reader.push(framed.slice(4..));
        reader.push(frame(b"de", None));
        assert_eq!(&reader.next_message().unwrap().unwrap()[..], b"abc");
        assert_eq!(&reader.next_message().unwrap().unwrap()[..], b"de");
        assert_eq!(reader.leftover(), 0);
        reader.push(Bytes::from_static(b"\x01\0\0\0\x01z"));
        let compressed = reader.next_message().unwrap_err();
        assert!(
            matches!(compressed, MessageError::Unreadable(_)),
            "{compressed:?}"
        );
        let mut small = MessageReader::limited(2);
        small.push(frame(b"abc", None));
        assert!(matches!(
            small.next_message(),
            Err(MessageError::TooLarge(_))
        ));
    }
}

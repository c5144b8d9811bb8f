//! HTTP/2's wire pieces that the unary client writes and reads (RFC 9113): the 9-byte
//! frame header, the frames a client sends (preface and SETTINGS, HEADERS with
//! CONTINUATION, DATA, WINDOW_UPDATE, RST_STREAM, PING and SETTINGS acknowledgements), and
//! a call's request head encoded once in HPACK without the dynamic table (RFC 7541: static
//! table indices and plain literals), so a call copies its head instead of encoding it.

use bytes::BufMut;
use http::header::{HeaderName, HeaderValue};
use std::str::FromStr;

/// The client connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The frame header's length.
pub const HEADER_LEN: usize = 9;
/// The largest frame payload either side may send until told otherwise (and the largest
/// this client accepts: it never raises SETTINGS_MAX_FRAME_SIZE).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The send window every stream and the connection start with.
pub const DEFAULT_WINDOW: i64 = 65_535;
/// The largest window flow control allows.
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// Error codes this client sends or reads.
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame's header, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHead {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHead {
    /// The header at the start of `bytes` (which holds at least [`HEADER_LEN`] bytes).
    pub fn parse(bytes: &[u8]) -> FrameHead {
        FrameHead {
            len: (bytes[0] as usize) << 16 | (bytes[1] as usize) << 8 | bytes[2] as usize,
            kind: bytes[3],
            flags: bytes[4],
            stream: u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a frame header.
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.put_uint(len as u64, 3);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream & 0x7fff_ffff);
}

/// The preface and the client's SETTINGS (no push; `stream_window` per stream), then a
/// connection WINDOW_UPDATE raising the connection's receive window to `connection_window`.
pub fn put_preface(out: &mut Vec<u8>, stream_window: u32, connection_window: u32) {
    out.extend_from_slice(PREFACE);
    put_head(out, 12, SETTINGS, 0, 0);
    out.put_u16(SETTINGS_ENABLE_PUSH);
    out.put_u32(0);
    out.put_u16(SETTINGS_INITIAL_WINDOW_SIZE);
    out.put_u32(stream_window);
    let raise = connection_window.saturating_sub(DEFAULT_WINDOW as u32);
    if raise > 0 {
        put_window_update(out, 0, raise);
    }
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.put_u32(increment & 0x7fff_ffff);
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.put_u32(code);
}

pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, SETTINGS, ACK, 0);
}

pub fn put_ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    put_head(out, payload.len(), PING, ACK, 0);
    out.extend_from_slice(payload);
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.put_u32(last_stream);
    out.put_u32(code);
}

/// A HEADERS frame (with CONTINUATION frames when the block exceeds `max_frame`) carrying
/// `block`, with END_STREAM when `end_stream`.
pub fn put_headers(out: &mut Vec<u8>, stream: u32, block: &[u8], max_frame: usize, end: bool) {
    let mut chunks = block.chunks(max_frame.max(1)).peekable();
    let mut kind = HEADERS;
    let mut flags = if end { END_STREAM } else { 0 };
    if block.is_empty() {
        put_head(out, 0, kind, flags | END_HEADERS, stream);
        return;
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        put_head(
            out,
            chunk.len(),
            kind,
            flags | if last { END_HEADERS } else { 0 },
            stream,
        );
        out.extend_from_slice(chunk);
        kind = CONTINUATION;
        flags = 0;
    }
}

/// Appends an HPACK integer with an `prefix`-bit prefix whose other bits are `high`.
fn put_int(out: &mut Vec<u8>, high: u8, prefix: u32, value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(high | value as u8);
        return;
    }
    out.push(high | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// A literal string, not Huffman-coded.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// A field "literal without indexing" whose name is the static table's entry `index`.
fn put_indexed_name(out: &mut Vec<u8>, index: usize, value: &[u8]) {
    put_int(out, 0x00, 4, index);
    put_string(out, value);
}

/// A field "literal without indexing" with a literal name.
fn put_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x00);
    put_string(out, name);
    put_string(out, value);
}

/// What a gRPC call's request head holds.
pub struct CallHead<'a> {
    pub tls: bool,
    pub authority: &'a str,
    pub path: &'a str,
    /// `grpc-encoding` and `grpc-accept-encoding`, when messages are compressed.
    pub encoding: Option<&'a str>,
    pub user_agent: &'a str,
    /// `-H` headers, sent as metadata (the invalid ones are left out).
    pub metadata: &'a [(String, String)],
}

/// The head's HPACK block: indices of RFC 7541's static table (2 `:method POST` is 3,
/// `:scheme` 6/7, `:path` 4, `:authority` 1, `content-type` 31, `user-agent` 58) and
/// literals never added to the dynamic table, so the block is the same for every call.
pub fn encode_call_head(head: &CallHead) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.push(0x80 | 3);
    out.push(0x80 | if head.tls { 7 } else { 6 });
    put_indexed_name(&mut out, 4, head.path.as_bytes());
    put_indexed_name(&mut out, 1, head.authority.as_bytes());
    put_indexed_name(&mut out, 31, b"application/grpc");
    if let Some(encoding) = head.encoding {
        put_literal(&mut out, b"grpc-encoding", encoding.as_bytes());
        put_literal(&mut out, b"grpc-accept-encoding", encoding.as_bytes());
    }
    put_literal(&mut out, b"te", b"trailers");
    put_indexed_name(&mut out, 58, head.user_agent.as_bytes());
    for (name, value) in head.metadata {
        if let (Ok(n), Ok(v)) = (HeaderName::from_str(name), HeaderValue::from_str(value)) {
            put_literal(&mut out, n.as_str().as_bytes(), v.as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_head_decodes_to_the_fields_of_a_grpc_call() {
        let metadata = vec![("X-Tenant".to_string(), "a".repeat(200))];
        let block = encode_call_head(&CallHead {
            tls: false,
            authority: "127.0.0.1:8001",
            path: "/inference.GRPCInferenceService/ModelInfer",
            encoding: Some("gzip"),
            user_agent: "inferperf/test",
            metadata: &metadata,
        });
        let fields = loona_hpack::Decoder::new().decode(&block).unwrap();
        let text: Vec<(String, String)> = fields
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        let expected = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/inference.GRPCInferenceService/ModelInfer"),
            (":authority", "127.0.0.1:8001"),
            ("content-type", "application/grpc"),
            ("grpc-encoding", "gzip"),
            ("grpc-accept-encoding", "gzip"),
            ("te", "trailers"),
            ("user-agent", "inferperf/test"),
        ];
        for (i, (name, value)) in expected.iter().enumerate() {
            assert_eq!((text[i].0.as_str(), text[i].1.as_str()), (*name, *value));
        }
        assert_eq!(text[9], ("x-tenant".to_string(), "a".repeat(200)));
    }

    #[test]
    fn a_long_head_goes_out_in_continuation_frames() {
        let block = vec![7u8; 40_000];
        let mut out = Vec::new();
        put_headers(&mut out, 3, &block, DEFAULT_MAX_FRAME, false);
        let first = FrameHead::parse(&out);
        assert_eq!(
            (first.len, first.kind, first.flags, first.stream),
            (16_384, HEADERS, 0, 3)
        );
        let second = FrameHead::parse(&out[9 + 16_384..]);
        assert_eq!((second.kind, second.flags), (CONTINUATION, 0));
        let third = FrameHead::parse(&out[2 * (9 + 16_384)..]);
        assert_eq!(
            (third.len, third.kind, third.flags),
            (40_000 - 2 * 16_384, CONTINUATION, END_HEADERS)
        );
    }
}

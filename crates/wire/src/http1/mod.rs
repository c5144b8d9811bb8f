//! HTTP/1.1 responses read from bytes: the head (status, how the body is delimited, the
//! headers the client acts on), the size lines of a chunked body and the trailers after
//! it. The client's socket reader parses with these as bytes arrive, and [`whole`] reads a
//! complete response from a slice by the same rules for tests and fuzzing, so that what is
//! fuzzed is what runs. Header parsing is httparse's. No I/O here.

mod whole;
pub use whole::{head_length, read_whole_response, WholeResponse};

/// What is wrong with bytes read as an HTTP/1.1 response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Http1Error {
    /// Not HTTP as it should be: a head httparse refuses, two lengths that differ, a chunk
    /// size that does not fit, a head or trailer section over [`MAX_HEAD_BYTES`].
    Unreadable,
    /// The bytes end before the response does: a socket would wait for more, a slice
    /// that ends there was cut short by the server.
    Incomplete,
}

/// Headers a response may carry before it is refused (Triton sends about five).
const MAX_HEADERS: usize = 64;
/// Largest response head accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most room made for a body before its bytes come (see [`body_reservation`]).
const MAX_BODY_RESERVATION: usize = 64 * 1024 * 1024;

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Empty,
    Length(usize),
    Chunked,
    UntilClose,
}

/// The parts of a response head that reading it needs.
#[derive(Debug, Clone, Copy)]
pub struct Head {
    pub status: u16,
    /// Bytes of the head, blank line included.
    pub len: usize,
    pub body: BodyKind,
    pub close: bool,
    pub header_len: Option<usize>,
    /// `Content-Type: text/event-stream`.
    pub event_stream: bool,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Parses a response head; `Ok(None)` while it is incomplete.
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, Http1Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Http1Error::Unreadable),
    };
    let status = response.code.ok_or(Http1Error::Unreadable)?;
    let mut head = Head {
        status,
        len,
        body: BodyKind::UntilClose,
        close: response.version == Some(0),
        header_len: None,
        event_stream: false,
    };
    let mut length = None;
    for header in response.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            let value = number(header.value).ok_or(Http1Error::Unreadable)?;
            if length.is_some_and(|l| l != value) {
                return Err(Http1Error::Unreadable);
            }
            length = Some(value);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if has_token(header.value, "chunked") {
                head.body = BodyKind::Chunked;
            }
        } else if name.eq_ignore_ascii_case("connection") {
            if has_token(header.value, "close") {
                head.close = true;
            } else if has_token(header.value, "keep-alive") {
                head.close = false;
            }
        } else if name.eq_ignore_ascii_case("content-type") {
            head.event_stream = header
                .value
                .trim_ascii_start()
                .get(..17)
                .is_some_and(|v| v.eq_ignore_ascii_case(b"text/event-stream"));
        } else if name.eq_ignore_ascii_case("inference-header-content-length") {
            head.header_len = number(header.value);
        }
    }
    if head.body != BodyKind::Chunked {
        if let Some(n) = length {
            head.body = BodyKind::Length(n);
        }
    }
    if (100..200).contains(&status) || status == 204 || status == 304 {
        head.body = BodyKind::Empty;
    }
    Ok(Some(head))
}

fn number(value: &[u8]) -> Option<usize> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

/// True when a comma-separated header value lists `token` (case-insensitive).
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|part| part.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// The size line of one chunk of a chunked body, as offsets from the line's start.
#[derive(Debug, Clone, Copy)]
pub struct ChunkHead {
    /// Bytes of the size line, its CRLF included.
    pub line: usize,
    /// Where the chunk ends, the CRLF after its data included.
    pub end: usize,
    /// The last (empty) chunk: trailers follow the line.
    pub last: bool,
}

/// Parses the chunk at the start of `buf`; `Ok(None)` while its size line is incomplete.
pub fn chunk_head(buf: &[u8]) -> Result<Option<ChunkHead>, Http1Error> {
    let (line, size) = match httparse::parse_chunk_size(buf) {
        Ok(httparse::Status::Complete(found)) => found,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Http1Error::Unreadable),
    };
    // Up to 16 hex digits are a size: one near 2^64 must not wrap the end around.
    let end = usize::try_from(size)
        .ok()
        .and_then(|size| line.checked_add(size)?.checked_add(2))
        .ok_or(Http1Error::Unreadable)?;
    Ok(Some(ChunkHead {
        line,
        end,
        last: size == 0,
    }))
}

/// Where the trailer section at the start of `buf` ends (its blank line included), once it
/// is all there.
pub fn trailers_end(buf: &[u8]) -> Option<usize> {
    if buf.starts_with(b"\r\n") {
        return Some(2);
    }
    find(buf, b"\r\n\r\n").map(|end| end + 4)
}

/// Room made in the read buffer for a body of `len` bytes when `have` are in already: all
/// of it up to [`MAX_BODY_RESERVATION`]. `Content-Length` is the server's word, not bytes
/// that came: a bigger body grows the buffer as it arrives.
pub fn body_reservation(len: usize, have: usize) -> usize {
    len.saturating_sub(have).min(MAX_BODY_RESERVATION)
}

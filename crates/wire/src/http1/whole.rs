//! Reading a whole HTTP/1.1 response from a byte slice, by the rules `Http1Stream` reads
//! one from a socket with, for tests and fuzzing. It lives apart from `http1.rs`, which keeps
//! the per-request path, and shares that path's head and chunk parsers rather than copying
//! them, so that what is fuzzed is what runs.

use super::{
    body_reservation, chunk_head, parse_head, trailers_end, BodyKind, ErrorKind, MAX_HEAD_BYTES,
    UNREADABLE,
};

/// A whole response read from bytes that end where the server closed the connection, by
/// the rules of [`super::Http1Stream::receive`] (informational answers skipped; the body by
/// `Content-Length`, chunks, or up to the end). For tests and fuzzing, which cannot feed a
/// socket for each input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeResponse {
    pub status: u16,
    pub header_len: Option<usize>,
    pub body: Vec<u8>,
    /// Bytes after the body.
    pub trailing: usize,
    /// The head's `Content-Length`, when the body was read by it.
    pub content_length: Option<usize>,
    pub close: bool,
    pub event_stream: bool,
}

/// See [`WholeResponse`]: an error is what `receive` would give for the same bytes
/// (`Connection` where it would wait for more than the server sent).
pub fn read_whole_response(bytes: &[u8]) -> Result<WholeResponse, ErrorKind> {
    let mut rest = bytes;
    let head = loop {
        let Some(head) = parse_head(rest)? else {
            let kind = if rest.len() > MAX_HEAD_BYTES {
                UNREADABLE
            } else {
                ErrorKind::Connection
            };
            return Err(kind);
        };
        rest = &rest[head.len..];
        if !(100..200).contains(&head.status) {
            break head;
        }
    };
    let mut content_length = None;
    let body = match head.body {
        BodyKind::Empty => Vec::new(),
        BodyKind::Length(n) => {
            // The room the stream makes for the body before reading it.
            let room = rest.len().min(n) + body_reservation(n, rest.len());
            let mut body = Vec::with_capacity(room);
            let part = rest.get(..n).ok_or(ErrorKind::Connection)?;
            body.extend_from_slice(part);
            rest = &rest[n..];
            content_length = Some(n);
            body
        }
        BodyKind::Chunked => {
            let mut body = Vec::new();
            loop {
                let chunk = chunk_head(rest)?.ok_or(ErrorKind::Connection)?;
                if chunk.last {
                    rest = &rest[chunk.line..];
                    let Some(end) = trailers_end(rest) else {
                        let kind = if rest.len() > MAX_HEAD_BYTES {
                            UNREADABLE
                        } else {
                            ErrorKind::Connection
                        };
                        return Err(kind);
                    };
                    rest = &rest[end..];
                    break;
                }
                if rest.len() < chunk.end {
                    return Err(ErrorKind::Connection);
                }
                if &rest[chunk.end - 2..chunk.end] != b"\r\n" {
                    return Err(UNREADABLE);
                }
                body.extend_from_slice(&rest[chunk.line..chunk.end - 2]);
                rest = &rest[chunk.end..];
            }
            body
        }
        BodyKind::UntilClose => std::mem::take(&mut rest).to_vec(),
    };
    Ok(WholeResponse {
        status: head.status,
        header_len: head.header_len,
        body,
        trailing: rest.len(),
        content_length,
        close: head.close,
        event_stream: head.event_stream,
    })
}

/// The length of the response head at the start of `bytes`, once it is all there.
pub fn head_length(bytes: &[u8]) -> Result<Option<usize>, ErrorKind> {
    Ok(parse_head(bytes)?.map(|head| head.len))
}

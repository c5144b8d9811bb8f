//! Reading a whole HTTP/1.1 response from a byte slice, by the rules the client's socket
//! reader follows, for tests and fuzzing. It shares that reader's head and chunk parsers
//! rather than copying them, so that what is fuzzed is what runs.

use super::{
    body_reservation, chunk_head, parse_head, trailers_end, BodyKind, Http1Error, MAX_HEAD_BYTES,
};

/// A whole response read from bytes that end where the server closed the connection, by
/// the rules of the client's socket reader (informational answers skipped; the body by
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

/// See [`WholeResponse`]: an error is what the socket reader would give for the same bytes
/// ([`Http1Error::Incomplete`] where it would wait for more than the server sent).
pub fn read_whole_response(bytes: &[u8]) -> Result<WholeResponse, Http1Error> {
    let mut rest = bytes;
    let head = loop {
        let Some(head) = parse_head(rest)? else {
            let kind = if rest.len() > MAX_HEAD_BYTES {
                Http1Error::Unreadable
            } else {
                Http1Error::Incomplete
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
            let part = rest.get(..n).ok_or(Http1Error::Incomplete)?;
            body.extend_from_slice(part);
            rest = &rest[n..];
            content_length = Some(n);
            body
        }
        BodyKind::Chunked => {
            let mut body = Vec::new();
            loop {
                let chunk = chunk_head(rest)?.ok_or(Http1Error::Incomplete)?;
                if chunk.last {
                    rest = &rest[chunk.line..];
                    let Some(end) = trailers_end(rest) else {
                        let kind = if rest.len() > MAX_HEAD_BYTES {
                            Http1Error::Unreadable
                        } else {
                            Http1Error::Incomplete
                        };
                        return Err(kind);
                    };
                    rest = &rest[end..];
                    break;
                }
                if rest.len() < chunk.end {
                    return Err(Http1Error::Incomplete);
                }
                if &rest[chunk.end - 2..chunk.end] != b"\r\n" {
                    return Err(Http1Error::Unreadable);
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
pub fn head_length(bytes: &[u8]) -> Result<Option<usize>, Http1Error> {
    Ok(parse_head(bytes)?.map(|head| head.len))
}

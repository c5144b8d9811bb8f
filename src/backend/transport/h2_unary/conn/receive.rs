//! The frames a server sends, each filed where it belongs: DATA and header blocks under
//! their stream (HPACK-decoded in order, whatever the stream), RST_STREAM as the call's gRPC
//! code, SETTINGS applied and acknowledged, PING answered, GOAWAY and WINDOW_UPDATE applied.

use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::super::frame::{self as f, FrameHead};
use super::{ConnState, PartialBlock, Stream, CONNECTION_WINDOW, MAX_HEADER_BLOCK, STREAM_WINDOW};
use crate::backend::outcome::{ErrorKind, Failure, Malformation};
use crate::backend::transport::h2::grpc_code_of_reset;

impl ConnState {
    pub(super) fn on_frame(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), ErrorKind> {
        if self.block.is_some() && head.kind != f::CONTINUATION {
            return Err(self.protocol_error(f::PROTOCOL_ERROR));
        }
        match head.kind {
            f::DATA => self.on_data(head, payload),
            f::HEADERS => self.on_headers(head, payload),
            f::CONTINUATION => self.on_continuation(head, payload),
            f::RST_STREAM => self.on_reset(head, payload),
            f::SETTINGS => self.on_settings(head, payload),
            f::PING if head.flags & f::ACK == 0 && payload.len() == 8 => {
                f::put_ping_ack(&mut self.write, payload);
                Ok(())
            }
            f::GOAWAY => self.on_goaway(payload),
            f::WINDOW_UPDATE => self.on_window_update(head, payload),
            f::PUSH_PROMISE => Err(self.protocol_error(f::PROTOCOL_ERROR)),
            _ => Ok(()),
        }
    }

    fn stream(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    fn on_data(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), ErrorKind> {
        let Some(data) = unpadded(head, payload) else {
            return Err(self.protocol_error(f::PROTOCOL_ERROR));
        };
        self.recv_unacked += head.len as u32;
        if self.recv_unacked >= CONNECTION_WINDOW / 2 {
            f::put_window_update(&mut self.write, 0, self.recv_unacked);
            self.recv_unacked = 0;
        }
        let mut update = None;
        if let Some(stream) = self.streams.iter_mut().find(|s| s.id == head.stream) {
            if stream.finished() {
                return Ok(());
            }
            if stream.status.is_none() {
                stream.error = Some(Failure::bad(
                    Malformation::Unreadable,
                    "the server sent the answer's data before its headers",
                ));
            } else {
                stream.body.extend_from_slice(data);
                if let Some(too_large) = over_limit(&stream.body, stream.limit) {
                    stream.error = Some(too_large);
                }
            }
            if head.flags & f::END_STREAM != 0 {
                stream.done.get_or_insert_with(Instant::now);
            } else {
                stream.recv_unacked += head.len as u32;
                if stream.recv_unacked >= STREAM_WINDOW / 2 {
                    update = Some((stream.id, stream.recv_unacked));
                    stream.recv_unacked = 0;
                }
            }
            if stream.finished() {
                stream.wake();
            }
        }
        if let Some((id, n)) = update {
            f::put_window_update(&mut self.write, id, n);
        }
        Ok(())
    }

    fn on_headers(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), ErrorKind> {
        let Some(mut block) = unpadded(head, payload) else {
            return Err(self.protocol_error(f::PROTOCOL_ERROR));
        };
        if head.flags & f::PRIORITY != 0 {
            if block.len() < 5 {
                return Err(self.protocol_error(f::PROTOCOL_ERROR));
            }
            block = &block[5..];
        }
        let end_stream = head.flags & f::END_STREAM != 0;
        if head.flags & f::END_HEADERS != 0 {
            return self.on_header_block(head.stream, block, end_stream);
        }
        self.block = Some(PartialBlock {
            stream: head.stream,
            bytes: block.to_vec(),
            end_stream,
        });
        Ok(())
    }

    fn on_continuation(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), ErrorKind> {
        let Some(mut block) = self.block.take().filter(|b| b.stream == head.stream) else {
            return Err(self.protocol_error(f::PROTOCOL_ERROR));
        };
        block.bytes.extend_from_slice(payload);
        if block.bytes.len() > MAX_HEADER_BLOCK {
            return Err(self.protocol_error(f::ENHANCE_YOUR_CALM));
        }
        if head.flags & f::END_HEADERS != 0 {
            return self.on_header_block(block.stream, &block.bytes, block.end_stream);
        }
        self.block = Some(block);
        Ok(())
    }

    /// A whole header block: decoded (always, to keep HPACK's table in step) and filed as
    /// its stream's head or trailers.
    fn on_header_block(&mut self, id: u32, block: &[u8], end: bool) -> Result<(), ErrorKind> {
        let (mut status, mut grpc_status) = (None, None);
        let decoded = self
            .decoder
            .decode_with_cb(block, |name, value| match &*name {
                b":status" => status = parse_number::<u16>(&value),
                b"grpc-status" => grpc_status = parse_number::<i32>(&value),
                _ => {}
            });
        if decoded.is_err() {
            return Err(self.protocol_error(f::COMPRESSION_ERROR));
        }
        let Some(stream) = self.stream(id).filter(|s| !s.finished()) else {
            return Ok(());
        };
        if stream.status.is_none() {
            stream.status = Some(status.unwrap_or(0));
            stream.head_grpc_status = grpc_status;
            stream.first_byte = Some(Instant::now());
        } else {
            stream.trailers = true;
            stream.trailer_grpc_status = grpc_status;
            if !end {
                stream.error = Some(Failure::bad(
                    Malformation::Unreadable,
                    "the server sent trailers that do not end the stream",
                ));
            }
        }
        if end {
            stream.done.get_or_insert_with(Instant::now);
        }
        if stream.finished() {
            stream.wake();
        }
        Ok(())
    }

    fn on_reset(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), ErrorKind> {
        if payload.len() != 4 || head.stream == 0 {
            return Err(self.protocol_error(f::FRAME_SIZE_ERROR));
        }
        let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
        if let Some(stream) = self.stream(head.stream) {
            stream.pending = Bytes::new();
            if !stream.finished() {
                stream.error = Some(ErrorKind::GrpcCode(grpc_code_of_reset(code)).into());
                stream.wake();
            }
        }
        Ok(())
    }

    fn on_settings(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), ErrorKind> {
        if head.flags & f::ACK != 0 {
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) || head.stream != 0 {
            return Err(self.protocol_error(f::FRAME_SIZE_ERROR));
        }
        for entry in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([entry[0], entry[1]]);
            let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
            match id {
                f::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = value as usize,
                f::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value as i64 > f::MAX_WINDOW {
                        return Err(self.protocol_error(f::FLOW_CONTROL_ERROR));
                    }
                    let delta = value as i64 - self.peer_initial_window;
                    self.peer_initial_window = value as i64;
                    for stream in &mut self.streams {
                        stream.send_window += delta;
                    }
                }
                f::SETTINGS_MAX_FRAME_SIZE => {
                    if !(f::DEFAULT_MAX_FRAME..=16_777_215).contains(&(value as usize)) {
                        return Err(self.protocol_error(f::PROTOCOL_ERROR));
                    }
                    self.peer_max_frame = value as usize;
                }
                f::SETTINGS_HEADER_TABLE_SIZE => {} // this client never indexes what it sends
                _ => {}
            }
        }
        f::put_settings_ack(&mut self.write);
        self.got_settings = true;
        for w in self.slot_waiters.drain(..) {
            w.wake();
        }
        Ok(())
    }

    /// GOAWAY: no new call here; the calls the server did not take end as connection errors
    /// (the lane reconnects), those it took may still finish.
    fn on_goaway(&mut self, payload: &[u8]) -> Result<(), ErrorKind> {
        if payload.len() < 8 {
            return Err(self.protocol_error(f::FRAME_SIZE_ERROR));
        }
        let last =
            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
        self.going_away = true;
        for stream in &mut self.streams {
            if stream.id > last && !stream.finished() {
                stream.error = Some(ErrorKind::Connection.into());
                stream.wake();
            }
        }
        Ok(())
    }

    fn on_window_update(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), ErrorKind> {
        if payload.len() != 4 {
            return Err(self.protocol_error(f::FRAME_SIZE_ERROR));
        }
        let increment = (u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
            & 0x7fff_ffff) as i64;
        if head.stream == 0 {
            self.send_window += increment;
            if self.send_window > f::MAX_WINDOW {
                return Err(self.protocol_error(f::FLOW_CONTROL_ERROR));
            }
        } else if let Some(stream) = self.stream(head.stream) {
            stream.send_window += increment;
        }
        Ok(())
    }
}

/// A DATA or HEADERS payload without its padding; None when the padding does not fit.
fn unpadded(head: FrameHead, payload: &[u8]) -> Option<&[u8]> {
    if head.flags & f::PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len().checked_sub(pad as usize).map(|end| &rest[..end])
}

fn parse_number<T: std::str::FromStr>(value: &[u8]) -> Option<T> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

/// A body that can no longer be a unary answer within `limit` (`--max-response-bytes`).
fn over_limit(body: &BytesMut, limit: usize) -> Option<Failure> {
    if body.len() >= 5 {
        let announced = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        if announced > limit {
            return Some(Failure::bad(
                Malformation::TooLarge,
                format!(
                    "the server announced a gRPC message of {announced} bytes, over the limit of {limit} (--max-response-bytes)"
                ),
            ));
        }
    }
    (body.len() > 2 * (limit + 5)).then(|| {
        Failure::bad(
            Malformation::Overlong,
            "the unary call answered with more than one message",
        )
    })
}

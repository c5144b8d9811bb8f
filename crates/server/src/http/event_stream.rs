//! The body of a streamed LLM answer, apart from the OpenAI route file that starts it so
//! that each stays short: server-sent events handed to hyper as the engine produces them
//! ([`crate::llm`]), and the event that ends a stream the server cut short, in the error
//! form of the answer's wire format (OpenAI's object, or Triton's `{"error": "..."}`). It
//! imports no route file.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Response};
use http_body::{Body, Frame};

use super::reply::{Reply, ReplyBody};
use crate::llm::{Produced, Ticket};
use crate::openai_wire::Events;

const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");

/// The message of the event that ends a stream the server cut short.
const STOPPED: &str = "the server stopped before the answer was complete";

/// A 200 reply whose body is the stream.
pub(super) fn stream_reply(body: EventStream) -> Reply {
    let mut reply = Response::new(ReplyBody::Stream(Box::pin(body)));
    let headers = reply.headers_mut();
    headers.insert(CONTENT_TYPE, EVENT_STREAM);
    headers.insert(CACHE_CONTROL, NO_CACHE);
    reply
}

/// A streamed answer's body: each event as the engine produces it (several in one frame
/// when the reader fell behind), then the final, usage and `[DONE]` events with the last.
pub(super) struct EventStream {
    ticket: Ticket,
    events: Events,
    /// Makes the event sent when the engine stops before the answer is complete.
    abort: fn(&str) -> Bytes,
    sent: u32,
    done: bool,
}

impl EventStream {
    pub(super) fn new(ticket: Ticket, events: Events, abort: fn(&str) -> Bytes) -> EventStream {
        EventStream {
            ticket,
            events,
            abort,
            sent: 0,
            done: false,
        }
    }

    fn event(&self, i: u32) -> &Bytes {
        self.events.event(i, self.ticket.events)
    }

    /// Events `sent + 1 ..= upto`, with the tail after the last.
    fn frame(&mut self, upto: u32) -> Bytes {
        let total = self.ticket.events;
        let upto = upto.min(total);
        let from = self.sent + 1;
        self.sent = upto;
        if from == upto && upto < total {
            return self.event(upto).clone();
        }
        let mut frame = BytesMut::new();
        (from..=upto).for_each(|i| frame.extend_from_slice(self.event(i)));
        if upto == total {
            self.events.write_tail(&mut frame, self.ticket.cached());
            self.done = true;
        }
        frame.freeze()
    }
}

impl Body for EventStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let data = match this.ticket.poll_events(this.sent, cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Produced::Aborted) => {
                this.done = true;
                (this.abort)(STOPPED)
            }
            Poll::Ready(Produced::Events(n)) => this.frame(n),
        };
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

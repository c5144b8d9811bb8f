//! One slot's HTTP/1.1 connection to an OpenAI-compatible server: it sends a prompt's
//! request, times every event with content as an answer (or the whole answer when the
//! server does not stream), counts the tokens, and leaves the connection ready for the next
//! request. Also the discovery checks: the model is listed and the endpoint answers.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use serde_json::Value;

use super::endpoints::{EndpointWire, Reading};
use super::events::ChunkFacts;
use super::OpenAi;
use crate::backend::transport::http1::{frame_request, user_headers, Http1Stream, ResponseStart};
use crate::backend::Conn;
use crate::backend::{
    nanos, ErrorKind, Exchange, Failure, Malformation, Payload, Request, Target, TokenSource,
    Tokens,
};
use crate::data::Prompt;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::sse::{is_done, EventReader};

/// How long the end of a body may take to come after `data: [DONE]` before the connection
/// is given up (a server that keeps the stream open would otherwise hold the slot).
const AFTER_DONE: Duration = Duration::from_millis(500);
/// The most of an error answer quoted in a message.
const QUOTED: usize = 200;

/// A connection and the buffers its answers are read into.
pub struct OpenAiConn {
    io: Http1Stream,
    events: EventReader,
    body: BytesMut,
    generates: bool,
    streaming: bool,
    /// The endpoint type's answers, and how they are read.
    wire: &'static dyn EndpointWire,
    reading: Reading,
}

/// What a streamed answer's events added up to.
#[derive(Default)]
struct StreamCount {
    events: u32,
    usage: ChunkFacts,
    /// The stream ended with its body (the types whose streams have no end event).
    ended_with_body: bool,
}

impl StreamCount {
    fn add(&mut self, facts: ChunkFacts) {
        self.events += facts.content as u32;
        let usage = &mut self.usage;
        usage.completion_tokens = facts.completion_tokens.or(usage.completion_tokens);
        usage.prompt_tokens = facts.prompt_tokens.or(usage.prompt_tokens);
        usage.cached_tokens = facts.cached_tokens.or(usage.cached_tokens);
        usage.reasoning_tokens = facts.reasoning_tokens.or(usage.reasoning_tokens);
    }
}

/// What the adapter knows of a generation's tokens when its answer is read: the server's
/// usage, if any, the prompt's count and the length asked. The text's own count is made by
/// the driver (see [`Tokens`]).
fn answer_tokens(
    ex: &Exchange<'_>,
    request: &Request,
    usage: ChunkFacts,
    unstreamed: bool,
) -> Tokens {
    let (output, source) = match usage.completion_tokens {
        Some(n) => (n, TokenSource::Usage),
        None => (0, TokenSource::Tokenizer),
    };
    Tokens {
        output,
        input: request.input_tokens,
        source,
        unstreamed,
        usage_output: usage.completion_tokens,
        usage_input: usage.prompt_tokens,
        usage_cached: usage.cached_tokens,
        usage_reasoning: usage.reasoning_tokens,
        asked: request.max_tokens,
        ..ex.tokens
    }
}

impl OpenAiConn {
    pub async fn open(target: &Target, adapter: &OpenAi) -> Result<OpenAiConn, ErrorKind> {
        Ok(OpenAiConn {
            io: Http1Stream::open(&target.peer).await?,
            events: EventReader::default(),
            body: BytesMut::new(),
            generates: adapter.llm.endpoint.generates(),
            streaming: adapter.streaming,
            wire: adapter.endpoint_wire(),
            reading: reading(adapter),
        })
    }

    /// Reads an answer that is not a 200 into the failure it reports.
    async fn read_error(&mut self, head: ResponseStart) -> Result<(), Failure> {
        self.body.clear();
        self.io.rest_of_body(&mut self.body).await?;
        Err(Failure::new(
            ErrorKind::HttpStatus(head.status),
            format!("HTTP {}: {}", head.status, quoted(&self.body)),
        ))
    }

    /// Reads server-sent events until `data: [DONE]`; each event with content is an answer.
    async fn read_events(
        &mut self,
        request: &Request,
        ex: &mut Exchange<'_>,
        head: ResponseStart,
    ) -> Result<(), Failure> {
        self.events.clear();
        let mut count = StreamCount::default();
        let mut arrived = head.first_byte;
        // Receiving starts with the first part of the body, as for k6 and AIPerf (a server
        // sends the head of a stream before its first token).
        let mut body_start = None;
        'body: loop {
            while let Some(data) = self.events.next_event() {
                if data.is_empty() {
                    continue;
                }
                if is_done(&data) {
                    break 'body;
                }
                let facts = self.wire.read_event(&data, &self.reading, ex)?;
                if facts.content {
                    ex.answer(arrived);
                }
                if facts.output && ex.tokens.first_output.is_none() {
                    ex.tokens.first_output = Some(arrived);
                }
                count.add(facts);
                if facts.ends {
                    break 'body;
                }
            }
            // A body that ends, or a connection that breaks, before `[DONE]`: the answer
            // was cut short (but for the types whose streams end with their body).
            match self.io.next_part(self.events.buffer()).await {
                Ok(true) => {}
                Ok(false) if self.wire.stream_ends_with_body() => {
                    count.ended_with_body = true;
                    break 'body;
                }
                _ => {
                    return Err(Failure::bad(
                        Malformation::Truncated,
                        format!(
                        "the event stream ended without data: [DONE], after {} events with content",
                        count.events
                    ),
                    ))
                }
            }
            arrived = Instant::now();
            body_start.get_or_insert(arrived);
        }
        if count.events == 0 && self.generates {
            return Err(Failure::bad(
                Malformation::Empty,
                "the stream ended without an event that carries output (every event had no text, such as choices: [] with usage only)",
            ));
        }
        let end = Instant::now();
        ex.finish(end);
        let body_start = body_start.unwrap_or(head.first_byte);
        ex.recv_ns = nanos(end.saturating_duration_since(body_start));
        ex.tokens = answer_tokens(ex, request, count.usage, false);
        if !count.ended_with_body {
            self.finish_body().await;
        }
        Ok(())
    }

    /// Reads an answer that came in one piece.
    async fn read_whole(
        &mut self,
        request: &Request,
        ex: &mut Exchange<'_>,
        head: ResponseStart,
    ) -> Result<(), Failure> {
        self.body.clear();
        self.io.rest_of_body(&mut self.body).await?;
        let done = Instant::now();
        ex.recv_ns = nanos(done.saturating_duration_since(head.first_byte));
        let facts = self.wire.read_answer(&self.body, &self.reading, ex)?;
        ex.answer(done);
        ex.finish(done);
        if facts.output {
            ex.tokens.first_output = Some(done);
        }
        ex.tokens = match self.generates {
            true => answer_tokens(ex, request, facts, self.streaming),
            false => Tokens {
                input: request.input_tokens,
                source: TokenSource::InputOnly,
                ..ex.tokens
            },
        };
        Ok(())
    }

    /// Reads what follows `[DONE]` (the end of the chunked body) so that the connection
    /// can serve the next request; a server that keeps the body open loses the connection.
    async fn finish_body(&mut self) {
        let mut rest = BytesMut::new();
        let read = tokio::time::timeout(AFTER_DONE, self.io.rest_of_body(&mut rest)).await;
        if !matches!(read, Ok(Ok(()))) {
            self.io.abandon_body();
        }
    }
}

impl Conn for OpenAiConn {
    fn is_usable(&mut self) -> bool {
        self.io.is_usable()
    }

    /// Sends one prompt's request and reads its answer.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let Payload::Http(bytes) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        self.io.send(bytes).await?;
        ex.send_ns = nanos(ex.sent.elapsed());
        let head = self.io.receive_head().await?;
        let result = if head.status != 200 {
            self.read_error(head).await
        } else if head.event_stream {
            self.read_events(request, ex, head).await
        } else {
            self.read_whole(request, ex, head).await
        };
        if result.is_err() {
            self.io.abandon_body();
        }
        // Between requests the connection keeps no buffer of its own (see
        // `EventReader::clear`).
        self.events.clear();
        self.body = BytesMut::new();
        result
    }
}

/// How the adapter's answers are read: the JMESPath of `response_field` compiled once per
/// connection (it was checked when the flags were read).
fn reading(adapter: &OpenAi) -> Reading {
    let field = adapter.wire.response_field.as_deref();
    Reading {
        generates: adapter.llm.endpoint.generates(),
        field: field
            .and_then(|f| jmespath::compile(f).ok())
            .map(std::sync::Arc::new),
    }
}

/// An answer's body for a message, cut short.
fn quoted(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(QUOTED)]);
    let text = text.trim();
    if text.is_empty() {
        "(no body)".into()
    } else {
        format!("'{text}'")
    }
}

/// Checks before the run that the server lists the model (when it lists models at all)
/// and that the endpoint answers a one-token request.
pub async fn check_model(target: &Target, adapter: &OpenAi) -> RunResult<()> {
    let exchange = async {
        let mut io = match Http1Stream::open(&target.peer).await {
            Ok(io) => io,
            Err(_) => {
                let detail = "the connection was refused or timed out";
                return Err(target.connect_failure(detail).await);
            }
        };
        check_listed(&mut io, target).await?;
        probe(&mut io, target, adapter).await
    };
    tokio::time::timeout(target.peer.timeout, exchange)
        .await
        .unwrap_or_else(|_| {
            Err(target.unreachable(&format!(
                "no answer within the request timeout ({:.0} s)",
                target.peer.timeout.as_secs_f64()
            )))
        })
}

/// `GET /v1/models`: the model must be among those listed (a server without the list is
/// taken at its word).
async fn check_listed(io: &mut Http1Stream, target: &Target) -> RunResult<()> {
    let request = frame_request(
        "GET",
        "/v1/models",
        &target.peer.authority,
        &user_headers(&target.peer.headers).collect::<Vec<_>>(),
        b"",
    );
    let exchange = async {
        io.send(&request).await?;
        io.receive().await
    };
    let Ok(response) = exchange.await else {
        let detail = "the connection broke while reading /v1/models";
        return Err(target.connect_failure(detail).await);
    };
    if response.status != 200 {
        return Ok(());
    }
    let Ok(list) = serde_json::from_slice::<Value>(&response.body) else {
        return Ok(());
    };
    let Some(models) = list.get("data").and_then(Value::as_array) else {
        return Ok(());
    };
    let ids: Vec<&str> = models
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .collect();
    if ids.is_empty() || ids.contains(&target.model.as_str()) {
        return Ok(());
    }
    let shown: Vec<&str> = ids.iter().take(10).copied().collect();
    Err(RunError::bad_option(format!(
        "Model '{}' is not among the models the server lists at /v1/models ({}): check -m.",
        target.model,
        shown.join(", ")
    )))
}

/// Fields of `--extra-inputs` that bound the answer's length: beside them the probe asks
/// for the run's own length, never one token (a server refuses `min_tokens` above
/// `max_tokens`).
const LENGTH_FIELDS: &[&str] = &[
    "min_tokens",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "max_new_tokens",
    "ignore_eos",
];

/// One short request, as the run would send it (its extra inputs, its model): the endpoint
/// must exist and take the model. It asks for one output token unless the extra inputs
/// bound the length themselves; then it asks for the run's own length.
async fn probe(io: &mut Http1Stream, target: &Target, adapter: &OpenAi) -> RunResult<()> {
    let mut quiet = adapter.clone();
    quiet.streaming = false;
    quiet.llm.output_deterministic = false;
    if !adapter.endpoint_wire().probes() {
        return Ok(());
    }
    let extra = &adapter.llm.extra_inputs;
    let bounded = extra
        .iter()
        .any(|(key, _)| LENGTH_FIELDS.contains(&key.as_str()));
    let prompt = Prompt {
        text: "Hello".into(),
        input_tokens: 1,
        max_tokens: match bounded {
            true => adapter.llm.output_tokens_mean,
            false => Some(1),
        },
        // A rankings type ranks one passage.
        passages: (adapter.llm.endpoint.rankings()).then(|| vec!["Hello".to_string()].into()),
        ..Prompt::default()
    };
    let body = quiet.body(&target.model, &prompt).to_string();
    let request = quiet.frame(target, body.as_bytes());
    if !io.is_usable() {
        *io = Http1Stream::open(&target.peer)
            .await
            .map_err(|_| target.unreachable("the connection was refused or timed out"))?;
    }
    let broken = |_| {
        target.unreachable(&format!(
            "the connection broke on POST {}",
            quiet.path(&target.model)
        ))
    };
    io.send(&request).await.map_err(broken)?;
    let response = io.receive().await.map_err(broken)?;
    let status = response.status;
    if status == 200 {
        return Ok(());
    }
    let sentence = format!(
        "POST {} to model '{}' answered HTTP {status} {}",
        quiet.path(&target.model),
        target.model,
        quoted(&response.body)
    );
    if matches!(status, 400 | 404 | 405 | 422) {
        Err(RunError::bad_option(format!(
            "{sentence}: check --endpoint and -m."
        )))
    } else {
        Err(RunError::failed(format!("{sentence}.")))
    }
}

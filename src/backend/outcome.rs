//! How one exchange with the server went: when each answer came ([`Exchange`]) and, when it
//! failed, why ([`Failure`], [`ErrorKind`]). The kinds are named here, beside the adapters
//! that detect them, so that the measurement boxes below count them by kind without knowing
//! any protocol.

use std::time::Instant;

/// What was wrong with an answer that came with a success status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Malformation {
    /// Not the protocol's message at all: not JSON, not a protobuf, bad framing.
    Unreadable,
    /// Shorter than it declares (binary data or a message cut short).
    Truncated,
    /// Longer than it declares (bytes after the declared body or message).
    Overlong,
    /// A requested output is not in the answer.
    MissingOutput,
    /// An output's datatype is not the one the model declares.
    WrongDatatype,
    /// An output's shape or element count does not fit the request or the model.
    WrongShape,
    /// A success status whose body is an error message.
    ErrorBody,
    /// Bigger than `--max-response-bytes`.
    TooLarge,
    /// A generation's stream that ended well but carried no output (every event without
    /// text: `choices: []`, usage only).
    Empty,
}

impl Malformation {
    /// Every kind, for a reader that names them back from their labels (results files).
    pub const ALL: [Malformation; 9] = [
        Malformation::Unreadable,
        Malformation::Truncated,
        Malformation::Overlong,
        Malformation::MissingOutput,
        Malformation::WrongDatatype,
        Malformation::WrongShape,
        Malformation::ErrorBody,
        Malformation::TooLarge,
        Malformation::Empty,
    ];

    fn label(self) -> &'static str {
        match self {
            Malformation::Unreadable => "unreadable",
            Malformation::Truncated => "truncated",
            Malformation::Overlong => "longer than declared",
            Malformation::MissingOutput => "missing output",
            Malformation::WrongDatatype => "wrong datatype",
            Malformation::WrongShape => "wrong shape",
            Malformation::ErrorBody => "error body",
            Malformation::TooLarge => "too large",
            Malformation::Empty => "empty answer",
        }
    }
}

/// Why a request failed. Errors are counted by kind and kept out of latency figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKind {
    /// The server answered with this HTTP status (4xx/5xx).
    HttpStatus(u16),
    /// The server answered with this gRPC status code (tonic's numeric code).
    GrpcCode(i32),
    /// No answer within the request timeout.
    Timeout,
    /// The connection could not be made or broke during the request.
    Connection,
    /// A success status whose answer is not a valid answer to the request.
    BadResponse(Malformation),
    /// A valid answer whose values differ from the `validation_data` the input data gives.
    Validation,
    /// An error message in place of an answer on a gRPC stream.
    StreamError,
    /// Closed by the client on purpose (`--request-cancellation-rate`): counted apart from
    /// the errors, as `cancelled`.
    Cancelled,
}

impl ErrorKind {
    /// Whether the connection the request used may serve the next request. (A connection
    /// whose framing went wrong marks itself unusable; a timed-out one may still deliver the
    /// late answer, so it is dropped.)
    pub fn leaves_connection_usable(self) -> bool {
        !matches!(
            self,
            ErrorKind::Connection | ErrorKind::Timeout | ErrorKind::Cancelled
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorKind::HttpStatus(code) => write!(f, "HTTP {code}"),
            ErrorKind::GrpcCode(code) => write!(f, "gRPC {}", grpc_code_name(*code)),
            ErrorKind::Timeout => f.write_str("timeout"),
            ErrorKind::Connection => f.write_str("connection"),
            ErrorKind::BadResponse(m) => write!(f, "bad response ({})", m.label()),
            ErrorKind::Validation => f.write_str("validation"),
            ErrorKind::StreamError => f.write_str("stream error"),
            ErrorKind::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// A failed exchange: its kind, and for an answer that was wrong, what was wrong with it in
/// one sentence (built only when a request fails, so a correct answer costs nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: ErrorKind,
    pub detail: Option<String>,
}

impl Failure {
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Failure {
        Failure {
            kind,
            detail: Some(detail.into()),
        }
    }

    /// A bad answer of this sort, with what was wrong.
    pub fn bad(malformation: Malformation, detail: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::BadResponse(malformation), detail)
    }
}

impl From<ErrorKind> for Failure {
    fn from(kind: ErrorKind) -> Failure {
        Failure { kind, detail: None }
    }
}

/// How a request's output tokens were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub enum TokenSource {
    /// The request produced no tokens (not a text generation).
    #[default]
    None,
    /// From the `usage` the server sent.
    Usage,
    /// The run's tokenizer's count of the text the answer carried (the server sent no
    /// usage, or it is not asked for).
    Tokenizer,
    /// `--use-server-token-count` and the server sent no usage: not counted.
    Missing,
    /// The request generates no text (embeddings, rankings): its input tokens are counted,
    /// as AIPerf counts them, and its output is none.
    InputOnly,
}

impl TokenSource {
    /// How the count was made, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            TokenSource::None => "not counted",
            TokenSource::Usage => "from the server's usage",
            TokenSource::Tokenizer => "by the tokenizer, from the text of the answer",
            TokenSource::Missing => {
                "not counted: the server sent no usage (--use-server-token-count)"
            }
            TokenSource::InputOnly => "none (the endpoint generates no text)",
        }
    }

    /// Whether the request generated text whose output tokens are counted (or missing).
    pub fn generates(self) -> bool {
        !matches!(self, TokenSource::None | TokenSource::InputOnly)
    }
}

/// The tokens of one generation: what it was given and what it produced. The adapter fills
/// in what the server said (usage) and how much text came; the driver counts that text with
/// the run's tokenizer when it takes the request into a window, never while it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tokens {
    /// Output tokens as reported (0 when the request generates none): the server's usage
    /// when it sent one, else the tokenizer's count.
    pub output: u32,
    /// Input (prompt) tokens: the run's tokenizer's count of the prompt as sent.
    pub input: u32,
    pub source: TokenSource,
    /// A stream was asked for but the server answered in one piece.
    pub unstreamed: bool,
    /// `usage.completion_tokens` and `usage.prompt_tokens`, when the server sent them.
    pub usage_output: Option<u32>,
    pub usage_input: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`, when the server sent it.
    pub usage_cached: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens`, when sent.
    pub usage_reasoning: Option<u32>,
    /// The tokenizer's count of the answer's text (content and reasoning), once counted.
    pub counted_output: Option<u32>,
    /// Reasoning tokens (of `reasoning_content` deltas) among the output tokens.
    pub reasoning: u32,
    /// Bytes of content and of reasoning text the answer carried (kept in the slot's text
    /// buffer until counted).
    pub content_bytes: u32,
    pub reasoning_bytes: u32,
    /// The `max_tokens` the request asked for.
    pub asked: Option<u32>,
    /// When the first answer with content that is not reasoning came (time to first
    /// output token); `None` when none came apart from the first answer.
    pub first_output: Option<Instant>,
}

/// The text of one answer, put together from its events: the content and, apart, the
/// reasoning. A slot reuses one across its requests.
#[derive(Debug, Default)]
pub struct AnswerText {
    pub content: String,
    pub reasoning: String,
}

impl AnswerText {
    pub fn clear(&mut self) {
        self.content.clear();
        self.reasoning.clear();
    }
}

/// The timing of one request while it is answered: when it was sent, how long sending and
/// receiving took, when each answer came. Adapters call [`Exchange::answer`] for every answer
/// that carries outputs and [`Exchange::finish`] at the final one; the gaps between answers go
/// into the slot's reusable list, never into a list of the request's own.
pub struct Exchange<'a> {
    /// When the client began sending.
    pub sent: Instant,
    /// Nanoseconds from `sent` until the request was handed to the connection.
    pub send_ns: u32,
    /// Nanoseconds spent receiving and decoding the answer after its first byte.
    pub recv_ns: u32,
    /// Nanoseconds spent opening the connection just before sending (0 when reused).
    pub connect_ns: u32,
    /// The tokens of a text generation, as its adapter counted them.
    pub tokens: Tokens,
    first: Option<Instant>,
    last: Option<Instant>,
    done: Option<Instant>,
    answers: u32,
    gaps: &'a mut Vec<u64>,
    /// Told of each answer's number, for `--periodic-concurrency-range`.
    watch: Option<&'a (dyn Fn(u32) + Sync)>,
    /// Where a generation's text goes, when the driver keeps it to count its tokens.
    text: Option<&'a mut AnswerText>,
}

impl<'a> Exchange<'a> {
    /// An exchange begun at `sent`, its gaps going into `gaps` (cleared here).
    pub fn new(sent: Instant, gaps: &'a mut Vec<u64>) -> Exchange<'a> {
        gaps.clear();
        Exchange {
            sent,
            send_ns: 0,
            recv_ns: 0,
            connect_ns: 0,
            tokens: Tokens::default(),
            first: None,
            last: None,
            done: None,
            answers: 0,
            gaps,
            watch: None,
            text: None,
        }
    }

    /// Puts the answer's text into `text` (cleared here).
    pub fn with_text(mut self, text: &'a mut AnswerText) -> Exchange<'a> {
        text.clear();
        self.text = Some(text);
        self
    }

    /// Text of the answer's content, as it arrives.
    pub fn content(&mut self, piece: &str) {
        if let Some(text) = self.text.as_deref_mut() {
            text.content.push_str(piece);
        }
        self.tokens.content_bytes += piece.len() as u32;
    }

    /// Text of the answer's reasoning, as it arrives.
    pub fn reasoning(&mut self, piece: &str) {
        if let Some(text) = self.text.as_deref_mut() {
            text.reasoning.push_str(piece);
        }
        self.tokens.reasoning_bytes += piece.len() as u32;
    }

    /// The answer's text so far.
    pub fn text(&self) -> Option<&AnswerText> {
        self.text.as_deref()
    }

    /// Calls `watch` with the number of each answer as it arrives.
    pub fn with_watch(mut self, watch: &'a (dyn Fn(u32) + Sync)) -> Exchange<'a> {
        self.watch = Some(watch);
        self
    }

    /// An answer with outputs arrived at `at`.
    pub fn answer(&mut self, at: Instant) {
        if let Some(last) = self.last {
            self.gaps
                .push(at.saturating_duration_since(last).as_nanos() as u64);
        }
        self.first.get_or_insert(at);
        self.last = Some(at);
        self.answers += 1;
        if let Some(watch) = self.watch {
            watch(self.answers);
        }
    }

    /// The final answer arrived at `at` (after [`Exchange::answer`] if it carried outputs).
    pub fn finish(&mut self, at: Instant) {
        self.done = Some(at);
    }

    /// Answers that carried outputs so far.
    pub fn answers(&self) -> u32 {
        self.answers
    }

    /// When the first answer came (the final one when none carried outputs).
    pub fn first_answer(&self) -> Instant {
        self.first.or(self.done).unwrap_or(self.sent)
    }

    /// When the request ended, as perf_analyzer counts it: at its last answer with outputs,
    /// or at the final one when an empty final answer closed a stream of none.
    pub fn end(&self) -> Instant {
        self.last.or(self.done).unwrap_or(self.sent)
    }

    /// The gaps between consecutive answers, in ns.
    pub fn gaps(&self) -> &[u64] {
        self.gaps
    }
}

/// The canonical name of a gRPC status code.
pub fn grpc_code_name(code: i32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("UNKNOWN_CODE")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_exchange_times_every_answer_and_its_gaps() {
        let t = Instant::now();
        let mut gaps = vec![99];
        let mut ex = Exchange::new(t, &mut gaps);
        for ms in [10, 14, 18] {
            ex.answer(t + Duration::from_millis(ms));
        }
        ex.finish(t + Duration::from_millis(19));
        assert_eq!(ex.answers(), 3);
        assert_eq!(ex.first_answer(), t + Duration::from_millis(10));
        assert_eq!(
            ex.end(),
            t + Duration::from_millis(18),
            "the empty final is not the end"
        );
        assert_eq!(ex.gaps(), &[4_000_000, 4_000_000]);
    }

    #[test]
    fn an_exchange_with_no_answer_ends_at_its_final_message() {
        let t = Instant::now();
        let mut gaps = Vec::new();
        let mut ex = Exchange::new(t, &mut gaps);
        ex.finish(t + Duration::from_millis(3));
        assert_eq!(ex.answers(), 0);
        assert_eq!(ex.end(), t + Duration::from_millis(3));
        assert_eq!(ex.first_answer(), ex.end());
    }

    #[test]
    fn kinds_name_themselves() {
        let bad = ErrorKind::BadResponse(Malformation::MissingOutput);
        assert_eq!(bad.to_string(), "bad response (missing output)");
        assert_eq!(ErrorKind::Validation.to_string(), "validation");
        assert!(bad.leaves_connection_usable());
        assert!(!ErrorKind::Timeout.leaves_connection_usable());
    }
}

//! How one exchange with the server ended: the kinds of failure a request can meet. They are
//! named here, beside the adapters that detect them, so that the measurement boxes below count
//! them by kind without knowing any protocol.

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
    /// The answer arrived but could not be understood (bad framing, body, or output check).
    BadResponse,
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorKind::HttpStatus(code) => write!(f, "HTTP {code}"),
            ErrorKind::GrpcCode(code) => write!(f, "gRPC {}", grpc_code_name(*code)),
            ErrorKind::Timeout => f.write_str("timeout"),
            ErrorKind::Connection => f.write_str("connection"),
            ErrorKind::BadResponse => f.write_str("bad response"),
        }
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

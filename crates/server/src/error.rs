//! Why an inference failed, in one protocol-neutral type that the HTTP front end turns into
//! a status code and the gRPC front end into a status code of its own, the same way Triton
//! maps them (404 ↔ NOT_FOUND, 400 ↔ INVALID_ARGUMENT, 500 ↔ INTERNAL, 503 ↔ UNAVAILABLE,
//! 429 ↔ RESOURCE_EXHAUSTED, 501 ↔ UNIMPLEMENTED). The in-process `local` backend sees the same values.

use std::fmt;

/// Why a request failed; each variant carries the message the client sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InferError {
    /// Unknown model or version: HTTP 404, gRPC NOT_FOUND.
    NotFound(String),
    /// The request does not fit the model: HTTP 400, gRPC INVALID_ARGUMENT.
    BadRequest(String),
    /// The model failed: HTTP 500, gRPC INTERNAL.
    Internal(String),
    /// The model is not available now: HTTP 503, gRPC UNAVAILABLE.
    Unavailable(String),
    /// Too many requests: HTTP 429, gRPC RESOURCE_EXHAUSTED.
    ResourceExhausted(String),
    /// The model cannot be called this way (a decoupled model outside a stream): HTTP 501,
    /// gRPC UNIMPLEMENTED, as Triton answers its "unsupported" errors.
    Unsupported(String),
}

impl InferError {
    pub fn message(&self) -> &str {
        match self {
            InferError::NotFound(m)
            | InferError::BadRequest(m)
            | InferError::Internal(m)
            | InferError::Unavailable(m)
            | InferError::ResourceExhausted(m)
            | InferError::Unsupported(m) => m,
        }
    }

    /// The error for an HTTP status (one of [`super::FAIL_CODES`]; others are internal).
    pub fn from_http_status(status: u16, message: String) -> InferError {
        match status {
            400 => InferError::BadRequest(message),
            404 => InferError::NotFound(message),
            429 => InferError::ResourceExhausted(message),
            503 => InferError::Unavailable(message),
            _ => InferError::Internal(message),
        }
    }

    /// The HTTP status the error is answered with.
    pub fn http_status(&self) -> u16 {
        match self {
            InferError::NotFound(_) => 404,
            InferError::BadRequest(_) => 400,
            InferError::Internal(_) => 500,
            InferError::Unavailable(_) => 503,
            InferError::ResourceExhausted(_) => 429,
            InferError::Unsupported(_) => 501,
        }
    }

    /// The gRPC status code the error is answered with.
    pub fn grpc_code(&self) -> tonic::Code {
        match self {
            InferError::NotFound(_) => tonic::Code::NotFound,
            InferError::BadRequest(_) => tonic::Code::InvalidArgument,
            InferError::Internal(_) => tonic::Code::Internal,
            InferError::Unavailable(_) => tonic::Code::Unavailable,
            InferError::ResourceExhausted(_) => tonic::Code::ResourceExhausted,
            InferError::Unsupported(_) => tonic::Code::Unimplemented,
        }
    }

    /// A decoupled model called for one answer; `endpoint` is what the caller used, as
    /// Triton names it ("ModelInfer RPC", "HTTP end point").
    pub fn decoupled(endpoint: &str) -> InferError {
        InferError::Unsupported(format!(
            "{endpoint} doesn't support models with decoupled transaction policy"
        ))
    }

    pub fn unknown_model(name: &str, version: &str) -> InferError {
        let msg = if version.is_empty() {
            format!("Request for unknown model: '{name}' is not found")
        } else {
            format!("Request for unknown model: '{name}' version {version} is not found")
        };
        InferError::NotFound(msg)
    }
}

impl fmt::Display for InferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for InferError {}

impl From<InferError> for tonic::Status {
    fn from(e: InferError) -> tonic::Status {
        let code = e.grpc_code();
        tonic::Status::new(code, e.message())
    }
}

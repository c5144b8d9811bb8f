//! The target section of the configuration: which server and model a run talks to, over
//! which API and protocol, and how each request travels (headers, TLS, timeouts, tensor
//! formats, streaming) and how its answer is checked. The backend resolves a `Target` from
//! this section alone.

use std::time::Duration;

use super::{ApiSettings, GrpcCompression, Protocol, TensorFormat, TlsSettings};

/// The settings of the target box.
#[derive(Debug, Clone)]
pub struct TargetConfig {
    pub model_name: String,
    /// `-x`; empty lets the server choose.
    pub model_version: String,
    /// `host:port` (a scheme, if the user gave one, is removed); the first of `urls`.
    pub url: String,
    /// Every `-u` server as `host:port`, in order (one unless several were given): the
    /// replicas the load is spread over.
    pub urls: Vec<String>,
    /// TLS to the server (`https://`, `grpcs://` or the `--ssl-*` flags); `None`: plain.
    pub tls: Option<TlsSettings>,
    /// `--service-kind` and the settings only that API takes.
    pub api: ApiSettings,
    pub protocol: Protocol,
    /// `-H` headers, sent with every HTTP request and as gRPC metadata.
    pub headers: Vec<(String, String)>,
    /// Longest wait for one answer before it counts as a timeout.
    pub request_timeout: Duration,
    /// `--max-response-bytes`.
    pub max_response_bytes: usize,
    /// In-flight gRPC requests per HTTP/2 connection (`--grpc-connection-share`).
    pub grpc_connection_share: usize,
    /// `--grpc-compression-algorithm`: how gRPC request messages are compressed.
    pub grpc_compression: Option<GrpcCompression>,
    /// `--streaming`: every request over gRPC's `ModelStreamInfer` (or a streamed answer).
    pub streaming: bool,
    /// `None`: binary when the server lists the binary tensor extension, else JSON.
    pub input_format: Option<TensorFormat>,
    pub output_format: Option<TensorFormat>,
    /// `--validation-tolerance`: how far a float output may be from `validation_data`.
    pub validation_tolerance: f64,
    /// The server runs in this process (`inferperf demo`): the client CPU the report shows
    /// is the client's and the server's together, so it cannot say the client was the limit.
    /// Set by the caller, not by a flag.
    pub server_in_process: bool,
}

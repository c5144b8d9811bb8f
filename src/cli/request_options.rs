//! The request and server-side options perf_analyzer has beyond load and data, apart from
//! the rest of the profile flags so that a reader finds them in one place: per-run request
//! parameters, gRPC compression, the worker-thread cap, Triton's trace settings, BLS
//! composing models, the dynamic gRPC method, shared memory and the in-process Triton.
//! `config::request_options` checks them.

use clap::Args;

/// perf_analyzer's options that shape requests and the run around them.
#[derive(Debug, Args, Clone, Default)]
pub struct RequestOptionArgs {
    /// perf_analyzer's most worker threads. inferperf sends from --client-threads event-loop
    /// threads (default 1), each carrying many requests, so N caps them: the client threads
    /// are min(--client-threads, N).
    #[arg(long, value_name = "N")]
    pub max_threads: Option<usize>,
    /// A parameter sent with every request, NAME:VALUE:TYPE with TYPE int, bool or string
    /// (KServe v2 request `parameters` over HTTP, a typed InferParameter over gRPC);
    /// repeatable, a repeated NAME takes its last value.
    #[arg(long = "request-parameter", value_name = "NAME:VALUE:TYPE")]
    pub request_parameters: Vec<String>,
    /// Compress every gRPC request message with none, gzip or deflate (gRPC only), and let
    /// the server compress its answers the same way.
    #[arg(long, value_name = "ALGORITHM")]
    pub grpc_compression_algorithm: Option<String>,
    /// The models a BLS model calls, MODEL[:VERSION] separated by commas (repeatable): their
    /// server statistics are read with the profiled model's and shown as its composing
    /// models, inside its compute (Triton statistics; an ensemble's come from its
    /// configuration).
    #[arg(long = "bls-composing-models", value_name = "MODEL[:VERSION],...")]
    pub bls_composing_models: Vec<String>,
    /// The gRPC method --service-kind dynamic_grpc calls, PACKAGE.SERVICE/METHOD: each
    /// request is one call carrying the messages an --input-data entry's message_generator
    /// command prints (each after its 4-byte little-endian length).
    #[arg(long, value_name = "PACKAGE.SERVICE/METHOD")]
    pub grpc_method: Option<String>,
    /// Triton's trace level for the run: OFF, TIMESTAMPS or TENSORS; repeatable (several
    /// levels). Set through the trace extension (HTTP) before the run and, as every
    /// --trace-* and --log-frequency setting, put back as it was after it.
    #[arg(long = "trace-level", value_name = "LEVEL")]
    pub trace_levels: Vec<String>,
    /// Triton's trace sampling rate for the run: trace one request in N.
    #[arg(long, value_name = "N")]
    pub trace_rate: Option<u64>,
    /// Triton's trace count for the run: the most requests traced (-1: no limit).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub trace_count: Option<i64>,
    /// Triton's trace log frequency for the run: write the trace file every N traces.
    #[arg(long, value_name = "N")]
    pub log_frequency: Option<u64>,
    /// Pass tensors through shared memory: none, system (POSIX regions registered through
    /// Triton's system shared-memory extension; the server must be on this machine) or cuda
    /// (needs a GPU build, which this is not).
    #[arg(long, value_name = "KIND")]
    pub shared_memory: Option<String>,
    /// With --service-kind triton_c_api: the Triton install to run in process; its
    /// lib/libtritonserver.so is loaded at run time and its backends/ serve the models.
    #[arg(long, value_name = "DIR")]
    pub triton_server_directory: Option<std::path::PathBuf>,
    /// With --service-kind triton_c_api: the model repository Triton loads the model from.
    #[arg(long, value_name = "DIR")]
    pub model_repository: Option<std::path::PathBuf>,
    /// Bytes of each output's shared-memory region per batch item (default 102400); with
    /// --shared-memory system every in-flight slot has one region of size x outputs x batch.
    #[arg(long, value_name = "BYTES")]
    pub output_shared_memory_size: Option<u64>,
}

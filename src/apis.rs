//! Every API inferperf speaks, listed once: [`ServiceKind`] names an API and
//! [`SERVICE_KINDS`] is its row — the names `--service-kind` takes, how the settings block
//! and the exports name it, and what it can do ([`Capabilities`]: does it stream, are its
//! answers counted in tokens, where the server's statistics come from, sequences, shared
//! memory, in process or over the network). Flag parsing (`config`), the adapters' registry
//! (`backend/mod.rs`), the monitors, sweeps and reports ask a kind its row instead of
//! matching on it: shared ground, it names no other module. Adding an API is a value here,
//! its row, its adapter folder and one line in the registry.

use inferperf_wire::error::{RunError, RunResult};

/// Which API answers (`--service-kind`); the order of [`SERVICE_KINDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceKind {
    /// Any KServe v2 server (Triton, KServe, MLServer, the embedded server).
    Triton,
    /// The built-in models, called in this process.
    Local,
    /// An OpenAI-compatible server (vLLM, SGLang, llama.cpp, …).
    OpenAi,
    /// TF Serving's PredictionService (gRPC) or REST API.
    TfServing,
    /// TorchServe's HTTP inference API (`POST /predictions/M[/V]`).
    TorchServe,
    /// Any gRPC method (`--grpc-method`), called with the messages a generator prints.
    DynamicGrpc,
    /// Triton started in this process and called through its C API.
    TritonCApi,
}

/// What one API is called and what it can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub kind: ServiceKind,
    /// `--service-kind`'s value: the API's name in the results file's settings.
    pub name: &'static str,
    /// Other values `--service-kind` reads as this API.
    pub aliases: &'static [&'static str],
    /// The name the settings block prints.
    pub label: &'static str,
    /// What the API is, as the sentence refusing an unknown `--service-kind` lists it.
    pub described: &'static str,
    /// The service kind perf_analyzer's profile export names (the embedded models answer as
    /// Triton does).
    pub export_name: &'static str,
    /// What `--streaming` does with this API.
    pub streaming: Streaming,
    /// Answers are text counted in tokens, so the LLM figures apply.
    pub tokens: bool,
    /// Where the server-side breakdown comes from.
    pub server_statistics: ServerStatistics,
    /// Requests carry a sequence's controls, so sequence models can be measured.
    pub sequences: bool,
    /// `--shared-memory system` can carry the tensors.
    pub shared_memory: bool,
    /// Requests are KServe v2 requests, which carry `--request-parameter`s.
    pub request_parameters: bool,
    /// `--grpc-compression-algorithm` compresses its gRPC messages.
    pub grpc_compression: bool,
    /// The path a sweep polls until it answers 200, once the server it started is ready
    /// (`{model}` stands for the model's name).
    pub readiness_path: &'static str,
    /// The models run inside this process: what shares its CPU with the client (the console's
    /// client CPU line). A call then marshals as gRPC does.
    pub in_process: Option<&'static str>,
    /// The console's name for one call's time, when it is not the protocol's (HTTP, gRPC).
    pub call_name: Option<&'static str>,
}

/// What `--streaming` does with an API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streaming {
    /// Nothing: every request has one answer.
    None,
    /// Requests go over a gRPC stream (KServe's `ModelStreamInfer`), each answer timed.
    GrpcStream,
    /// Answers come as server-sent events, each event timed.
    ServerSentEvents,
    /// An in-process call's answers are each timed as they come.
    InProcess,
}

/// Where an API's server-side breakdown (queue, compute) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStatistics {
    /// The API has none.
    None,
    /// Triton's statistics extension, over HTTP or gRPC.
    StatisticsExtension,
    /// The server's Prometheus counters, read as statistics.
    PrometheusMetrics,
    /// The models in this process, asked directly.
    InProcess,
}

impl ServerStatistics {
    /// Whether there is anything to read.
    pub fn available(self) -> bool {
        self != ServerStatistics::None
    }
}

/// The row every API starts from: a network API that streams nothing, has no statistics
/// and answers tensors.
const NETWORK: Capabilities = Capabilities {
    kind: ServiceKind::Triton,
    name: "",
    aliases: &[],
    label: "",
    described: "",
    export_name: "",
    streaming: Streaming::None,
    tokens: false,
    server_statistics: ServerStatistics::None,
    sequences: false,
    shared_memory: false,
    request_parameters: false,
    grpc_compression: false,
    readiness_path: "/v2/health/ready",
    in_process: None,
    call_name: None,
};

/// Every API, in `--service-kind`'s order (the order of [`ServiceKind`]).
pub const SERVICE_KINDS: [Capabilities; 7] = [
    Capabilities {
        kind: ServiceKind::Triton,
        name: "triton",
        aliases: &["kserve"],
        label: "TRITON",
        described: "triton (any KServe v2 server)",
        export_name: "triton",
        streaming: Streaming::GrpcStream,
        server_statistics: ServerStatistics::StatisticsExtension,
        sequences: true,
        shared_memory: true,
        request_parameters: true,
        grpc_compression: true,
        ..NETWORK
    },
    Capabilities {
        kind: ServiceKind::Local,
        name: "local",
        label: "LOCAL",
        described: "local (built-in models in this process)",
        export_name: "triton",
        streaming: Streaming::InProcess,
        server_statistics: ServerStatistics::InProcess,
        sequences: true,
        in_process: Some("models"),
        call_name: Some("local call"),
        ..NETWORK
    },
    Capabilities {
        kind: ServiceKind::OpenAi,
        name: "openai",
        label: "OPENAI",
        described: "openai (an OpenAI-compatible server)",
        export_name: "openai",
        streaming: Streaming::ServerSentEvents,
        tokens: true,
        readiness_path: "/v1/models",
        ..NETWORK
    },
    Capabilities {
        kind: ServiceKind::TfServing,
        name: "tfserving",
        label: "TFSERVING",
        described: "tfserving (TF Serving)",
        export_name: "tfserving",
        grpc_compression: true,
        readiness_path: "/v1/models/{model}/metadata",
        ..NETWORK
    },
    Capabilities {
        kind: ServiceKind::TorchServe,
        name: "torchserve",
        label: "TORCHSERVE",
        described: "torchserve (TorchServe)",
        export_name: "torchserve",
        server_statistics: ServerStatistics::PrometheusMetrics,
        readiness_path: "/ping",
        ..NETWORK
    },
    Capabilities {
        kind: ServiceKind::DynamicGrpc,
        name: "dynamic_grpc",
        label: "DYNAMIC_GRPC",
        described: "dynamic_grpc (any gRPC method)",
        export_name: "dynamic_grpc",
        ..NETWORK
    },
    Capabilities {
        kind: ServiceKind::TritonCApi,
        name: "triton_c_api",
        label: "TRITON_C_API",
        described: "triton_c_api (Triton in this process, with --triton-server-directory and --model-repository)",
        export_name: "triton_c_api",
        streaming: Streaming::InProcess,
        server_statistics: ServerStatistics::InProcess,
        sequences: true,
        request_parameters: true,
        in_process: Some("Triton"),
        call_name: Some("C API call"),
        ..NETWORK
    },
];

impl ServiceKind {
    /// What this API is called and can do.
    pub fn capabilities(self) -> &'static Capabilities {
        &SERVICE_KINDS[self as usize]
    }

    /// The name the settings block prints.
    pub fn label(self) -> &'static str {
        self.capabilities().label
    }

    /// The models run in this process (no server to reach, start or share).
    pub fn in_process(self) -> bool {
        self.capabilities().in_process.is_some()
    }

    /// `--service-kind TEXT`.
    pub fn parse(text: &str) -> RunResult<ServiceKind> {
        let named = |c: &&Capabilities| c.name == text || c.aliases.contains(&text);
        if let Some(row) = SERVICE_KINDS.iter().find(named) {
            return Ok(row.kind);
        }
        let listed: Vec<&str> = SERVICE_KINDS.iter().map(|c| c.described).collect();
        let (last, others) = listed.split_last().expect("a table of APIs");
        Err(RunError::bad_option(format!(
            "--service-kind '{text}' is not supported: use {} or {last}.",
            others.join(", ")
        )))
    }
}

impl Capabilities {
    /// The API a results file names (its settings' `service_kind`), if it is one of ours.
    pub fn named(name: &str) -> Option<&'static Capabilities> {
        SERVICE_KINDS.iter().find(|c| c.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_has_its_row_and_its_own_names() {
        for (i, c) in SERVICE_KINDS.iter().enumerate() {
            assert_eq!(c.kind as usize, i, "{} is in ServiceKind's order", c.name);
            assert_eq!(Capabilities::named(c.name), Some(c));
            assert_eq!(ServiceKind::parse(c.name).ok(), Some(c.kind));
            for alias in c.aliases {
                assert_eq!(ServiceKind::parse(alias).ok(), Some(c.kind));
            }
            let earlier = &SERVICE_KINDS[..i];
            assert!(earlier
                .iter()
                .all(|e| e.name != c.name && e.label != c.label));
        }
        let refused = ServiceKind::parse("nope").unwrap_err().to_string();
        let last = "or triton_c_api (Triton in this process, with --triton-server-directory and --model-repository).";
        assert!(refused.ends_with(last), "{refused}");
    }
}

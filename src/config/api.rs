//! The settings of the one API a run talks to: `--service-kind` with the flags only that API
//! takes, one variant per API. The flags are read (and refused for the other APIs) where
//! `Config::from_args` reads every flag; here they are put together, so that an adapter
//! receives exactly its own settings and no run carries another API's.

use serde_json::{Map, Value};

use super::shm::ShmConfig;
use super::tfserving::TfServingConfig;
use super::torchserve::TorchServeConfig;
use super::{OpenAiConfig, OpenAiWire, RequestParameter, ServiceKind, TritonCApiSettings};
use inferperf_server::ModelDef;
use inferperf_wire::error::{RunError, RunResult};

/// The API of a run, with its own settings.
#[derive(Debug, Clone)]
pub enum ApiSettings {
    /// Any KServe v2 server (`--service-kind triton` or `kserve`).
    Kserve(KserveSettings),
    /// The built-in models, called in this process.
    Local(LocalSettings),
    /// An OpenAI-compatible server.
    OpenAi(OpenAiSettings),
    /// TF Serving's PredictionService (gRPC) or REST API.
    TfServing(TfServingConfig),
    /// TorchServe's HTTP inference API.
    TorchServe(TorchServeConfig),
    /// Any gRPC method, called with the messages a generator prints.
    DynamicGrpc(DynamicGrpcSettings),
    /// Triton started in this process and called through its C API.
    TritonCApi(TritonCApiSettings),
}

/// What a KServe v2 run takes beyond the common flags.
#[derive(Debug, Clone, Default)]
pub struct KserveSettings {
    /// `--request-parameter`s, sent with every request.
    pub request_parameters: Vec<RequestParameter>,
    /// `--bls-composing-models`: the models a BLS model calls, `MODEL` or `MODEL:VERSION`.
    pub bls_composing_models: Vec<String>,
    /// `--shared-memory` / `--output-shared-memory-size`.
    pub shm: ShmConfig,
    /// The trace settings set for the run and restored after it (`--trace-level`,
    /// `--trace-rate`, `--trace-count`, `--log-frequency`), as the trace extension names them.
    pub trace_settings: Map<String, Value>,
}

/// What `--service-kind local` takes.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    /// `--model` definitions of the models called in this process.
    pub models: Vec<ModelDef>,
    /// `--bls-composing-models`.
    pub bls_composing_models: Vec<String>,
}

/// What `--service-kind openai` takes.
#[derive(Debug, Clone)]
pub struct OpenAiSettings {
    /// The endpoint and the prompts' and reports' LLM settings.
    pub llm: OpenAiConfig,
    /// The request path and max-tokens field of AIPerf's flags (`--custom-endpoint`,
    /// `--endpoint-type chat`, `--use-legacy-max-tokens`).
    pub wire: OpenAiWire,
}

/// What `--service-kind dynamic_grpc` takes.
#[derive(Debug, Clone)]
pub struct DynamicGrpcSettings {
    /// `--grpc-method PACKAGE.SERVICE/METHOD`.
    pub method: String,
}

/// Every per-API flag as read, each set only for the API that takes it (the readers refuse
/// it for the others).
pub(super) struct ApiFlags {
    pub local_models: Vec<ModelDef>,
    pub llm: Option<OpenAiConfig>,
    pub wire: OpenAiWire,
    pub tfserving: Option<TfServingConfig>,
    pub torchserve: Option<TorchServeConfig>,
    pub grpc_method: Option<String>,
    pub triton_c_api: Option<TritonCApiSettings>,
    pub request_parameters: Vec<RequestParameter>,
    pub bls_composing_models: Vec<String>,
    pub shm: ShmConfig,
    pub trace_settings: Map<String, Value>,
}

impl ApiSettings {
    /// The settings of `kind`, from the flags read for it.
    pub(super) fn assemble(kind: ServiceKind, flags: ApiFlags) -> RunResult<ApiSettings> {
        let missing = |what: &str| {
            RunError::bad_option(format!(
                "--service-kind {} needs {what}.",
                kind.label().to_ascii_lowercase()
            ))
        };
        Ok(match kind {
            ServiceKind::Triton => ApiSettings::Kserve(KserveSettings {
                request_parameters: flags.request_parameters,
                bls_composing_models: flags.bls_composing_models,
                shm: flags.shm,
                trace_settings: flags.trace_settings,
            }),
            ServiceKind::Local => ApiSettings::Local(LocalSettings {
                models: flags.local_models,
                bls_composing_models: flags.bls_composing_models,
            }),
            ServiceKind::OpenAi => ApiSettings::OpenAi(OpenAiSettings {
                llm: flags.llm.ok_or_else(|| missing("its LLM settings"))?,
                wire: flags.wire,
            }),
            ServiceKind::TfServing => {
                ApiSettings::TfServing(flags.tfserving.ok_or_else(|| missing("a signature"))?)
            }
            ServiceKind::TorchServe => ApiSettings::TorchServe(
                (flags.torchserve).ok_or_else(|| missing("a management URL"))?,
            ),
            ServiceKind::DynamicGrpc => ApiSettings::DynamicGrpc(DynamicGrpcSettings {
                method: flags.grpc_method.ok_or_else(|| missing("--grpc-method"))?,
            }),
            ServiceKind::TritonCApi => {
                let settings = flags.triton_c_api;
                let settings = settings.ok_or_else(|| missing("--model-repository"))?;
                ApiSettings::TritonCApi(TritonCApiSettings {
                    request_parameters: flags.request_parameters,
                    bls_composing_models: flags.bls_composing_models,
                    ..settings
                })
            }
        })
    }

    /// Which API these are the settings of.
    pub fn kind(&self) -> ServiceKind {
        match self {
            ApiSettings::Kserve(_) => ServiceKind::Triton,
            ApiSettings::Local(_) => ServiceKind::Local,
            ApiSettings::OpenAi(_) => ServiceKind::OpenAi,
            ApiSettings::TfServing(_) => ServiceKind::TfServing,
            ApiSettings::TorchServe(_) => ServiceKind::TorchServe,
            ApiSettings::DynamicGrpc(_) => ServiceKind::DynamicGrpc,
            ApiSettings::TritonCApi(_) => ServiceKind::TritonCApi,
        }
    }

    /// Where the requests go, as perf_analyzer's export names it: the OpenAI endpoint's path,
    /// the dynamic gRPC method; empty for the APIs whose path follows from the model.
    pub fn endpoint(&self) -> &str {
        match self {
            ApiSettings::OpenAi(openai) => openai.llm.endpoint.path(),
            ApiSettings::DynamicGrpc(grpc) => &grpc.method,
            _ => "",
        }
    }
}

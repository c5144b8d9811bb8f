//! The OpenAI-compatible routes of the embedded server's HTTP port, for the `llm` and
//! `embeddings` kinds: `POST /v1/chat/completions`, `POST /v1/completions`,
//! `POST /v1/responses`, `POST /v1/embeddings`, `GET /v1/models[/NAME]`, and
//! `GET /v1/inferperf/stats` with what each model served (the truth a load tester's LLM
//! figures are checked against), and the other LLM wire formats' routes (TGI's, Cohere's,
//! SOLIDO's, Triton's generate extension on `/v2/models/{m}/generate[_stream]`). A
//! streamed answer is a server-sent event body that hands each event to hyper as the
//! engine produces it ([`super::event_stream`]); errors answer OpenAI's error object
//! (Triton's routes: Triton's `{"error": "..."}`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderMap, Method, StatusCode};
use hyper::body::Incoming;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::event_stream::{stream_reply, EventStream};
use super::reply::{error_reply, infer_error_reply, json_reply, read_body, Reply};
use crate::anthropic_wire;
use crate::def::{ModelKind, MAX_LLM_TOKENS};
use crate::embeddings_wire::{embeddings_answer, EmbeddingsRequest};
use crate::generate_wire::{self as other_wire, TritonRoute};
use crate::llm::prompt_tokens::PromptReader;
use crate::llm::Ask;
use crate::local::LocalServer;
use crate::openai_wire::{self as wire, Api, Events, GenerateRequest};
use crate::rankings_wire::{self, Flavor};
use crate::served::Served;
use crate::stats::add;

/// Numbers the answers' ids.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An OpenAI error object with its status.
fn error(status: StatusCode, message: &str, code: Option<&str>) -> Reply {
    let kind = if status.is_server_error() {
        "server_error"
    } else {
        "invalid_request_error"
    };
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
    json_reply(status, &body)
}

fn bad_request(message: &str) -> Reply {
    error(StatusCode::BAD_REQUEST, message, None)
}

fn unavailable() -> Reply {
    let message = "the server is shutting down";
    error(StatusCode::SERVICE_UNAVAILABLE, message, None)
}

/// The routes of the LLM wire formats that are not under `/v1/`: vLLM's tokenizer,
/// prefix-cache reset and profiler calls, TGI's generation and rerank, Cohere's rerank and
/// SOLIDO's RAG.
const OTHER_ROUTES: [&str; 9] = [
    "/tokenize",
    "/reset_prefix_cache",
    "/start_profile",
    "/stop_profile",
    "/generate",
    "/generate_stream",
    "/rerank",
    "/v2/rerank",
    "/rag/api/prompt",
];

/// Whether the path is OpenAI's (or another LLM wire format's): under `/v1/` (after TF
/// Serving's routes, which share `/v1/models/`), one of [`OTHER_ROUTES`], or Triton's
/// generate routes (taken before KServe's, which share `/v2/models/`).
pub(crate) fn is_route(path: &str) -> bool {
    path.starts_with("/v1/")
        || OTHER_ROUTES.contains(&path)
        || other_wire::triton_route(path).is_some()
}

/// Answers a request whose path starts with `/v1/` (or is `/tokenize`).
pub(crate) async fn handle(
    server: &LocalServer,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    let post = method == Method::POST;
    if let Some(route) = other_wire::triton_route(path) {
        return triton_generate(server, post, route, headers, body).await;
    }
    if let Some(api) = generation_api(path).filter(|_| post) {
        return generate(server, api, path, headers, body).await;
    }
    if let Some(flavor) = Flavor::of_path(path).filter(|_| post) {
        return rerank(server, flavor, headers, body).await;
    }
    match path {
        "/v1/embeddings" if post => embeddings(server, headers, body).await,
        "/tokenize" if post => tokenize(server, headers, body).await,
        // 200, as vLLM answers (AIPerf's --reset-kv-cache posts here).
        "/reset_prefix_cache" if post => {
            server.reset_prefix_caches();
            json_reply(StatusCode::OK, &json!({}))
        }
        // Nothing to profile here (the engine's timings are on /metrics): 200, so that a
        // run with AIPerf's --server-profiler goes on as against vLLM.
        "/start_profile" | "/stop_profile" if post => json_reply(StatusCode::OK, &json!({})),
        "/v1/models" if method == Method::GET => models(server),
        "/v1/inferperf/stats" if method == Method::GET => stats(server),
        "/v1/inferperf/sequences" if method == Method::GET => sequence_stats(server),
        _ if method == Method::GET && path.starts_with("/v1/models/") => {
            model(server, &path["/v1/models/".len()..])
        }
        _ if generation_api(path).is_some() || Flavor::of_path(path).is_some() => error(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} takes POST"),
            None,
        ),
        "/v1/embeddings" | "/reset_prefix_cache" | "/start_profile" | "/stop_profile" => error(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} takes POST"),
            None,
        ),
        "/v1/models" | "/v1/inferperf/stats" => error(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} takes GET"),
            None,
        ),
        _ => error(
            StatusCode::NOT_FOUND,
            &format!("inferperf serve has no endpoint {path}"),
            None,
        ),
    }
}

/// The generation API of a route, if it is one.
fn generation_api(path: &str) -> Option<Api> {
    Some(match path {
        "/v1/chat/completions" => Api::Chat,
        "/v1/completions" => Api::Completions,
        "/v1/responses" => Api::Responses,
        "/v1/messages" => Api::Messages,
        "/generate" | "/generate_stream" => Api::Generate,
        "/rag/api/prompt" => Api::Rag,
        _ => return None,
    })
}

/// vLLM's `POST /tokenize` (`{"prompt": text}` → `{"count", "tokens", "max_model_len"}`),
/// counting as the `llm` kind counts prompts: one token per whitespace-separated word, or,
/// when `model` names an `llm` model with a `tokenizer=`, that tokenizer's ids.
async fn tokenize(server: &LocalServer, headers: &HeaderMap, body: Incoming) -> Reply {
    #[derive(serde::Deserialize)]
    struct Tokenize {
        prompt: String,
        model: Option<String>,
    }
    let request: Tokenize = match parse(headers, body, "tokenize").await {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let is_llm = |k: &ModelKind| matches!(k, ModelKind::Llm(_));
    let served = (request.model.as_deref()).and_then(|name| find(server, name, is_llm));
    let tokenizer = served.and_then(|s| match &s.model.def.kind {
        ModelKind::Llm(timing) => timing.tokenizer.as_ref(),
        _ => None,
    });
    let mut reader = PromptReader::new(tokenizer, tokenizer.is_some());
    if let Err(message) = reader.text(&request.prompt) {
        return bad_request(&message);
    }
    let count = reader.count();
    let tokens: Vec<u64> = match tokenizer {
        Some(_) => reader.into_units(),
        None => (0..count).collect(),
    };
    json_reply(
        StatusCode::OK,
        &json!({"count": count, "tokens": tokens, "max_model_len": MAX_LLM_TOKENS}),
    )
}

fn model_object(name: &str) -> Value {
    json!({"id": name, "object": "model", "created": 0, "owned_by": "inferperf"})
}

fn models(server: &LocalServer) -> Reply {
    let data: Vec<Value> = (server.openai_models())
        .map(|s| model_object(s.model.name()))
        .collect();
    json_reply(StatusCode::OK, &json!({"object": "list", "data": data}))
}

fn model(server: &LocalServer, name: &str) -> Reply {
    match server.openai_models().find(|s| s.model.name() == name) {
        Some(_) => json_reply(StatusCode::OK, &model_object(name)),
        None => not_found(name, "an llm or embeddings"),
    }
}

fn stats(server: &LocalServer) -> Reply {
    named_list(server.openai_statistics())
}

/// Each `sequence` model's sequences started, completed, rejected and live.
fn sequence_stats(server: &LocalServer) -> Reply {
    named_list(server.sequence_statistics())
}

/// `{"object": "list", "data": [...]}` of each model's counts, with its name as `model`.
fn named_list<T: serde::Serialize>(per_model: Vec<(String, T)>) -> Reply {
    let data: Vec<Value> = (per_model.into_iter())
        .map(|(name, counts)| {
            let mut entry = json!(counts);
            entry["model"] = json!(name);
            entry
        })
        .collect();
    json_reply(StatusCode::OK, &json!({"object": "list", "data": data}))
}

fn not_found(name: &str, kind: &str) -> Reply {
    let message = format!(
        "The model '{name}' does not exist: inferperf serve has no {kind} model of that name"
    );
    error(StatusCode::NOT_FOUND, &message, Some("model_not_found"))
}

/// The body read and parsed as `T`, or the error reply.
async fn parse<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Incoming,
    what: &str,
) -> Result<T, Reply> {
    let body = read_body(headers, body)
        .await
        .map_err(|(status, message)| {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            error(status, &message, None)
        })?;
    serde_json::from_slice(&body)
        .map_err(|e| bad_request(&format!("the body is not a valid {what} request: {e}")))
}

/// The served model of that name if it is of the kind `is` accepts.
fn find<'a>(server: &'a LocalServer, name: &str, is: fn(&ModelKind) -> bool) -> Option<&'a Served> {
    server.find(name, "").ok().filter(|s| is(&s.model.def.kind))
}

fn created() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| d.as_secs())
}

/// A generation request of the API's wire format, read as chat's or completions'.
async fn read_generation(
    server: &LocalServer,
    api: Api,
    path: &str,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<GenerateRequest, Reply> {
    let what = match api {
        Api::Chat => "chat completions",
        Api::Completions => "completions",
        Api::Responses => "responses",
        Api::Messages => "messages",
        Api::Generate | Api::Triton => "generate",
        Api::Rag => "RAG prompt",
    };
    if !matches!(api, Api::Generate | Api::Rag) {
        return parse(headers, body, what).await;
    }
    let value: Value = parse(headers, body, what).await?;
    let wants_stream = headers
        .get(http::header::ACCEPT)
        .is_some_and(|a| a.as_bytes().starts_with(b"text/event-stream"));
    let read = match api {
        Api::Generate => {
            let model = first_llm(server).unwrap_or_default();
            other_wire::tgi_request(&value, &model, path == "/generate_stream")
        }
        _ => other_wire::rag_request(&value, wants_stream),
    };
    read.map_err(|message| bad_request(&message))
}

/// The first `llm` model, which TGI's routes (that name none) serve.
fn first_llm(server: &LocalServer) -> Option<String> {
    let mut llms = server.openai_models();
    let first = llms.find(|s| matches!(s.model.def.kind, ModelKind::Llm(_)))?;
    Some(first.model.name().to_string())
}

async fn generate(
    server: &LocalServer,
    api: Api,
    path: &str,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    match read_generation(server, api, path, headers, body).await {
        Ok(request) => answer(server, api, &request).await,
        Err(reply) => reply,
    }
}

/// Triton's `POST /v2/models/{m}[/versions/{v}]/generate[_stream]`, for an `llm` model;
/// every error is Triton's `{"error": "..."}`.
async fn triton_generate(
    server: &LocalServer,
    post: bool,
    route: TritonRoute<'_>,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    if !post {
        let message = "Triton's generate routes take POST";
        return error_reply(StatusCode::METHOD_NOT_ALLOWED, message);
    }
    let served = match server.find(route.model, route.version) {
        Ok(served) => served,
        Err(unknown) => return infer_error_reply(&unknown),
    };
    let kind = &served.model.def.kind;
    if !matches!(kind, ModelKind::Llm(_)) {
        let message = format!(
            "model '{}' is of kind {}, and Triton's generate routes serve llm models: send it KServe inference at /v2/models/{}/infer",
            route.model,
            kind.name(),
            route.model
        );
        return error_reply(StatusCode::BAD_REQUEST, &message);
    }
    let body = match read_body(headers, body).await {
        Ok(body) => body,
        Err((status, message)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            return error_reply(status, &message);
        }
    };
    let read = serde_json::from_slice::<Value>(&body)
        .map_err(|e| format!("the body is not JSON: {e}"))
        .and_then(|value| other_wire::triton_request(&value, route.model, route.stream));
    match read {
        Ok(request) => answer(server, Api::Triton, &request).await,
        Err(message) => error_reply(StatusCode::BAD_REQUEST, &message),
    }
}

/// An error in the API's form: Triton's for its generate routes, else OpenAI's.
fn api_error(api: Api, status: StatusCode, message: &str, code: Option<&str>) -> Reply {
    match api {
        Api::Triton => error_reply(status, message),
        _ => error(status, message, code),
    }
}

/// The answer of a generation request read in the API's wire format: the `llm` model it
/// names runs it on its engines, streamed or whole.
async fn answer(server: &LocalServer, api: Api, request: &GenerateRequest) -> Reply {
    let is_llm = |k: &ModelKind| matches!(k, ModelKind::Llm(_));
    let found = find(server, &request.model, is_llm);
    let Some((served, ModelKind::Llm(timing))) = found.map(|s| (s, &s.model.def.kind)) else {
        return match api {
            Api::Triton => error_reply(StatusCode::NOT_FOUND, "no llm model of that name"),
            _ => not_found(&request.model, "llm"),
        };
    };
    let model = &served.model;
    let unavailable = || {
        let message = "the server is shutting down";
        api_error(api, StatusCode::SERVICE_UNAVAILABLE, message, None)
    };
    let Some(engines) = served.engines() else {
        return unavailable();
    };
    let counters = &model.tokens;
    let (mut plan, blocks) = match request.prepare(api, timing) {
        Ok(prepared) => prepared,
        Err(message) => {
            add(&counters.failed, 1);
            let message = format!("model '{}': {message}", model.name());
            return api_error(api, StatusCode::BAD_REQUEST, &message, None);
        }
    };
    add(&counters.requests, 1);
    add(&counters.streamed, u64::from(plan.stream));
    add(&counters.prompt_tokens, u64::from(plan.prompt_tokens));
    let ask = Ask {
        prompt_tokens: plan.prompt_tokens,
        tokens: plan.tokens,
        stream: plan.stream,
        length: plan.finish == "length",
    };
    let Ok(ticket) = engines.submit(ask, blocks) else {
        return unavailable();
    };
    let id = format!("cmpl-{}", NEXT_ID.fetch_add(1, Relaxed));
    let name = model.name();
    let tool = request.tool_name().filter(|_| plan.tool_call);
    let tool = tool.as_deref();
    if plan.stream {
        let model_json = Value::from(name).to_string();
        let per_event = timing.tokens_per_event;
        let events = match api {
            Api::Messages => anthropic_wire::events(&id, &model_json, &plan, per_event, tool),
            Api::Generate => other_wire::tgi_events(&plan, per_event),
            Api::Rag => other_wire::rag_events(&plan, per_event),
            Api::Triton => other_wire::triton_events(name, &plan, per_event),
            _ => Events::calling(api, &id, created(), &model_json, &plan, per_event, tool),
        };
        let abort: fn(&str) -> bytes::Bytes = match api {
            Api::Triton => other_wire::triton_error_event,
            _ => wire::error_event,
        };
        return stream_reply(EventStream::new(ticket, events, abort));
    }
    let created = created();
    if !ticket.finished().await {
        return unavailable();
    }
    if plan.cached.is_some() {
        plan.cached = Some(ticket.cached());
    }
    let answer = match api {
        Api::Messages => anthropic_wire::answer(&id, name, &plan, tool),
        Api::Generate => other_wire::tgi_answer(&plan),
        Api::Rag => other_wire::rag_answer(&plan),
        Api::Triton => other_wire::triton_answer(name, &plan),
        _ => wire::answer_calling(api, &id, created, name, &plan, tool),
    };
    json_reply(StatusCode::OK, &answer)
}

async fn embeddings(server: &LocalServer, headers: &HeaderMap, body: Incoming) -> Reply {
    let request: EmbeddingsRequest = match parse(headers, body, "embeddings").await {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let is_embeddings = |k: &ModelKind| matches!(k, ModelKind::Embeddings { .. });
    let Some(served) = find(server, &request.model, is_embeddings) else {
        return not_found(&request.model, "embeddings");
    };
    let (
        model,
        ModelKind::Embeddings {
            dims,
            ms,
            us_per_token,
        },
    ) = (&served.model, &served.model.def.kind)
    else {
        return not_found(&request.model, "embeddings");
    };
    let counters = &model.tokens;
    let checked =
        (request.inputs()).and_then(|inputs| Ok((inputs, request.dims(*dims)?, request.base64()?)));
    let (inputs, dims, base64) = match checked {
        Ok(checked) => checked,
        Err(message) => {
            add(&counters.failed, 1);
            return bad_request(&format!("model '{}': {message}", model.name()));
        }
    };
    let tokens: u64 = inputs.iter().map(|i| i.tokens).sum();
    add(&counters.requests, 1);
    add(&counters.prompt_tokens, tokens);
    let Some(instances) = served.embedder() else {
        return unavailable();
    };
    let Ok(_instance) = instances.acquire().await else {
        return unavailable();
    };
    tokio::time::sleep(service_time(*ms, *us_per_token, tokens)).await;
    let answer = embeddings_answer(model.name(), &inputs, dims, base64);
    add(&counters.inputs, inputs.len() as u64);
    add(&counters.completed, 1);
    json_reply(StatusCode::OK, &answer)
}

/// An `embeddings` model's service time: `ms` per request and `us_per_token` per token read.
fn service_time(ms: f64, us_per_token: f64, tokens: u64) -> std::time::Duration {
    inferperf_wire::number::saturating_secs(ms / 1e3 + us_per_token * tokens as f64 / 1e6)
}

/// A reranker's `POST /v1/ranking`, `/rerank` or `/v2/rerank`, answered by the `embeddings`
/// model it names (TEI's name none: the first) after its service time for the words of
/// every query and passage pair.
async fn rerank(
    server: &LocalServer,
    flavor: Flavor,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    let value: Value = match parse(headers, body, "rerank").await {
        Ok(value) => value,
        Err(reply) => return reply,
    };
    let is_embeddings = |k: &ModelKind| matches!(k, ModelKind::Embeddings { .. });
    let request = rankings_wire::read(flavor, &value);
    let named = request.as_ref().ok().and_then(|r| r.model.clone());
    let served = match &named {
        Some(name) => find(server, name, is_embeddings),
        None => server
            .openai_models()
            .find(|s| is_embeddings(&s.model.def.kind)),
    };
    let Some(served) = served else {
        return not_found(named.as_deref().unwrap_or("(none named)"), "embeddings");
    };
    let (
        model,
        ModelKind::Embeddings {
            ms, us_per_token, ..
        },
    ) = (&served.model, &served.model.def.kind)
    else {
        return not_found(model_name(&named), "embeddings");
    };
    let counters = &model.tokens;
    let request = match request {
        Ok(request) => request,
        Err(message) => {
            add(&counters.failed, 1);
            return bad_request(&format!("model '{}': {message}", model.name()));
        }
    };
    let tokens = request.tokens();
    add(&counters.requests, 1);
    add(&counters.prompt_tokens, tokens);
    let Some(instances) = served.embedder() else {
        return unavailable();
    };
    let Ok(_instance) = instances.acquire().await else {
        return unavailable();
    };
    tokio::time::sleep(service_time(*ms, *us_per_token, tokens)).await;
    let id = format!("rerank-{}", NEXT_ID.fetch_add(1, Relaxed));
    let answer = rankings_wire::answer(flavor, &id, &request);
    add(&counters.inputs, request.passages.len() as u64);
    add(&counters.completed, 1);
    json_reply(StatusCode::OK, &answer)
}

fn model_name(named: &Option<String>) -> &str {
    named.as_deref().unwrap_or("(none named)")
}

//! The OpenAI-compatible API (vLLM, SGLang, llama.cpp, TensorRT-LLM, Triton's OpenAI front
//! end, TGI, the embedded server's `llm` kind) and AIPerf's other endpoint types (Anthropic
//! messages, rankings, TGI's generate, templates, raw bodies, ...) over HTTP/1.1.
//! Discovery reads `/v1/models` and sends one short probe, so that a wrong model or
//! endpoint is one sentence before the run; each prompt is encoded once into a whole
//! request, its body made by its endpoint type's file ([`endpoints`]); the connection
//! ([`conn`]) reads the answer, streamed as server-sent events ([`events`]) or in one
//! piece, and counts its tokens.

pub mod conn;
pub mod content;
pub mod endpoints;
pub mod events;
mod marker;
mod parts;
pub mod tokenize;

use serde_json::Value;

use crate::backend::transport::http1::{frame_request, user_headers};
use crate::backend::{Adapter, Connection, Discovered, ErrorKind, Payload, Target};
use crate::config::{self, ApiSettings, OpenAiConfig, OpenAiSettings, OpenAiWire, TargetConfig};
use crate::data::{Entry, Prompt};
use endpoints::{wire, BodyInput, EndpointWire};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::ModelSpec;

/// The OpenAI adapter and the settings it encodes prompts with.
#[derive(Debug, Clone)]
pub struct OpenAi {
    pub llm: OpenAiConfig,
    pub streaming: bool,
    /// AIPerf's custom path and max-tokens field.
    pub wire: OpenAiWire,
    /// Whether the requests are the warm-up's (`--cache-bust warmup_isolation_*` marks
    /// only those).
    pub warm_up: bool,
}

impl OpenAi {
    pub fn new(target: &TargetConfig, settings: &OpenAiSettings) -> OpenAi {
        OpenAi {
            llm: settings.llm.clone(),
            streaming: target.streaming,
            wire: settings.wire.clone(),
            warm_up: false,
        }
    }

    /// `--cache-bust`'s marker as this adapter's requests carry it (`None`: none).
    fn marker(&self) -> Option<(config::cache_bust::CacheBust, String)> {
        let bust = self.llm.cache_bust?;
        Some((bust, bust.text(self.warm_up)?))
    }

    /// The adapter of an OpenAI run; `None` for the other APIs.
    pub fn for_target(target: &TargetConfig) -> Option<OpenAi> {
        match &target.api {
            ApiSettings::OpenAi(settings) => Some(OpenAi::new(target, settings)),
            _ => None,
        }
    }

    /// The endpoint type's body and answers.
    pub fn endpoint_wire(&self) -> &'static dyn EndpointWire {
        wire(self.llm.endpoint)
    }

    /// `/v1/...` of the endpoint (its streaming path when streaming), or the custom path,
    /// with `model` in place of a `{model}` (Triton's generate paths name the model).
    pub fn path(&self, model: &str) -> String {
        let path = match &self.wire.path {
            Some(path) => path.clone(),
            None => format!("/{}", self.llm.endpoint.request_path(self.streaming)),
        };
        config::endpoints::model_in_path(&path, model)
    }

    /// The JSON body of one prompt (null when the type can make none of it, which was
    /// refused when the prompt was first encoded).
    pub fn body(&self, model: &str, prompt: &Prompt) -> Value {
        self.turn_body(model, prompt, &[])
    }

    /// The JSON body of a turn of a chat session: the system message, each earlier prompt
    /// and the answer the server gave to it, then the prompt. (The other endpoints carry no
    /// conversation: their body is the prompt's.)
    pub fn turn_body(&self, model: &str, prompt: &Prompt, history: &[(String, String)]) -> Value {
        self.try_body(model, prompt, history).unwrap_or_default()
    }

    /// The body of a turn, or the sentence saying why the endpoint type can make none.
    pub fn try_body(
        &self,
        model: &str,
        prompt: &Prompt,
        history: &[(String, String)],
    ) -> Result<Value, String> {
        let marked =
            (self.marker()).map(|(bust, text)| marker::mark(&bust, &text, prompt, history));
        let (prompt, history) = match &marked {
            Some(m) => (m.prompt.as_ref(), m.history.as_ref()),
            None => (prompt, history),
        };
        let input = BodyInput {
            adapter: self,
            model,
            prompt,
            history,
        };
        let mut body = self.endpoint_wire().body(&input)?;
        if let Value::Object(fields) = &mut body {
            parts::apply(fields, self.llm.endpoint, prompt);
        }
        Ok(body)
    }

    /// The whole HTTP request for a body: the user's headers, then the type's own unless
    /// the user gave one of the name, the content type and, streaming, `accept`.
    fn frame(&self, target: &Target, body: &[u8]) -> bytes::Bytes {
        let mut headers: Vec<(&str, &str)> = user_headers(&target.peer.headers).collect();
        for &(name, value) in self.endpoint_wire().headers() {
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                headers.push((name, value));
            }
        }
        if !headers.iter().any(|(n, _)| *n == "content-type") {
            headers.push(("content-type", "application/json"));
        }
        if self.streaming {
            headers.push(("accept", "text/event-stream"));
        }
        let path = self.path(&target.model);
        frame_request("POST", &path, &target.peer.authority, &headers, body)
    }
}

impl Adapter for OpenAi {
    /// A turn of a chat session with its history (see [`OpenAi::turn_body`]), encoded when
    /// it is sent; a request body the user gave is sent as given.
    fn encode_turn(
        &self,
        target: &Target,
        prompt: &Prompt,
        history: &[(String, String)],
    ) -> Option<Payload> {
        let body = match &prompt.body {
            Some(given) => given.clone().into_bytes(),
            None => (self.turn_body(&target.model, prompt, history))
                .to_string()
                .into_bytes(),
        };
        Some(Payload::Http(self.frame(target, &body)))
    }

    fn for_warm_up(&self) -> Option<OpenAi> {
        let bust = self.llm.cache_bust?;
        (bust.text(true) != bust.text(false)).then(|| OpenAi {
            warm_up: true,
            ..self.clone()
        })
    }

    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        conn::check_model(target, self).await?;
        // A streamed generation answers many times per request, as a decoupled model does
        // (so reports add perf_analyzer's response throughput).
        let facts = crate::backend::ConfigFacts {
            decoupled: self.streaming,
            ..Default::default()
        };
        Ok(Discovered {
            name: target.model.clone(),
            version: String::new(),
            platform: format!("openai {}", self.llm.endpoint.path_of(&target.model)),
            config: Some(facts),
            ..Discovered::default()
        })
    }

    fn encode(&self, target: &Target, _model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        let Some(prompt) = &entry.prompt else {
            return Err(RunError::bad_option(format!(
                "{} holds tensors, not a prompt: an OpenAI run sends prompts.",
                entry.origin
            )));
        };
        let body = match &prompt.body {
            Some(given) => given.clone().into_bytes(),
            None => self
                .try_body(&target.model, prompt, &[])
                .map_err(|why| RunError::bad_option(format!("{}: {why}.", entry.origin)))?
                .to_string()
                .into_bytes(),
        };
        if let Some((_, text)) = self.marker() {
            let marker = text.trim().as_bytes();
            if !body.windows(marker.len()).any(|w| w == marker) {
                return Err(RunError::bad_option(format!(
                    "{}: --cache-bust has no message to put its marker in (a request body given as it is, or messages with no user message): drop --cache-bust, or give prompts.",
                    entry.origin
                )));
            }
        }
        Ok(Payload::Http(self.frame(target, &body)))
    }

    async fn open(&self, target: &Target, _slot: usize) -> Result<Connection, ErrorKind> {
        let conn = conn::OpenAiConn::open(target, self).await?;
        Ok(Connection::OpenAi(conn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Endpoint, PromptSource};
    use serde_json::json;

    fn adapter(endpoint: Endpoint, streaming: bool) -> OpenAi {
        OpenAi {
            llm: OpenAiConfig {
                endpoint,
                input_tokens_mean: 3,
                input_tokens_stddev: 0.0,
                output_tokens_mean: Some(7),
                output_tokens_stddev: 0.0,
                output_deterministic: true,
                extra_inputs: vec![("temperature".into(), json!(0.5))],
                prompt_source: PromptSource::Synthetic,
                num_prompts: 1,
                artifact_dir: None,
                tokenizer: None,
                tokenizer_revision: None,
                use_server_token_count: false,
                cache_bust: None,
                apply_chat_template: false,
            },
            streaming,
            wire: OpenAiWire::default(),
            warm_up: false,
        }
    }

    fn prompt() -> Prompt {
        Prompt {
            text: "a b c".into(),
            input_tokens: 3,
            max_tokens: Some(7),
            body: None,
            system: None,
            messages: None,
            ..Prompt::default()
        }
    }

    #[test]
    fn a_chat_body_asks_for_a_stream_with_usage() {
        let body = adapter(Endpoint::Chat, true).body("m", &prompt());
        assert_eq!(
            body,
            json!({"model": "m", "messages": [{"role": "user", "content": "a b c"}],
                   "max_tokens": 7, "min_tokens": 7, "ignore_eos": true, "stream": true,
                   "stream_options": {"include_usage": true}, "temperature": 0.5})
        );
    }

    #[test]
    fn a_turn_carries_its_history_after_the_system_message() {
        let mut turn = prompt();
        turn.system = Some("be brief".into());
        let history = vec![
            ("one".to_string(), "first answer".to_string()),
            ("two".to_string(), "second answer".to_string()),
        ];
        let body = adapter(Endpoint::Chat, false).turn_body("m", &turn, &history);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": "first answer"},
                {"role": "user", "content": "two"},
                {"role": "assistant", "content": "second answer"},
                {"role": "user", "content": "a b c"}
            ])
        );
        assert_eq!(body["max_tokens"], 7);
    }

    #[test]
    fn aiperf_wire_sets_the_path_and_the_max_tokens_field() {
        let mut chat = adapter(Endpoint::Chat, false);
        assert_eq!(chat.path("m"), "/v1/chat/completions");
        chat.wire = OpenAiWire {
            path: Some("/my/api".into()),
            max_completion_tokens: true,
            ..OpenAiWire::default()
        };
        assert_eq!(chat.path("m"), "/my/api");
        let body = chat.body("m", &prompt());
        assert_eq!(body["max_completion_tokens"], 7);
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn a_responses_body_has_input_and_max_output_tokens() {
        let mut responses = adapter(Endpoint::Responses, true);
        // AIPerf's chat field does not apply: the Responses API has its own.
        responses.wire.max_completion_tokens = true;
        assert_eq!(responses.path("m"), "/v1/responses");
        assert_eq!(
            responses.body("m", &prompt()),
            json!({"model": "m", "input": "a b c", "max_output_tokens": 7, "min_tokens": 7,
                   "ignore_eos": true, "stream": true, "temperature": 0.5})
        );
    }

    #[test]
    fn completions_and_embeddings_bodies() {
        let body = adapter(Endpoint::Completions, false).body("m", &prompt());
        assert_eq!(body["prompt"], "a b c");
        assert!(body.get("stream").is_none());
        let body = adapter(Endpoint::Embeddings, true).body("m", &prompt());
        assert_eq!(
            body,
            json!({"model": "m", "input": "a b c", "temperature": 0.5})
        );
    }
}

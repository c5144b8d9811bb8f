//! The server's own tokenizer, reached through its tokenize endpoint: inferperf's counter
//! when no `--tokenizer` is given. Before the run, each common server's endpoint is tried in
//! turn (vLLM and SGLang `POST /tokenize` with a prompt, llama.cpp's server `POST /tokenize`
//! with content, TGI `POST /tokenize` with inputs, llama-cpp-python `POST /extras/tokenize`);
//! the first that answers a token list counts the run's prompts, and its answers' text when
//! windows are cut. The count of an empty text (a BOS token some servers add) is taken off
//! every count, so that a count is the text's own tokens as the other counters give them.
//! Calls go through one connection owned by a thread of its own, so counting never runs on
//! the send path and a caller waits at most the request timeout.

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::backend::transport::http1::{frame_request, user_headers, Http1Stream};
use crate::backend::Target;
use crate::data::tokenizer::{CounterInfo, TokenCount};

/// One way of asking a server for the tokens of a text.
#[derive(Debug, Clone, Copy)]
struct Endpoint {
    path: &'static str,
    /// The JSON field the text goes in (vLLM and SGLang also get the model).
    field: &'static str,
    with_model: bool,
    server: &'static str,
}

const ENDPOINTS: [Endpoint; 4] = [
    Endpoint {
        path: "/tokenize",
        field: "prompt",
        with_model: true,
        server: "vLLM/SGLang",
    },
    Endpoint {
        path: "/tokenize",
        field: "content",
        with_model: false,
        server: "llama.cpp",
    },
    Endpoint {
        path: "/tokenize",
        field: "inputs",
        with_model: false,
        server: "TGI",
    },
    Endpoint {
        path: "/extras/tokenize",
        field: "input",
        with_model: false,
        server: "llama-cpp-python",
    },
];

type Job = (String, mpsc::Sender<Result<u32, String>>);

/// The server's tokenize endpoint as a [`TokenCount`].
pub struct ServerTokenizer {
    jobs: std::sync::Mutex<mpsc::Sender<Job>>,
    /// Tokens the endpoint gives for an empty text (taken off every count).
    empty: u32,
    timeout: Duration,
    info: CounterInfo,
}

impl TokenCount for ServerTokenizer {
    fn count(&self, text: &str) -> Result<u32, String> {
        Ok(self.raw(text)?.saturating_sub(self.empty))
    }

    fn info(&self) -> &CounterInfo {
        &self.info
    }
}

impl ServerTokenizer {
    fn raw(&self, text: &str) -> Result<u32, String> {
        let (tx, rx) = mpsc::channel();
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.send((text.to_string(), tx))
            .map_err(|_| "the tokenize connection is gone".to_string())?;
        drop(jobs);
        rx.recv_timeout(self.timeout.saturating_mul(2))
            .map_err(|_| "no answer from the tokenize endpoint in time".to_string())?
    }
}

/// The first tokenize endpoint of the server that answers, as the run's counter; `None`
/// when the server has none.
pub async fn probe(target: &Target) -> Option<ServerTokenizer> {
    let mut io = Http1Stream::open(&target.peer).await.ok()?;
    for endpoint in ENDPOINTS {
        if !io.is_usable() {
            io = Http1Stream::open(&target.peer).await.ok()?;
        }
        let asked =
            tokio::time::timeout(target.peer.timeout, ask(&mut io, target, endpoint, "Hello"));
        if !matches!(asked.await, Ok(Ok(n)) if n > 0) {
            continue;
        }
        let empty = tokio::time::timeout(target.peer.timeout, ask(&mut io, target, endpoint, ""));
        let empty = empty.await.ok()?.ok()?;
        return Some(start(target.clone(), io, endpoint, empty));
    }
    None
}

/// Starts the thread that owns the connection and answers counting jobs.
fn start(target: Target, io: Http1Stream, endpoint: Endpoint, empty: u32) -> ServerTokenizer {
    let (tx, rx) = mpsc::channel::<Job>();
    let timeout = target.peer.timeout;
    let info = CounterInfo {
        kind: "server",
        name: format!("{} POST {}", endpoint.server, endpoint.path),
        approximate: false,
    };
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(serve_jobs(target, io, endpoint, rx));
    });
    ServerTokenizer {
        jobs: std::sync::Mutex::new(tx),
        empty,
        timeout,
        info,
    }
}

async fn serve_jobs(
    target: Target,
    mut io: Http1Stream,
    endpoint: Endpoint,
    rx: mpsc::Receiver<Job>,
) {
    while let Ok((text, reply)) = rx.recv() {
        if !io.is_usable() {
            match Http1Stream::open(&target.peer).await {
                Ok(fresh) => io = fresh,
                Err(kind) => {
                    let _ = reply.send(Err(format!("cannot reconnect ({kind})")));
                    continue;
                }
            }
        }
        let asked =
            tokio::time::timeout(target.peer.timeout, ask(&mut io, &target, endpoint, &text));
        let answer = asked
            .await
            .unwrap_or_else(|_| Err("no answer within the request timeout".into()));
        let _ = reply.send(answer);
    }
}

/// Asks `endpoint` for the tokens of `text`.
async fn ask(
    io: &mut Http1Stream,
    target: &Target,
    endpoint: Endpoint,
    text: &str,
) -> Result<u32, String> {
    let mut body = json!({ endpoint.field: text });
    if endpoint.with_model {
        body["model"] = target.model.as_str().into();
        body["add_special_tokens"] = false.into();
    }
    let mut headers: Vec<(&str, &str)> = user_headers(&target.peer.headers).collect();
    headers.push(("content-type", "application/json"));
    let request = frame_request(
        "POST",
        endpoint.path,
        &target.peer.authority,
        &headers,
        body.to_string().as_bytes(),
    );
    io.send(&request).await.map_err(|k| k.to_string())?;
    let response = io.receive().await.map_err(|k| k.to_string())?;
    if response.status != 200 {
        return Err(format!("HTTP {}", response.status));
    }
    let value: Value = serde_json::from_slice(&response.body).map_err(|e| e.to_string())?;
    token_count(&value).ok_or_else(|| "the answer holds no token list".into())
}

/// The count in a tokenize answer: `{"count": n}`, `{"tokens": [...]}` or `[...]`.
fn token_count(value: &Value) -> Option<u32> {
    if let Some(n) = value.get("count").and_then(Value::as_u64) {
        return Some(n as u32);
    }
    let list = value.get("tokens").unwrap_or(value).as_array()?;
    Some(list.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_form_gives_its_count() {
        assert_eq!(token_count(&json!({"count": 4, "tokens": [1]})), Some(4));
        assert_eq!(token_count(&json!({"tokens": [1, 2, 3]})), Some(3));
        assert_eq!(token_count(&json!([{"id": 1}, {"id": 2}])), Some(2));
        assert_eq!(token_count(&json!({"error": "no"})), None);
    }
}

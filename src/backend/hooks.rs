//! The control calls a run makes on the server around its measurement (AIPerf's hooks): a
//! POST that resets the engine's KV cache before the run, and the POSTs that start the
//! engine's profiler before measuring and stop it after. Each is one call on the control
//! client with the run's headers, bounded by its own timeout.

use crate::config::ControlCall;
use inferperf_wire::error::{RunError, RunResult};

use super::transport::control::HttpControl;
use super::Target;

/// POSTs `call` on the server (an empty JSON object as body); a failure is one sentence
/// naming the call, the flag that asked for it (`flag`), and the server's answer.
pub async fn post(target: &Target, call: &ControlCall, flag: &str) -> RunResult<()> {
    let exchange = async {
        let mut control = HttpControl::open(&target.peer).await?;
        control.post_json(&call.path, b"{}").await
    };
    let sentence = |detail: String| {
        RunError::failed(format!(
            "POST {} on {} ({flag}) {detail}: check the path (vLLM and SGLang serve it when started with their profiling or cache-reset options).",
            call.path, target.peer.authority
        ))
    };
    match tokio::time::timeout(call.timeout, exchange).await {
        Err(_) => Err(sentence(format!(
            "had no answer within {:.0} s",
            call.timeout.as_secs_f64()
        ))),
        Ok(Err(kind)) => Err(sentence(format!("failed ({kind})"))),
        Ok(Ok((status, _))) if status.is_success() => Ok(()),
        Ok(Ok((status, body))) => Err(sentence(format!(
            "answered HTTP {} {}",
            status.as_u16(),
            String::from_utf8_lossy(&body[..body.len().min(120)]).trim()
        ))),
    }
}

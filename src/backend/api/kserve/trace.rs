//! Triton's trace extension from the client's side (`--trace-level`, `--trace-rate`,
//! `--trace-count`, `--log-frequency`): the model's trace settings are read before the run,
//! the asked ones set, and the old values of those put back after it, over
//! `/v2/models/M/trace/setting`. Not on the hot path.

use serde_json::{Map, Value};

use crate::backend::transport::control::HttpControl;
use crate::backend::Target;
use inferperf_wire::error::{RunError, RunResult};

/// The settings changed for a run and the values they had before it.
#[derive(Debug)]
pub struct TraceChange {
    path: String,
    previous: Map<String, Value>,
}

fn path(target: &Target) -> String {
    match target.version.as_str() {
        "" => format!("/v2/models/{}/trace/setting", target.model),
        v => format!("/v2/models/{}/versions/{v}/trace/setting", target.model),
    }
}

/// Reads the model's settings, then sets `updates`; the change to undo after the run.
pub async fn apply(target: &Target, updates: &Map<String, Value>) -> RunResult<TraceChange> {
    let path = path(target);
    let mut conn = connect(target).await?;
    let before = call(&mut conn, &path, None).await?;
    let previous = updates
        .keys()
        .map(|key| (key.clone(), before.get(key).cloned().unwrap_or(Value::Null)))
        .collect();
    call(&mut conn, &path, Some(updates)).await?;
    Ok(TraceChange { path, previous })
}

impl TraceChange {
    /// Puts the settings the run changed back as they were.
    pub async fn restore(&self, target: &Target) -> RunResult<()> {
        let mut conn = connect(target).await?;
        call(&mut conn, &self.path, Some(&self.previous)).await?;
        Ok(())
    }
}

async fn connect(target: &Target) -> RunResult<HttpControl> {
    HttpControl::open(&target.peer).await.map_err(|e| {
        RunError::failed(format!(
            "Cannot reach {} to change the trace settings ({e}).",
            target.peer.authority
        ))
    })
}

/// A GET (no body) or POST of the settings route; the settings the server answers.
async fn call(
    conn: &mut HttpControl,
    path: &str,
    body: Option<&Map<String, Value>>,
) -> RunResult<Map<String, Value>> {
    let answer = match body {
        None => conn.get(path).await,
        Some(map) => {
            conn.post_json(path, Value::Object(map.clone()).to_string().as_bytes())
                .await
        }
    };
    let failed = |why: String| {
        RunError::failed(format!(
            "The server's trace settings at {path} cannot be used ({why}): does it offer Triton's trace extension? Drop the --trace-* and --log-frequency flags otherwise."
        ))
    };
    let (status, bytes) = answer.map_err(|e| failed(e.to_string()))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        return Err(failed(format!("HTTP {}: {}", status.as_u16(), text.trim())));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| failed(format!("the answer is not a JSON object: {e}")))
}

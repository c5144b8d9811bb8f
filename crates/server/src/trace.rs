//! Triton's trace extension, as far as a load tester uses it: each model's trace settings,
//! stored and answered back (by the route `GET`/`POST /v2/models/M/trace/setting`), so that
//! a client that sets them before a run and restores them after can be checked. No trace is
//! written. The settings are model state, held by [`super::local::LocalServer`]; the route
//! lives with the other HTTP routes.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

/// The settings a model starts with (Triton's defaults).
pub(crate) fn default_settings() -> Map<String, Value> {
    let pairs = [
        ("trace_file", Value::from("")),
        ("trace_level", Value::from(vec!["OFF"])),
        ("trace_rate", Value::from("1000")),
        ("trace_count", Value::from("-1")),
        ("log_frequency", Value::from("0")),
        ("trace_mode", Value::from("triton")),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Every model's trace settings.
#[derive(Debug, Default)]
pub struct TraceSettings {
    models: Mutex<HashMap<String, Map<String, Value>>>,
    /// Every update applied, in order, with its model: what a test reads back.
    updates: Mutex<Vec<(String, Map<String, Value>)>>,
}

impl TraceSettings {
    /// The settings of `model`.
    pub fn get(&self, model: &str) -> Map<String, Value> {
        let models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        models.get(model).cloned().unwrap_or_else(default_settings)
    }

    /// Every update applied so far, in order, with the model it was for.
    pub fn updates(&self) -> Vec<(String, Map<String, Value>)> {
        self.updates
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Applies `updates` (a string, a list of strings, or null for the default) and returns
    /// the settings after them; an unknown setting or another value type is refused whole.
    pub fn update(
        &self,
        model: &str,
        updates: &Map<String, Value>,
    ) -> Result<Map<String, Value>, String> {
        let defaults = default_settings();
        for (key, value) in updates {
            if !defaults.contains_key(key) {
                return Err(format!("unknown trace setting '{key}'"));
            }
            if !valid_value(key, value) {
                return Err(format!("trace setting '{key}' takes a string (trace_level: a list of strings) or null, not {value}"));
            }
        }
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        let settings = models
            .entry(model.to_string())
            .or_insert_with(default_settings);
        for (key, value) in updates {
            let value = match value {
                Value::Null => defaults[key].clone(),
                other => other.clone(),
            };
            settings.insert(key.clone(), value);
        }
        let after = settings.clone();
        drop(models);
        let mut log = self.updates.lock().unwrap_or_else(|e| e.into_inner());
        log.push((model.to_string(), updates.clone()));
        Ok(after)
    }
}

fn valid_value(key: &str, value: &Value) -> bool {
    match value {
        Value::Null | Value::String(_) => true,
        Value::Array(items) => key == "trace_level" && items.iter().all(Value::is_string),
        _ => false,
    }
}

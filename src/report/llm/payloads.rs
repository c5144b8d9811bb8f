//! The request bodies of an LLM run, as the OpenAI adapter sends them: GenAI-Perf's
//! `inputs.json`, and the `payload` of each request in the profile export
//! ([`crate::report::profile_export`]). The dataset knows no protocol, so the command that
//! runs the profile encodes the bodies again from its prompts (or takes them as the user
//! gave them) and hands them to the reports.

use super::json::{object, Json};

/// The request body of each dataset entry, as the OpenAI adapter sends it.
#[derive(Debug, Clone, Default)]
pub struct Payloads {
    bodies: Vec<String>,
}

impl Payloads {
    /// The bodies of the dataset's entries, in order.
    pub fn from_bodies(bodies: Vec<String>) -> Payloads {
        Payloads { bodies }
    }

    /// GenAI-Perf's `inputs.json`: `{"data": [{"payload": [body]}, …]}`, each body as a
    /// JSON object (as text if it does not parse).
    pub fn inputs_json(&self) -> Json {
        let entries = self.bodies.iter().map(|body| {
            let payload = match serde_json::from_str::<serde_json::Value>(body) {
                Ok(value) => Json::from(&value),
                Err(_) => Json::from(body.as_str()),
            };
            object([("payload", Json::Array(vec![payload]))])
        });
        object([("data", Json::Array(entries.collect()))])
    }

    /// The body sent for dataset entry `index` (empty if there is none).
    pub fn body(&self, index: u32) -> &str {
        self.bodies.get(index as usize).map_or("", String::as_str)
    }

    /// Every body, in dataset order.
    pub fn bodies(&self) -> &[String] {
        &self.bodies
    }
}

#[cfg(test)]
#[path = "payloads_tests.rs"]
mod tests;

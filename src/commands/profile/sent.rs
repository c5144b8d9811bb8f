//! What a measured run sends, for the reports that list its requests (perf_analyzer's
//! profile export, GenAI-Perf's `inputs.json`): each LLM prompt's request body as the
//! OpenAI adapter sends it. The dataset knows no protocol and the reports read no
//! configuration, so the command encodes the bodies again here, when a report asks.

use crate::backend::api::openai::OpenAi;
use crate::config::Config;
use crate::data::Dataset;
use crate::report::llm::payloads::Payloads;

/// The body of each dataset entry: a body the user gave, as given; otherwise the OpenAI
/// adapter's for an LLM run (none for a tensor run).
pub fn openai_bodies(cfg: &Config, dataset: &Dataset) -> Payloads {
    let adapter = OpenAi::for_target(&cfg.target);
    let bodies = dataset
        .entries
        .iter()
        .map(|entry| match (&entry.prompt, &adapter) {
            (Some(prompt), _) if prompt.body.is_some() => prompt.body.clone().unwrap_or_default(),
            (Some(prompt), Some(adapter)) => {
                adapter.body(&cfg.target.model_name, prompt).to_string()
            }
            _ => String::new(),
        })
        .collect();
    Payloads::from_bodies(bodies)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Entry, Prompt};

    fn llm_config() -> Config {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "inferperf",
            "profile",
            "-m",
            "test-model",
            "--service-kind",
            "openai",
            "--endpoint",
            "v1/chat/completions",
            "--streaming",
        ])
        .expect("the flags parse");
        let crate::cli::Command::Profile(args) = cli.command else {
            unreachable!("the profile subcommand was given");
        };
        Config::from_args(&args).expect("the flags are valid")
    }

    #[test]
    fn bodies_are_the_adapters_or_the_users() {
        let cfg = llm_config();
        let entry = |prompt: Prompt| Entry {
            inputs: Vec::new(),
            timestamp_ms: None,
            expected: None,
            origin: "test".into(),
            prompt: Some(prompt),
            stream: None,
            turn: None,
        };
        let generated = Prompt {
            text: "hello there".into(),
            input_tokens: 2,
            max_tokens: Some(5),
            body: None,
            system: None,
            messages: None,
            ..Prompt::default()
        };
        let given = Prompt {
            body: Some("{\"model\":\"x\",\"messages\":[]}".into()),
            system: None,
            messages: None,
            ..generated.clone()
        };
        let dataset = Dataset {
            tokenizer: None,
            marker_tokens: 0,
            entries: vec![entry(generated.clone()), entry(given)],
        };
        let payloads = openai_bodies(&cfg, &dataset);
        let expected = OpenAi::for_target(&cfg.target)
            .expect("an OpenAI run")
            .body("test-model", &generated)
            .to_string();
        assert_eq!(payloads.body(0), expected);
        assert_eq!(payloads.body(1), "{\"model\":\"x\",\"messages\":[]}");
        let value: serde_json::Value =
            serde_json::from_str(&payloads.inputs_json().pretty()).unwrap();
        assert_eq!(value["data"][0]["payload"][0]["stream"], true);
    }
}

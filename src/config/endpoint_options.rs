//! The settings an endpoint type takes beyond chat's, checked once: `--api-key` (a header,
//! as AIPerf sends it), the `template` type's body and the `response_field` that reads its
//! answers (`--extra-inputs payload_template:...`, AIPerf's way to give them), the synthetic
//! query and passages of the rankings types (`--rankings-*`, with the values AIPerf 0.13
//! really sends when a flag is not given), and which types a flag cannot go with.

use std::path::{Path, PathBuf};

use super::endpoints::Endpoint;
use super::{OpenAiConfig, OpenAiWire};
use crate::cli::{EndpointArgs, ProfileArgs};
use inferperf_wire::error::{RunError, RunResult};

/// AIPerf's one named template.
const NAMED_TEMPLATES: [(&str, &str); 1] = [("nv-embedqa", r#"{"text": {{ texts|tojson }}}"#)];

/// Most passages per rankings request, and most tokens per query or passage.
const MOST_PASSAGES: u32 = 10_000;
const MOST_TOKENS: u32 = 1_000_000;

/// A count drawn per request: its mean and standard deviation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeanStddev {
    pub mean: u32,
    pub stddev: u32,
}

/// The synthetic requests of the rankings types: one query and `passages` passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankingsConfig {
    pub passages: MeanStddev,
    pub passage_tokens: MeanStddev,
    pub query_tokens: MeanStddev,
}

impl Default for RankingsConfig {
    /// AIPerf 0.13's effective defaults (its configuration model's, not its help's).
    fn default() -> Self {
        let fixed = |mean| MeanStddev { mean, stddev: 0 };
        RankingsConfig {
            passages: fixed(10),
            passage_tokens: fixed(128),
            query_tokens: fixed(32),
        }
    }
}

/// `--rankings-*`: each mean at least 1, each standard deviation at least 0.
pub fn rankings(args: &EndpointArgs) -> RunResult<RankingsConfig> {
    let defaults = RankingsConfig::default();
    let pair =
        |mean: (Option<u32>, &str), stddev: (Option<u32>, &str), default: MeanStddev, most| {
            let mean_value = mean.0.unwrap_or(default.mean);
            let stddev_value = stddev.0.unwrap_or(default.stddev);
            if mean_value == 0 || mean_value > most {
                return Err(RunError::bad_option(format!(
                    "--{} {mean_value} must be between 1 and {most}.",
                    mean.1
                )));
            }
            if stddev_value > most {
                return Err(RunError::bad_option(format!(
                    "--{} {stddev_value} must be between 0 and {most}.",
                    stddev.1
                )));
            }
            Ok(MeanStddev {
                mean: mean_value,
                stddev: stddev_value,
            })
        };
    Ok(RankingsConfig {
        passages: pair(
            (args.rankings_passages_mean, "rankings-passages-mean"),
            (args.rankings_passages_stddev, "rankings-passages-stddev"),
            defaults.passages,
            MOST_PASSAGES,
        )?,
        passage_tokens: pair(
            (
                args.rankings_passages_prompt_token_mean,
                "rankings-passages-prompt-token-mean",
            ),
            (
                args.rankings_passages_prompt_token_stddev,
                "rankings-passages-prompt-token-stddev",
            ),
            defaults.passage_tokens,
            MOST_TOKENS,
        )?,
        query_tokens: pair(
            (
                args.rankings_query_prompt_token_mean,
                "rankings-query-prompt-token-mean",
            ),
            (
                args.rankings_query_prompt_token_stddev,
                "rankings-query-prompt-token-stddev",
            ),
            defaults.query_tokens,
            MOST_TOKENS,
        )?,
    })
}

/// Takes the template and the answer's field out of `--extra-inputs` (as AIPerf does with
/// `payload_template` for every type, and `response_field` beside it or for `raw`), checks
/// them, and refuses a template type without a template.
fn take_template(llm: &mut OpenAiConfig, wire: &mut OpenAiWire) -> RunResult<()> {
    let template = take(&mut llm.extra_inputs, "payload_template");
    let field = match (&template, llm.endpoint) {
        (Some(_), _) | (None, Endpoint::Raw) => take(&mut llm.extra_inputs, "response_field"),
        (None, _) => None,
    };
    if let Some(field) = &field {
        let field = field
            .as_str()
            .map(str::to_string)
            .unwrap_or(field.to_string());
        wire.response_field = Some(response_field(&field)?).filter(|f| f != "text");
    }
    match template {
        Some(given) => {
            let given = given.as_str().map(str::to_string).unwrap_or(given.to_string());
            wire.template = Some(template_body(&given)?);
        }
        None if llm.endpoint == Endpoint::Template => {
            return Err(RunError::bad_option(
                "--endpoint-type template needs its body: add --extra-inputs payload_template:FILE (a Jinja template of the JSON body, or the template inline, or nv-embedqa).",
            ))
        }
        None => {}
    }
    Ok(())
}

/// The value of `key` among the extra inputs, taken out (the last, when given twice).
fn take(fields: &mut Vec<(String, serde_json::Value)>, key: &str) -> Option<serde_json::Value> {
    let value = fields
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone());
    fields.retain(|(k, _)| k != key);
    value
}

/// A JMESPath expression that compiles.
fn response_field(text: &str) -> RunResult<String> {
    match jmespath::compile(text) {
        Ok(_) => Ok(text.to_string()),
        Err(e) => Err(RunError::bad_option(format!(
            "--extra-inputs response_field:{text} is not a JMESPath expression ({}): give the answer's field, e.g. response_field:data[0].text.",
            one_line(&e.to_string())
        ))),
    }
}

/// A template's body: the file it names (a regular file, no symbolic link on its path, as
/// AIPerf reads it), else the named template, else the text itself; it must compile.
fn template_body(given: &str) -> RunResult<String> {
    let body = match read_template_file(given) {
        Some(text) => text,
        None => match NAMED_TEMPLATES
            .iter()
            .find(|(name, _)| *name == given.trim())
        {
            Some((_, body)) => body.to_string(),
            None => given.to_string(),
        },
    };
    let env = minijinja::Environment::new();
    if let Err(e) = env.template_from_str(&body) {
        return Err(RunError::bad_option(format!(
            "--extra-inputs payload_template is not a Jinja template ({}): give a file of the body's JSON with {{{{ text|tojson }}}} where the prompt goes.",
            one_line(&e.to_string())
        )));
    }
    Ok(body)
}

fn read_template_file(given: &str) -> Option<String> {
    let path = match given.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => PathBuf::from(given),
    };
    let mut place: Option<&Path> = Some(&path);
    while let Some(at) = place.filter(|p| !p.as_os_str().is_empty()) {
        if at
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return None;
        }
        place = at.parent();
    }
    if !path.is_file() {
        return None;
    }
    std::fs::read_to_string(&path).ok()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The endpoint settings of a run: the template taken out of the extra inputs, the system
/// message checked against the type, and the rankings requests' shape (checked for every
/// run, as AIPerf checks its flags, used by the rankings types).
pub(super) fn apply(
    mut llm: Option<OpenAiConfig>,
    mut wire: OpenAiWire,
    args: &ProfileArgs,
    system_tokens: Option<u32>,
) -> RunResult<(Option<OpenAiConfig>, OpenAiWire, RankingsConfig)> {
    let rankings = rankings(&args.endpoints)?;
    if let Some(llm) = llm.as_mut() {
        take_template(llm, &mut wire)?;
        check_system_message(llm.endpoint, system_tokens)?;
    }
    Ok((llm, wire, rankings))
}

/// A run of a type that takes no system message cannot send one; completions and
/// embeddings keep inferperf's way of sending it (before the prompt's text).
fn check_system_message(endpoint: Endpoint, system_tokens: Option<u32>) -> RunResult<()> {
    let kept = matches!(endpoint, Endpoint::Completions | Endpoint::Embeddings);
    if system_tokens.is_none() || kept || endpoint.facts().system_message {
        return Ok(());
    }
    Err(RunError::bad_option(format!(
        "--shared-system-prompt-length sends a system message, which --endpoint-type {} does not take (AIPerf refuses it too): drop it, or use chat, responses, messages or chat_embeddings.",
        endpoint.kind_name()
    )))
}

#[cfg(test)]
#[path = "endpoint_options_tests.rs"]
mod tests;

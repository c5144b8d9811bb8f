//! The settings of the OpenAI API (`--service-kind openai`): which OpenAI endpoint, where prompts
//! come from, how long prompts and answers are, extra request fields, and where GenAI-Perf's
//! and AIPerf's exports go. Every rule about these flags is here.

use std::path::PathBuf;

use crate::cli::OpenAiArgs;
use crate::config::cache_bust::CacheBust;
use inferperf_wire::error::{RunError, RunResult};

/// Largest mean prompt or answer length accepted (a prompt of a million words is a mistake).
const MAX_TOKENS_MEAN: u32 = 1_000_000;
/// Distinct synthetic prompts unless told otherwise.
pub const DEFAULT_PROMPTS: usize = 100;
/// Most distinct synthetic prompts.
const MAX_PROMPTS: usize = 100_000;
/// AIPerf's prompt length and number of entries when none is given.
const DEFAULT_INPUT_TOKENS: u32 = 550;
const DEFAULT_ENTRIES: usize = 100;

/// AIPerf's number of dataset entries when `--num-dataset-entries` is not given:
/// `--conversation-num`, else `--request-count`, else 100 (at most [`MAX_PROMPTS`]).
pub fn default_entries(conversations: Option<u64>, request_count: u64) -> usize {
    let derived = conversations.or((request_count > 0).then_some(request_count));
    derived.map_or(DEFAULT_ENTRIES, |n| n.min(MAX_PROMPTS as u64) as usize)
}

pub use super::endpoints::Endpoint;

/// Where prompts come from.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptSource {
    Synthetic,
    /// A JSON Lines file of `{"text": …}` objects.
    File(PathBuf),
}

/// Validated LLM settings.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    pub endpoint: Endpoint,
    pub input_tokens_mean: u32,
    pub input_tokens_stddev: f64,
    /// `None`: `max_tokens` is not sent.
    pub output_tokens_mean: Option<u32>,
    pub output_tokens_stddev: f64,
    /// Send `min_tokens` = `max_tokens` and `ignore_eos`.
    pub output_deterministic: bool,
    /// `--extra-inputs`, in order, values as JSON.
    pub extra_inputs: Vec<(String, serde_json::Value)>,
    pub prompt_source: PromptSource,
    pub num_prompts: usize,
    pub artifact_dir: Option<PathBuf>,
    /// `--tokenizer` and `--tokenizer-revision` (`None`: ask the server, else builtin).
    pub tokenizer: Option<String>,
    pub tokenizer_revision: Option<String>,
    /// `--use-server-token-count`.
    pub use_server_token_count: bool,
    /// AIPerf's `--cache-bust` (`None`: no marker).
    pub cache_bust: Option<CacheBust>,
    /// AIPerf's `--apply-chat-template`: chat prompts counted through the tokenizer's
    /// chat template.
    pub apply_chat_template: bool,
}

impl OpenAiConfig {
    /// Reads the LLM flags of an `--service-kind openai` run.
    pub fn parse(args: &OpenAiArgs) -> RunResult<OpenAiConfig> {
        let endpoint = parse_endpoint(args.endpoint.as_deref())?;
        let prompt_source = parse_prompt_source(&args.prompt_source, args.input_file.as_ref())?;
        if args.output_tokens_mean_deterministic && args.output_tokens_mean.is_none() {
            return Err(RunError::bad_option(
                "--output-tokens-mean-deterministic needs --output-tokens-mean N.",
            ));
        }
        Ok(OpenAiConfig {
            endpoint,
            input_tokens_mean: bounded(
                args.synthetic_input_tokens_mean
                    .unwrap_or(DEFAULT_INPUT_TOKENS),
                "--synthetic-input-tokens-mean",
            )?,
            input_tokens_stddev: stddev(
                args.synthetic_input_tokens_stddev,
                "--synthetic-input-tokens-stddev",
            )?,
            output_tokens_mean: args
                .output_tokens_mean
                .map(|n| bounded(n, "--output-tokens-mean"))
                .transpose()?,
            output_tokens_stddev: stddev(args.output_tokens_stddev, "--output-tokens-stddev")?,
            output_deterministic: args.output_tokens_mean_deterministic,
            extra_inputs: parse_extra_inputs(&args.extra_inputs)?,
            prompt_source,
            num_prompts: parse_num_prompts(args.num_prompts.unwrap_or(DEFAULT_PROMPTS))?,
            artifact_dir: args.artifact_dir.clone(),
            tokenizer: args.tokenizer.clone(),
            tokenizer_revision: args.tokenizer_revision.clone(),
            use_server_token_count: args.use_server_token_count,
            cache_bust: CacheBust::parse(args.cache_bust.as_deref(), endpoint)?,
            apply_chat_template: args.apply_chat_template,
        })
    }
}

/// Refuses the LLM flags on a run that is not `--service-kind openai`.
pub fn refuse_without_openai(args: &OpenAiArgs) -> RunResult<()> {
    let given: [(&str, bool); 11] = [
        ("--endpoint", args.endpoint.is_some()),
        ("--output-tokens-mean", args.output_tokens_mean.is_some()),
        ("--extra-inputs", !args.extra_inputs.is_empty()),
        ("--input-file", args.input_file.is_some()),
        ("--artifact-dir", args.artifact_dir.is_some()),
        ("--tokenizer", args.tokenizer.is_some()),
        ("--tokenizer-revision", args.tokenizer_revision.is_some()),
        ("--use-server-token-count", args.use_server_token_count),
        ("--cache-bust", args.cache_bust.is_some()),
        ("--apply-chat-template", args.apply_chat_template),
        (
            "--output-tokens-mean-deterministic",
            args.output_tokens_mean_deterministic,
        ),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(RunError::bad_option(format!(
            "{flag} applies to OpenAI-compatible servers: add --service-kind openai (or AIPerf's --endpoint-type)."
        ))),
        None => Ok(()),
    }
}

fn parse_endpoint(text: Option<&str>) -> RunResult<Endpoint> {
    let Some(text) = text else {
        return Err(RunError::bad_option(
            "--service-kind openai needs --endpoint: v1/chat/completions, v1/completions, v1/embeddings or v1/responses.",
        ));
    };
    match text.trim().trim_matches('/') {
        "v1/chat/completions" | "chat" => Ok(Endpoint::Chat),
        "v1/completions" | "completions" => Ok(Endpoint::Completions),
        "v1/embeddings" | "embeddings" => Ok(Endpoint::Embeddings),
        "v1/responses" | "responses" => Ok(Endpoint::Responses),
        // AIPerf's other endpoint types, by name (`--endpoint-type` lowers to these).
        name => Endpoint::from_type_name(name).ok_or_else(|| {
            RunError::bad_option(format!(
                "--endpoint '{text}' is not an OpenAI API inferperf speaks: use v1/chat/completions, v1/completions, v1/embeddings or v1/responses."
            ))
        }),
    }
}

fn parse_prompt_source(text: &str, file: Option<&PathBuf>) -> RunResult<PromptSource> {
    match (text, file) {
        ("synthetic", None) => Ok(PromptSource::Synthetic),
        ("synthetic", Some(_)) | ("file", Some(_)) => {
            Ok(PromptSource::File(file.cloned().unwrap_or_default()))
        }
        ("file", None) => Err(RunError::bad_option(
            "--prompt-source file needs --input-file FILE (JSON Lines of {\"text\": \"...\"}).",
        )),
        _ => Err(RunError::bad_option(format!(
            "--prompt-source '{text}' is not a source: use synthetic or file."
        ))),
    }
}

fn bounded(value: u32, flag: &str) -> RunResult<u32> {
    if value == 0 || value > MAX_TOKENS_MEAN {
        return Err(RunError::bad_option(format!(
            "{flag} {value} must be between 1 and {MAX_TOKENS_MEAN}."
        )));
    }
    Ok(value)
}

fn stddev(value: f64, flag: &str) -> RunResult<f64> {
    inferperf_wire::number::within(flag, value, 0.0, MAX_TOKENS_MEAN as f64, "tokens")
}

fn parse_num_prompts(value: usize) -> RunResult<usize> {
    if value == 0 || value > MAX_PROMPTS {
        return Err(RunError::bad_option(format!(
            "--num-prompts {value} must be between 1 and {MAX_PROMPTS}."
        )));
    }
    Ok(value)
}

/// Every `--extra-inputs` value: `key:value`, or a JSON object of fields (AIPerf's other
/// form, `'{"temperature": 0.7}'`), in order.
fn parse_extra_inputs(values: &[String]) -> RunResult<Vec<(String, serde_json::Value)>> {
    let mut fields = Vec::new();
    for text in values {
        if !text.trim_start().starts_with('{') {
            fields.push(parse_extra_input(text)?);
            continue;
        }
        let Ok(serde_json::Value::Object(object)) = serde_json::from_str(text) else {
            return Err(RunError::bad_option(format!(
                "--extra-inputs '{text}' starts as a JSON object but is not one: give key:value or a whole object such as '{{\"temperature\": 0.7}}'."
            )));
        };
        fields.extend(object);
    }
    for (key, value) in &fields {
        check_known_field(key, value)?;
    }
    Ok(fields)
}

/// The OpenAI request fields that hold numbers, with their ranges: (name, least, most,
/// whole). Other fields go to the server as given.
const NUMERIC_FIELDS: [(&str, f64, f64, bool); 6] = [
    ("max_tokens", 1.0, MAX_TOKENS_MEAN as f64, true),
    ("max_completion_tokens", 1.0, MAX_TOKENS_MEAN as f64, true),
    ("min_tokens", 0.0, MAX_TOKENS_MEAN as f64, true),
    ("n", 1.0, 128.0, true),
    ("temperature", 0.0, 2.0, false),
    ("top_p", 0.0, 1.0, false),
];

/// An `--extra-inputs` field that OpenAI's API defines as a number must be one in its range,
/// or every request would be refused by the server.
fn check_known_field(key: &str, value: &serde_json::Value) -> RunResult<()> {
    let Some(&(_, least, most, whole)) = NUMERIC_FIELDS.iter().find(|f| f.0 == key) else {
        return Ok(());
    };
    let what = format!("--extra-inputs {key}");
    let kind = if whole { "a whole number" } else { "a number" };
    let number = match value {
        serde_json::Value::Number(n) if !whole || n.is_u64() => n.as_f64(),
        _ => None,
    };
    let Some(number) = number else {
        return Err(RunError::bad_option(format!(
            "{what} is {value}, not {kind}: give {kind} from {} to {}.",
            inferperf_wire::number::readable(least),
            inferperf_wire::number::readable(most)
        )));
    };
    inferperf_wire::number::within(&what, number, least, most, "").map(|_| ())
}

/// `key:value`; the value is JSON when it reads as JSON (`3`, `true`, `{"a":1}`), else text.
fn parse_extra_input(text: &str) -> RunResult<(String, serde_json::Value)> {
    let Some((key, value)) = text.split_once(':').filter(|(k, _)| !k.trim().is_empty()) else {
        return Err(RunError::bad_option(format!(
            "--extra-inputs '{text}' is not key:value (e.g. --extra-inputs temperature:0.7)."
        )));
    };
    let value = serde_json::from_str(value).unwrap_or_else(|_| value.into());
    Ok((key.trim().to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> OpenAiArgs {
        OpenAiArgs {
            endpoint: Some("v1/chat/completions".into()),
            synthetic_input_tokens_mean: Some(200),
            prompt_source: "synthetic".into(),
            num_prompts: Some(100),
            ..OpenAiArgs::default()
        }
    }

    #[test]
    fn the_flags_become_settings() {
        let mut a = args();
        a.output_tokens_mean = Some(20);
        a.output_tokens_mean_deterministic = true;
        a.extra_inputs = vec!["temperature:0.5".into(), "user:abc".into()];
        let cfg = OpenAiConfig::parse(&a).unwrap();
        assert_eq!(cfg.endpoint, Endpoint::Chat);
        assert_eq!(cfg.output_tokens_mean, Some(20));
        assert_eq!(cfg.extra_inputs[0], ("temperature".into(), 0.5.into()));
        assert_eq!(cfg.extra_inputs[1], ("user".into(), "abc".into()));
        // AIPerf's JSON form, beside a pair.
        a.extra_inputs = vec![r#"{"top_p": 0.9, "stop": ["x"]}"#.into(), "n:2".into()];
        let cfg = OpenAiConfig::parse(&a).unwrap();
        let keys: Vec<&str> = cfg.extra_inputs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["stop", "top_p", "n"]);
        assert_eq!(cfg.extra_inputs[0].1, serde_json::json!(["x"]));
    }

    type Change = fn(&mut OpenAiArgs);

    #[test]
    fn bad_flags_get_one_sentence() {
        let cases: [(Change, &str); 6] = [
            (
                |a| a.endpoint = Some("v1/nope".into()),
                "--endpoint 'v1/nope'",
            ),
            (|a| a.endpoint = None, "needs --endpoint"),
            (
                |a| a.synthetic_input_tokens_mean = Some(0),
                "--synthetic-input-tokens-mean 0",
            ),
            (
                |a| a.output_tokens_mean_deterministic = true,
                "needs --output-tokens-mean",
            ),
            (|a| a.extra_inputs = vec!["novalue".into()], "not key:value"),
            (
                |a| a.extra_inputs = vec!["{\"a\": 1".into()],
                "starts as a JSON object but is not one",
            ),
        ];
        for (change, expected) in cases {
            let mut a = args();
            change(&mut a);
            let message = OpenAiConfig::parse(&a).unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
        }
    }
}

//! `generate`: Triton's generate extension, GenAI-Perf's `--endpoint-type generate`, so that
//! a Triton server with an LLM backend (TensorRT-LLM, vLLM) is measured on its own routes
//! and not only through an OpenAI front end. A request is `POST /v2/models/{model}/generate`,
//! or `generate_stream` when streaming; its body holds the model's inputs by name, as
//! GenAI-Perf sends them: `{"text_input": the prompt's text, "max_tokens": N, "stream": true
//! when streaming, ...the extra inputs at the top level}`. An answer is
//! `{"model_name", "model_version", "text_output"}` (other outputs beside); a stream is one
//! such object per step, each `text_output` that step's text, and ends with the body (no
//! `data: [DONE]`). An error is `{"error": "..."}`, as an event or as the body of a 4xx/5xx.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{generation_fields, text_facts, with_extras, BodyInput, EndpointWire, Reading};
use crate::backend::api::openai::events::{parse_json, shown, ChunkFacts};
use crate::backend::{ErrorKind, Exchange, Failure, Malformation};

pub struct TritonGenerate;

impl EndpointWire for TritonGenerate {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let mut body = Map::new();
        body.insert("text_input".into(), input.prompt.text.as_str().into());
        generation_fields(input, &mut body, "max_tokens", false);
        Ok(with_extras(body, input.adapter))
    }

    fn read_event(
        &self,
        data: &[u8],
        _: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let step: Outputs = parse_json(data)?;
        failed(step.error.as_ref())?;
        let text = step.text_output.map(Text::joined);
        Ok(text_facts(text.as_deref(), ex))
    }

    fn read_answer(
        &self,
        body: &[u8],
        _: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        let answer: Outputs = parse_json(body)?;
        failed(answer.error.as_ref())?;
        let Some(text) = answer.text_output.map(Text::joined) else {
            return Err(Failure::bad(
                Malformation::MissingOutput,
                format!("the answer has no text_output: {}", shown(body)),
            ));
        };
        ex.content(&text);
        let some = !text.is_empty();
        Ok(ChunkFacts {
            content: some,
            output: some,
            ..ChunkFacts::default()
        })
    }

    fn stream_ends_with_body(&self) -> bool {
        true
    }
}

/// Triton's error: a string, or (from a front end of another make) an object with a
/// message.
fn failed(error: Option<&Value>) -> Result<(), Failure> {
    let Some(error) = error.filter(|e| !e.is_null()) else {
        return Ok(());
    };
    let message = match error {
        Value::String(text) => text.clone(),
        other => match other.get("message").and_then(Value::as_str) {
            Some(text) => text.to_string(),
            None => other.to_string(),
        },
    };
    Err(Failure::new(
        ErrorKind::StreamError,
        format!("the server sent an error: {message}"),
    ))
}

/// The outputs of a step or of a whole answer; those not read are skipped.
#[derive(Deserialize)]
struct Outputs<'a> {
    #[serde(default, borrow)]
    text_output: Option<Text<'a>>,
    #[serde(default)]
    error: Option<Value>,
}

/// `text_output`: one string, or a list of them (a BYTES output of several elements).
#[derive(Deserialize)]
#[serde(untagged)]
enum Text<'a> {
    #[serde(borrow)]
    One(Cow<'a, str>),
    Many(Vec<Cow<'a, str>>),
}

impl Text<'_> {
    fn joined(self) -> String {
        match self {
            Text::One(text) => text.into_owned(),
            Text::Many(parts) => parts.concat(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{adapter, prompt, read};
    use super::super::{wire, Reading};
    use crate::backend::{AnswerText, ErrorKind, Exchange, Malformation};
    use crate::config::Endpoint;

    #[test]
    fn the_body_is_the_models_inputs_with_the_extras_at_the_top() {
        let streamed = adapter(
            Endpoint::TritonGenerate,
            true,
            &[("temperature", json!(0.7)), ("max_tokens", json!(3))],
        );
        assert_eq!(
            streamed.body("m", &prompt(Some(9))),
            json!({"text_input": "a b c", "max_tokens": 3, "stream": true, "temperature": 0.7}),
            "an extra input replaces the type's own field, as GenAI-Perf merges them"
        );
        assert_eq!(streamed.path("llama"), "/v2/models/llama/generate_stream");
        let whole = adapter(Endpoint::TritonGenerate, false, &[]);
        assert_eq!(
            whole.body("m", &prompt(Some(9))),
            json!({"text_input": "a b c", "max_tokens": 9})
        );
        assert_eq!(
            whole.body("m", &prompt(None)),
            json!({"text_input": "a b c"})
        );
        assert_eq!(whole.path("llama"), "/v2/models/llama/generate");
        let mut exact = adapter(Endpoint::TritonGenerate, false, &[]);
        exact.llm.output_deterministic = true;
        let body = exact.body("m", &prompt(Some(4)));
        assert_eq!(
            (&body["min_tokens"], &body["ignore_eos"]),
            (&json!(4), &json!(true))
        );
    }

    #[test]
    fn a_custom_path_takes_the_model_too() {
        let mut prefixed = adapter(Endpoint::TritonGenerate, true, &[]);
        prefixed.wire.path = Some("/triton/v2/models/{model}/generate_stream".into());
        assert_eq!(prefixed.path("m"), "/triton/v2/models/m/generate_stream");
    }

    #[test]
    fn each_steps_text_output_is_content_and_a_whole_answer_is_its_text() {
        let steps = [
            r#"{"model_name":"m","model_version":"1","text_output":"tok "}"#,
            r#"{"model_name":"m","model_version":"1","text_output":""}"#,
            r#"{"model_name":"m","model_version":"1","text_output":["tok ","tok "],"cum_log_probs":0}"#,
        ];
        let (facts, content, _) = read(Endpoint::TritonGenerate, &steps, false, None);
        let answers: Vec<bool> = facts.iter().map(|f| f.content && f.output).collect();
        assert_eq!(answers, [true, false, true]);
        assert_eq!(content, "tok tok tok ");
        assert!(wire(Endpoint::TritonGenerate).stream_ends_with_body());
        let whole = [r#"{"model_name":"m","model_version":"1","text_output":"a b"}"#];
        let (facts, content, _) = read(Endpoint::TritonGenerate, &whole, true, None);
        assert!(facts[0].output);
        assert_eq!(content, "a b");
    }

    #[test]
    fn errors_and_answers_without_text_output_fail() {
        let triton = wire(Endpoint::TritonGenerate);
        let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
        let mut ex = Exchange::new(std::time::Instant::now(), &mut gaps).with_text(&mut text);
        let reading = Reading::default();
        for error in [
            r#"{"error":"in ensemble 'ensemble', out of memory"}"#,
            r#"{"error":{"message":"out of memory"}}"#,
        ] {
            let failure = triton
                .read_event(error.as_bytes(), &reading, &mut ex)
                .unwrap_err();
            assert_eq!(failure.kind, ErrorKind::StreamError);
            let detail = failure.detail.unwrap_or_default();
            assert!(detail.contains("out of memory"), "{detail}");
            let whole = triton.read_answer(error.as_bytes(), &reading, &mut ex);
            assert_eq!(whole.unwrap_err().kind, ErrorKind::StreamError);
        }
        let missing = triton.read_answer(br#"{"model_name":"m"}"#, &reading, &mut ex);
        assert_eq!(
            missing.unwrap_err().kind,
            ErrorKind::BadResponse(Malformation::MissingOutput)
        );
        let junk = triton.read_event(b"{\"text_output\": [oops", &reading, &mut ex);
        assert_eq!(
            junk.unwrap_err().kind,
            ErrorKind::BadResponse(Malformation::Unreadable)
        );
        let wrong = triton.read_answer(br#"{"text_output": 7}"#, &reading, &mut ex);
        assert_eq!(
            wrong.unwrap_err().kind,
            ErrorKind::BadResponse(Malformation::Unreadable)
        );
    }
}

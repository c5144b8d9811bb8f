//! `raw`: request bodies sent as they are given (AIPerf's inputs.json, a trace's
//! `payload`), to the URL without a path of its own; a prompt without a body has none to
//! send. Answers are read by their shape ([`super::shapes`]), the JMESPath
//! `response_field` first when given, then as any other answer.

use serde_json::Value;

use super::{shapes, BodyInput, EndpointWire, Reading};
use crate::backend::api::openai::events::ChunkFacts;
use crate::backend::{Exchange, Failure};

pub struct Raw;

impl EndpointWire for Raw {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        Err(format!(
            "--endpoint-type raw sends request bodies as they are given, and the prompt '{}' is a text: give --input-file with --custom-dataset-type inputs_json (or a mooncake_trace of \"payload\" lines)",
            input.prompt.text.chars().take(40).collect::<String>()
        ))
    }

    fn read_event(
        &self,
        data: &[u8],
        reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        shapes::read(data, reading, true, false, ex)
    }

    fn read_answer(
        &self,
        body: &[u8],
        reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        shapes::read(body, reading, true, true, ex)
    }

    fn stream_ends_with_body(&self) -> bool {
        true
    }

    fn probes(&self) -> bool {
        false
    }
}

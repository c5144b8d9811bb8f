//! Which counter a run's tokens are counted with: `--tokenizer` when given (a file, a
//! folder, a hub id, or builtin); else the server's tokenize endpoint when it has one;
//! else the builtin tokenizer, said once to be an approximation for this model.

use std::sync::Arc;

use crate::backend::api::openai::tokenize;
use crate::backend::Target;
use crate::config::OpenAiConfig;
use crate::data::tokenizer::{self, Counter};
use inferperf_wire::error::{RunError, RunResult};

/// The run's counter, said on the console.
pub async fn for_run(llm: &OpenAiConfig, target: &Target) -> RunResult<Counter> {
    let counter = choose(llm, target).await?;
    println!("Tokens counted with {}.", counter.info().describe());
    if llm.apply_chat_template && counter.count_chat(&[]).is_none() {
        println!(
            "Note: --apply-chat-template: {} has no chat template (a tokenizer_config.json beside its tokenizer.json with a chat_template), so prompts are counted without one, as AIPerf does.",
            counter.info().describe()
        );
    }
    Ok(counter)
}

async fn choose(llm: &OpenAiConfig, target: &Target) -> RunResult<Counter> {
    if let Some(name) = llm.tokenizer.clone() {
        let revision = llm.tokenizer_revision.clone();
        let templated = llm.apply_chat_template;
        let load = move || tokenizer::load_with(&name, revision.as_deref(), templated);
        return tokio::task::spawn_blocking(load)
            .await
            .map_err(|e| RunError::failed(format!("Loading the tokenizer failed: {e}.")))?;
    }
    if let Some(server) = tokenize::probe(target).await {
        return Ok(Arc::new(server));
    }
    println!(
        "Warning: the server has no tokenize endpoint inferperf knows and no --tokenizer was given: token figures are counted with the builtin tokenizer and are approximate for this model; give --tokenizer with the model's tokenizer.json, its folder or its hub id."
    );
    tokenizer::builtin(true)
}

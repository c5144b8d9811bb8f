//! The synthetic requests of the rankings endpoint types, as AIPerf makes them: per entry a
//! number of passages drawn from `--rankings-passages-mean`/`-stddev`, a query of a drawn
//! number of tokens and each passage of its own (`--rankings-query-prompt-token-*`,
//! `--rankings-passages-prompt-token-*`), each text exactly that many tokens as the run's
//! tokenizer counts them. A prompt's text is its query; its input length counts the query
//! and every passage.

use super::entry::{Entry, Prompt};
use super::prompt_maker::PromptMaker;
use super::tokenizer::TokenCount;
use crate::config::endpoint_options::{MeanStddev, RankingsConfig};
use crate::config::OpenAiConfig;
use inferperf_wire::error::RunResult;

/// `--num-prompts` rankings requests (AIPerf's `--num-dataset-entries`).
pub fn synthetic(
    shape: &RankingsConfig,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<Vec<Entry>> {
    let mut maker = PromptMaker::new(llm, seed, counter);
    let draw = |maker: &mut PromptMaker, d: MeanStddev| maker.draw(d.mean, f64::from(d.stddev));
    let mut entries = Vec::with_capacity(llm.num_prompts);
    for i in 0..llm.num_prompts {
        let passages = draw(&mut maker, shape.passages);
        let query_tokens = draw(&mut maker, shape.query_tokens);
        let query = maker.text_of(query_tokens)?;
        let mut input_tokens = maker.count(&query, "a synthetic query")?;
        let mut texts = Vec::with_capacity(passages as usize);
        for _ in 0..passages {
            let tokens = draw(&mut maker, shape.passage_tokens);
            let passage = maker.text_of(tokens)?;
            input_tokens += maker.count(&passage, "a synthetic passage")?;
            texts.push(passage);
        }
        let prompt = Prompt {
            text: query,
            input_tokens,
            passages: Some(texts.into()),
            ..Prompt::default()
        };
        entries.push(super::prompts::entry(
            prompt,
            format!("synthetic rankings request {i}"),
        ));
    }
    maker.warn_inexact(entries.len() * (1 + shape.passages.mean as usize));
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Endpoint, PromptSource};

    fn llm() -> OpenAiConfig {
        OpenAiConfig {
            endpoint: Endpoint::NimRankings,
            input_tokens_mean: 550,
            input_tokens_stddev: 0.0,
            output_tokens_mean: None,
            output_tokens_stddev: 0.0,
            output_deterministic: false,
            extra_inputs: Vec::new(),
            prompt_source: PromptSource::Synthetic,
            num_prompts: 4,
            artifact_dir: None,
            tokenizer: None,
            tokenizer_revision: None,
            use_server_token_count: false,
            cache_bust: None,
            apply_chat_template: false,
        }
    }

    #[test]
    fn each_request_is_a_query_and_its_passages_of_exact_lengths() {
        let counter = crate::data::tokenizer::builtin(true).unwrap();
        let shape = RankingsConfig {
            passages: MeanStddev { mean: 3, stddev: 0 },
            passage_tokens: MeanStddev {
                mean: 20,
                stddev: 0,
            },
            query_tokens: MeanStddev { mean: 7, stddev: 0 },
        };
        let entries = synthetic(&shape, &llm(), 1, counter.as_ref()).unwrap();
        assert_eq!(entries.len(), 4);
        for entry in &entries {
            let prompt = entry.prompt.as_ref().unwrap();
            let passages = prompt.passages.as_deref().unwrap();
            assert_eq!(passages.len(), 3);
            assert_eq!(counter.count(&prompt.text).unwrap(), 7);
            for passage in passages {
                assert_eq!(counter.count(passage).unwrap(), 20);
            }
            assert_eq!(prompt.input_tokens, 7 + 3 * 20);
            assert_eq!(prompt.max_tokens, None);
        }
        assert_ne!(entries[0].prompt, entries[1].prompt, "requests differ");
    }
}

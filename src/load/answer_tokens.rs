//! Counting the tokens of the answers a cut takes out of the slots' buffers, with the run's
//! tokenizer: off the send path (the profiler does it when it folds finished requests into a
//! window), so that a stream is timed at the cost of keeping its text, not of tokenizing it.
//! Each generation gets the tokenizer's count beside the server's `usage`; its output
//! length is the server's count when it sent one (or, with `--use-server-token-count`, only
//! then), else the tokenizer's.

use super::plan::Plan;
use crate::backend::TokenSource;
use crate::data::tokenizer::Counter;
use crate::data::Dataset;
use crate::measure::sample::Drained;
use crate::measure::window::WindowStats;

/// The run's tokenizer and how its counts are used.
pub struct AnswerCounting {
    counter: Counter,
    /// The counter described, for the windows' figures.
    described: std::sync::Arc<str>,
    /// `--use-server-token-count`: output lengths come from `usage` alone.
    server_only: bool,
    /// The counter is the server's own endpoint: an answer that came with the server's
    /// usage is not sent back to be counted again (the same count, and a request more on
    /// the server being measured).
    is_server: bool,
}

impl AnswerCounting {
    /// The counting of an LLM run (none for tensors).
    pub fn for_run(plan: &Plan, dataset: &Dataset) -> Option<AnswerCounting> {
        let counter = dataset.tokenizer.clone()?;
        let server_only = plan.server_token_count();
        Some(AnswerCounting {
            described: counter.info().describe().into(),
            is_server: counter.info().kind == "server",
            counter,
            server_only,
        })
    }

    /// Marks `window`'s token figures as counted by this counter.
    pub fn label(&self, window: &mut WindowStats) {
        if let Some(tokens) = window.tokens.as_mut() {
            if tokens.counted_with.is_none() {
                tokens.counted_with = Some(self.described.clone());
            }
        }
    }

    /// Counts the text of every generation in `drained` and settles its output length.
    pub fn count(&self, drained: &mut Drained) {
        for (sample, content, reasoning) in drained.each_text() {
            let tokens = &mut sample.tokens;
            if !tokens.source.generates() || sample.error.is_some() {
                continue;
            }
            let reasoning_known = reasoning.is_empty() || tokens.usage_reasoning.is_some();
            if self.is_server && tokens.source == TokenSource::Usage && reasoning_known {
                tokens.reasoning = tokens.usage_reasoning.unwrap_or(0);
                continue;
            }
            let count = |text: &str| match text.is_empty() {
                true => Some(0),
                false => self.counter.count(text).ok(),
            };
            let (content, reasoning) = (count(content), count(reasoning));
            tokens.counted_output = content.zip(reasoning).map(|(c, r)| c + r);
            tokens.reasoning = match tokens.source {
                TokenSource::Usage => tokens.usage_reasoning.or(reasoning).unwrap_or(0),
                _ => reasoning.unwrap_or(0),
            };
            if tokens.source != TokenSource::Usage {
                match (self.server_only, tokens.counted_output) {
                    (false, Some(n)) => {
                        tokens.output = n;
                        tokens.source = TokenSource::Tokenizer;
                    }
                    _ => {
                        tokens.output = 0;
                        tokens.source = TokenSource::Missing;
                    }
                }
            }
        }
    }
}

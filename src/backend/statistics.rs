//! The server's statistics, whichever API gives them: the cumulative counters the measurement
//! side turns into per-window deltas. Each adapter that has statistics (its row's
//! `server_statistics`) opens a reader of its own (`Adapter::statistics`): Triton's statistics
//! extension over the network, the embedded models and Triton in this process, TorchServe's
//! Prometheus counters — each read into the same protobuf `ModelStatistics`. This file names
//! no API: it is the shape every reader has.

use futures::future::BoxFuture;

use super::Target;
use inferperf_wire::proto::ModelStatistics;

/// What reads one server's statistics. Read once per window, so a boxed future costs
/// nothing that matters.
pub trait StatsReader: Send {
    /// The server's cumulative statistics now. `Err` is the reason, as a phrase.
    fn read(&mut self) -> BoxFuture<'_, Result<Vec<ModelStatistics>, String>>;

    /// Server-wide answer counters by status class, where the server keeps them only for
    /// the whole server (TorchServe); taken at the last read.
    fn answers(&self) -> Option<AnswerCounts> {
        None
    }
}

/// A reader of the run's server statistics.
pub struct StatsSource(Box<dyn StatsReader>);

impl StatsSource {
    pub fn new(reader: impl StatsReader + 'static) -> StatsSource {
        StatsSource(Box::new(reader))
    }

    /// Opens a statistics reader for the model, and for every model when `all_models` (an
    /// ensemble's composing models are reported too). `Err` is the reason, as a phrase.
    pub async fn open(
        target: &Target,
        all_models: bool,
        models: &[String],
    ) -> Result<Self, String> {
        target.api.statistics(target, all_models, models).await
    }

    /// The server's cumulative statistics now. `Err` is the reason, as a phrase.
    pub async fn read(&mut self) -> Result<Vec<ModelStatistics>, String> {
        self.0.read().await
    }

    /// Server-wide answer counters by status class (see [`StatsReader::answers`]).
    pub fn answers(&self) -> Option<AnswerCounts> {
        self.0.answers()
    }
}

/// Every answer the server gave, by status class, for all models together (TorchServe's
/// frontend counters `Requests2XX/4XX/5XX`: it does not count them per model).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswerCounts {
    pub ok: u64,
    pub client_errors: u64,
    pub server_errors: u64,
}

impl AnswerCounts {
    /// What was counted between `before` and `self`.
    pub fn since(&self, before: &AnswerCounts) -> AnswerCounts {
        AnswerCounts {
            ok: self.ok.saturating_sub(before.ok),
            client_errors: self.client_errors.saturating_sub(before.client_errors),
            server_errors: self.server_errors.saturating_sub(before.server_errors),
        }
    }

    pub fn add(&mut self, other: &AnswerCounts) {
        self.ok += other.ok;
        self.client_errors += other.client_errors;
        self.server_errors += other.server_errors;
    }
}

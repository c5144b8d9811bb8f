//! The sequence-model flags of `profile`, with perf_analyzer's names, defaults and
//! meanings; kept apart so the main flag list stays readable. `config::sequence` checks them.

use clap::Args;

/// How the sequences of a stateful model (Triton's `sequence_batching`) are played.
#[derive(Debug, Clone, Args, Default)]
pub struct SequenceArgs {
    /// Sequence models: requests per sequence (varied by --sequence-length-variation).
    /// With multi-stream --input-data a sequence plays its whole stream unless this is given.
    #[arg(long, value_name = "N")]
    pub sequence_length: Option<u64>,
    /// Sequence models: each sequence's length is drawn uniformly within ±PCT percent of
    /// --sequence-length (at least 1).
    #[arg(long, value_name = "PCT", default_value_t = 20.0)]
    pub sequence_length_variation: f64,
    /// Sequence models: the correlation ids used, START[:END] (END excluded; ids wrap within
    /// the range). It must hold at least as many ids as sequences run at once.
    #[arg(long, value_name = "START[:END]")]
    pub sequence_id_range: Option<String>,
    /// Sequence models, request-rate and interval modes: never send to a sequence that has
    /// a request in flight.
    #[arg(long)]
    pub serial_sequences: bool,
    /// Sequence models, request-rate and interval modes: sequences live at once; each send
    /// goes to one of them, drawn at random.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub num_of_sequences: u32,
}

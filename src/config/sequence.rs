//! The sequence-model settings (`--sequence-length`, `--sequence-length-variation`,
//! `--sequence-id-range`, `--serial-sequences`, `--num-of-sequences`), checked once. They
//! only matter when discovery finds a sequence model; perf_analyzer ignores them otherwise.

use super::{Config, LoadMode};
use crate::cli::SequenceArgs;
use inferperf_wire::error::{RunError, RunResult};

/// perf_analyzer's default sequence length.
pub const DEFAULT_SEQUENCE_LENGTH: u64 = 20;

/// How sequences are played on a sequence model.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceConfig {
    /// `--sequence-length`; `None` keeps the default (20), or a whole stream of
    /// multi-stream input data.
    pub length: Option<u64>,
    /// `--sequence-length-variation` in percent.
    pub variation_pct: f64,
    /// The first correlation id.
    pub id_start: u64,
    /// How many ids the range holds (ids are `id_start + k % id_count`).
    pub id_count: u64,
    /// `--serial-sequences`.
    pub serial: bool,
    /// `--num-of-sequences` (open loop).
    pub live_sequences: u32,
    /// Some sequence flag was given (a note says so when the model is not a sequence model).
    pub flags_given: bool,
}

impl SequenceConfig {
    /// The base length of a generated sequence.
    pub fn base_length(&self) -> u64 {
        self.length.unwrap_or(DEFAULT_SEQUENCE_LENGTH)
    }
}

/// Reads the sequence flags; a bad value is one sentence and exit 3.
pub fn parse(args: &SequenceArgs) -> RunResult<SequenceConfig> {
    if args.sequence_length == Some(0) {
        return Err(RunError::bad_option(
            "--sequence-length 0 plays no request: give a length of at least 1.",
        ));
    }
    let variation = args.sequence_length_variation;
    if !variation.is_finite() || variation < 0.0 {
        return Err(RunError::bad_option(format!(
            "--sequence-length-variation {variation} is not a percentage: give a number ≥ 0, such as 20."
        )));
    }
    if args.num_of_sequences == 0 {
        return Err(RunError::bad_option(
            "--num-of-sequences 0 leaves nothing to send to: give at least 1.",
        ));
    }
    let (id_start, id_count) = match &args.sequence_id_range {
        Some(text) => parse_id_range(text)?,
        None => (1, u64::from(u32::MAX)),
    };
    Ok(SequenceConfig {
        length: args.sequence_length,
        variation_pct: variation,
        id_start,
        id_count,
        serial: args.serial_sequences,
        live_sequences: args.num_of_sequences,
        flags_given: args.sequence_length.is_some()
            || args.sequence_id_range.is_some()
            || args.serial_sequences
            || args.num_of_sequences != 4
            || variation != 20.0,
    })
}

/// `START[:END]` (END excluded) as the first id and the number of ids.
fn parse_id_range(text: &str) -> RunResult<(u64, u64)> {
    let bad = || {
        RunError::bad_option(format!(
            "--sequence-id-range '{text}' is not START[:END] with whole numbers, END above START: write it as 1:1000 or 1."
        ))
    };
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    match text.split_once(':') {
        None => Ok((number(text)?, u64::from(u32::MAX))),
        Some((start, end)) => {
            let (start, end) = (number(start)?, number(end)?);
            if end <= start {
                return Err(bad());
            }
            Ok((start, end - start))
        }
    }
}

impl Config {
    /// The most sequences a run keeps at once: the highest concurrency of a closed loop,
    /// `--num-of-sequences` of an open loop; `None` when the sweep is unbounded.
    fn sequences_at_once(&self) -> Option<u64> {
        match self.load.mode {
            LoadMode::Concurrency => self.load.max_concurrency().map(u64::from),
            _ if self.load.mode.is_open_loop() => {
                Some(u64::from(self.load.sequence.live_sequences))
            }
            _ => None,
        }
    }

    /// An id range smaller than the sequences run at once would give two live sequences
    /// one id; refused as perf_analyzer refuses it.
    pub(super) fn check_sequence_ids(&self) -> RunResult<()> {
        let Some(needed) = self.sequences_at_once() else {
            return Ok(());
        };
        let held = self.load.sequence.id_count;
        if held < needed {
            let what = if self.load.mode.is_open_loop() {
                "--num-of-sequences"
            } else {
                "the highest concurrency"
            };
            return Err(RunError::bad_option(format!(
                "--sequence-id-range holds {held} ids, fewer than the {needed} sequences run at once ({what}): widen the range or run fewer sequences."
            )));
        }
        Ok(())
    }
}

//! The figures of a sessions run by turn number: for each place in a session (turn 1, 2,
//! …), how many turns succeeded or failed, their time to first token and their input
//! length (the whole conversation sent) — which grows with the history a turn carries, so
//! the run's overall figures alone would hide it — and the turns never sent because an
//! earlier turn of their session failed. Merged as windows are.

use std::collections::BTreeMap;

use super::distribution::{Compaction, Distribution};
use super::sample::Sample;

/// One turn number's figures.
#[derive(Debug, Clone, Default)]
pub struct TurnFigures {
    /// Turns that succeeded, and turns that failed.
    pub ok: u64,
    pub failed: u64,
    /// From the send to the first answer (ns), per successful turn.
    pub first_response: Distribution,
    /// Input tokens per successful turn: the history and the prompt.
    pub input_tokens: Distribution,
}

/// Every turn number's figures, and the turns not sent.
#[derive(Debug, Clone, Default)]
pub struct TurnStats {
    /// By turn number, from 1.
    pub by_turn: BTreeMap<u16, TurnFigures>,
    /// Turns never sent because an earlier turn of their session failed.
    pub not_sent: u64,
}

impl TurnStats {
    /// Adds a turn's sample (one whose `turn` is not 0).
    pub fn add(&mut self, sample: &Sample) {
        let figures = self.by_turn.entry(sample.turn).or_default();
        if sample.error.is_some() {
            figures.failed += 1;
            return;
        }
        figures.ok += 1;
        figures.first_response.record(sample.first_response_ns());
        figures.input_tokens.record(sample.tokens.input as u64);
    }

    pub fn merge(&mut self, other: &TurnStats) {
        for (turn, theirs) in &other.by_turn {
            let mine = self.by_turn.entry(*turn).or_default();
            mine.ok += theirs.ok;
            mine.failed += theirs.failed;
            mine.first_response.merge(&theirs.first_response);
            mine.input_tokens.merge(&theirs.input_tokens);
        }
        self.not_sent += other.not_sent;
    }

    pub fn compact(&mut self, keep: &Compaction) {
        for figures in self.by_turn.values_mut() {
            figures.first_response.compact(keep);
            figures.input_tokens.compact(keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ErrorKind;
    use std::time::{Duration, Instant};

    fn turn(number: u16, ttft_ms: u64, input: u32, error: Option<ErrorKind>) -> Sample {
        let t = Instant::now();
        let mut sample = Sample::once(t, t, t + Duration::from_millis(ttft_ms + 5));
        sample.first = t + Duration::from_millis(ttft_ms);
        sample.tokens.input = input;
        sample.error = error;
        sample.of_turn(number)
    }

    #[test]
    fn turns_are_figured_by_their_number_and_merge() {
        let mut a = TurnStats::default();
        a.add(&turn(1, 10, 100, None));
        a.add(&turn(2, 20, 300, None));
        let mut b = TurnStats {
            not_sent: 2,
            ..Default::default()
        };
        b.add(&turn(2, 30, 500, None));
        b.add(&turn(3, 0, 0, Some(ErrorKind::Timeout)));
        a.merge(&b);
        let second = &a.by_turn[&2];
        assert_eq!((second.ok, second.failed), (2, 0));
        assert_eq!(second.input_tokens.mean(), 400.0);
        assert_eq!(second.first_response.mean(), 25e6);
        assert_eq!((a.by_turn[&3].ok, a.by_turn[&3].failed), (0, 1));
        assert_eq!(a.not_sent, 2);
    }
}

//! A sessions run's figures by turn number, read back from their record in the results
//! file (`record/mod.rs` writes it), so that a report read back from the file (or merged from
//! shards) shows them as measured.

use crate::measure::distribution::Distribution;
use crate::measure::turns::{TurnFigures, TurnStats};
use crate::results::schema::{DistributionRecord, TurnsRecord};

/// The turn figures a record holds.
pub fn turn_stats(record: &TurnsRecord) -> Result<TurnStats, String> {
    let mut stats = TurnStats {
        not_sent: record.not_sent,
        ..Default::default()
    };
    for r in &record.by_turn {
        let figures = TurnFigures {
            ok: r.ok,
            failed: r.failed,
            first_response: distribution(&r.first_response, r.turn, "first_response")?,
            input_tokens: distribution(&r.input_tokens, r.turn, "input_tokens")?,
        };
        stats.by_turn.insert(r.turn, figures);
    }
    Ok(stats)
}

fn distribution(
    record: &DistributionRecord,
    turn: u16,
    name: &str,
) -> Result<Distribution, String> {
    if record.count == 0 && record.histogram.is_none() {
        return Ok(Distribution::default());
    }
    record.distribution().map_err(|e| {
        format!(
            "turns turn {turn} {name}: {}",
            e.to_string().trim_end_matches('.')
        )
    })
}

//! A sessions run's per-turn table in the HTML report: for each level, each turn number's
//! requests, errors, time to first token (avg, p50, p99) and average input length, and the
//! turns not sent because an earlier turn of their session failed.

use std::fmt::Write;

use super::svg::{esc, num};
use super::{load_name, ms, pct};
use crate::results::{ResultsFile, TurnsRecord};

/// The "By turn" section (empty when the run had no sessions).
pub fn turns(file: &ResultsFile) -> String {
    let levels: Vec<(String, &TurnsRecord)> = (file.levels.iter())
        .filter_map(|l| Some((load_name(l), l.merged.turns.as_ref()?)))
        .collect();
    if levels.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>By turn (multi-turn sessions)</h2><table><tr><th class=\"l\">Load</th><th>Turn</th><th>Requests</th><th>Errors</th><th>TTFT avg ms</th><th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>ISL avg</th></tr>");
    for (load, turns) in levels {
        for t in &turns.by_turn {
            let cell = |v: Option<f64>| v.map_or("–".to_string(), num);
            let answered = t.first_response.count > 0;
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&load),
                t.turn,
                t.ok,
                t.failed,
                cell(answered.then(|| ms(t.first_response.mean))),
                cell(pct(&t.first_response, 50.0).map(ms)),
                cell(pct(&t.first_response, 99.0).map(ms)),
                cell(answered.then_some(t.input_tokens.mean)),
            );
        }
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td colspan=\"7\" class=\"l\">turns not sent (an earlier turn of their session failed): {}</td></tr>",
            esc(&load),
            turns.not_sent
        );
    }
    out.push_str("</table>");
    out
}

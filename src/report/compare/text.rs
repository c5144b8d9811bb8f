//! The console text of a comparison: per run against the baseline, per level both
//! measured, a table of figures with their change, noise and verdict, then the levels only
//! one of them measured.

use std::fmt::Write as _;

use super::model::{load_text, Comparison, Run};

/// The console table of the pairs.
pub fn console_text(runs: &[Run], comparison: &Comparison) -> String {
    let mut text = String::new();
    for pair in &comparison.pairs {
        let _ = writeln!(text, "{} vs baseline {}", runs[pair.run].name, runs[0].name);
        for level in &pair.levels {
            let _ = writeln!(text, "  {}{}", load_text(&level.load), level.stability);
            let _ = writeln!(
                text,
                "    {:<11} {:>16} {:>16} {:>9} {:>8}  verdict",
                "figure", "baseline", "this run", "change", "noise"
            );
            for row in &level.rows {
                let [figure, a, b, change, noise, verdict] = row.cells();
                let _ = writeln!(
                    text,
                    "    {figure:<11} {a:>16} {b:>16} {change:>9} {noise:>8}  {verdict}"
                );
            }
        }
        if !pair.unmatched.is_empty() {
            let _ = writeln!(text, "  Unmatched levels: {}.", pair.unmatched.join("; "));
        }
        let _ = writeln!(text);
    }
    if let Some(note) = &comparison.variation {
        let _ = writeln!(text, "Note: {note}");
    }
    text
}

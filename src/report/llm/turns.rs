//! A sessions run's figures by turn number, as the console and the LLM CSV files show them
//! beside the level's figures: for each place in a session, the turns that succeeded and
//! failed, their time to first token (avg, p50, p99) and their input length (the history
//! sent and the prompt, avg), and the turns never sent because an earlier turn failed.

use crate::measure::turns::TurnStats;
use crate::measure::window::WindowStats;

use super::{csv_row, grouped_two_decimals};

/// The columns of the by-turn table.
const HEADER: [&str; 7] = [
    "Turn",
    "Requests",
    "Errors",
    "TTFT avg (ms)",
    "TTFT p50 (ms)",
    "TTFT p99 (ms)",
    "ISL avg",
];

/// Each turn number's cells, in [`HEADER`]'s order.
fn rows(turns: &TurnStats) -> Vec<[String; 7]> {
    let ms = |ns: f64| grouped_two_decimals(ns / 1e6);
    (turns.by_turn.iter())
        .map(|(turn, f)| {
            let ttft = &f.first_response;
            let answered = ttft.count() > 0;
            let cell = |value: f64| if answered { ms(value) } else { "-".into() };
            [
                turn.to_string(),
                f.ok.to_string(),
                f.failed.to_string(),
                cell(ttft.mean()),
                cell(ttft.percentile(50.0)),
                cell(ttft.percentile(99.0)),
                match answered {
                    true => grouped_two_decimals(f.input_tokens.mean()),
                    false => "-".into(),
                },
            ]
        })
        .collect()
}

/// The console's "By turn" block (nothing when the run had no sessions).
pub fn console_lines(w: &WindowStats) -> Vec<String> {
    let Some(turns) = w.turns.as_deref() else {
        return Vec::new();
    };
    let rows = rows(turns);
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|i| {
            (rows.iter().map(|r| r[i].chars().count()))
                .chain(std::iter::once(HEADER[i].len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let parts: Vec<String> = (cells.iter().zip(&widths))
            .map(|(cell, &width)| format!("{cell:>width$}"))
            .collect();
        format!("      {}", parts.join("  "))
    };
    let mut lines = vec!["    By turn (multi-turn sessions):".to_string()];
    lines.push(line(&HEADER));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        lines.push(line(&cells));
    }
    lines.push(format!(
        "    Turns not sent (an earlier turn of their session failed): {}",
        turns.not_sent
    ));
    lines
}

/// The CSV's by-turn rows, after an empty line (nothing when the run had no sessions).
pub fn csv_rows(w: &WindowStats) -> String {
    let Some(turns) = w.turns.as_deref() else {
        return String::new();
    };
    let mut out = String::from("\r\n");
    out.push_str(&csv_row(&HEADER));
    for row in rows(turns) {
        out.push_str(&csv_row(&row));
    }
    out.push_str(&csv_row(&[
        "Turns Not Sent".to_string(),
        turns.not_sent.to_string(),
    ]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sample::Sample;
    use std::time::{Duration, Instant};

    fn window() -> WindowStats {
        let mut w = WindowStats::new(1);
        let t = Instant::now();
        for (turn, ttft_ms, input) in [(1, 10, 20), (1, 30, 20), (2, 40, 45)] {
            let mut s = Sample::once(t, t, t + Duration::from_millis(ttft_ms + 1));
            s.first = t + Duration::from_millis(ttft_ms);
            s.tokens.input = input;
            w.add(&s.of_turn(turn), &[]);
        }
        let failed = Sample::failed(t, t, t, crate::backend::ErrorKind::Timeout);
        w.add(&failed.of_turn(3), &[]);
        w.turns.as_mut().unwrap().not_sent = 2;
        w
    }

    #[test]
    fn the_console_and_the_csv_show_each_turn() {
        let lines = console_lines(&window());
        assert_eq!(lines[0], "    By turn (multi-turn sessions):");
        assert!(
            lines[1].contains("Turn  Requests  Errors  TTFT avg (ms)"),
            "{lines:?}"
        );
        assert!(
            lines[2].trim_start().starts_with("1         2       0"),
            "{lines:?}"
        );
        assert!(lines[2].ends_with("20.00"), "{lines:?}");
        assert!(lines[3].ends_with("45.00"), "{lines:?}");
        assert!(
            lines[4].trim_start().starts_with("3         0       1"),
            "{lines:?}"
        );
        assert!(lines[5].ends_with(": 2"), "{lines:?}");
        let csv = csv_rows(&window());
        assert!(
            csv.starts_with("\r\nTurn,Requests,Errors,TTFT avg (ms)"),
            "{csv}"
        );
        assert!(csv.contains("\r\n2,1,0,40.00,"), "{csv}");
        assert!(csv.ends_with("Turns Not Sent,2\r\n"), "{csv}");
        assert!(console_lines(&WindowStats::new(1)).is_empty());
    }
}

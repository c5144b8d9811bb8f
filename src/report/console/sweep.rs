//! The console report of `inferperf sweep`: one table of settings (the parameter values)
//! by load level with throughput and latency p50/p90/p99, read from each setting's results
//! file, and a row with the reason and the server's last lines for a setting that could not
//! be measured. The rows are also what `html::sweep` draws.

use std::fmt::Write;

use crate::report::html::{ms, pct};
use crate::results::{LevelLoad, LevelRecord, ResultsFile};

/// How a setting of a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingEnd {
    /// Every level measured and stable.
    Measured,
    /// Measured, and a level was unstable.
    Unstable,
    /// The server did not start, was not ready in time, exited or died while profiled.
    ServerFailed,
    /// The server ran but the profile ended with an error.
    ProfileFailed,
    /// Ctrl-C cut it short; what was measured by then is kept.
    Interrupted,
}

impl SettingEnd {
    /// Whether the setting failed (its row is a sentence, not levels).
    pub fn failed(self) -> bool {
        matches!(self, SettingEnd::ServerFailed | SettingEnd::ProfileFailed)
    }
}

/// One setting of a sweep: its values, how it ended and what it measured.
#[derive(Debug, Clone)]
pub struct SweepRow {
    /// The parameters' values, in the order of the `--param` flags.
    pub values: Vec<(String, String)>,
    /// `instances=2`.
    pub label: String,
    /// Its folder, relative to the sweep's folder.
    pub dir: String,
    /// The server command as run.
    pub command: String,
    pub end: SettingEnd,
    /// What went wrong (or was cut short), in a sentence.
    pub message: Option<String>,
    /// The server's last lines of output, for a server that failed.
    pub log_tail: Vec<String>,
    /// The setting's results file, when its profile wrote one.
    pub results: Option<ResultsFile>,
}

impl SweepRow {
    /// The levels to report: none for a failed setting.
    pub fn levels(&self) -> &[LevelRecord] {
        match (&self.results, self.end.failed()) {
            (Some(file), false) => &file.levels,
            _ => &[],
        }
    }
}

/// A level's figures as the sweep shows them: load, throughput, p50, p90, p99 (ms).
pub struct LevelFigures {
    pub load: String,
    pub throughput: f64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub stable: bool,
}

/// The figures of a level.
pub fn figures(level: &LevelRecord) -> LevelFigures {
    let lat = |p| pct(&level.merged.latency, p).map(ms);
    LevelFigures {
        load: match level.load {
            LevelLoad::Concurrency(c) => c.to_string(),
            LevelLoad::RequestRate(r) => format!("{r}"),
        },
        throughput: level.merged.throughput,
        p50: lat(50.0),
        p90: lat(90.0),
        p99: lat(99.0),
        stable: level.stable,
    }
}

/// The load column's title: `Concurrency` or `Request rate`.
pub fn load_title(rows: &[SweepRow]) -> &'static str {
    let first = rows.iter().flat_map(|r| r.levels()).next();
    match first.map(|l| l.load) {
        Some(LevelLoad::RequestRate(_)) => "Request rate",
        _ => "Concurrency",
    }
}

/// The sentence of a row that has no levels to show.
pub fn row_sentence(row: &SweepRow) -> Option<String> {
    let message = |default: &str| Some(row.message.clone().unwrap_or_else(|| default.into()));
    match row.end {
        SettingEnd::Measured | SettingEnd::Unstable if !row.levels().is_empty() => None,
        SettingEnd::Measured | SettingEnd::Unstable => message("no level was measured"),
        SettingEnd::Interrupted => message("interrupted (Ctrl-C)"),
        SettingEnd::ServerFailed | SettingEnd::ProfileFailed => message("failed"),
    }
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// The table: a column per parameter, then load, throughput, p50, p90, p99; a failed
/// setting is one row with its sentence and the server's last lines under it.
pub fn table(rows: &[SweepRow]) -> String {
    let names: Vec<&str> = rows
        .first()
        .map(|r| r.values.iter().map(|(n, _)| n.as_str()).collect())
        .unwrap_or_default();
    let mut header: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    header.extend(
        [
            load_title(rows),
            "Inferences/s",
            "p50 (ms)",
            "p90 (ms)",
            "p99 (ms)",
        ]
        .map(String::from),
    );
    // Cells of every level row; a sentence row keeps its values and its sentence apart.
    let mut lines: Vec<(Vec<String>, Option<String>, &[String])> = Vec::new();
    for row in rows {
        let values: Vec<String> = row.values.iter().map(|(_, v)| v.clone()).collect();
        for level in row.levels() {
            let f = figures(level);
            let mut cells = values.clone();
            cells.push(f.load);
            cells.push(format!("{:.1}", f.throughput));
            cells.push(opt_ms(f.p50));
            cells.push(opt_ms(f.p90));
            let unstable = if f.stable { "" } else { "  unstable" };
            cells.push(format!("{}{unstable}", opt_ms(f.p99)));
            lines.push((cells, None, &[]));
        }
        if let Some(sentence) = row_sentence(row) {
            lines.push((values, Some(sentence), &row.log_tail));
        }
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for (cells, sentence, _) in &lines {
        let measured = if sentence.is_some() {
            names.len()
        } else {
            cells.len()
        };
        for (w, c) in widths.iter_mut().zip(cells.iter().take(measured)) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let render = |cells: &[String], out: &mut String| {
        let mut line = String::new();
        for (i, c) in cells.iter().enumerate() {
            let _ = write!(line, "{c:<w$}  ", w = widths[i]);
        }
        let _ = writeln!(out, "{}", line.trim_end());
    };
    render(&header, &mut out);
    for (cells, sentence, tail) in &lines {
        match sentence {
            None => render(cells, &mut out),
            Some(sentence) => {
                let mut cells = cells.clone();
                cells.push(sentence.clone());
                render(&cells, &mut out);
                for line in tail.iter() {
                    let _ = writeln!(out, "    | {line}");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(value: &str, end: SettingEnd, message: Option<&str>) -> SweepRow {
        SweepRow {
            values: vec![("instances".into(), value.into())],
            label: format!("instances={value}"),
            dir: format!("instances={value}"),
            command: "srv".into(),
            end,
            message: message.map(String::from),
            log_tail: vec!["boom".into()],
            results: None,
        }
    }

    #[test]
    fn failed_settings_are_one_row_with_the_server_lines() {
        let rows = [
            row(
                "1",
                SettingEnd::ServerFailed,
                Some("the server exited (exit code 1)"),
            ),
            row("2", SettingEnd::Interrupted, None),
        ];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].starts_with("instances  Concurrency  Inferences/s"),
            "{t}"
        );
        assert_eq!(lines[1], "1          the server exited (exit code 1)");
        assert_eq!(lines[2], "    | boom");
        assert_eq!(lines[3], "2          interrupted (Ctrl-C)");
    }
}

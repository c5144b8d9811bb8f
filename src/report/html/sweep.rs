//! `DIR/sweep.html` of `inferperf sweep`: one self-contained page comparing the settings —
//! the table of settings by load level (each linking to its own report.html, a failed one
//! with its sentence and the server's last lines) and the curves of every setting overlaid,
//! one series per setting in the same colour on every chart: throughput and latency
//! p50/p99 against the load, p99 against throughput, and for LLM runs output tokens/s
//! against tokens/s per user.

use std::fmt::Write;
use std::path::Path;

use super::server::{pareto_points, PARETO_TITLE, PARETO_X, PARETO_Y};
use super::svg::{esc, load_chart, Chart, Line, Points, Series, XAxis, COLORS};
use super::STYLE;
use crate::report::console::sweep::{figures, load_title, row_sentence, LevelFigures, SweepRow};
use crate::results::LevelLoad;

/// What the page says about the sweep as a whole.
pub struct SweepPage<'a> {
    /// The server command with its placeholders, as typed.
    pub command: &'a str,
    /// The profile flags after `--`, as typed.
    pub profile: &'a [String],
    pub rows: &'a [SweepRow],
    /// Ctrl-C ended the sweep before every setting ran.
    pub interrupted: bool,
}

/// The page.
pub fn render(page: &SweepPage<'_>) -> String {
    let model = page
        .rows
        .iter()
        .find_map(|r| r.results.as_ref())
        .map(|f| f.settings.model_name.clone());
    let title = match &model {
        Some(m) => format!("inferperf sweep: {m}"),
        None => "inferperf sweep".to_string(),
    };
    let mut s = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>",
        t = esc(&title)
    );
    let _ = write!(
        s,
        "<table><tr><th class=\"l\">Server</th><td class=\"l\"><code>{}</code></td></tr><tr><th class=\"l\">Profile</th><td class=\"l\"><code>{}</code></td></tr><tr><th class=\"l\">Settings</th><td class=\"l\">{} of {}{}</td></tr></table>",
        esc(page.command),
        esc(&page.profile.join(" ")),
        page.rows.iter().filter(|r| !r.end.failed()).count(),
        page.rows.len(),
        if page.interrupted {
            " <span class=\"bad\">(interrupted: the settings after the last row did not run)</span>"
        } else {
            ""
        }
    );
    s.push_str("<h2>Settings and levels</h2>");
    s.push_str(&table(page.rows));
    if page.rows.iter().any(|r| !r.levels().is_empty()) {
        s.push_str("<h2>Curves</h2><div class=\"charts\">");
        s.push_str(&charts(page.rows));
        s.push_str("</div>");
    }
    s.push_str("<footer>Written by inferperf sweep. Hover a mark to see its numbers; each setting's own report is linked from the table.</footer></body></html>\n");
    s
}

/// Writes the page to `path` through a temporary file renamed over it.
pub fn write(page: &SweepPage<'_>, path: &Path) -> std::io::Result<()> {
    let temporary = path.with_extension("html.tmp");
    std::fs::write(&temporary, render(page))?;
    std::fs::rename(&temporary, path)
}

fn cell(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| inferperf_wire::number::fixed(v, 2))
}

fn table(rows: &[SweepRow]) -> String {
    let names: Vec<&str> = rows
        .first()
        .map(|r| r.values.iter().map(|(n, _)| n.as_str()).collect())
        .unwrap_or_default();
    let mut out = String::from("<table><tr>");
    for name in &names {
        let _ = write!(out, "<th class=\"l\">{}</th>", esc(name));
    }
    let _ = write!(
        out,
        "<th>{}</th><th>Throughput (infer/s)</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th class=\"l\">Stable</th><th class=\"l\">Reports</th></tr>",
        load_title(rows)
    );
    for (i, row) in rows.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let values: String = row
            .values
            .iter()
            .enumerate()
            .map(|(k, (_, v))| {
                let swatch = if k == 0 {
                    format!("<span style=\"color:{color}\">&#9632;</span> ")
                } else {
                    String::new()
                };
                format!("<td class=\"l\">{swatch}{}</td>", esc(v))
            })
            .collect();
        let links = links(row);
        for level in row.levels() {
            let LevelFigures {
                load,
                throughput,
                p50,
                p90,
                p99,
                stable,
            } = figures(level);
            let _ = write!(
                out,
                "<tr>{values}<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l {}\">{}</td><td class=\"l\">{links}</td></tr>",
                esc(&load),
                inferperf_wire::number::fixed(throughput, 1),
                cell(p50),
                cell(p90),
                cell(p99),
                if stable { "ok" } else { "bad" },
                if stable { "yes" } else { "unstable" },
            );
        }
        if let Some(sentence) = row_sentence(row) {
            let class = if row.end.failed() { " bad" } else { "" };
            let mut text = format!("<span class=\"{class}\">{}</span>", esc(&sentence));
            if !row.log_tail.is_empty() {
                let _ = write!(text, "<pre>{}</pre>", esc(&row.log_tail.join("\n")));
            }
            let _ = write!(
                out,
                "<tr>{values}<td class=\"l\" colspan=\"6\">{text}</td><td class=\"l\">{links}</td></tr>"
            );
        }
    }
    out.push_str("</table>");
    out
}

/// Links to the setting's report and server log, relative to the sweep's folder.
fn links(row: &SweepRow) -> String {
    let dir = esc(&row.dir);
    let mut out = String::new();
    if row.results.is_some() {
        let _ = write!(out, "<a href=\"{dir}/report.html\">report</a> ");
    }
    let _ = write!(out, "<a href=\"{dir}/server.log\">server.log</a>");
    out
}

/// The x of a level: its concurrency or request rate.
fn load_x(load: LevelLoad) -> f64 {
    match load {
        LevelLoad::Concurrency(c) => c as f64,
        LevelLoad::RequestRate(r) => r,
    }
}

/// Throughput, p50 and p99 against the load, p99 against throughput; a series per setting.
fn charts(rows: &[SweepRow]) -> String {
    let load = load_title(rows).to_lowercase();
    type Pick = fn(&LevelFigures) -> Option<f64>;
    let by_load: [(&str, &str, Pick); 3] = [
        ("Throughput", "throughput (infer/s)", |f| Some(f.throughput)),
        ("Latency p50", "p50 latency (ms)", |f| f.p50),
        ("Latency p99", "p99 latency (ms)", |f| f.p99),
    ];
    let mut out = String::new();
    for (title, y_label, pick) in by_load {
        out.push_str(&overlay(
            rows,
            &format!("{title} against {load}"),
            &load,
            y_label,
            |level| Some(load_x(level.load)),
            pick,
        ));
    }
    out.push_str(&overlay(
        rows,
        "Latency p99 against throughput",
        "throughput (infer/s)",
        "p99 latency (ms)",
        |level| Some(level.merged.throughput),
        |f| f.p99,
    ));
    out.push_str(&pareto(rows));
    out
}

/// Output tokens/s against tokens/s per user, a curve per setting (LLM runs only).
fn pareto(rows: &[SweepRow]) -> String {
    let series: Vec<Series> = (rows.iter().enumerate())
        .filter_map(|(i, row)| {
            let file = row.results.as_ref().filter(|_| !row.end.failed())?;
            let points = pareto_points(file, false, &format!("{}, ", row.label));
            (!points.is_empty()).then(|| Series {
                name: row.label.clone(),
                style: Line::solid(COLORS[i % COLORS.len()]),
                points,
            })
        })
        .collect();
    if series.is_empty() {
        return String::new();
    }
    load_chart(PARETO_TITLE, PARETO_X, PARETO_Y, &series).finish()
}

/// One chart: a series per setting of `y` against `x`, each point's tooltip naming the
/// setting and its figures.
fn overlay(
    rows: &[SweepRow],
    title: &str,
    x_label: &str,
    y_label: &str,
    x: impl Fn(&crate::results::LevelRecord) -> Option<f64>,
    y: fn(&LevelFigures) -> Option<f64>,
) -> String {
    let series: Vec<(usize, &SweepRow, Points)> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let points = row
                .levels()
                .iter()
                .filter_map(|level| {
                    let f = figures(level);
                    let (x, y) = (x(level)?, y(&f)?);
                    let tip = format!(
                        "{}, load {}: {} infer/s, p50 {} ms, p99 {} ms{}",
                        row.label,
                        f.load,
                        inferperf_wire::number::fixed(f.throughput, 1),
                        cell(f.p50),
                        cell(f.p99),
                        if f.stable { "" } else { " (unstable)" }
                    );
                    Some((x, y, tip))
                })
                .collect();
            (i, row, points)
        })
        .collect();
    let all = series.iter().flat_map(|(_, _, p)| p.iter());
    let (x_min, x_max, y_max) = all.fold((f64::MAX, 0.0f64, 0.0f64), |(a, b, c), p| {
        (a.min(p.0), b.max(p.0), c.max(p.1))
    });
    let x_min = if x_min > x_max * 0.5 {
        x_min * 0.95
    } else {
        0.0
    };
    let mut chart = Chart::new(
        title,
        x_label,
        y_label,
        XAxis::Linear,
        (x_min, x_max * 1.05),
        y_max,
    );
    for (i, row, points) in &series {
        chart.series(&row.label, COLORS[i % COLORS.len()], points);
    }
    chart.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::console::sweep::SettingEnd;

    #[test]
    fn a_failed_setting_is_a_row_with_its_sentence_and_escaped_lines() {
        let rows = vec![SweepRow {
            values: vec![("instances".into(), "<4>".into())],
            label: "instances=<4>".into(),
            dir: "instances=_4_".into(),
            command: "srv".into(),
            end: SettingEnd::ServerFailed,
            message: Some("the server exited before it was ready (exit code 1)".into()),
            log_tail: vec!["error: <bad>".into()],
            results: None,
        }];
        let page = render(&SweepPage {
            command: "srv {port} & {instances}",
            profile: &["-m".into(), "m".into()],
            rows: &rows,
            interrupted: false,
        });
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(page.contains("exited before it was ready (exit code 1)"));
        assert!(page.contains("error: &lt;bad&gt;") && page.contains("&lt;4&gt;"));
        assert!(page.contains("srv {port} &amp; {instances}"));
        assert!(page.contains("href=\"instances=_4_/server.log\""));
        assert!(!page.contains("<svg"), "no curve without a level");
    }
}

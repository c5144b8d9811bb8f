//! Client health (client CPU, send lag, late sends) with the run's warnings, server metrics
//! per level when they were collected, and for LLM runs TTFT, ITL and tokens per second
//! against the load.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::svg::{colored, esc, load_chart, num, Points};
use super::{load_axis, load_name, load_x, ms, pct};
use crate::results::{DistributionRecord, ResultsFile};

/// A series of one figure per level against the load; each tooltip starts with `prefix`.
pub fn per_level(
    file: &ResultsFile,
    f: impl Fn(&crate::results::LevelRecord) -> Option<f64>,
    unit: &str,
    prefix: &str,
) -> Points {
    file.levels
        .iter()
        .filter_map(|l| {
            let v = f(l)?;
            Some((
                load_x(l),
                v,
                format!("{prefix}{}: {} {unit}", load_name(l), num(v)),
            ))
        })
        .collect()
}

fn chart(file: &ResultsFile, title: &str, y: &str, series: Vec<(String, Points)>) -> String {
    load_chart(title, load_axis(file), y, &colored(series)).finish()
}

/// Client health per level and the warnings, then server metrics when collected.
pub fn health(file: &ResultsFile) -> String {
    let mut out = String::from("<h2>Client health</h2>");
    for l in &file.levels {
        for note in &l.notes {
            let _ = write!(
                out,
                "<div class=\"warn\">{}: {}</div>",
                esc(&load_name(l)),
                esc(note)
            );
        }
        let c = &l.merged.client;
        if c.late_share > 0.05 {
            let _ = write!(out, "<div class=\"warn\">{}: {:.1}% of the sends were late; the client may have limited this load.</div>", esc(&load_name(l)), c.late_share * 100.0);
        }
    }
    let cores = file.host.cores.max(1) as f64;
    out.push_str("<div class=\"charts\">");
    out.push_str(&chart(
        file,
        &format!("Client CPU (share of {} cores)", file.host.cores),
        "% of the host",
        vec![(
            "client CPU".into(),
            per_level(
                file,
                |l| Some(l.merged.client.cpu_cores / cores * 100.0),
                "%",
                "",
            ),
        )],
    ));
    out.push_str(&chart(
        file,
        "Send lag",
        "ms",
        vec![
            (
                "p50".into(),
                per_level(file, |l| pct(&l.merged.send_lag, 50.0).map(ms), "ms", ""),
            ),
            (
                "p99".into(),
                per_level(file, |l| pct(&l.merged.send_lag, 99.0).map(ms), "ms", ""),
            ),
        ],
    ));
    out.push_str("</div>");
    out.push_str(&metrics(file));
    out
}

/// A table of the server metrics per level (average, else rate, else max of each series);
/// the engine's and the GPUs' series by meaning have their own section.
fn metrics(file: &ResultsFile) -> String {
    let names: BTreeSet<&String> = file
        .levels
        .iter()
        .filter_map(|l| l.merged.metrics.as_ref())
        .flat_map(|m| m.series.keys())
        .filter(|k| !k.starts_with("engine:") && !k.starts_with("gpu:"))
        .collect();
    if names.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Server metrics</h2><table><tr><th class=\"l\">Load</th>");
    for n in &names {
        let _ = write!(out, "<th>{}</th>", esc(n));
    }
    out.push_str("</tr>");
    for l in &file.levels {
        let _ = write!(out, "<tr><td class=\"l\">{}</td>", esc(&load_name(l)));
        for n in &names {
            let cell = l
                .merged
                .metrics
                .as_ref()
                .and_then(|m| m.series.get(*n))
                .map_or("–".to_string(), |s| match (s.avg, s.rate) {
                    (Some(a), _) => format!("avg {}, max {}", num(a), num(s.max)),
                    (None, Some(r)) => format!("{}/s", num(r)),
                    _ => num(s.max),
                });
            let _ = write!(out, "<td>{}</td>", esc(&cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

fn in_ms(d: &DistributionRecord, p: f64) -> Option<f64> {
    let v = pct(d, p)?;
    Some(if d.unit == "ns" { ms(v) } else { v })
}

/// TTFT, ITL and tokens/s against the load and the Pareto curve, for runs that generated
/// text (a `tokens` record with output counted; embeddings have input tokens only).
pub fn llm(file: &ResultsFile) -> String {
    let tokens = file.levels.iter().filter_map(|l| l.merged.tokens.as_ref());
    if !tokens.into_iter().any(|t| t.generates()) {
        return String::new();
    }
    let mut out = String::from("<h2>Text generation</h2><div class=\"charts\">");
    out.push_str(&chart(
        file,
        "Time to first token",
        "ms",
        vec![
            (
                "p50".into(),
                per_level(file, |l| in_ms(&l.merged.first_response, 50.0), "ms", ""),
            ),
            (
                "p99".into(),
                per_level(file, |l| in_ms(&l.merged.first_response, 99.0), "ms", ""),
            ),
        ],
    ));
    out.push_str(&chart(
        file,
        "Inter-token latency",
        "ms",
        vec![
            (
                "p50".into(),
                per_level(
                    file,
                    |l| in_ms(&l.merged.tokens.as_ref()?.inter_token, 50.0),
                    "ms",
                    "",
                ),
            ),
            (
                "p99".into(),
                per_level(
                    file,
                    |l| in_ms(&l.merged.tokens.as_ref()?.inter_token, 99.0),
                    "ms",
                    "",
                ),
            ),
        ],
    ));
    out.push_str(&chart(
        file,
        "Output tokens per second",
        "tokens/s",
        vec![(
            "output tokens/s".into(),
            per_level(
                file,
                |l| Some(l.merged.tokens.as_ref()?.output_token_throughput),
                "tokens/s",
                "",
            ),
        )],
    ));
    out.push_str(&super::server::pareto(file));
    out.push_str("</div>");
    out
}

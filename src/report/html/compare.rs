//! The page of `inferperf compare A B [C …] -o FILE.html`: what the console table says, made
//! readable side by side — the runs (a colour and a letter each), the settings that differ
//! between them, the `--fail-on` gate, each run's verdicts against the baseline coloured
//! better / worse / within noise — followed by the runs' curves and distributions drawn
//! over each other ([`super::overlay`]). It reads the [`Comparison`] the console printed, so
//! the two cannot disagree.

use std::fmt::Write;

use serde_json::Value;

use super::overlay::{self, Drawn};
use super::svg::{esc, COLORS};
use crate::report::compare::{load_text, Comparison, Run, Verdict};
use crate::results::ResultsFile;

/// The longest part of a path kept in a run's label.
const LABEL_CHARS: usize = 18;

/// The whole page.
pub fn page(runs: &[Run], comparison: &Comparison, fail_on: Option<&str>) -> String {
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    let labels = labels(&names);
    let drawn: Vec<Drawn> = runs
        .iter()
        .zip(&labels)
        .enumerate()
        .map(|(i, (run, label))| Drawn {
            label,
            color: COLORS[i % COLORS.len()],
            file: &run.file,
        })
        .collect();
    let mut models: Vec<&str> = Vec::new();
    for run in runs {
        if !models.contains(&run.file.settings.model_name.as_str()) {
            models.push(&run.file.settings.model_name);
        }
    }
    let title = format!("inferperf compare: {}", models.join(", "));
    let mut body = gate(comparison, fail_on);
    for warning in comparison.warnings.iter().chain(&comparison.variation) {
        let _ = write!(body, "<div class=\"warn\">{}</div>", esc(warning));
    }
    body.push_str(&runs_table(runs, &drawn));
    body.push_str(&differences(runs, &labels));
    body.push_str(&verdicts(&labels, comparison));
    body.push_str(&overlay::curves(&drawn));
    body.push_str(&overlay::pareto(&drawn));
    body.push_str(&overlay::distributions(&drawn));
    super::page(&title, &body, runs.first().map(|r| &r.file))
}

/// "A", "B: cmp-b" …: a letter per run, then the part of its path the others do not share
/// (the paths' common leading and trailing components dropped), shortened.
fn labels(names: &[&str]) -> Vec<String> {
    let parts: Vec<Vec<&str>> = names
        .iter()
        .map(|name| name.split(['/', '\\']).filter(|p| !p.is_empty()).collect())
        .collect();
    let shortest = parts.iter().map(Vec::len).min().unwrap_or(0);
    let same = |part: &dyn Fn(&[&str]) -> String| parts.iter().all(|p| part(p) == part(&parts[0]));
    let lead = (0..shortest)
        .take_while(|&k| same(&|p| p[k].to_string()))
        .count();
    let trail = (0..shortest - lead)
        .take_while(|&k| same(&|p| p[p.len() - 1 - k].to_string()))
        .count();
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let letter = letter(i);
            let own = p[lead..p.len() - trail].join("/");
            let count = own.chars().count();
            match count {
                0 => letter,
                n if n <= LABEL_CHARS => format!("{letter}: {own}"),
                n => {
                    let tail: String = own.chars().skip(n - LABEL_CHARS + 1).collect();
                    format!("{letter}: …{tail}")
                }
            }
        })
        .collect()
}

/// A, B, … Z, then A2, B2 ….
fn letter(i: usize) -> String {
    let c = char::from(b'A' + (i % 26) as u8);
    match i / 26 {
        0 => c.to_string(),
        n => format!("{c}{}", n + 1),
    }
}

/// The `--fail-on` verdict: passed, or each limit passed beyond noise.
fn gate(comparison: &Comparison, fail_on: Option<&str>) -> String {
    let Some(fail_on) = fail_on else {
        return String::new();
    };
    let mut out = format!("<h2>Gate: --fail-on '{}'</h2>", esc(fail_on));
    if comparison.failures.is_empty() {
        out.push_str("<p class=\"ok\">Passed: no figure moved past its limit beyond noise.</p>");
    } else {
        out.push_str("<ul>");
        for failure in &comparison.failures {
            let _ = write!(out, "<li class=\"bad\">FAIL {}</li>", esc(failure));
        }
        out.push_str("</ul>");
    }
    out
}

/// A row per run: its colour and label, file, model, start, length, levels, state.
fn runs_table(runs: &[Run], drawn: &[Drawn]) -> String {
    let mut out = String::from(
        "<h2>Runs</h2><table><tr><th class=\"l\">Run</th><th class=\"l\">File</th><th class=\"l\">Model</th><th class=\"l\">Server</th><th class=\"l\">Started</th><th>Length</th><th>Levels</th><th class=\"l\">State</th></tr>",
    );
    for (run, d) in runs.iter().zip(drawn) {
        let f = &run.file;
        let s = &f.settings;
        let state = match (f.finished, f.interrupted, &f.error) {
            (_, _, Some(e)) => format!("<span class=\"bad\">error: {}</span>", esc(e)),
            (_, true, _) => "<span class=\"bad\">interrupted</span>".to_string(),
            (false, _, _) => "<span class=\"bad\">not finished</span>".to_string(),
            _ => "finished".to_string(),
        };
        let _ = write!(
            out,
            "<tr><td class=\"l\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td class=\"l\">{}</td><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{state}</td></tr>",
            d.color,
            esc(d.label),
            esc(&run.name),
            esc(&s.model_name),
            if s.model_version.is_empty() {
                String::new()
            } else {
                format!(" (version {})", esc(&s.model_version))
            },
            esc(&format!("{} · {}", s.url, s.protocol)),
            esc(&f.started_at),
            f.duration_s.map_or("–".into(), |d| format!("{} s", inferperf_wire::number::fixed(d, 1))),
            f.levels.len(),
        );
    }
    out.push_str("</table>");
    out
}

/// The longest value shown in the table of differing settings.
const VALUE_CHARS: usize = 80;

/// Where a run wrote its reports and how much they say (a key ending in `.` names every
/// setting under it): not settings that shape what was measured.
const NOT_COMPARED: [&str; 3] = ["csv_files", "llm.artifact_dir", "outputs."];

/// The settings, host, tool and model of a run as `key → value` leaves (objects opened,
/// lists and scalars kept whole), in the file's order.
fn leaves(file: &ResultsFile) -> Vec<(String, String)> {
    fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            Value::String(s) => out.push((prefix.to_string(), s.clone())),
            Value::Null => out.push((prefix.to_string(), "–".to_string())),
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    let parts: [(&str, Option<Value>); 4] = [
        ("", serde_json::to_value(&file.settings).ok()),
        ("host", serde_json::to_value(&file.host).ok()),
        ("tool", serde_json::to_value(&file.tool).ok()),
        ("model", serde_json::to_value(&file.model).ok()),
    ];
    for (prefix, value) in parts {
        if let Some(value) = value {
            walk(prefix, &value, &mut out);
        }
    }
    out
}

/// The settings whose values are not the same in every run, a column per run.
fn differences(runs: &[Run], labels: &[String]) -> String {
    let all: Vec<Vec<(String, String)>> = runs.iter().map(|r| leaves(&r.file)).collect();
    let mut keys: Vec<&str> = Vec::new();
    for run in &all {
        for (k, _) in run {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let value = |run: &[(String, String)], key: &str| {
        run.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    };
    let mut rows = String::new();
    for key in keys {
        let values: Vec<Option<String>> = all.iter().map(|r| value(r, key)).collect();
        let not_compared = NOT_COMPARED
            .iter()
            .any(|n| key == *n || (n.ends_with('.') && key.starts_with(n)));
        if not_compared || values.iter().all(|v| *v == values[0]) {
            continue;
        }
        let _ = write!(rows, "<tr><th class=\"l\">{}</th>", esc(key));
        for v in values {
            let v = v.unwrap_or_else(|| "–".into());
            let shown: String = v.chars().take(VALUE_CHARS).collect();
            let more = if shown.len() < v.len() { "…" } else { "" };
            let _ = write!(rows, "<td class=\"l\">{}{more}</td>", esc(&shown));
        }
        rows.push_str("</tr>");
    }
    if rows.is_empty() {
        return "<h2>Settings that differ</h2><p>None: the runs share every setting, the host and the model.</p>".to_string();
    }
    let mut out =
        String::from("<h2>Settings that differ</h2><table><tr><th class=\"l\">Setting</th>");
    for label in labels {
        let _ = write!(out, "<th class=\"l\">{}</th>", esc(label));
    }
    let _ = write!(out, "</tr>{rows}</table>");
    out
}

/// The CSS class of a verdict.
fn class(verdict: Option<Verdict>) -> &'static str {
    match verdict {
        Some(Verdict::Better) => "ok",
        Some(Verdict::Worse) => "bad",
        _ => "noise",
    }
}

/// Each run against the baseline: a row per figure of each matched level, as the console
/// prints it, the verdict coloured; then the unmatched levels.
fn verdicts(labels: &[String], comparison: &Comparison) -> String {
    let mut out = String::from(
        "<h2>Verdicts</h2><p>Change = (B − A) / A of the level's merged windows; a change is beyond noise when it is larger than the two runs' noise together (each the half-range of the figure across the level's merged windows, or the run's stability percentage for a single window). See <code>inferperf compare --help</code>.</p>",
    );
    for pair in &comparison.pairs {
        let (base, other) = (&labels[0], &labels[pair.run]);
        let _ = write!(
            out,
            "<h3>{} against the baseline {}</h3><table><tr><th class=\"l\">Load</th><th class=\"l\">Figure</th><th>{}</th><th>{}</th><th>Change</th><th>Noise</th><th class=\"l\">Verdict</th></tr>",
            esc(other),
            esc(base),
            esc(base),
            esc(other)
        );
        for level in &pair.levels {
            for (k, row) in level.rows.iter().enumerate() {
                out.push_str("<tr>");
                if k == 0 {
                    let _ = write!(
                        out,
                        "<td class=\"l\" rowspan=\"{}\">{}{}</td>",
                        level.rows.len(),
                        esc(&load_text(&level.load)),
                        esc(level.stability)
                    );
                }
                let [figure, a, b, change, noise, verdict] = row.cells();
                let class = class(row.verdict);
                let _ = write!(
                    out,
                    "<td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td class=\"l {class}\">{}</td></tr>",
                    esc(&figure),
                    esc(&a),
                    esc(&b),
                    esc(&change),
                    esc(&noise),
                    esc(&verdict)
                );
            }
        }
        out.push_str("</table>");
        if pair.levels.is_empty() {
            out.push_str("<p>No level of this run has the baseline's load.</p>");
        }
        if !pair.unmatched.is_empty() {
            let _ = write!(
                out,
                "<p>Unmatched levels: {}.</p>",
                esc(&pair.unmatched.join("; "))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{labels, letter};

    #[test]
    fn a_label_is_a_letter_and_what_the_paths_do_not_share() {
        assert_eq!(
            labels(&["/tmp/cmp-a", "/tmp/cmp-b/"]),
            ["A: cmp-a", "B: cmp-b"]
        );
        assert_eq!(
            labels(&[
                "runs/a/results.json",
                "runs/b/results.json",
                "runs/a/results.json"
            ]),
            ["A: a", "B: b", "C: a"]
        );
        assert_eq!(labels(&["same.json", "same.json"]), ["A", "B"]);
        assert_eq!(labels(&["x", "x/results.json"]), ["A", "B: results.json"]);
        let long = labels(&["r/baseline-before-the-change", "r/b"]);
        assert_eq!(long[0], "A: …before-the-change");
        assert_eq!(long[0].chars().count(), "A: ".len() + 18);
        assert_eq!(
            (letter(0), letter(25), letter(26)),
            ("A".into(), "Z".into(), "A2".into())
        );
    }
}

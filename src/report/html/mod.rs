//! The HTML report: one self-contained page (inline CSS, inline SVG, no script, nothing
//! fetched) drawn from a results file ([`ResultsFile`]), so that a run's `--report-dir`,
//! `inferperf report RESULTS` and the demo all render the same page from the same data.
//!
//! The page: the settings, a table per level, the throughput–latency curve (knee marked),
//! each level's percentile plot on HdrHistogram's log axis, where the time went per level,
//! each level's windows over time, the per-second timeline of a `--ramp` / `--load-steps`
//! run, server metrics and client health, what the engine and the GPUs were doing (their own
//! metrics per level and per window), and for LLM runs TTFT, ITL and tokens/s against the
//! load and the Pareto curve of output tokens/s against tokens/s per user. Every
//! mark carries an SVG `<title>`, so hovering shows its numbers.
//!
//! `inferperf compare … -o FILE.html` writes a second kind of page from the same parts: the
//! runs and their verdicts, with their curves and distributions overlaid
//! ([`comparison_page`]). During a run, `--report-dir DIR` makes the page one of the run's
//! reports ([`REPORT`]): `DIR/report.html`, rewritten after every level and at the end.

mod breakdown;
mod compare;
mod curve;
mod extra;
mod overlay;
mod repeats;
mod server;
mod svg;
pub mod sweep;
mod tables;
mod turns;
mod windows;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::compare::{Comparison, Run};
use super::{Entry, Measured, Reporter, Run as RunView};
use crate::measure::level::LevelResult;
use crate::results::{replace_file, DistributionRecord, LevelLoad, LevelRecord, ResultsFile};
use inferperf_wire::error::{RunError, RunResult};

pub use svg::esc;

const STYLE: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1400px}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:15px}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left}tr>td:first-child{white-space:nowrap}.bad{color:#b00}.ok{color:#080}.warn{background:#fff4e0;border-left:4px solid #f90;padding:4px 8px;margin:4px 0;font-size:13px}\
.charts{display:flex;flex-wrap:wrap;gap:12px}svg{background:#fff;border:1px solid #eee;font-family:inherit}\
svg .mark:hover{stroke-width:3}footer{margin-top:32px;font-size:12px;color:#777}\
.noise{color:#777}.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}";

/// The page for a results file.
pub fn render(file: &ResultsFile) -> String {
    render_many(&[(String::new(), file)])
}

/// One page holding several runs one after another, each under its title (the demo).
pub fn render_many(runs: &[(String, &ResultsFile)]) -> String {
    let title = match runs {
        [(t, f)] if t.is_empty() => format!("inferperf: {}", f.settings.model_name),
        _ => "inferperf report".to_string(),
    };
    let mut body = String::new();
    for (name, file) in runs {
        if !name.is_empty() {
            body.push_str(&format!("<h1>{}</h1>", esc(name)));
        }
        body.push_str(&run_section(file));
    }
    page(&title, &body, runs.first().map(|r| r.1))
}

/// The page around `body`: the head with the style, the title, the footer naming the tool
/// that wrote `file`.
fn page(title: &str, body: &str, file: Option<&ResultsFile>) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>{body}\
<footer>Written by {} {}. Hover a mark to see its numbers.</footer></body></html>\n",
        esc(file.map_or("inferperf", |f| &f.tool.name)),
        esc(file.map_or("", |f| &f.tool.version)),
        t = esc(title)
    )
}

fn run_section(file: &ResultsFile) -> String {
    let mut s = String::new();
    s.push_str(&tables::settings(file));
    s.push_str(&repeats::repeats(file));
    if !file.levels.is_empty() {
        s.push_str("<h2>Levels</h2>");
        s.push_str(&tables::levels(file));
        s.push_str("<h2>Throughput and latency</h2><div class=\"charts\">");
        s.push_str(&curve::curve(file));
        s.push_str("</div><h2>Latency distribution per level</h2><div class=\"charts\">");
        s.push_str(&curve::percentile_plot(file));
        s.push_str("</div><h2>Where the time went</h2><div class=\"charts\">");
        s.push_str(&breakdown::breakdown(file));
        s.push_str("</div><h2>Windows of each level</h2><p>Filled marks: the windows merged into the level's figures; hollow: the others.</p><div class=\"charts\">");
        for level in &file.levels {
            s.push_str(&windows::level_windows(level));
        }
        s.push_str("</div>");
        s.push_str(&extra::health(file));
        s.push_str(&server::server(file));
        s.push_str(&extra::llm(file));
        s.push_str(&turns::turns(file));
    }
    if let Some(t) = &file.timeline {
        s.push_str("<h2>Timeline</h2><div class=\"charts\">");
        s.push_str(&windows::timeline(t));
        s.push_str("</div>");
    }
    s
}

/// Writes the page for `file` to `path` (through a temporary file renamed over it, so that
/// a browser reloading it while the run goes on never reads half a page).
pub fn write(file: &ResultsFile, path: &Path) -> std::io::Result<()> {
    let page = render(file);
    replace_file(path, |out| out.write_all(page.as_bytes()))
}

/// The comparison page of `inferperf compare … -o FILE.html`.
pub fn comparison_page(runs: &[Run], comparison: &Comparison, fail_on: Option<&str>) -> String {
    compare::page(runs, comparison, fail_on)
}

pub const REPORT: Entry = Entry {
    name: "HTML page",
    is_on: |settings, _| settings.outputs.report_dir.is_some(),
    open: |settings| {
        let dir = settings.outputs.report_dir.as_deref().unwrap_or_default();
        let path = Path::new(dir).join("report.html");
        Ok(Box::new(Page { path }))
    },
};

/// `--report-dir DIR`: `DIR/report.html`, from the run's record as it stands.
struct Page {
    path: PathBuf,
}

impl Page {
    fn write(&self, run: &RunView<'_>) -> RunResult<()> {
        write(run.file, &self.path).map_err(|e| {
            RunError::failed(format!(
                "Cannot write the HTML report {}: {e}.",
                self.path.display()
            ))
        })
    }
}

impl Reporter for Page {
    /// Cheap beside a level: the page is there while the run goes on (a failure is told
    /// at the end, when the page is written again).
    fn level(&mut self, run: &RunView<'_>, _level: &LevelResult) {
        let _ = self.write(run);
    }

    fn finish(&mut self, run: &RunView<'_>, measured: &Measured<'_>) -> RunResult<()> {
        match measured {
            // A run that failed before measuring has nothing to show.
            Measured::Nothing => Ok(()),
            _ => self.write(run),
        }
    }
}

/// The x of a level: its concurrency or request rate.
pub(crate) fn load_x(level: &LevelRecord) -> f64 {
    match level.load {
        LevelLoad::Concurrency(c) => c as f64,
        LevelLoad::RequestRate(r) => r,
    }
}

/// The level's load as words: "concurrency 4", "250 infer/s".
pub(crate) fn load_name(level: &LevelRecord) -> String {
    match level.load {
        LevelLoad::Concurrency(c) => format!("concurrency {c}"),
        LevelLoad::RequestRate(r) => format!("{} infer/s", svg::num(r)),
    }
}

/// The axis label of loads.
pub(crate) fn load_axis(file: &ResultsFile) -> &'static str {
    match file.levels.first().map(|l| l.load) {
        Some(LevelLoad::RequestRate(_)) => "request rate (infer/s)",
        _ => "concurrency",
    }
}

/// A percentile of a distribution in its unit: written in the file, else from its histogram.
pub(crate) fn pct(d: &DistributionRecord, p: f64) -> Option<f64> {
    if d.count == 0 {
        return None;
    }
    d.percentiles
        .get(p)
        .or_else(|| d.distribution().ok().map(|x| x.percentile(p)))
        .filter(|v| v.is_finite())
}

/// ns → ms.
pub(crate) fn ms(ns: f64) -> f64 {
    ns / 1e6
}

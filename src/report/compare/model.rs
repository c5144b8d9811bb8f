//! What `inferperf compare A B [C …]` finds: results files side by side, level by level
//! (matched by load), with the change of each figure against the first run and a verdict
//! that accounts for noise, and the `--fail-on` limits that make it a regression gate. The
//! console text ([`super::text`]) and the page (`report::html`) render this model.
//!
//! The noise rule (also in `inferperf compare --help`, [`crate::cli::COMPARE_RULE`]): a run's
//! noise for a figure at a level is the relative half-range of that figure across the
//! windows merged into the level, (max − min) / 2 / mean; with a single window it is the
//! run's stability percentage. A change is beyond noise when |change| > noise(A) + noise(B).

use crate::results::{LevelLoad, LevelRecord, ResultsFile, WindowRecord};

/// A figure compared: throughput, mean latency, or a latency percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    Throughput,
    Avg,
    Percentile(f64),
}

impl Figure {
    pub fn name(&self) -> String {
        match self {
            Figure::Throughput => "throughput".to_string(),
            Figure::Avg => "avg".to_string(),
            Figure::Percentile(p) => format!("p{}", inferperf_wire::number::readable(*p)),
        }
    }

    /// Whether a rise of this figure is an improvement.
    fn higher_is_better(&self) -> bool {
        matches!(self, Figure::Throughput)
    }

    /// The figure of a window: infer/s, or latency in µs. None when it cannot be read.
    fn value(&self, w: &WindowRecord) -> Option<f64> {
        match self {
            Figure::Throughput => Some(w.throughput),
            Figure::Avg => Some(w.latency.mean / 1000.0),
            Figure::Percentile(p) => match w.latency.percentiles.get(*p) {
                Some(v) => Some(v / 1000.0),
                None => w
                    .latency
                    .distribution()
                    .ok()
                    .map(|d| d.percentile(*p) / 1000.0)
                    .filter(|v| v.is_finite()),
            },
        }
    }

    fn unit(&self) -> &'static str {
        match self {
            Figure::Throughput => "infer/s",
            _ => "usec",
        }
    }
}

/// One `--fail-on` limit: the figure, and the change in percent past which it fails
/// (negative: a drop below it, positive: a rise above it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub figure: Figure,
    pub percent: f64,
}

impl Limit {
    fn passed(&self, change: f64) -> bool {
        if self.percent < 0.0 {
            change < self.percent
        } else {
            change > self.percent
        }
    }

    fn text(&self) -> String {
        let op = if self.percent < 0.0 { '<' } else { '>' };
        let sign = if self.percent < 0.0 { "" } else { "+" };
        let percent = inferperf_wire::number::readable(self.percent);
        format!("{}{op}{sign}{percent}%", self.figure.name())
    }
}

/// The verdict on one figure's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Better,
    Worse,
    WithinNoise,
}

impl Verdict {
    pub fn text(&self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::WithinNoise => "within noise",
        }
    }
}

/// The rule: a change (percent) is beyond noise when |change| > noise_a + noise_b
/// (percent); then it is better or worse by the figure's direction.
pub fn verdict(figure: Figure, change: f64, noise_a: f64, noise_b: f64) -> Verdict {
    if !change.is_finite() || change.abs() <= noise_a + noise_b {
        return Verdict::WithinNoise;
    }
    if (change > 0.0) == figure.higher_is_better() {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

/// The relative half-range, in percent, of the values: (max − min) / 2 / mean.
pub fn half_range(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (mean > 0.0).then(|| (max - min) / 2.0 / mean * 100.0)
}

/// A run's noise for a figure at a level, percent: the half-range across its merged
/// windows, or the stability percentage when there is one window (or none to read).
fn noise(level: &LevelRecord, figure: Figure, stability: f64) -> f64 {
    let values: Vec<f64> = level
        .merged_windows
        .iter()
        .filter_map(|&i| level.windows.get(i))
        .filter_map(|w| figure.value(w))
        .collect();
    half_range(&values).unwrap_or(stability)
}

/// Whether two levels ran the same load (the same concurrency, or the same request rate).
pub fn same_load(a: &LevelLoad, b: &LevelLoad) -> bool {
    match (a, b) {
        (LevelLoad::Concurrency(x), LevelLoad::Concurrency(y)) => x == y,
        (LevelLoad::RequestRate(x), LevelLoad::RequestRate(y)) => {
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => false,
    }
}

/// A load as the console names it: "concurrency 4", "request rate 250".
pub fn load_text(load: &LevelLoad) -> String {
    match load {
        LevelLoad::Concurrency(c) => format!("concurrency {c}"),
        LevelLoad::RequestRate(r) => format!("request rate {r}"),
    }
}

/// A loaded run: the name it was given and its file.
pub struct Run {
    pub name: String,
    pub file: ResultsFile,
}

/// One figure of a level both runs measured: the two values, the change, the noise and
/// the verdict.
pub struct Row {
    pub figure: Figure,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// (B − A) / A, percent; None when A is missing or not positive.
    pub change: Option<f64>,
    /// noise(A) + noise(B), percent.
    pub noise: f64,
    pub verdict: Option<Verdict>,
}

impl Row {
    /// The row's cells as the console prints them: figure, A, B, change, noise, verdict.
    pub fn cells(&self) -> [String; 6] {
        [
            self.figure.name(),
            format_value(self.figure, self.a),
            format_value(self.figure, self.b),
            self.change.map_or("n/a".to_string(), |c| {
                format!("{}%", inferperf_wire::number::signed(c, 1))
            }),
            format!("±{}%", inferperf_wire::number::fixed(self.noise, 1)),
            self.verdict
                .map_or("n/a (no baseline value)", |v| v.text())
                .to_string(),
        ]
    }
}

/// A level both runs measured, and its figures.
pub struct Matched {
    pub load: LevelLoad,
    /// Which of the two was not stable, as words ("" when both were).
    pub stability: &'static str,
    pub rows: Vec<Row>,
}

/// One run against the baseline.
pub struct Pair {
    /// The run's index among those compared (the baseline is 0).
    pub run: usize,
    pub levels: Vec<Matched>,
    /// "concurrency 4 only in B", one per level the other run lacks.
    pub unmatched: Vec<String>,
}

/// What a comparison found: each run against the baseline, the warnings, the limits
/// passed.
pub struct Comparison {
    pub pairs: Vec<Pair>,
    pub warnings: Vec<String>,
    pub failures: Vec<String>,
    /// Said when the run-to-run variation is unknown (a single run on either side).
    pub variation: Option<String>,
}

/// The figures compared: throughput, p50, p99, the baseline's --percentile, and any
/// figure a limit names.
fn figures(baseline: &ResultsFile, limits: &[Limit]) -> Vec<Figure> {
    let mut all = vec![
        Figure::Throughput,
        Figure::Percentile(50.0),
        Figure::Percentile(99.0),
    ];
    let extra = baseline
        .settings
        .percentile
        .map(Figure::Percentile)
        .into_iter()
        .chain(limits.iter().map(|l| l.figure));
    for figure in extra {
        if !all.contains(&figure) {
            all.push(figure);
        }
    }
    all
}

fn format_value(figure: Figure, v: Option<f64>) -> String {
    match v {
        None => "n/a".to_string(),
        Some(v) if figure == Figure::Throughput => {
            format!("{} {}", inferperf_wire::number::fixed(v, 1), figure.unit())
        }
        Some(v) => format!("{} {}", inferperf_wire::number::fixed(v, 0), figure.unit()),
    }
}

/// The warnings about the runs themselves: no levels (how a run ended is
/// [`super::validity`]'s).
fn run_warnings(runs: &[Run]) -> Vec<String> {
    let mut warnings = Vec::new();
    for run in runs {
        if run.file.levels.is_empty() {
            warnings.push(format!(
                "{} has no levels to compare{}.",
                run.name,
                if run.file.timeline.is_some() {
                    " (a --ramp / --load-steps run has a timeline instead)"
                } else {
                    ""
                }
            ));
        }
    }
    warnings
}

/// What the verdicts could not see: with a single run on either side, the run-to-run
/// variation is unknown.
fn variation_note(runs: &[Run]) -> Option<String> {
    let mut single: Vec<&str> = Vec::new();
    for run in runs.iter().filter(|r| r.file.repetitions.is_none()) {
        if !single.contains(&run.name.as_str()) {
            single.push(&run.name);
        }
    }
    (runs.len() > 1 && !single.is_empty()).then(|| format!(
        "The run-to-run variation is unknown: {} measured each level once, so a change is judged against the noise of the windows of one run, which misses what moves between runs (the machine, the server's state). Make each run with --num-profile-runs 3 or more to judge against the runs' own variation.",
        single.join(", ")
    ))
}

/// The figures of a level both runs measured; the limits it passed go to `failures`.
fn matched(
    (base, level_a): (&Run, &LevelRecord),
    (other, level_b): (&Run, &LevelRecord),
    figures: &[Figure],
    limits: &[Limit],
    failures: &mut Vec<String>,
) -> Matched {
    let mut rows = Vec::new();
    for &figure in figures {
        let judged = judge((base, level_a), (other, level_b), figure);
        let Judged {
            a,
            b,
            change,
            noise: noise_sum,
            test,
        } = judged;
        let v = change.map(|c| verdict(figure, c, noise_sum, 0.0));
        if let (Some(change), Some(v)) = (change, v) {
            for limit in limits.iter().filter(|l| l.figure == figure) {
                if limit.passed(change) && v != Verdict::WithinNoise {
                    failures.push(format!(
                        "{} at {}: {} moved {}% against {}, past the limit {} and beyond {}.",
                        other.name,
                        load_text(&level_a.load),
                        figure.name(),
                        inferperf_wire::number::signed(change, 1),
                        base.name,
                        limit.text(),
                        test
                    ));
                }
            }
        }
        rows.push(Row {
            figure,
            a,
            b,
            change,
            noise: noise_sum,
            verdict: v,
        });
    }
    Matched {
        load: level_a.load,
        stability: match (level_a.stable, level_b.stable) {
            (true, true) => "",
            (false, true) => " (baseline not stable)",
            (true, false) => " (not stable)",
            (false, false) => " (neither stable)",
        },
        rows,
    }
}

/// A figure of two levels side by side: the values, the change, and the variation it is
/// judged against, named.
struct Judged {
    a: Option<f64>,
    b: Option<f64>,
    change: Option<f64>,
    noise: f64,
    /// How the verdict sentence names what the change was judged against.
    test: String,
}

/// With repeated runs on both sides, the means of the runs and Welch's interval of the
/// change; else the first run's values and the noise of each level's windows.
fn judge(
    (base, level_a): (&Run, &LevelRecord),
    (other, level_b): (&Run, &LevelRecord),
    figure: Figure,
) -> Judged {
    let repeated = (repeated_values(&base.file, &level_a.load, figure)).zip(repeated_values(
        &other.file,
        &level_b.load,
        figure,
    ));
    let level = (base.file.repetitions.as_ref()).map_or(0.95, |r| r.confidence_level);
    if let Some(test) = repeated.and_then(|(a, b)| super::run_to_run::welch(&a, &b, level)) {
        return Judged {
            a: Some(test.mean_a),
            b: Some(test.mean_b),
            change: Some(test.change()),
            noise: test.half_width,
            test: test.named(),
        };
    }
    let a = figure.value(&level_a.merged);
    let b = figure.value(&level_b.merged);
    let noise_a = noise(level_a, figure, base.file.settings.stability_percentage);
    let noise_b = noise(level_b, figure, other.file.settings.stability_percentage);
    let noise = noise_a + noise_b;
    Judged {
        a,
        b,
        change: match (a, b) {
            (Some(a), Some(b)) if a > 0.0 => Some((b - a) / a * 100.0),
            _ => None,
        },
        noise,
        test: format!("noise (±{}%)", inferperf_wire::number::fixed(noise, 1)),
    }
}

/// Each repeated run's value of `figure` at `load` (`None` without repetitions, or when
/// fewer than two runs measured it).
fn repeated_values(file: &ResultsFile, load: &LevelLoad, figure: Figure) -> Option<Vec<f64>> {
    let rep = file.repetitions.as_ref()?;
    let values: Vec<f64> = (rep.runs.iter())
        .filter_map(|run| {
            let level = run.levels.iter().find(|l| same_load(&l.load, load))?;
            figure.value(&level.merged)
        })
        .collect();
    (values.len() >= 2).then_some(values)
}

/// The run at `index` against the baseline, level by level.
fn pair(
    runs: &[Run],
    index: usize,
    figures: &[Figure],
    limits: &[Limit],
    failures: &mut Vec<String>,
) -> Pair {
    let (base, other) = (&runs[0], &runs[index]);
    let mut levels = Vec::new();
    let mut unmatched = Vec::new();
    for level_a in &base.file.levels {
        match other
            .file
            .levels
            .iter()
            .find(|l| same_load(&l.load, &level_a.load))
        {
            Some(level_b) => levels.push(matched(
                (base, level_a),
                (other, level_b),
                figures,
                limits,
                failures,
            )),
            None => unmatched.push(format!(
                "{} only in {}",
                load_text(&level_a.load),
                base.name
            )),
        }
    }
    for level_b in &other.file.levels {
        if !base
            .file
            .levels
            .iter()
            .any(|l| same_load(&l.load, &level_b.load))
        {
            unmatched.push(format!(
                "{} only in {}",
                load_text(&level_b.load),
                other.name
            ));
        }
    }
    Pair {
        run: index,
        levels,
        unmatched,
    }
}

/// Compares every run with the first.
pub fn compare(runs: &[Run], limits: &[Limit]) -> Comparison {
    let warnings = run_warnings(runs);
    let mut failures = Vec::new();
    let pairs: Vec<Pair> = match runs.first() {
        Some(base) => {
            let figures = figures(&base.file, limits);
            (1..runs.len())
                .map(|i| pair(runs, i, &figures, limits, &mut failures))
                .collect()
        }
        None => Vec::new(),
    };
    Comparison {
        pairs,
        warnings,
        failures,
        variation: variation_note(runs),
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;

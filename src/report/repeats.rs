//! The reports of repeated runs (`--num-profile-runs`): each figure of a level as AIPerf
//! names it (`request_latency_p99`…), taken from the run's AIPerf JSON; the console's
//! block of the headline figures with their intervals; and AIPerf's aggregate files,
//! `profile_export_aiperf_aggregate.json` and `.csv`.

use crate::measure::level::LevelResult;
use crate::results::{ConvergenceRecord, RepeatedLevel, Repetitions, Settings};

use super::llm::aiperf::{self, RunLabels, AIPERF_VERSION, CSV_STATS};
use super::llm::json::{object, Json};
use super::llm::{csv_row, python_float};

/// The layout version of AIPerf's aggregate JSON that this file follows.
const AGGREGATE_SCHEMA_VERSION: &str = "1.0";

/// A figure of one run: its name with its statistic, its unit and its value.
pub struct RunFigure {
    pub name: String,
    pub unit: String,
    pub value: f64,
}

/// Every figure of a level as AIPerf's JSON gives it, each statistic apart, in the JSON's
/// order: what AIPerf aggregates over its runs.
pub fn run_figures(settings: &Settings, r: &LevelResult) -> Vec<RunFigure> {
    let Json::Object(pairs) = aiperf::json(settings, r, &RunLabels::default()) else {
        return Vec::new();
    };
    let mut figures = Vec::new();
    for (tag, value) in &pairs {
        let Json::Object(stats) = value else {
            continue;
        };
        let Some(unit) = stats.iter().find_map(|(k, v)| match (k.as_str(), v) {
            ("unit", Json::Str(unit)) => Some(unit.clone()),
            _ => None,
        }) else {
            continue;
        };
        for (stat, v) in stats {
            let value = match v {
                Json::Float(x) => *x,
                Json::UInt(n) => *n as f64,
                _ => continue,
            };
            if CSV_STATS.contains(&stat.as_str()) {
                figures.push(RunFigure {
                    name: format!("{tag}_{stat}"),
                    unit: unit.clone(),
                    value,
                });
            }
        }
    }
    figures
}

/// The figures the console shows for a level, in this order, when measured.
pub const HEADLINE: [(&str, &str); 8] = [
    ("request_throughput_avg", "Request throughput"),
    ("request_latency_avg", "Request latency avg"),
    ("request_latency_p99", "Request latency p99"),
    ("time_to_first_token_avg", "Time to first token avg"),
    ("time_to_first_token_p99", "Time to first token p99"),
    ("inter_token_latency_avg", "Inter-token latency avg"),
    ("output_token_throughput_avg", "Output token throughput"),
    ("error_request_count_avg", "Errors"),
];

/// The console's block: per level, each headline figure's mean, its interval and how much
/// it varied from run to run.
pub fn block(rep: &Repetitions, describe_level: impl Fn(&RepeatedLevel) -> String) -> String {
    let measured = rep.runs.iter().filter(|r| r.measured > 0).count();
    let mut out = format!(
        "Over {measured} profile run(s) of {}: mean, {:.0}% confidence interval (Student t), run-to-run variation (cv)\n",
        rep.asked,
        rep.confidence_level * 100.0
    );
    for level in &rep.levels {
        out.push_str(&format!("  {}\n", describe_level(level)));
        for (name, title) in HEADLINE {
            let Some(f) = level.figures.get(name) else {
                continue;
            };
            let i = &f.interval;
            let spread = match (i.t_critical, i.cv) {
                (Some(_), Some(cv)) => {
                    format!("{:.2} to {:.2}, cv {:.2}%", i.ci_low, i.ci_high, cv * 100.0)
                }
                (Some(_), None) => format!("{:.2} to {:.2}", i.ci_low, i.ci_high),
                (None, _) => "one run: no interval".to_string(),
            };
            out.push_str(&format!(
                "    {title}: {:.2} {} ({spread}; {} runs)\n",
                i.mean, f.unit, i.n
            ));
        }
    }
    if let Some(c) = &rep.convergence {
        out.push_str(&format!("  {}\n", convergence_sentence(c)));
    }
    out
}

/// How the adaptive stop (`--convergence-metric`) ended, in one sentence.
pub fn convergence_sentence(c: &ConvergenceRecord) -> String {
    let figure = match c.mode.as_str() {
        "distribution" => format!("{} (Kolmogorov–Smirnov p-value)", c.metric),
        "cv" => format!("{} {} (cv)", c.metric, c.stat),
        _ => format!("{} {} (interval width / mean)", c.metric, c.stat),
    };
    let relation = if c.mode == "distribution" {
        "above"
    } else {
        "below"
    };
    match (c.converged, c.value, &c.note) {
        (_, _, Some(note)) => format!("Convergence was not judged: {note}."),
        (true, Some(v), _) => format!(
            "Converged: {figure} was {v:.4} after {} run(s), {relation} {}; the runs stopped there.",
            c.after_runs, c.threshold
        ),
        (false, Some(v), _) => format!(
            "Not converged: {figure} was {v:.4} after {} run(s), not {relation} {}.",
            c.after_runs, c.threshold
        ),
        (_, None, None) => format!(
            "Convergence was not judged: fewer than two of the {} run(s) measured {figure}.",
            c.after_runs
        ),
    }
}

/// The runs that measured something, and those that did not with why.
fn run_outcomes(rep: &Repetitions) -> (Vec<&str>, Vec<Json>) {
    let ok = (rep.runs.iter().filter(|r| r.measured > 0))
        .map(|r| r.label.as_str())
        .collect();
    let failed = (rep.runs.iter().filter(|r| r.measured == 0))
        .map(|r| {
            let error = r.error.as_deref().unwrap_or("nothing was measured");
            object([
                ("label", Json::from(r.label.as_str())),
                ("error", Json::from(error)),
            ])
        })
        .collect();
    (ok, failed)
}

/// AIPerf's `profile_export_aiperf_aggregate.json` of a level.
pub fn aggregate_json(rep: &Repetitions, level: &RepeatedLevel) -> Json {
    let (ok, failed) = run_outcomes(rep);
    let mut metadata = vec![
        ("aggregation_type".to_string(), Json::from("confidence")),
        ("num_profile_runs".into(), Json::from(rep.runs.len() as u64)),
        ("num_successful_runs".into(), Json::from(ok.len() as u64)),
        ("failed_runs".into(), Json::Array(failed)),
        ("confidence_level".into(), Json::from(rep.confidence_level)),
        (
            "run_labels".into(),
            Json::Array(ok.iter().map(|l| Json::from(*l)).collect()),
        ),
    ];
    metadata.push(("cooldown_seconds".into(), Json::from(rep.cooldown_s)));
    if ok.len() == 1 {
        metadata.push(("single_run".into(), Json::Bool(true)));
    }
    let metrics = (level.figures.iter()).map(|(name, f)| {
        let i = &f.interval;
        let mut stats = vec![
            ("mean", Json::from(i.mean)),
            ("std", Json::from(i.std)),
            ("min", Json::from(i.min)),
            ("max", Json::from(i.max)),
        ];
        // AIPerf leaves out what is not finite (a cv of a zero mean, a t of one run).
        stats.extend(i.cv.map(|cv| ("cv", Json::from(cv))));
        stats.push(("se", Json::from(i.se)));
        stats.push(("ci_low", Json::from(i.ci_low)));
        stats.push(("ci_high", Json::from(i.ci_high)));
        stats.extend(i.t_critical.map(|t| ("t_critical", Json::from(t))));
        stats.push(("unit", Json::from(f.unit.as_str())));
        (name.clone(), object(stats))
    });
    Json::Object(vec![
        (
            "schema_version".into(),
            Json::from(AGGREGATE_SCHEMA_VERSION),
        ),
        ("aiperf_version".into(), Json::from(AIPERF_VERSION)),
        ("metadata".into(), Json::Object(metadata)),
        ("metrics".into(), Json::Object(metrics.collect())),
    ])
}

/// AIPerf's `profile_export_aiperf_aggregate.csv` of a level: a row per figure, an empty
/// line, then the run's metadata.
pub fn aggregate_csv(rep: &Repetitions, level: &RepeatedLevel) -> String {
    let number = |x: Option<f64>, decimals: usize| match x {
        Some(x) if x.is_finite() => format!("{x:.decimals$}"),
        Some(x) if x.is_nan() => String::new(),
        Some(x) if x > 0.0 => "inf".to_string(),
        Some(_) => "-inf".to_string(),
        None => String::new(),
    };
    let mut out = csv_row(&[
        "metric",
        "mean",
        "std",
        "min",
        "max",
        "cv",
        "se",
        "ci_low",
        "ci_high",
        "t_critical",
        "unit",
    ]);
    for (name, f) in &level.figures {
        let i = &f.interval;
        out.push_str(&csv_row(&[
            name.clone(),
            number(Some(i.mean), 2),
            number(Some(i.std), 2),
            number(Some(i.min), 2),
            number(Some(i.max), 2),
            // AIPerf's cv of a zero mean is infinite.
            number(Some(i.cv.unwrap_or(f64::INFINITY)), 4),
            number(Some(i.se), 4),
            number(Some(i.ci_low), 2),
            number(Some(i.ci_high), 2),
            number(i.t_critical, 4),
            f.unit.clone(),
        ]));
    }
    out.push_str("\r\n");
    let (ok, _) = run_outcomes(rep);
    let labels: Vec<String> = ok.iter().map(|l| format!("'{l}'")).collect();
    let mut rows = vec![
        ("Aggregation Type", "confidence".to_string()),
        ("Total Runs", rep.runs.len().to_string()),
        ("Successful Runs", ok.len().to_string()),
        ("Confidence Level", rep.confidence_level.to_string()),
        ("Run Labels", format!("[{}]", labels.join(", "))),
        ("Cooldown Seconds", python_float(rep.cooldown_s)),
    ];
    if ok.len() == 1 {
        rows.push(("Single Run", "True".to_string()));
    }
    for (key, value) in rows {
        out.push_str(&csv_row(&[key.to_string(), value]));
    }
    out
}

//! AIPerf 0.13's files of `--slice-duration`: `profile_export_aiperf_timeslices.csv` (one
//! row per slice, metric and statistic: `Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value`,
//! metrics sorted by tag, numbers with two decimals) and
//! `profile_export_aiperf_timeslices.json` (`timeslices`, each slice's bounds in
//! nanoseconds since the Unix epoch, `is_complete: false` on a slice cut short, and every
//! metric as in `profile_export_aiperf.json`; then `input_config`). Each slice is a window
//! of the level, so its metrics are AIPerf's per-level ones over the requests that started
//! in it.

use std::time::Instant;

use crate::measure::level::LevelResult;
use crate::measure::request_log::WallClock;
use crate::measure::slices::{is_whole, SliceSet};
use crate::measure::window::WindowStats;
use crate::results::Settings;

use super::aiperf::{
    distribution_json, input_config, request_rows, stat_value, RunLabels, CSV_STATS,
};
use super::aiperf_level::level_metrics;
use super::csv_row;
use super::json::{object, Json};

/// A slice's bounds in nanoseconds since the Unix epoch, and whether it is whole.
struct Bounds {
    start_ns: u64,
    end_ns: u64,
    whole: bool,
}

/// Each slice's bounds, read on the wall clock.
fn bounds(set: &SliceSet) -> Vec<Bounds> {
    let clock = WallClock::now();
    let now = Instant::now();
    (set.windows.iter())
        .map(|w| {
            let (start, end) = w.bounds.unwrap_or((now, now));
            Bounds {
                start_ns: clock.epoch_ns(start),
                end_ns: clock.epoch_ns(end),
                whole: is_whole(w, set.width),
            }
        })
        .collect()
}

/// One metric of a slice as CSV rows: its header, unit, and each statistic.
struct Rows {
    tag: &'static str,
    header: &'static str,
    unit: &'static str,
    stats: Vec<(&'static str, f64)>,
}

/// The metrics of a slice, as rows (sorted by tag, as AIPerf's CSV).
fn metric_rows(settings: &Settings, w: &WindowStats) -> Vec<Rows> {
    let mut rows: Vec<Rows> = request_rows(settings, w)
        .into_iter()
        .map(|(m, stats)| Rows {
            tag: m.tag,
            header: m.header,
            unit: m.unit,
            stats: (CSV_STATS.iter())
                .map(|&stat| (stat, stat_value(&stats, stat)))
                .collect(),
        })
        .collect();
    rows.extend(level_metrics(w).into_iter().map(|m| Rows {
        tag: m.tag,
        header: m.header,
        unit: m.unit,
        stats: vec![("avg", m.value)],
    }));
    rows.sort_by_key(|r| r.tag);
    rows
}

/// `profile_export_aiperf_timeslices.csv` of the level's slices.
pub fn csv(settings: &Settings, r: &LevelResult) -> String {
    let mut out = csv_row(&[
        "Timeslice",
        "Start_NS",
        "End_NS",
        "Metric",
        "Unit",
        "Stat",
        "Value",
    ]);
    let slices = r.slices.windows.iter().zip(bounds(&r.slices));
    for (index, (w, b)) in slices.enumerate() {
        let place = [
            index.to_string(),
            b.start_ns.to_string(),
            b.end_ns.to_string(),
        ];
        for row in metric_rows(settings, w) {
            for (stat, value) in &row.stats {
                let mut cells = place.to_vec();
                cells.extend([row.header.into(), row.unit.into(), stat.to_string()]);
                cells.push(format!("{value:.2}"));
                out.push_str(&csv_row(&cells));
            }
        }
    }
    out
}

/// `profile_export_aiperf_timeslices.json` of the level's slices.
pub fn json(settings: &Settings, r: &LevelResult, labels: &RunLabels) -> Json {
    let slices = (r.slices.windows.iter().zip(bounds(&r.slices)))
        .map(|(w, b)| {
            let mut pairs = vec![
                ("start_ns".to_string(), Json::from(b.start_ns)),
                ("end_ns".to_string(), Json::from(b.end_ns)),
            ];
            if !b.whole {
                pairs.push(("is_complete".into(), Json::from(false)));
            }
            for (m, stats) in request_rows(settings, w) {
                pairs.push((m.tag.into(), distribution_json(m.unit, &stats)));
            }
            for m in level_metrics(w) {
                let value = object([("unit", Json::from(m.unit)), ("avg", Json::from(m.value))]);
                pairs.push((m.tag.into(), value));
            }
            Json::Object(pairs)
        })
        .collect();
    let counted_with = (r.merged.tokens.as_deref()).and_then(|t| t.counted_with.as_deref());
    object([
        ("timeslices", Json::Array(slices)),
        (
            "input_config",
            input_config(settings, r.level, labels, counted_with),
        ),
    ])
}

//! Each level's windows over time (throughput and latency per window, the merged ones
//! filled) so a reader sees why a level was or was not stable, and the per-second
//! timeline of a `--ramp` / `--load-steps` run.

use super::svg::{Chart, Line, XAxis, COLORS};
use super::{load_name, ms, pct};
use crate::results::{LevelRecord, TimelineRecord};

/// Two charts for a level: throughput per window and latency (p50, p99) per window.
pub fn level_windows(level: &LevelRecord) -> String {
    let at = |i: usize| {
        let w = &level.windows[i];
        w.end_s.unwrap_or((i + 1) as f64)
    };
    let n = level.windows.len();
    if n == 0 {
        return String::new();
    }
    let x0 = level.windows[0].start_s.unwrap_or(0.0);
    let x1 = at(n - 1);
    let name = load_name(level);
    let tput_max = level
        .windows
        .iter()
        .map(|w| w.throughput)
        .fold(0.0, f64::max);
    let mut t = Chart::new(
        &format!("Windows, {name}: throughput"),
        "time since start (s)",
        "infer/s",
        XAxis::Linear,
        (x0, x1),
        tput_max,
    );
    let lat_max = level
        .windows
        .iter()
        .filter_map(|w| pct(&w.latency, 99.0))
        .fold(0.0, f64::max);
    let mut l = Chart::new(
        &format!("Windows, {name}: latency"),
        "time since start (s)",
        "ms",
        XAxis::Linear,
        (x0, x1),
        ms(lat_max),
    );
    // The lines first, then the points on top of them: filled for the merged windows,
    // hollow for the others.
    let mut line = Vec::new();
    let mut points = Vec::new();
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for (i, w) in level.windows.iter().enumerate() {
        let merged = level.merged_windows.contains(&i);
        let tag = if merged { "merged" } else { "not merged" };
        let x = at(i);
        line.push((
            x,
            w.throughput,
            format!(
                "window {}: {} infer/s ({tag})",
                i + 1,
                inferperf_wire::number::fixed(w.throughput, 1)
            ),
        ));
        let tip = format!(
            "window {}: {} infer/s, {} errors ({tag})",
            i + 1,
            inferperf_wire::number::fixed(w.throughput, 1),
            w.failed
        );
        points.push((x, w.throughput, COLORS[0], merged, tip));
        for (p, list, color) in [(50.0, &mut p50, COLORS[2]), (99.0, &mut p99, COLORS[1])] {
            if let Some(v) = pct(&w.latency, p) {
                let tip = format!(
                    "window {}: p{p} {} ms ({tag})",
                    i + 1,
                    inferperf_wire::number::fixed(ms(v), 3)
                );
                list.push((x, ms(v), tip, color, merged));
            }
        }
    }
    t.path("throughput", Line::solid(COLORS[0]), &line);
    for (x, y, color, merged, tip) in points {
        t.point(x, y, color, !merged, &tip);
    }
    for (name, list, color) in [("p50", &p50, COLORS[2]), ("p99", &p99, COLORS[1])] {
        let pts: Vec<(f64, f64, String)> = list
            .iter()
            .map(|(x, y, tip, ..)| (*x, *y, tip.clone()))
            .collect();
        l.path(name, Line::solid(color), &pts);
    }
    for (x, y, tip, color, merged) in p50.iter().chain(&p99) {
        l.point(*x, *y, color, !merged, tip);
    }
    let mut out = t.finish();
    out.push_str(&l.finish());
    out
}

/// The per-second buckets of a timeline run: throughput against the plan's target, and
/// latency p50 / p99.
pub fn timeline(t: &TimelineRecord) -> String {
    if t.buckets.is_empty() {
        return "<p>No buckets recorded.</p>".to_string();
    }
    let x1 = t
        .buckets
        .iter()
        .map(|b| b.plan_offset_s + 1.0)
        .fold(1.0, f64::max);
    let y_max = t
        .buckets
        .iter()
        .map(|b| b.window.throughput.max(b.target))
        .fold(0.0, f64::max);
    let mut c = Chart::new(
        &format!("Timeline ({}): throughput per second", t.kind),
        "time since the plan's start (s)",
        "infer/s or target",
        XAxis::Linear,
        (0.0, x1),
        y_max,
    );
    let tput: Vec<(f64, f64, String)> = t
        .buckets
        .iter()
        .map(|b| {
            (
                b.plan_offset_s,
                b.window.throughput,
                format!(
                    "{} s: {} infer/s, {} errors",
                    inferperf_wire::number::fixed(b.plan_offset_s, 0),
                    inferperf_wire::number::fixed(b.window.throughput, 1),
                    b.window.failed
                ),
            )
        })
        .collect();
    let target: Vec<(f64, f64, String)> = t
        .buckets
        .iter()
        .map(|b| {
            (
                b.plan_offset_s,
                b.target,
                format!(
                    "{} s: target {}",
                    inferperf_wire::number::fixed(b.plan_offset_s, 0),
                    inferperf_wire::number::fixed(b.target, 1)
                ),
            )
        })
        .collect();
    c.series("throughput", COLORS[0], &tput);
    c.series("target", COLORS[3], &target);
    let lat_max = t
        .buckets
        .iter()
        .filter_map(|b| pct(&b.window.latency, 99.0))
        .fold(0.0, f64::max);
    let mut l = Chart::new(
        &format!("Timeline ({}): latency per second", t.kind),
        "time since the plan's start (s)",
        "ms",
        XAxis::Linear,
        (0.0, x1),
        ms(lat_max),
    );
    for (p, color) in [(50.0, COLORS[2]), (99.0, COLORS[1])] {
        let pts: Vec<(f64, f64, String)> = t
            .buckets
            .iter()
            .filter_map(|b| {
                let v = ms(pct(&b.window.latency, p)?);
                Some((
                    b.plan_offset_s,
                    v,
                    format!(
                        "{} s: p{p} {} ms",
                        inferperf_wire::number::fixed(b.plan_offset_s, 0),
                        inferperf_wire::number::fixed(v, 3)
                    ),
                ))
            })
            .collect();
        l.series(&format!("p{p}"), color, &pts);
    }
    let mut out = c.finish();
    out.push_str(&l.finish());
    out
}

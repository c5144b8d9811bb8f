//! The throughput–latency curve across levels (p50, p90, p99 and `--percentile`, the knee
//! marked) and each level's latency percentile plot on HdrHistogram's 1/(1−p) axis.

use super::svg::{Chart, XAxis, COLORS};
use super::{load_name, ms, pct};
use crate::results::ResultsFile;

/// The percentiles drawn on the curve: p50, p90, p99 and the run's `--percentile`.
fn curve_percentiles(file: &ResultsFile) -> Vec<f64> {
    let mut ps = vec![50.0, 90.0, 99.0];
    if let Some(p) = file.settings.percentile {
        if !ps.contains(&p) {
            ps.push(p);
        }
    }
    ps
}

/// Latency (ms) against throughput, a series per percentile.
pub fn curve(file: &ResultsFile) -> String {
    let ps = curve_percentiles(file);
    let x_max = file
        .levels
        .iter()
        .map(|l| l.merged.throughput)
        .fold(0.0, f64::max);
    let x_min = file
        .levels
        .iter()
        .map(|l| l.merged.throughput)
        .fold(f64::MAX, f64::min);
    // From 0 unless every level sits in a narrow band near the top (a saturated server).
    let x_min = if x_min > x_max * 0.5 {
        x_min * 0.95
    } else {
        0.0
    };
    let y_max = file
        .levels
        .iter()
        .flat_map(|l| ps.iter().filter_map(move |&p| pct(&l.merged.latency, p)))
        .fold(0.0, f64::max);
    let mut c = Chart::new(
        "Latency against throughput",
        "throughput (infer/s)",
        "latency (ms)",
        XAxis::Linear,
        (x_min, x_max * 1.05),
        ms(y_max),
    );
    for (k, &p) in ps.iter().enumerate() {
        let points: Vec<(f64, f64, String)> = file
            .levels
            .iter()
            .filter_map(|l| {
                let v = ms(pct(&l.merged.latency, p)?);
                let tip = format!(
                    "{}: {:.1} infer/s, p{p} {v:.3} ms{}",
                    load_name(l),
                    l.merged.throughput,
                    if l.stable { "" } else { " (unstable)" }
                );
                Some((l.merged.throughput, v, tip))
            })
            .collect();
        c.series(&format!("p{p}"), COLORS[k % COLORS.len()], &points);
    }
    if let Some(level) = file.knee.and_then(|i| file.levels.get(i)) {
        c.vline(
            level.merged.throughput,
            "#000",
            &format!("knee: {}", load_name(level)),
        );
    }
    c.finish()
}

/// One chart per level: latency against percentile, x on 1/(1−p).
pub fn percentile_plot(file: &ResultsFile) -> String {
    let mut out = String::new();
    for level in &file.levels {
        out.push_str(&level_percentiles(level));
    }
    out
}

/// The percentiles plotted: dense enough to draw the curve to p99.99.
const PLOTTED: [f64; 22] = [
    0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0, 92.5, 95.0, 97.0, 98.0,
    99.0, 99.5, 99.7, 99.9, 99.95, 99.99,
];

fn level_percentiles(level: &crate::results::LevelRecord) -> String {
    let d = &level.merged.latency;
    let rebuilt = d.distribution().ok();
    let count = d.count as f64;
    let points: Vec<(f64, f64, String)> = PLOTTED
        .iter()
        // A percentile past what the count resolves says nothing more than the max.
        .filter(|&&p| p == 0.0 || count * (1.0 - p / 100.0) >= 1.0)
        .filter_map(|&p| {
            let v = match (&rebuilt, p) {
                (_, 0.0) => d.min as f64,
                (Some(r), _) => r.percentile(p),
                (None, _) => d.percentiles.get(p)?,
            };
            v.is_finite()
                .then(|| (p, ms(v), format!("p{p}: {:.3} ms", ms(v))))
        })
        .collect();
    let top = points.last().map_or(99.0, |p| p.0.max(99.0));
    let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let mut c = Chart::new(
        &format!("Latency percentiles, {}", load_name(level)),
        "percentile (1/(1−p) scale)",
        "latency (ms)",
        XAxis::Percentile,
        (0.0, top),
        y_max,
    );
    c.series("latency", COLORS[0], &points);
    c.finish()
}

//! The throughput–latency curve across levels (p50, p90, p99 and `--percentile`, the knee
//! marked) and each level's latency percentile plot on HdrHistogram's 1/(1−p) axis. The
//! points and the charts are built here for one run and, through [`latency_chart`] and
//! [`percentile_chart`], for the overlays of `inferperf compare -o`.

use super::svg::{extent, Chart, Line, Points, Series, XAxis, COLORS};
use super::{load_name, ms, pct};
use crate::results::{LevelRecord, ResultsFile};

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

/// Percentile `p` of each level (ms) at its throughput; each tooltip starts with `prefix`.
pub fn curve_points(file: &ResultsFile, p: f64, prefix: &str) -> Points {
    file.levels
        .iter()
        .filter_map(|l| {
            let v = ms(pct(&l.merged.latency, p)?);
            let tip = format!(
                "{prefix}{}: {} infer/s, p{p} {} ms{}",
                load_name(l),
                inferperf_wire::number::fixed(l.merged.throughput, 1),
                inferperf_wire::number::fixed(v, 3),
                if l.stable { "" } else { " (unstable)" }
            );
            Some((l.merged.throughput, v, tip))
        })
        .collect()
}

/// Latency (ms) against throughput, the series drawn; x from 0 unless every point sits in
/// a narrow band near the top (a saturated server).
pub fn latency_chart(series: &[Series<'_>]) -> Chart {
    let (x_min, x_max, y_max) = extent(series).unwrap_or((0.0, 1.0, 1.0));
    let x_min = if x_min > x_max * 0.5 {
        x_min * 0.95
    } else {
        0.0
    };
    let mut c = Chart::new(
        "Latency against throughput",
        "throughput (infer/s)",
        "latency (ms)",
        XAxis::Linear,
        (x_min, x_max * 1.05),
        y_max,
    );
    c.draw(series);
    c
}

/// Latency (ms) against throughput, a series per percentile.
pub fn curve(file: &ResultsFile) -> String {
    let series: Vec<Series> = curve_percentiles(file)
        .iter()
        .enumerate()
        .map(|(k, &p)| Series {
            name: format!("p{p}"),
            style: Line::solid(COLORS[k % COLORS.len()]),
            points: curve_points(file, p, ""),
        })
        .collect();
    let mut c = latency_chart(&series);
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
        let series = [Series {
            name: "latency".into(),
            style: Line::solid(COLORS[0]),
            points: percentile_points(level, ""),
        }];
        out.push_str(&percentile_chart(
            &format!("Latency percentiles, {}", load_name(level)),
            &series,
        ));
    }
    out
}

/// The percentiles plotted: dense enough to draw the curve to p99.99.
const PLOTTED: [f64; 22] = [
    0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0, 92.5, 95.0, 97.0, 98.0,
    99.0, 99.5, 99.7, 99.9, 99.95, 99.99,
];

/// A level's latency (ms) at each plotted percentile its count resolves; each tooltip
/// starts with `prefix`.
pub fn percentile_points(level: &LevelRecord, prefix: &str) -> Points {
    let d = &level.merged.latency;
    let rebuilt = d.distribution().ok();
    let count = d.count as f64;
    PLOTTED
        .iter()
        // A percentile past what the count resolves says nothing more than the max.
        .filter(|&&p| p == 0.0 || count * (1.0 - p / 100.0) >= 1.0)
        .filter_map(|&p| {
            let v = match (&rebuilt, p) {
                (_, 0.0) => d.min as f64,
                (Some(r), _) => r.percentile(p),
                (None, _) => d.percentiles.get(p)?,
            };
            v.is_finite().then(|| {
                (
                    p,
                    ms(v),
                    format!(
                        "{prefix}p{p}: {} ms",
                        inferperf_wire::number::fixed(ms(v), 3)
                    ),
                )
            })
        })
        .collect()
}

/// Latency (ms) against percentile on the 1/(1−p) axis, to the highest percentile drawn
/// (at least p99).
pub fn percentile_chart(title: &str, series: &[Series<'_>]) -> String {
    let (_, top, y_max) = extent(series).unwrap_or((0.0, 99.0, 0.0));
    let mut c = Chart::new(
        title,
        "percentile (1/(1−p) scale)",
        "latency (ms)",
        XAxis::Percentile,
        (0.0, top.max(99.0)),
        y_max,
    );
    c.draw(series);
    c.finish()
}

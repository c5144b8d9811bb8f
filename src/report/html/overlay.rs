//! The charts of `inferperf compare -o`: several runs drawn over each other, a colour per
//! run — latency against throughput (p50 solid, p99 dashed), throughput and latency against
//! the load, the runs' Pareto curves (output tokens/s against tokens/s per user), and each
//! load's latency percentile distribution on HdrHistogram's 1/(1−p)
//! axis. The points and axes are the single-run report's ([`super::curve`],
//! [`super::extra`]); only the colouring by run is added here.

use std::fmt::Write;
use std::mem::discriminant;

use super::curve::{curve_points, latency_chart, percentile_chart, percentile_points};
use super::extra::per_level;
use super::server::{pareto_points, PARETO_TITLE, PARETO_X, PARETO_Y};
use super::svg::{esc, load_chart, Chart, Line, Points, Series};
use super::{load_axis, load_name, load_x, ms, pct};
use crate::report::compare::same_load;
use crate::results::{LevelLoad, LevelRecord, ResultsFile};

/// A run as the charts draw it: its label (legend and tooltips) and colour.
pub struct Drawn<'a> {
    pub label: &'a str,
    pub color: &'static str,
    pub file: &'a ResultsFile,
}

/// The most distribution charts drawn; past it, a spread of the loads is chosen.
const MAX_DISTRIBUTIONS: usize = 12;

/// The colour-neutral swatches that tell p50 from p99 in a legend.
const NEUTRAL: &str = "#555";

/// The two latency figures drawn per run, the second dashed.
const FIGURES: [(f64, bool); 2] = [(50.0, false), (99.0, true)];

fn style(run: &Drawn<'_>, dashed: bool) -> Line<'static> {
    Line {
        color: run.color,
        dashed,
        listed: false,
    }
}

/// The legend of an overlay: a solid line per run in its colour, then "p50" solid and
/// "p99" dashed in grey when both are drawn.
fn legend(chart: &mut Chart, runs: &[&Drawn<'_>], figures: bool) {
    for run in runs {
        chart.legend_line(run.label, run.color, false);
    }
    if figures {
        for (p, dashed) in FIGURES {
            chart.legend_line(&format!("p{p}"), NEUTRAL, dashed);
        }
    }
}

/// A series per run and latency figure (p50 solid, p99 dashed) from `points(run, p,
/// tooltip prefix)`.
fn per_figure<'a>(
    runs: &[&Drawn<'a>],
    points: impl Fn(&Drawn<'a>, f64, &str) -> Points,
) -> Vec<Series<'static>> {
    let mut series = Vec::new();
    for run in runs {
        let prefix = format!("{}, ", run.label);
        for (p, dashed) in FIGURES {
            series.push(Series {
                name: format!("{} p{p}", run.label),
                style: style(run, dashed),
                points: points(run, p, &prefix),
            });
        }
    }
    series
}

/// The runs whose levels ran the same kind of load as the first run's (concurrency or
/// request rate): only those share a load axis.
fn same_kind<'r, 'a>(runs: &'r [Drawn<'a>]) -> Vec<&'r Drawn<'a>> {
    let kind = runs
        .iter()
        .find_map(|r| r.file.levels.first())
        .map(|l| discriminant(&l.load));
    runs.iter()
        .filter(|r| {
            r.file
                .levels
                .first()
                .is_some_and(|l| Some(discriminant(&l.load)) == kind)
        })
        .collect()
}

/// Latency against throughput, throughput against the load, latency against the load.
pub fn curves(runs: &[Drawn<'_>]) -> String {
    let all: Vec<&Drawn> = runs.iter().collect();
    let mut out = String::from(
        "<h2>Throughput and latency</h2><p>A colour per run; p50 solid, p99 dashed. Hover a mark to see its numbers.</p><div class=\"charts\">",
    );
    let series = per_figure(&all, |run, p, prefix| curve_points(run.file, p, prefix));
    let mut c = latency_chart(&series);
    legend(&mut c, &all, true);
    out.push_str(&c.finish());

    let loaded = same_kind(runs);
    if let Some(first) = loaded.first() {
        let x_label = load_axis(first.file);
        let throughput: Vec<Series> = loaded
            .iter()
            .map(|run| Series {
                name: run.label.to_string(),
                style: style(run, false),
                points: per_level(
                    run.file,
                    |l| Some(l.merged.throughput),
                    "infer/s",
                    &format!("{}, ", run.label),
                ),
            })
            .collect();
        out.push_str(&with_legend(
            "Throughput against the load",
            x_label,
            "throughput (infer/s)",
            &throughput,
            &loaded,
            false,
        ));
        let latency = per_figure(&loaded, |run, p, prefix| {
            per_level(
                run.file,
                |l| pct(&l.merged.latency, p).map(ms),
                &format!("ms (p{p})"),
                prefix,
            )
        });
        out.push_str(&with_legend(
            "Latency against the load",
            x_label,
            "latency (ms)",
            &latency,
            &loaded,
            true,
        ));
    }
    out.push_str("</div>");
    if loaded.len() < runs.len() {
        let left: Vec<&str> = runs
            .iter()
            .filter(|r| !loaded.iter().any(|l| std::ptr::eq(*l, *r)))
            .map(|r| r.label)
            .collect();
        let _ = write!(
            out,
            "<p>Not against the load: {} (no levels, or another kind of load than {}).</p>",
            esc(&left.join(", ")),
            esc(loaded.first().map_or("the first run", |r| r.label))
        );
    }
    out
}

/// The runs' Pareto curves over each other (output tokens/s against tokens/s per user; per
/// GPU dashed where a run's telemetry counted its GPUs); nothing when no run has tokens.
pub fn pareto(runs: &[Drawn<'_>]) -> String {
    let mut series = Vec::new();
    for run in runs {
        let prefix = format!("{}, ", run.label);
        for (per_gpu, dashed) in [(false, false), (true, true)] {
            let points = pareto_points(run.file, per_gpu, &prefix);
            if !points.is_empty() {
                series.push(Series {
                    name: run.label.to_string(),
                    style: style(run, dashed),
                    points,
                });
            }
        }
    }
    if series.is_empty() {
        return String::new();
    }
    let mut c = load_chart(PARETO_TITLE, PARETO_X, PARETO_Y, &series);
    legend(&mut c, &runs.iter().collect::<Vec<_>>(), false);
    if series.iter().any(|s| s.style.dashed) {
        c.legend_line("all GPUs", NEUTRAL, false);
        c.legend_line("per GPU", NEUTRAL, true);
    }
    format!(
        "<h2>Output tokens/s against tokens/s per user</h2><p>The curve serving setups are compared on: further up and to the right is better. A colour per run.</p><div class=\"charts\">{}</div>",
        c.finish()
    )
}

/// A chart against the load with the overlay's legend.
fn with_legend(
    title: &str,
    x_label: &str,
    y: &str,
    series: &[Series<'_>],
    runs: &[&Drawn<'_>],
    figures: bool,
) -> String {
    let mut c = load_chart(title, x_label, y, series);
    legend(&mut c, runs, figures);
    c.finish()
}

/// The loads at least two runs measured, in ascending order.
fn shared_loads(runs: &[Drawn<'_>]) -> Vec<LevelLoad> {
    let mut loads: Vec<(f64, LevelLoad)> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for level in &run.file.levels {
            let elsewhere = runs
                .iter()
                .enumerate()
                .any(|(j, r)| j != i && find(r.file, &level.load).is_some());
            if elsewhere && !loads.iter().any(|(_, l)| same_load(l, &level.load)) {
                loads.push((load_x(level), level.load));
            }
        }
    }
    loads.sort_by(|a, b| a.0.total_cmp(&b.0));
    loads.into_iter().map(|(_, l)| l).collect()
}

fn find<'f>(file: &'f ResultsFile, load: &LevelLoad) -> Option<&'f LevelRecord> {
    file.levels.iter().find(|l| same_load(&l.load, load))
}

/// At most `max` of `n` indices, spread evenly, the first and the last among them.
fn spread(n: usize, max: usize) -> Vec<usize> {
    if n <= max || max < 2 {
        return (0..n.min(max)).collect();
    }
    let mut out: Vec<usize> = (0..max)
        .map(|k| (k * (n - 1) + (max - 1) / 2) / (max - 1))
        .collect();
    out.dedup();
    out
}

/// A percentile chart per load that two runs or more measured, each run's distribution
/// in its colour (at most [`MAX_DISTRIBUTIONS`] charts, spread across the loads).
pub fn distributions(runs: &[Drawn<'_>]) -> String {
    let loads = shared_loads(runs);
    let mut out = String::from("<h2>Latency distribution per level</h2>");
    if loads.is_empty() {
        out.push_str("<p>No load was measured by two runs.</p>");
        return out;
    }
    let chosen = spread(loads.len(), MAX_DISTRIBUTIONS);
    if chosen.len() < loads.len() {
        let _ = write!(
            out,
            "<p>{} of the {} loads the runs share, spread from the lowest to the highest.</p>",
            chosen.len(),
            loads.len()
        );
    }
    out.push_str("<div class=\"charts\">");
    for &i in &chosen {
        let mut title = None;
        let series: Vec<Series> = runs
            .iter()
            .filter_map(|run| {
                let level = find(run.file, &loads[i])?;
                let name = load_name(level);
                title.get_or_insert_with(|| format!("Latency percentiles, {name}"));
                Some(Series {
                    name: run.label.to_string(),
                    style: Line::solid(run.color),
                    points: percentile_points(level, &format!("{}, {name}, ", run.label)),
                })
            })
            .collect();
        out.push_str(&percentile_chart(
            title.as_deref().unwrap_or("Latency percentiles"),
            &series,
        ));
    }
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn a_spread_keeps_the_ends() {
        assert_eq!(spread(5, 12), vec![0, 1, 2, 3, 4]);
        let s = spread(20, 12);
        assert_eq!(s.len(), 12);
        assert_eq!((s[0], s[11]), (0, 19));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(spread(0, 12), Vec::<usize>::new());
    }
}

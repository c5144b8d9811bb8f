//! Reports of load over time (`--ramp`, `--load-steps`): a table with a line per second as
//! the run goes (target, sends, throughput, p50/p99, errors; with several `-u` servers a
//! line per server under each second's row), a closing summary, and with
//! `-f` a time-series CSV — one row per second, in time order, a layout of its own since a
//! bucket is not a stable level. Each column knows its titles and its cell, so console,
//! CSV header and rows cannot drift apart.

use std::path::Path;

use crate::measure::timeline::Bucket;
use crate::measure::window::WindowStats;
use crate::results::{LoadSettings, Settings};

use crate::report::format::{format_throughput, percentile_label, reported_percentiles, usec};

/// One column of the per-second report.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    Time,
    Target,
    /// Requests sent in the second (open loop only).
    Sent,
    Throughput,
    Errors,
    Percentile(f64),
    AvgLatency,
    /// Sends more than 1 ms late (open loop only).
    LateSends,
}

/// The columns of a run; `console` keeps the table narrow (p50 and p99 only).
fn columns(settings: &Settings, console: bool) -> Vec<Column> {
    let open = kind(settings) == TimelineKind::Rate;
    let mut columns = vec![Column::Time, Column::Target];
    if open {
        columns.push(Column::Sent);
    }
    columns.extend([Column::Throughput, Column::Errors]);
    let percentiles = if console {
        vec![50.0, 99.0]
    } else {
        reported_percentiles(settings)
    };
    columns.extend(percentiles.into_iter().map(Column::Percentile));
    if !console {
        columns.push(Column::AvgLatency);
    }
    if open {
        columns.push(Column::LateSends);
    }
    columns
}

/// Whether the plan is of a rate (open loop) or of a concurrency (closed loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimelineKind {
    Rate,
    Concurrency,
}

fn kind(settings: &Settings) -> TimelineKind {
    match &settings.load {
        LoadSettings::Timeline { kind, .. } if kind == "concurrency" => TimelineKind::Concurrency,
        _ => TimelineKind::Rate,
    }
}

impl Column {
    fn csv_title(self, kind: TimelineKind) -> String {
        match self {
            Column::Time => "Time (s)".into(),
            Column::Target => match kind {
                TimelineKind::Rate => "Target Request Rate".into(),
                TimelineKind::Concurrency => "Target Concurrency".into(),
            },
            Column::Sent => "Sent/Second".into(),
            Column::Throughput => "Inferences/Second".into(),
            Column::Errors => "Errors".into(),
            Column::Percentile(p) => percentile_label(p),
            Column::AvgLatency => "Avg latency".into(),
            Column::LateSends => "Late Sends".into(),
        }
    }

    /// Console title and width.
    fn console_title(self, kind: TimelineKind) -> (String, usize) {
        match self {
            Column::Time => ("Second".into(), 9),
            Column::Target => match kind {
                TimelineKind::Rate => ("Target req/s".into(), 12),
                TimelineKind::Concurrency => ("Concurrency".into(), 11),
            },
            Column::Sent => ("Sent/s".into(), 9),
            Column::Throughput => ("Infer/sec".into(), 11),
            Column::Errors => ("Errors".into(), 7),
            Column::Percentile(p) => (format!("p{p} usec"), 10),
            Column::AvgLatency => ("Avg usec".into(), 10),
            Column::LateSends => ("Late".into(), 7),
        }
    }

    fn csv_cell(self, b: &Bucket) -> String {
        let w = &b.stats;
        match self {
            Column::Time => format!("{}", b.start.as_secs_f64()),
            Column::Target => format_throughput(b.target),
            Column::Sent => w.sent.to_string(),
            Column::Throughput => format_throughput(w.throughput()),
            Column::Errors => w.error_count().to_string(),
            Column::Percentile(p) => usec(w.percentile_us(p)).to_string(),
            Column::AvgLatency => usec(w.mean_latency_us()).to_string(),
            Column::LateSends => w.late_sends.to_string(),
        }
    }

    fn console_cell(self, b: &Bucket) -> String {
        let w = &b.stats;
        match self {
            Column::Time => format!(
                "{}-{}",
                seconds(b.start.as_secs_f64()),
                seconds(b.end().as_secs_f64())
            ),
            Column::Target if b.after_end => "-".into(),
            Column::Sent => format_throughput(w.send_rate()),
            Column::LateSends => format!("{:.1}%", w.late_share() * 100.0),
            other => other.csv_cell(b),
        }
    }
}

/// `3`, `2.5`: a time in seconds without needless decimals.
fn seconds(value: f64) -> String {
    let rounded = (value * 1000.0).round() / 1000.0;
    format!("{rounded}")
}

fn pad_row(cells: &[(String, usize)]) -> String {
    let parts: Vec<String> = cells
        .iter()
        .map(|(text, width)| format!("{text:>width$}"))
        .collect();
    format!("  {}", parts.join(" "))
}

/// The lines before the first bucket: what the table holds, and its header.
pub fn timeline_header(settings: &Settings) -> String {
    let kind = kind(settings);
    let titles: Vec<(String, usize)> = columns(settings, true)
        .into_iter()
        .map(|c| c.console_title(kind))
        .collect();
    format!(
        "Load over time, per second (a request counts in the second its answer arrives; latency from the scheduled send):\n{}\n",
        pad_row(&titles)
    )
}

/// The table line of one bucket, and under it a line per server when there are several.
pub fn bucket_line(settings: &Settings, bucket: &Bucket) -> String {
    let kind = kind(settings);
    let cells: Vec<(String, usize)> = columns(settings, true)
        .into_iter()
        .map(|c| (c.console_cell(bucket), c.console_title(kind).1))
        .collect();
    let mut text = format!("{}\n", pad_row(&cells));
    for line in super::replicas::bucket_replica_lines(settings, &bucket.stats) {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// The totals after the table (`all`: every bucket merged): requests, errors, the busiest
/// and the slowest second, and a warning when the client fell behind its schedule.
pub fn timeline_summary(settings: &Settings, buckets: &[Bucket], all: &WindowStats) -> String {
    let span = buckets.last().map_or(0.0, |b| b.end().as_secs_f64());
    let mut lines = vec![format!(
        "Total: {} requests answered in {} s ({} ok, {} errors), throughput {} infer/sec, p99 latency {} usec",
        all.completed(),
        seconds(span),
        all.ok,
        all.error_count(),
        format_throughput(all.throughput()),
        usec(all.percentile_us(99.0))
    )];
    let peak = buckets
        .iter()
        .max_by(|a, b| a.stats.throughput().total_cmp(&b.stats.throughput()));
    let slowest = buckets.iter().max_by(|a, b| {
        a.stats
            .percentile_us(99.0)
            .total_cmp(&b.stats.percentile_us(99.0))
    });
    if let (Some(peak), Some(slowest)) = (peak, slowest) {
        lines.push(format!(
            "  Peak throughput {} infer/sec in second {}; highest p99 {} usec in second {}",
            format_throughput(peak.stats.throughput()),
            seconds(peak.start.as_secs_f64()),
            usec(slowest.stats.percentile_us(99.0)),
            seconds(slowest.start.as_secs_f64())
        ));
    }
    lines.extend(super::replicas::replica_lines(settings, all));
    if kind(settings) == TimelineKind::Rate {
        lines.extend(super::open_loop::keep_up_warning(settings, all));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// The time-series CSV: a header, then one row per second in time order.
pub fn timeline_csv(settings: &Settings, buckets: &[Bucket]) -> String {
    let kind = kind(settings);
    let columns = columns(settings, false);
    let header: Vec<String> = columns.iter().map(|c| c.csv_title(kind)).collect();
    let mut text = header.join(",");
    text.push('\n');
    for bucket in buckets {
        let cells: Vec<String> = columns.iter().map(|c| c.csv_cell(bucket)).collect();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    text
}

/// Writes [`timeline_csv`] to `path`.
pub fn write_timeline_csv(
    settings: &Settings,
    buckets: &[Bucket],
    path: &Path,
) -> std::io::Result<()> {
    std::fs::write(path, timeline_csv(settings, buckets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::distribution::Compaction;
    use crate::report::test_window;
    use std::time::Duration;

    fn config(args: &[&str]) -> Settings {
        let mut all = vec!["-m", "m"];
        all.extend_from_slice(args);
        crate::results::test_settings(&all)
    }

    fn bucket(second: u64, target: f64, latencies_us: &[u64]) -> Bucket {
        let mut stats = test_window(latencies_us, &[], 1.0);
        stats.sent = latencies_us.len() as u64;
        Bucket {
            start: Duration::from_secs(second),
            target,
            after_end: false,
            stats,
        }
    }

    #[test]
    fn the_csv_is_a_time_series() {
        let settings = config(&["--load-steps", "rate=2:1s,rate=3:1s"]);
        let csv = timeline_csv(
            &settings,
            &[
                bucket(0, 2.0, &[100, 300]),
                bucket(1, 3.0, &[200, 200, 200]),
            ],
        );
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "Time (s),Target Request Rate,Sent/Second,Inferences/Second,Errors,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,Late Sends"
        );
        assert_eq!(lines[1], "0,2,2,2,0,100,300,300,300,200,0");
        assert_eq!(lines[2], "1,3,3,3,0,200,200,200,200,200,0");
    }

    #[test]
    fn the_console_table_lines_up() {
        let settings = config(&["--ramp", "2s", "--concurrency-range", "1:2"]);
        let header = timeline_header(&settings);
        let titles = header.lines().nth(1).unwrap();
        assert!(titles.contains("Concurrency"), "{titles}");
        assert!(!titles.contains("Sent/s"), "closed loop has no send column");
        let line = bucket_line(&settings, &bucket(1, 2.0, &[100, 300]));
        assert_eq!(line.trim_end().len(), titles.len());
        assert!(line.trim_start().starts_with("1-2 "), "{line}");
        let mut buckets = vec![bucket(0, 1.0, &[100]), bucket(1, 2.0, &[100, 300])];
        let all = WindowStats::merged(buckets.iter().map(|b| &b.stats), 1);
        // Reported buckets keep only the percentiles the reports show.
        for b in &mut buckets {
            b.stats
                .compact(&Compaction::percentiles(&settings.kept_percentiles()));
        }
        let summary = timeline_summary(&settings, &buckets, &all);
        assert!(
            summary.starts_with("Total: 3 requests answered in 2 s (3 ok, 0 errors)"),
            "{summary}"
        );
        assert!(
            summary.contains("Peak throughput 2 infer/sec in second 1"),
            "{summary}"
        );
    }
}

//! The scraped server metrics of a level: perf_analyzer's `Server Prometheus Metrics` block
//! (per-GPU utilization, power and memory), the server process's CPU and memory, each
//! `--metric`, and the CSV cells for `--verbose-csv`.

use crate::measure::server::metrics::{MetricAggregation, MetricSpec, MetricsWindow, GPU_METRICS};
use crate::results::MetricsSettings;

/// perf_analyzer's titles of the four GPU metrics, in its column order, with their units.
pub const GPU_TITLES: [(&str, &str); 4] = [
    ("Avg GPU Utilization", "%"),
    ("Avg GPU Power Usage", " watts"),
    ("Max GPU Memory Usage", " bytes"),
    ("Total GPU Memory", " bytes"),
];

/// The console lines of a level's metrics (`specs`: the run's `--metric` specs).
pub fn metrics_lines(
    settings: &MetricsSettings,
    specs: &[MetricSpec],
    m: &MetricsWindow,
) -> Vec<String> {
    let mut lines = Vec::new();
    if settings.standard || !specs.is_empty() {
        lines.push("  Server Prometheus Metrics: ".to_string());
    }
    if settings.standard {
        lines.extend(gpu_lines(m));
        lines.extend(process_line(m));
    }
    for spec in specs {
        let value = m.value(&spec.text, spec.how);
        let text = value.map_or("not on the page".to_string(), number);
        let unit = if spec.how == MetricAggregation::Rate {
            "/s"
        } else {
            ""
        };
        lines.push(format!(
            "    {} ({}): {text}{unit}",
            spec.text,
            spec.how.label()
        ));
    }
    if m.failed_scrapes > 0 {
        lines.push(format!(
            "    [WARNING] {} of {} scrapes failed: {}",
            m.failed_scrapes,
            m.scrapes + m.failed_scrapes,
            m.last_error.as_deref().unwrap_or("unknown error")
        ));
    }
    lines
}

fn gpu_lines(m: &MetricsWindow) -> Vec<String> {
    let mut lines = Vec::new();
    for ((metric, how), (title, unit)) in GPU_METRICS.iter().zip(GPU_TITLES) {
        let per_gpu = m.per_gpu(metric, *how);
        if per_gpu.is_empty() {
            continue;
        }
        lines.push(format!("    {title}:"));
        for (uuid, value) in per_gpu {
            let shown = if unit == "%" { value * 100.0 } else { value };
            lines.push(format!("      {uuid} : {}{unit}", number(shown)));
        }
    }
    if lines.is_empty() {
        lines.push("    GPU: none on the page (no nv_gpu_* series)".to_string());
    }
    lines
}

/// The server process's CPU (cores used) and memory, from whichever series the page has.
fn process_line(m: &MetricsWindow) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(cores) = m.value("process_cpu_seconds_total", MetricAggregation::Rate) {
        parts.push(format!("{cores:.2} cores (process_cpu_seconds_total)"));
    }
    if let Some(util) = m.value("nv_cpu_utilization", MetricAggregation::Avg) {
        parts.push(format!(
            "{:.1}% of the machine (nv_cpu_utilization)",
            util * 100.0
        ));
    }
    let rss = m.value("process_resident_memory_bytes", MetricAggregation::Max);
    if let Some(bytes) = rss.or_else(|| m.value("nv_cpu_memory_used_bytes", MetricAggregation::Max))
    {
        parts.push(format!("memory {:.1} MiB (max)", bytes / 1_048_576.0));
    }
    (!parts.is_empty()).then(|| format!("    Server CPU: {}", parts.join(", ")))
}

/// A value without needless decimals: integers as integers, others with 3 significant
/// decimals at most.
pub fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else if value.abs() >= 1e15 {
        inferperf_wire::number::readable(value)
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// perf_analyzer's GPU cell: `uuid:value;` per GPU.
pub fn gpu_cell(m: Option<&MetricsWindow>, index: usize) -> String {
    let (metric, how) = GPU_METRICS[index];
    let Some(m) = m else {
        return String::new();
    };
    m.per_gpu(metric, how)
        .into_iter()
        .map(|(uuid, v)| format!("{uuid}:{};", number(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::server::metrics::SeriesStats;

    fn stats(values: &[f64]) -> SeriesStats {
        let mut s = SeriesStats {
            count: values.len() as u64,
            sum: values.iter().sum(),
            max: values.iter().cloned().fold(f64::MIN, f64::max),
            first: values[0],
            ..SeriesStats::default()
        };
        s.increase = 3.0;
        s.seconds = 2.0;
        s
    }

    fn window() -> MetricsWindow {
        let mut m = MetricsWindow::default();
        for (key, values) in [
            ("nv_gpu_utilization|GPU-1", vec![0.5, 0.7]),
            ("nv_gpu_power_usage|GPU-1", vec![70.0, 80.0]),
            ("nv_gpu_memory_used_bytes|GPU-1", vec![100.0, 300.0]),
            ("nv_gpu_memory_total_bytes|GPU-1", vec![1000.0, 1000.0]),
            ("process_cpu_seconds_total", vec![1.0, 2.0]),
            (
                "process_resident_memory_bytes",
                vec![1_048_576.0, 2_097_152.0],
            ),
            ("x:rate", vec![1.0, 4.0]),
        ] {
            m.series.insert(key.to_string(), stats(&values));
        }
        m.scrapes = 2;
        m
    }

    #[test]
    fn console_block_follows_perf_analyzer_and_adds_cpu_and_metrics() {
        let settings = MetricsSettings {
            url: String::new(),
            more_urls: Vec::new(),
            interval_ms: 1000,
            standard: true,
            metrics: vec!["x:rate".into(), "y".into()],
        };
        let specs: Vec<MetricSpec> = vec!["x:rate".parse().unwrap(), "y".parse().unwrap()];
        let lines = metrics_lines(&settings, &specs, &window());
        assert_eq!(lines[1], "    Avg GPU Utilization:");
        assert_eq!(lines[2], "      GPU-1 : 60%");
        assert_eq!(lines[4], "      GPU-1 : 75 watts");
        assert_eq!(lines[6], "      GPU-1 : 300 bytes");
        assert_eq!(lines[8], "      GPU-1 : 1000 bytes");
        assert_eq!(
            lines[9],
            "    Server CPU: 1.50 cores (process_cpu_seconds_total), memory 2.0 MiB (max)"
        );
        assert_eq!(lines[10], "    x:rate (rate): 1.5/s");
        assert_eq!(lines[11], "    y (avg): not on the page");
        assert_eq!(gpu_cell(Some(&window()), 0), "GPU-1:0.6;");
        assert_eq!(gpu_cell(Some(&window()), 3), "GPU-1:1000;");
    }
}

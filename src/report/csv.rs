//! The `-f` CSV file, column for column as perf_analyzer writes it, so that spreadsheets,
//! Model Analyzer-style tooling and plotting scripts built for perf_analyzer read it
//! unchanged. Each column is a [`Column`] that knows both its title and how to fill its cell,
//! so header and rows cannot drift apart and new columns are one variant each.

use std::path::Path;

use crate::config::{Config, MetricSpec};
use crate::measure::level::LevelResult;
use crate::measure::window::WindowStats;

use super::metrics::{gpu_cell, number, GPU_TITLES};

use super::format::{format_throughput, mode_column, percentile_label, reported_percentiles, usec};

/// The server-side breakdown columns, which perf_analyzer puts between `Client Send` and
/// `Client Recv` when the server reports statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerColumn {
    NetworkServerSendRecv,
    Queue,
    ComputeInput,
    ComputeInfer,
    ComputeOutput,
    CacheHit,
    CacheMiss,
}

impl ServerColumn {
    const ALL: [ServerColumn; 5] = [
        ServerColumn::NetworkServerSendRecv,
        ServerColumn::Queue,
        ServerColumn::ComputeInput,
        ServerColumn::ComputeInfer,
        ServerColumn::ComputeOutput,
    ];
    const CACHE: [ServerColumn; 2] = [ServerColumn::CacheHit, ServerColumn::CacheMiss];

    fn title(self) -> &'static str {
        match self {
            ServerColumn::NetworkServerSendRecv => "Network+Server Send/Recv",
            ServerColumn::Queue => "Server Queue",
            ServerColumn::ComputeInput => "Server Compute Input",
            ServerColumn::ComputeInfer => "Server Compute Infer",
            ServerColumn::ComputeOutput => "Server Compute Output",
            ServerColumn::CacheHit => "Server Cache Hit",
            ServerColumn::CacheMiss => "Server Cache Miss",
        }
    }
}

/// One CSV column.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    /// `Concurrency` or `Request Rate`.
    Level,
    Throughput,
    ClientSend,
    Server(ServerColumn),
    ClientRecv,
    Percentile(f64),
    /// `--verbose-csv` columns.
    AvgLatency,
    RequestResponse,
    ResponseWait,
    /// One of perf_analyzer's four GPU metrics (index into `GPU_METRICS`).
    Gpu(usize),
    /// A `--metric` (index into the metrics configuration's specs).
    Metric(usize),
}

impl Column {
    fn title(self, cfg: &Config, mode_column: &str) -> String {
        match self {
            Column::Level => mode_column.to_string(),
            Column::Throughput => "Inferences/Second".to_string(),
            Column::ClientSend => "Client Send".to_string(),
            Column::Server(s) => s.title().to_string(),
            Column::ClientRecv => "Client Recv".to_string(),
            Column::Percentile(p) => percentile_label(p),
            Column::AvgLatency => "Avg latency".to_string(),
            Column::RequestResponse => "request/response".to_string(),
            Column::ResponseWait => "response wait".to_string(),
            Column::Gpu(i) => GPU_TITLES[i].0.to_string(),
            Column::Metric(i) => metric_spec(cfg, i).map_or(String::new(), |m| m.text.clone()),
        }
    }

    /// The cell of this column for one level; times are integer µs, truncated.
    fn cell(self, cfg: &Config, r: &LevelResult) -> String {
        let w = &r.merged;
        match self {
            Column::Level => r.level.csv_value(),
            Column::Throughput => format_throughput(w.throughput()),
            Column::ClientSend => usec(w.avg_send_us()).to_string(),
            Column::Server(s) => server_cell(s, w),
            Column::ClientRecv => usec(w.avg_recv_us()).to_string(),
            Column::Percentile(p) => usec(w.percentile_us(p)).to_string(),
            Column::AvgLatency => usec(w.mean_latency_us()).to_string(),
            Column::RequestResponse => usec(w.avg_send_us() + w.avg_recv_us()).to_string(),
            Column::ResponseWait => usec(w.avg_wait_us()).to_string(),
            Column::Gpu(i) => gpu_cell(w.metrics.as_ref(), i),
            Column::Metric(i) => metric_cell(cfg, w, i),
        }
    }
}

fn metric_spec(cfg: &Config, index: usize) -> Option<&MetricSpec> {
    cfg.metrics.as_ref()?.specs.get(index)
}

fn metric_cell(cfg: &Config, w: &WindowStats, index: usize) -> String {
    let value =
        metric_spec(cfg, index).and_then(|spec| w.metrics.as_ref()?.value(&spec.text, spec.how));
    value.map_or(String::new(), number)
}

/// A server-side breakdown cell, in perf_analyzer's definitions: the per-request averages
/// of the statistics delta, and `Network+Server Send/Recv` as what the client waited beyond
/// its own send and receive that the server does not account for.
fn server_cell(column: ServerColumn, w: &WindowStats) -> String {
    let Some(server) = &w.server else {
        return String::new();
    };
    let b = server.breakdown();
    let value = match column {
        ServerColumn::NetworkServerSendRecv => {
            (w.mean_service_us() - w.avg_send_us() - w.avg_recv_us() - b.accounted()).max(0.0)
        }
        ServerColumn::Queue => b.queue,
        ServerColumn::ComputeInput => b.compute_input,
        ServerColumn::ComputeInfer => b.compute_infer,
        ServerColumn::ComputeOutput => b.compute_output,
        ServerColumn::CacheHit => b.cache_hit,
        ServerColumn::CacheMiss => b.cache_miss,
    };
    usec(value).to_string()
}

/// What the results hold that decides the optional columns.
#[derive(Debug, Clone, Copy, Default)]
struct Available {
    /// Every level has a server statistics delta.
    server: bool,
    /// Some level's model used the response cache.
    cache: bool,
}

impl Available {
    fn of(results: &[LevelResult]) -> Available {
        let servers: Vec<_> = results.iter().map(|r| r.merged.server.as_ref()).collect();
        let cache = servers
            .iter()
            .flatten()
            .any(|s| s.model.uses_cache() || s.composing.iter().any(|m| m.uses_cache()));
        Available {
            server: !servers.is_empty() && servers.iter().all(Option::is_some),
            cache,
        }
    }
}

/// The columns of a run, in perf_analyzer's order.
fn columns(cfg: &Config, available: Available) -> Vec<Column> {
    let mut columns = vec![Column::Level, Column::Throughput, Column::ClientSend];
    if available.server {
        columns.extend(ServerColumn::ALL.map(Column::Server));
        if available.cache {
            columns.extend(ServerColumn::CACHE.map(Column::Server));
        }
    }
    columns.push(Column::ClientRecv);
    columns.extend(
        reported_percentiles(cfg)
            .into_iter()
            .map(Column::Percentile),
    );
    if cfg.verbose_csv {
        columns.extend(verbose_columns(cfg));
    }
    columns
}

/// perf_analyzer's `--verbose-csv` columns, then one per `--metric`.
fn verbose_columns(cfg: &Config) -> Vec<Column> {
    let mut columns = Vec::new();
    if cfg.percentile.is_none() {
        columns.push(Column::AvgLatency);
    }
    columns.extend([Column::RequestResponse, Column::ResponseWait]);
    if let Some(metrics) = &cfg.metrics {
        if metrics.standard {
            columns.extend((0..GPU_TITLES.len()).map(Column::Gpu));
        }
        columns.extend((0..metrics.specs.len()).map(Column::Metric));
    }
    columns
}

/// The header line (no newline), e.g.
/// `Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency`.
pub fn csv_header(cfg: &Config, results: &[LevelResult]) -> String {
    header_for(
        cfg,
        &columns(cfg, Available::of(results)),
        mode_column(results),
    )
}

fn header_for(cfg: &Config, columns: &[Column], mode_column: &str) -> String {
    let titles: Vec<String> = columns
        .iter()
        .map(|c| csv_field(c.title(cfg, mode_column)))
        .collect();
    titles.join(",")
}

/// One line per level (no newlines), sorted by ascending throughput as perf_analyzer sorts
/// them. Every level is written, stable or not: the console report flags the unstable ones,
/// and dropping numbers silently would hide them.
pub fn csv_rows(cfg: &Config, results: &[LevelResult]) -> Vec<String> {
    let columns = columns(cfg, Available::of(results));
    let mut sorted: Vec<&LevelResult> = results.iter().collect();
    sorted.sort_by(|a, b| a.merged.throughput().total_cmp(&b.merged.throughput()));
    sorted
        .into_iter()
        .map(|r| row_for(cfg, &columns, r))
        .collect()
}

fn row_for(cfg: &Config, columns: &[Column], r: &LevelResult) -> String {
    let cells: Vec<String> = columns.iter().map(|c| c.cell(cfg, r)).collect();
    cells.join(",")
}

/// A field quoted as RFC 4180 asks when it holds a comma, quote or newline (a `--metric`
/// with labels); other fields stay bare, as perf_analyzer writes them.
fn csv_field(text: String) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// Writes the header and rows to `path`, one line each.
pub fn write_csv(cfg: &Config, results: &[LevelResult], path: &Path) -> std::io::Result<()> {
    let mut text = csv_header(cfg, results);
    text.push('\n');
    for row in csv_rows(cfg, results) {
        text.push_str(&row);
        text.push('\n');
    }
    std::fs::write(path, text)?;
    for (extra, text) in super::ensemble_csv::composing_csvs(results, path) {
        std::fs::write(extra, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoadLevel;
    use crate::measure::level::LevelEnd;
    use crate::report::{test_config, test_level};

    const DEFAULT_HEADER: &str = "Concurrency,Inferences/Second,Client Send,Client Recv,\
                                  p50 latency,p90 latency,p95 latency,p99 latency";

    #[test]
    fn header_matches_perf_analyzer_by_default() {
        assert_eq!(header(&test_config(), "Concurrency"), DEFAULT_HEADER);
        assert_eq!(
            header(&test_config(), "Request Rate"),
            DEFAULT_HEADER.replacen("Concurrency", "Request Rate", 1)
        );
    }

    #[test]
    fn header_with_percentile_95_has_no_duplicate() {
        let mut cfg = test_config();
        cfg.percentile = Some(95.0);
        assert_eq!(header(&cfg, "Concurrency"), DEFAULT_HEADER);
    }

    #[test]
    fn header_with_percentile_99_9_puts_it_last() {
        let mut cfg = test_config();
        cfg.percentile = Some(99.9);
        assert_eq!(
            header(&cfg, "Concurrency"),
            format!("{DEFAULT_HEADER},p99.9 latency")
        );
    }

    #[test]
    fn header_with_percentile_75_goes_between_p50_and_p90() {
        let mut cfg = test_config();
        cfg.percentile = Some(75.0);
        assert_eq!(
            header(&cfg, "Concurrency"),
            "Concurrency,Inferences/Second,Client Send,Client Recv,\
             p50 latency,p75 latency,p90 latency,p95 latency,p99 latency"
        );
    }

    fn header(cfg: &Config, mode: &str) -> String {
        header_for(cfg, &columns(cfg, Available::default()), mode)
    }

    fn level_with_server(cache: bool) -> LevelResult {
        use crate::measure::server_stats::{ModelCounters, ServerWindow, Timed};
        let mut level = test_level(
            LoadLevel::Concurrency(1),
            &[1000; 10],
            1.0,
            LevelEnd::Stable,
        );
        let timed = |us: u64| Timed {
            count: 10,
            ns: 10 * us * 1000,
        };
        level.merged.server = Some(ServerWindow {
            model: ModelCounters {
                name: "m".into(),
                success: timed(800),
                queue: timed(100),
                compute_input: timed(10),
                compute_infer: timed(600),
                compute_output: timed(20),
                cache_hit: if cache { timed(5) } else { Timed::default() },
                ..ModelCounters::default()
            },
            composing: Vec::new(),
        });
        level
    }

    #[test]
    fn server_columns_follow_perf_analyzer() {
        let cfg = test_config();
        let results = [level_with_server(false)];
        assert_eq!(
            csv_header(&cfg, &results),
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,\
             Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,\
             p50 latency,p90 latency,p95 latency,p99 latency"
        );
        // 1000 µs latency − 64 send − 16 receive − (100 queue + 630 compute) = 190.
        assert_eq!(
            csv_rows(&cfg, &results)[0],
            "1,10,64,190,100,10,600,20,16,1000,1000,1000,1000"
        );
        let cached = [level_with_server(true)];
        let header = csv_header(&cfg, &cached);
        assert!(
            header.contains("Server Compute Output,Server Cache Hit,Server Cache Miss,Client Recv"),
            "{header}"
        );
        assert!(csv_rows(&cfg, &cached)[0].starts_with("1,10,64,185,100,10,600,20,5,0,16,"));
        // A level without statistics drops the server columns for the whole file.
        let mixed = [
            level_with_server(false),
            test_level(LoadLevel::Concurrency(2), &[1000; 5], 1.0, LevelEnd::Stable),
        ];
        assert!(!csv_header(&cfg, &mixed).contains("Server Queue"));
    }

    #[test]
    fn verbose_csv_adds_perf_analyzer_columns_and_metrics() {
        let mut cfg = test_config();
        cfg.verbose_csv = true;
        cfg.metrics = Some(crate::config::MetricsConfig {
            url: String::new(),
            interval: std::time::Duration::from_secs(1),
            standard: true,
            specs: vec![
                "foo:max".parse().unwrap(),
                "foo{a=\"1\",b=\"2\"}".parse().unwrap(),
            ],
        });
        let mut level = test_level(
            LoadLevel::Concurrency(1),
            &[1000; 10],
            1.0,
            LevelEnd::Stable,
        );
        let mut metrics = crate::measure::metrics::MetricsWindow::default();
        let mut stat = crate::measure::metrics::SeriesStats {
            count: 1,
            sum: 0.5,
            max: 0.5,
            first: 0.5,
            ..Default::default()
        };
        metrics
            .series
            .insert("nv_gpu_utilization|GPU-0".into(), stat);
        stat.max = 7.0;
        metrics.series.insert("foo:max".into(), stat);
        level.merged.metrics = Some(metrics);
        let results = [level];
        assert_eq!(
            csv_header(&cfg, &results),
            format!("{DEFAULT_HEADER},Avg latency,request/response,response wait,Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory,foo:max,\"foo{{a=\"\"1\"\",b=\"\"2\"\"}}\"")
        );
        assert_eq!(
            csv_rows(&cfg, &results)[0],
            "1,10,64,16,1000,1000,1000,1000,1000,80,920,GPU-0:0.5;,,,,7,"
        );
    }

    #[test]
    fn rows_are_sorted_by_throughput_with_integer_usec() {
        let cfg = test_config();
        let results = [
            test_level(
                LoadLevel::Concurrency(1),
                &[2500; 30],
                1.0,
                LevelEnd::Stable,
            ),
            test_level(
                LoadLevel::Concurrency(2),
                &[1500; 10],
                1.0,
                LevelEnd::Stable,
            ),
            test_level(
                LoadLevel::Concurrency(3),
                &[3500; 3],
                2.0,
                LevelEnd::Unstable,
            ),
        ];
        let rows = csv_rows(&cfg, &results);
        assert_eq!(rows.len(), 3);
        assert!(rows[0].starts_with("3,1.5,64,16,350"), "{}", rows[0]);
        assert!(rows[1].starts_with("2,10,64,16,150"), "{}", rows[1]);
        assert!(rows[2].starts_with("1,30,64,16,250"), "{}", rows[2]);
        for row in &rows {
            assert_eq!(row.split(',').count(), 8);
        }
    }

    #[test]
    fn write_csv_writes_header_and_rows() {
        let cfg = test_config();
        let results = [test_level(
            LoadLevel::Rate(12.5),
            &[1000; 5],
            1.0,
            LevelEnd::Stable,
        )];
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out.csv");
        write_csv(&cfg, &results, &path).expect("write csv");
        let text = std::fs::read_to_string(&path).expect("read csv");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("Request Rate,Inferences/Second,"));
        assert!(lines[1].starts_with("12.5,5,64,16,1000,"), "{}", lines[1]);
        assert!(text.ends_with('\n'));
    }
}

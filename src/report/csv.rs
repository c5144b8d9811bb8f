//! The `-f` CSV file, column for column as perf_analyzer writes it, so that spreadsheets,
//! Model Analyzer-style tooling and plotting scripts built for perf_analyzer read it
//! unchanged. Each column is a [`Column`] that knows both its title and how to fill its cell,
//! so header and rows cannot drift apart and new columns are one variant each.

use std::path::{Path, PathBuf};

use crate::measure::level::LevelResult;
use crate::measure::server::metrics::MetricSpec;
use crate::measure::window::WindowStats;
use crate::results::Settings;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::ModelSpec;

use super::answers::{responses_cell, stream_time_cell, CSV_STREAM_PERCENTILES};
use super::server_figures::server_figures;

use super::metrics::{gpu_cell, number, GPU_TITLES};

use super::format::{format_throughput, mode_column, percentile_label, reported_percentiles, usec};
use super::{Entry, Measured, Reporter, Run};

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
    /// perf_analyzer's `Response Throughput`, for a decoupled model.
    ResponseThroughput,
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
    /// Streaming runs: first-response and inter-response latency at a percentile, in µs,
    /// and answers per request.
    FirstResponse(f64),
    InterResponse(f64),
    ResponsesPerRequest,
    /// Requests cancelled on purpose (`--request-cancellation-rate`).
    Cancelled,
    /// An engine or GPU figure (`--server-metrics`, `--gpu-telemetry`; index into the
    /// level's [`server_figures`]).
    ServerFigure(usize),
}

impl Column {
    fn title(self, settings: &Settings, mode_column: &str, named: &[String]) -> String {
        match self {
            Column::ServerFigure(i) => named.get(i).cloned().unwrap_or_default(),
            Column::Level => mode_column.to_string(),
            Column::Throughput => "Inferences/Second".to_string(),
            Column::ResponseThroughput => "Response Throughput".to_string(),
            Column::ClientSend => "Client Send".to_string(),
            Column::Server(s) => s.title().to_string(),
            Column::ClientRecv => "Client Recv".to_string(),
            Column::Percentile(p) => percentile_label(p),
            Column::AvgLatency => "Avg latency".to_string(),
            Column::RequestResponse => "request/response".to_string(),
            Column::ResponseWait => "response wait".to_string(),
            Column::Gpu(i) => GPU_TITLES[i].0.to_string(),
            Column::Metric(i) => metric_spec(settings, i).map_or(String::new(), |m| m.text),
            Column::FirstResponse(p) => format!("p{p} first response latency"),
            Column::InterResponse(p) => format!("p{p} inter-response latency"),
            Column::ResponsesPerRequest => "Responses per request".to_string(),
            Column::Cancelled => "Cancelled".to_string(),
        }
    }

    /// The cell of this column for one level; times are integer µs, truncated.
    fn cell(self, settings: &Settings, r: &LevelResult) -> String {
        let w = &r.merged;
        match self {
            Column::Level => r.level.csv_value(),
            Column::Throughput => format_throughput(w.throughput()),
            Column::ResponseThroughput => format_throughput(w.response_throughput()),
            Column::ClientSend => usec(w.avg_send_us()).to_string(),
            Column::Server(s) => server_cell(s, w),
            Column::ClientRecv => usec(w.avg_recv_us()).to_string(),
            Column::Percentile(p) => usec(w.percentile_us(p)).to_string(),
            Column::AvgLatency => usec(w.mean_latency_us()).to_string(),
            Column::RequestResponse => usec(w.avg_send_us() + w.avg_recv_us()).to_string(),
            Column::ResponseWait => usec(w.avg_wait_us()).to_string(),
            Column::Gpu(i) => gpu_cell(w.metrics.as_ref(), i),
            Column::Metric(i) => metric_cell(settings, w, i),
            Column::FirstResponse(p) => stream_time_cell(&w.first_response, p),
            Column::InterResponse(p) => stream_time_cell(&w.inter_response, p),
            Column::ResponsesPerRequest => responses_cell(w),
            Column::Cancelled => w.cancelled.to_string(),
            Column::ServerFigure(i) => (server_figures(w).get(i))
                .and_then(|f| f.value)
                .map_or(String::new(), number),
        }
    }
}

fn metric_spec(settings: &Settings, index: usize) -> Option<MetricSpec> {
    settings.metric_specs().into_iter().nth(index)
}

fn metric_cell(settings: &Settings, w: &WindowStats, index: usize) -> String {
    let value = metric_spec(settings, index)
        .and_then(|spec| w.metrics.as_ref()?.value(&spec.text, spec.how));
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
    /// The model is decoupled (perf_analyzer's `Response Throughput` column).
    decoupled: bool,
    /// Requests went over a stream (the streaming columns at the end).
    streaming: bool,
    /// Cancellation was asked, or some level has cancelled requests (the last column).
    cancelled: bool,
    /// The engine and GPU figures of the level that has the most (columns after the rest).
    server_figures: usize,
}

impl Available {
    fn of(settings: &Settings, model: &ModelSpec, results: &[LevelResult]) -> Available {
        let servers: Vec<_> = results.iter().map(|r| r.merged.server.as_ref()).collect();
        let cache = servers
            .iter()
            .flatten()
            .any(|s| s.model.uses_cache() || s.composing.iter().any(|m| m.uses_cache()));
        Available {
            server: !servers.is_empty() && servers.iter().all(Option::is_some),
            cache,
            decoupled: model.decoupled,
            streaming: settings.streaming,
            cancelled: settings.request_cancellation.is_some()
                || results.iter().any(|r| r.merged.cancelled > 0),
            server_figures: server_figure_titles(results).len(),
        }
    }
}

/// The columns of a run, in perf_analyzer's order.
fn columns(settings: &Settings, available: Available) -> Vec<Column> {
    let mut columns = vec![Column::Level, Column::Throughput];
    if available.decoupled {
        columns.push(Column::ResponseThroughput);
    }
    columns.push(Column::ClientSend);
    if available.server {
        columns.extend(ServerColumn::ALL.map(Column::Server));
        if available.cache {
            columns.extend(ServerColumn::CACHE.map(Column::Server));
        }
    }
    columns.push(Column::ClientRecv);
    columns.extend(
        reported_percentiles(settings)
            .into_iter()
            .map(Column::Percentile),
    );
    if settings.outputs.verbose_csv {
        columns.extend(verbose_columns(settings));
    }
    if available.streaming {
        columns.extend(CSV_STREAM_PERCENTILES.map(Column::FirstResponse));
        columns.extend(CSV_STREAM_PERCENTILES.map(Column::InterResponse));
        columns.push(Column::ResponsesPerRequest);
    }
    if available.cancelled {
        columns.push(Column::Cancelled);
    }
    columns.extend((0..available.server_figures).map(Column::ServerFigure));
    columns
}

/// The titles of the engine and GPU figures, with their units, from the level that has the
/// most (every level of a run scrapes the same pages).
fn server_figure_titles(results: &[LevelResult]) -> Vec<String> {
    (results.iter())
        .map(|r| server_figures(&r.merged))
        .max_by_key(Vec::len)
        .unwrap_or_default()
        .into_iter()
        .map(|f| format!("{} ({})", f.name, f.unit))
        .collect()
}

/// perf_analyzer's `--verbose-csv` columns, then one per `--metric`.
fn verbose_columns(settings: &Settings) -> Vec<Column> {
    let mut columns = Vec::new();
    if settings.percentile.is_none() {
        columns.push(Column::AvgLatency);
    }
    columns.extend([Column::RequestResponse, Column::ResponseWait]);
    if let Some(metrics) = &settings.metrics {
        if metrics.standard {
            columns.extend((0..GPU_TITLES.len()).map(Column::Gpu));
        }
        columns.extend((0..settings.metric_specs().len()).map(Column::Metric));
    }
    columns
}

/// The header line (no newline), e.g.
/// `Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency`.
pub fn csv_header(settings: &Settings, model: &ModelSpec, results: &[LevelResult]) -> String {
    let available = Available::of(settings, model, results);
    let named = server_figure_titles(results);
    header_for(
        settings,
        &columns(settings, available),
        mode_column(results),
        &named,
    )
}

fn header_for(
    settings: &Settings,
    columns: &[Column],
    mode_column: &str,
    named: &[String],
) -> String {
    let titles: Vec<String> = columns
        .iter()
        .map(|c| csv_field(c.title(settings, mode_column, named)))
        .collect();
    titles.join(",")
}

/// One line per level (no newlines), sorted by ascending throughput as perf_analyzer sorts
/// them. Every level is written, stable or not: the console report flags the unstable ones,
/// and dropping numbers silently would hide them.
pub fn csv_rows(settings: &Settings, model: &ModelSpec, results: &[LevelResult]) -> Vec<String> {
    let columns = columns(settings, Available::of(settings, model, results));
    let mut sorted: Vec<&LevelResult> = results.iter().collect();
    sorted.sort_by(|a, b| a.merged.throughput().total_cmp(&b.merged.throughput()));
    sorted
        .into_iter()
        .map(|r| row_for(settings, &columns, r))
        .collect()
}

fn row_for(settings: &Settings, columns: &[Column], r: &LevelResult) -> String {
    let cells: Vec<String> = columns.iter().map(|c| c.cell(settings, r)).collect();
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

/// Checks before the run that `path` can be written, so that a run is never measured only
/// to lose its CSV: a missing file is created and removed again, an existing one is opened
/// for appending and left as it was.
pub fn probe(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::other("it is a folder"));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Writes the header and rows to `path`, one line each.
pub fn write_csv(
    settings: &Settings,
    model: &ModelSpec,
    results: &[LevelResult],
    path: &Path,
) -> std::io::Result<()> {
    let mut text = csv_header(settings, model, results);
    text.push('\n');
    for row in csv_rows(settings, model, results) {
        text.push_str(&row);
        text.push('\n');
    }
    std::fs::write(path, text)
}

/// One sentence for a CSV that could not be written at the end of the run.
pub fn write_error(path: &Path, e: &std::io::Error) -> RunError {
    RunError::failed(format!(
        "Cannot write the CSV report to {}: {e}.",
        path.display()
    ))
}

/// Checks before the run that `path` can be written; the refusal names the flag.
pub fn probe_flag(flag: &str, path: &Path) -> RunResult<()> {
    probe(path).map_err(|e| {
        RunError::bad_option(format!(
            "{flag} {} cannot be written: {e}. Choose a file in a folder that exists and can be written.",
            path.display()
        ))
    })
}

pub const REPORT: Entry = Entry {
    name: "CSV",
    is_on: |settings, _| !settings.csv_files.is_empty(),
    open,
};

fn open(settings: &Settings) -> RunResult<Box<dyn Reporter>> {
    let paths: Vec<PathBuf> = settings.csv_files.iter().map(PathBuf::from).collect();
    for path in &paths {
        probe_flag("-f", path)?;
    }
    Ok(Box::new(Csv { paths }))
}

/// `-f FILE` (and `DIR/results.csv` with `--report-dir DIR`): perf_analyzer's CSV of the
/// levels, or the time series of a `--ramp` / `--load-steps` run, written at the end.
struct Csv {
    paths: Vec<PathBuf>,
}

impl Reporter for Csv {
    fn finish(&mut self, run: &Run<'_>, measured: &Measured<'_>) -> RunResult<()> {
        let s = run.settings();
        for path in &self.paths {
            let written = match measured {
                Measured::Levels(levels) if !levels.is_empty() => {
                    write_csv(s, run.model, levels, path)
                }
                Measured::Timeline { buckets, .. } if !buckets.is_empty() => {
                    super::write_timeline_csv(s, buckets, path)
                }
                _ => Ok(()),
            };
            written.map_err(|e| write_error(path, &e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "csv_tests.rs"]
mod tests;

//! The `-f` CSV file, column for column as perf_analyzer writes it, so that spreadsheets,
//! Model Analyzer-style tooling and plotting scripts built for perf_analyzer read it
//! unchanged. Each column is a [`Column`] that knows both its title and how to fill its cell,
//! so header and rows cannot drift apart and new columns are one variant each.

use std::path::Path;

use crate::config::Config;
use crate::measure::level::{LevelResult, LoadLevel};

use super::format::{format_throughput, percentile_label, reported_percentiles, usec};

/// The server-side breakdown columns, which perf_analyzer puts between `Client Send` and
/// `Client Recv` when the server reports statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerColumn {
    NetworkServerSendRecv,
    Queue,
    ComputeInput,
    ComputeInfer,
    ComputeOutput,
}

impl ServerColumn {
    const ALL: [ServerColumn; 5] = [
        ServerColumn::NetworkServerSendRecv,
        ServerColumn::Queue,
        ServerColumn::ComputeInput,
        ServerColumn::ComputeInfer,
        ServerColumn::ComputeOutput,
    ];

    fn title(self) -> &'static str {
        match self {
            ServerColumn::NetworkServerSendRecv => "Network+Server Send/Recv",
            ServerColumn::Queue => "Server Queue",
            ServerColumn::ComputeInput => "Server Compute Input",
            ServerColumn::ComputeInfer => "Server Compute Infer",
            ServerColumn::ComputeOutput => "Server Compute Output",
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
}

impl Column {
    fn title(self, mode_column: &str) -> String {
        match self {
            Column::Level => mode_column.to_string(),
            Column::Throughput => "Inferences/Second".to_string(),
            Column::ClientSend => "Client Send".to_string(),
            Column::Server(s) => s.title().to_string(),
            Column::ClientRecv => "Client Recv".to_string(),
            Column::Percentile(p) => percentile_label(p),
        }
    }

    /// The cell of this column for one level; times are integer µs, truncated.
    fn cell(self, r: &LevelResult) -> String {
        let w = &r.merged;
        match self {
            Column::Level => r.level.csv_value(),
            Column::Throughput => format_throughput(w.throughput()),
            Column::ClientSend => usec(w.avg_send_us()).to_string(),
            Column::Server(s) => server_cell(s, r),
            Column::ClientRecv => usec(w.avg_recv_us()).to_string(),
            Column::Percentile(p) => usec(w.percentile_us(p)).to_string(),
        }
    }
}

/// Hook for the server-side breakdown. [`LevelResult`] does not carry server statistics
/// yet, so nothing asks for these columns (`columns(cfg, false)` everywhere) and this cell
/// is left empty rather than a made-up 0. When the statistics delta lands, set the flag from
/// whether every level has one and fill the value here.
fn server_cell(_column: ServerColumn, _r: &LevelResult) -> String {
    String::new()
}

/// The columns of a run, in perf_analyzer's order; `with_server` adds the server breakdown.
fn columns(cfg: &Config, with_server: bool) -> Vec<Column> {
    let mut columns = vec![Column::Level, Column::Throughput, Column::ClientSend];
    if with_server {
        columns.extend(ServerColumn::ALL.map(Column::Server));
    }
    columns.push(Column::ClientRecv);
    columns.extend(
        reported_percentiles(cfg)
            .into_iter()
            .map(Column::Percentile),
    );
    columns
}

/// Whether server statistics are available for the CSV (see [`server_cell`]).
const WITH_SERVER_COLUMNS: bool = false;

/// The name of the first column for these results: `Concurrency` when the run swept
/// concurrency, `Request Rate` for every other mode (as perf_analyzer names it).
pub fn mode_column(results: &[LevelResult]) -> &'static str {
    match results.first().map(|r| r.level) {
        Some(LoadLevel::Rate(_)) => "Request Rate",
        _ => "Concurrency",
    }
}

/// The header line (no newline), e.g.
/// `Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency`.
pub fn csv_header(cfg: &Config, mode_column: &str) -> String {
    header_for(&columns(cfg, WITH_SERVER_COLUMNS), mode_column)
}

fn header_for(columns: &[Column], mode_column: &str) -> String {
    let titles: Vec<String> = columns.iter().map(|c| c.title(mode_column)).collect();
    titles.join(",")
}

/// One line per level (no newlines), sorted by ascending throughput as perf_analyzer sorts
/// them. Every level is written, stable or not: the console report flags the unstable ones,
/// and dropping numbers silently would hide them.
pub fn csv_rows(cfg: &Config, results: &[LevelResult]) -> Vec<String> {
    let columns = columns(cfg, WITH_SERVER_COLUMNS);
    let mut sorted: Vec<&LevelResult> = results.iter().collect();
    sorted.sort_by(|a, b| a.merged.throughput().total_cmp(&b.merged.throughput()));
    sorted.into_iter().map(|r| row_for(&columns, r)).collect()
}

fn row_for(columns: &[Column], r: &LevelResult) -> String {
    let cells: Vec<String> = columns.iter().map(|c| c.cell(r)).collect();
    cells.join(",")
}

/// Writes the header and rows to `path`, one line each.
pub fn write_csv(cfg: &Config, results: &[LevelResult], path: &Path) -> std::io::Result<()> {
    let mut text = csv_header(cfg, mode_column(results));
    text.push('\n');
    for row in csv_rows(cfg, results) {
        text.push_str(&row);
        text.push('\n');
    }
    std::fs::write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::level::LevelEnd;
    use crate::report::{test_config, test_level};

    const DEFAULT_HEADER: &str = "Concurrency,Inferences/Second,Client Send,Client Recv,\
                                  p50 latency,p90 latency,p95 latency,p99 latency";

    #[test]
    fn header_matches_perf_analyzer_by_default() {
        assert_eq!(csv_header(&test_config(), "Concurrency"), DEFAULT_HEADER);
        assert_eq!(
            csv_header(&test_config(), "Request Rate"),
            DEFAULT_HEADER.replacen("Concurrency", "Request Rate", 1)
        );
    }

    #[test]
    fn header_with_percentile_95_has_no_duplicate() {
        let mut cfg = test_config();
        cfg.percentile = Some(95.0);
        assert_eq!(csv_header(&cfg, "Concurrency"), DEFAULT_HEADER);
    }

    #[test]
    fn header_with_percentile_99_9_puts_it_last() {
        let mut cfg = test_config();
        cfg.percentile = Some(99.9);
        assert_eq!(
            csv_header(&cfg, "Concurrency"),
            format!("{DEFAULT_HEADER},p99.9 latency")
        );
    }

    #[test]
    fn header_with_percentile_75_goes_between_p50_and_p90() {
        let mut cfg = test_config();
        cfg.percentile = Some(75.0);
        assert_eq!(
            csv_header(&cfg, "Concurrency"),
            "Concurrency,Inferences/Second,Client Send,Client Recv,\
             p50 latency,p75 latency,p90 latency,p95 latency,p99 latency"
        );
    }

    #[test]
    fn server_columns_hook_gives_perf_analyzer_layout() {
        let header = header_for(&columns(&test_config(), true), "Concurrency");
        assert_eq!(
            header,
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,\
             Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,\
             p50 latency,p90 latency,p95 latency,p99 latency"
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

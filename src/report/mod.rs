//! Reports: turn measured load levels into what people read. The console report and the CSV
//! follow perf_analyzer's layout so that existing scripts and habits keep working; both take
//! only the validated [`Config`](crate::config::Config) and the
//! [`LevelResult`](crate::measure::level::LevelResult)s, and never measure anything.

pub mod console;
pub mod csv;
pub mod format;

pub use console::{level_block, settings_block, summary_block};
pub use csv::{csv_header, csv_rows, mode_column, write_csv};

#[cfg(test)]
use crate::config::Config;
#[cfg(test)]
use crate::measure::level::{LevelEnd, LevelResult, LoadLevel};
#[cfg(test)]
use crate::measure::sample::ErrorKind;

/// perf_analyzer's defaults, as `Config::from_args` would build them for `-m test`.
#[cfg(test)]
fn test_config() -> Config {
    use crate::config::{ConcurrencyRange, InputData, MeasurementMode, Protocol, TensorFormat};
    use std::time::Duration;
    Config {
        model_name: "test".to_string(),
        model_version: String::new(),
        url: "localhost:8000".to_string(),
        protocol: Protocol::Http,
        batch_size: 1,
        concurrency: ConcurrencyRange {
            start: 1,
            end: 1,
            step: 1,
        },
        measurement_mode: MeasurementMode::TimeWindows,
        measurement_interval: Duration::from_millis(5000),
        measurement_request_count: 50,
        stability_percentage: 10.0,
        max_trials: 10,
        percentile: None,
        latency_threshold_ms: None,
        request_count: None,
        warmup_request_count: 0,
        input_data: InputData::Random,
        shapes: Default::default(),
        string_length: 128,
        string_data: None,
        input_format: TensorFormat::Binary,
        output_format: TensorFormat::Binary,
        headers: Vec::new(),
        csv_file: None,
        verbose: 0,
        request_timeout: Duration::from_secs(30),
        async_mode: false,
    }
}

/// One window of `secs` seconds holding a successful request per latency (send 64 µs,
/// receive 16 µs each) and a failed request per error.
#[cfg(test)]
fn test_window(
    latencies_us: &[u64],
    errors: &[ErrorKind],
    secs: f64,
) -> crate::measure::window::WindowStats {
    use crate::measure::sample::Sample;
    use crate::measure::window::WindowStats;
    use std::time::{Duration, Instant};
    let start = Instant::now();
    let sample = |latency_us: u64, error: Option<ErrorKind>| Sample {
        scheduled: start,
        sent: start,
        send_ns: 64_000,
        recv_ns: 16_000,
        done: start + Duration::from_micros(latency_us),
        error,
    };
    let mut samples: Vec<Sample> = latencies_us.iter().map(|&l| sample(l, None)).collect();
    samples.extend(errors.iter().map(|&kind| sample(1, Some(kind))));
    WindowStats::from_samples(&samples, Duration::from_secs_f64(secs), 1)
}

/// A level whose merged result is the one window built by [`test_window`].
#[cfg(test)]
fn test_level(level: LoadLevel, latencies_us: &[u64], secs: f64, end: LevelEnd) -> LevelResult {
    let window = test_window(latencies_us, &[], secs);
    LevelResult {
        level,
        merged: window.clone(),
        windows: vec![window],
        end,
    }
}

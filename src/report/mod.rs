//! Reports: turn measured load levels into what people read. The console report and the CSV
//! follow perf_analyzer's layout so that existing scripts and habits keep working; both take
//! only the validated [`Config`](crate::config::Config) and the
//! [`LevelResult`](crate::measure::level::LevelResult)s, and never measure anything.

pub mod answers;
pub mod compare;
pub mod console;
pub mod csv;
pub mod ensemble_csv;
pub mod format;
pub mod html;
pub mod llm;
pub mod metrics;
pub mod open_loop;
pub mod profile_export;
pub mod progress;
pub mod replicas;
pub mod search;
pub mod server;
pub mod sweep;
pub mod timeline;

pub use console::{level_block, settings_block, summary_block};
pub use csv::{csv_header, csv_rows, write_csv};
pub use format::mode_column;
pub use search::search_block;
pub use timeline::{bucket_line, timeline_header, timeline_summary, write_timeline_csv};

#[cfg(test)]
use crate::backend::ErrorKind;
#[cfg(test)]
use crate::config::LoadLevel;
#[cfg(test)]
use crate::measure::level::{LevelEnd, LevelResult};

#[cfg(test)]
pub(crate) use crate::config::test_config;

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
        first: start + Duration::from_micros(latency_us),
        done: start + Duration::from_micros(latency_us),
        answers: 1,
        gaps: 0,
        connect_ns: 0,
        request: 0,
        replica: 0,
        sequence_id: 0,
        sequence_end: false,
        tokens: Default::default(),
        error,
    };
    let mut samples: Vec<Sample> = latencies_us.iter().map(|&l| sample(l, None)).collect();
    samples.extend(errors.iter().map(|&kind| sample(1, Some(kind))));
    WindowStats::from_samples(&samples, crate::number::saturating_secs(secs), 1)
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
        notes: Vec::new(),
        requests: None,
    }
}

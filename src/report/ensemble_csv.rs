//! perf_analyzer's extra CSV files for an ensemble: one per composing model, named
//! `<model>_v<version>.<csv file name>` beside the main report, with the composing model's
//! share of the throughput and its server-side breakdown per level.

use std::path::{Path, PathBuf};

use crate::measure::level::LevelResult;
use crate::measure::server::stats::ModelCounters;
use inferperf_wire::error::RunResult;

use super::format::mode_column;
use super::format::{format_throughput, usec};
use super::{Entry, Measured, Reporter, Run};

pub const REPORT: Entry = Entry {
    name: "ensemble CSV",
    is_on: |settings, _| !settings.csv_files.is_empty() && !settings.is_timeline(),
    open: |_| Ok(Box::new(EnsembleCsv)),
};

/// Beside each `-f` CSV, at the end of a run of an ensemble's levels.
struct EnsembleCsv;

impl Reporter for EnsembleCsv {
    fn finish(&mut self, run: &Run<'_>, measured: &Measured<'_>) -> RunResult<()> {
        let Measured::Levels(levels) = measured else {
            return Ok(());
        };
        for main in &run.settings().csv_files {
            let main = Path::new(main);
            for (path, text) in composing_csvs(levels, main) {
                std::fs::write(path, text).map_err(|e| super::csv::write_error(main, &e))?;
            }
        }
        Ok(())
    }
}

/// The composing models' files: their paths and contents.
pub fn composing_csvs(results: &[LevelResult], main: &Path) -> Vec<(PathBuf, String)> {
    let Some(first) = results.iter().find_map(|r| r.merged.server.as_ref()) else {
        return Vec::new();
    };
    let cache = first.composing.iter().any(ModelCounters::uses_cache);
    let mut sorted: Vec<&LevelResult> = results.iter().collect();
    sorted.sort_by(|a, b| a.merged.throughput().total_cmp(&b.merged.throughput()));
    first
        .composing
        .iter()
        .map(|model| {
            let mut text = header(mode_column(results), cache);
            for r in &sorted {
                text.push_str(&row(r, &model.name, cache));
                text.push('\n');
            }
            (path_for(main, model), text)
        })
        .collect()
}

fn path_for(main: &Path, model: &ModelCounters) -> PathBuf {
    let file = main
        .file_name()
        .map_or("report.csv".into(), |f| f.to_string_lossy());
    let version = if model.version.is_empty() {
        "1"
    } else {
        &model.version
    };
    main.with_file_name(format!("{}_v{version}.{file}", model.name))
}

fn header(mode: &str, cache: bool) -> String {
    let cache_columns = if cache {
        ",Server Cache Hit,Server Cache Miss"
    } else {
        ""
    };
    format!(
        "{mode},Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,\
         Server Compute Input,Server Compute Infer,Server Compute Output{cache_columns},Client Recv\n"
    )
}

/// One level's line: the ensemble throughput scaled by the composing model's share of the
/// requests, client send and receive 0, and the model's overhead in the network column, as
/// perf_analyzer writes them.
fn row(r: &LevelResult, name: &str, cache: bool) -> String {
    let server = r.merged.server.as_ref();
    let ensemble = server.map_or(0, |s| s.model.success.count);
    let model = server.and_then(|s| s.composing.iter().find(|m| m.name == name));
    let Some(m) = model else {
        return format!("{},,,,,,,,", r.level.csv_value());
    };
    let share = match ensemble {
        0 => 0.0,
        n => m.success.count as f64 / n as f64,
    };
    let mut cells = vec![
        r.level.csv_value(),
        format_throughput(r.merged.throughput() * share),
        "0".into(),
        usec(m.avg_overhead_us()).to_string(),
        usec(m.queue.avg_us()).to_string(),
        usec(m.compute_input.avg_us()).to_string(),
        usec(m.compute_infer.avg_us()).to_string(),
        usec(m.compute_output.avg_us()).to_string(),
    ];
    if cache {
        cells.push(usec(m.cache_hit.avg_us()).to_string());
        cells.push(usec(m.cache_miss.avg_us()).to_string());
    }
    cells.push("0".into());
    cells.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::level::LevelEnd;
    use crate::measure::level::LoadLevel;
    use crate::measure::server::stats::{ServerWindow, Timed};
    use crate::report::test_level;

    fn counters(name: &str, n: u64) -> ModelCounters {
        let timed = |us: u64| Timed {
            count: n,
            ns: n * us * 1000,
        };
        ModelCounters {
            name: name.into(),
            version: "1".into(),
            success: timed(900),
            queue: timed(100),
            compute_infer: timed(700),
            ..ModelCounters::default()
        }
    }

    #[test]
    fn one_file_per_composing_model() {
        let mut level = test_level(
            LoadLevel::Concurrency(2),
            &[1000; 10],
            1.0,
            LevelEnd::Stable,
        );
        level.merged.server = Some(ServerWindow {
            model: counters("ens", 10),
            composing: vec![counters("pre", 10), counters("net", 5)],
            bls: false,
            answers: None,
        });
        let files = composing_csvs(&[level], Path::new("/tmp/out.csv"));
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].0, PathBuf::from("/tmp/pre_v1.out.csv"));
        let lines: Vec<&str> = files[1].1.lines().collect();
        assert_eq!(
            lines[0],
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,\
             Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv"
        );
        assert_eq!(lines[1], "2,5,0,100,100,0,700,0,0");
    }
}

//! AIPerf's public datasets (`--public-dataset`), read into the same records as an input
//! file so that the rest of the dataset box treats them alike: ShareGPT's JSON (filtered by
//! AIPerf's length rules once the run's tokenizer is known), Spec-Bench's JSON Lines, and
//! Hugging Face datasets whose split's data files (Parquet, JSON Lines, JSON) are read
//! from the hub cache or fetched — each row mapped as AIPerf's loader maps its columns.

mod columns;
pub(crate) mod parquet_rows;
pub mod rows;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::hub::{self, DatasetRepo};
use super::traces::{Record, TraceFile};
use crate::config::datasets::{PublicChoice, Shape, Source};
use crate::config::workload::FileFormat;
use inferperf_wire::error::{RunError, RunResult};

/// Reads a public dataset, every file it needs fetched first when not cached.
pub fn read(choice: &PublicChoice) -> RunResult<TraceFile> {
    let dataset = &choice.dataset;
    let (path, records) = match dataset.source {
        Source::HubFile { repo, file } => {
            let path = aiperf_copy(file).map_or_else(
                || {
                    DatasetRepo {
                        name: dataset.name,
                        id: repo,
                        revision: "main",
                    }
                    .file(file)
                },
                Ok,
            )?;
            let text = read_text(&path)?;
            (
                path.clone(),
                super::traces::sharegpt_records(&path.display().to_string(), &text)?,
            )
        }
        Source::Url { url, file } => {
            let path = hub::url_file(dataset.name, url, file)?;
            let rows = rows::read_rows(&path, &path.display().to_string())?;
            (path, columns::records(dataset, &rows)?)
        }
        Source::Hub {
            repo,
            split,
            subset,
        } => {
            let subset = choice.subset.as_deref().or(subset);
            let repo = DatasetRepo {
                name: dataset.name,
                id: repo,
                revision: "main",
            };
            let wanted = dataset.streamed().then_some(choice.rows);
            let (folder, rows) = split_rows(&repo, split, subset, wanted)?;
            (folder, columns::records(dataset, &rows)?)
        }
    };
    if records.is_empty() {
        return Err(RunError::failed(format!(
            "--public-dataset {} gives no requests: its rows have no prompt in the columns AIPerf reads ({}).",
            dataset.name,
            path.display()
        )));
    }
    Ok(TraceFile {
        path,
        format: match dataset.shape {
            Shape::ShareGpt => FileFormat::ShareGpt,
            _ => FileFormat::MultiTurn,
        },
        records,
        sharegpt_filter: dataset.shape == Shape::ShareGpt,
    })
}

/// AIPerf's own copy of a file it fetches (`./.cache/aiperf/datasets/<file>`), if there.
fn aiperf_copy(file: &str) -> Option<PathBuf> {
    let path = Path::new(hub::AIPERF_CACHE).join(file);
    path.is_file().then_some(path)
}

fn read_text(path: &Path) -> RunResult<String> {
    std::fs::read_to_string(path)
        .map_err(|e| RunError::failed(format!("Cannot read {}: {e}.", path.display())))
}

/// The rows of a split (of a subset), from every data file that holds it — or from the
/// first files, until `wanted` rows are read.
fn split_rows(
    repo: &DatasetRepo,
    split: &str,
    subset: Option<&str>,
    wanted: Option<usize>,
) -> RunResult<(PathBuf, Vec<Map<String, Value>>)> {
    let Some(files) = repo.files()? else {
        return Err(repo.not_cached(&format!("the {split} split")));
    };
    let chosen = rows::split_files(&files, split, subset);
    if chosen.is_empty() {
        let within = subset
            .map(|s| format!(" of subset {s}"))
            .unwrap_or_default();
        return Err(RunError::failed(format!(
            "--public-dataset {}: the Hugging Face dataset {} has no Parquet, JSON Lines or JSON file of split {split}{within} (it has {}): check --hf-subset.",
            repo.name,
            repo.id,
            shorten(&files)
        )));
    }
    let mut all = Vec::new();
    let mut first = None;
    for file in &chosen {
        if wanted.is_some_and(|w| all.len() >= w) {
            break;
        }
        let path = repo.file(file)?;
        all.extend(rows::read_rows(&path, &format!("{file} of {}", repo.id))?);
        first.get_or_insert(path);
    }
    Ok((first.unwrap_or_default(), all))
}

/// The first few names of a list, for a message.
fn shorten(files: &[String]) -> String {
    let mut shown: Vec<&str> = files.iter().take(6).map(String::as_str).collect();
    if files.len() > shown.len() {
        shown.push("...");
    }
    if shown.is_empty() {
        return "no files".into();
    }
    shown.join(", ")
}

/// A record of a request of a public dataset (a turn of `session` when given).
fn record(origin: String, text: String, session: Option<u32>) -> Record {
    Record {
        session,
        content: super::traces::Content::Text(text),
        ..Record::new(origin)
    }
}

//! The rows of a Hugging Face dataset's split as its data files hold them: which files hold
//! the split (Hugging Face's naming: `data/train-00000-of-00001.parquet`, `test.jsonl`,
//! `SUBSET/validation.json`, ...; files naming no split are its train split, as the
//! `datasets` library takes them) and each file's rows — JSON Lines, a JSON list (or an
//! object holding one) and Parquet — as JSON objects.

use std::path::Path;

use serde_json::{Map, Value};

use inferperf_wire::error::{RunError, RunResult};

/// The file kinds whose rows can be read.
const DATA_EXTENSIONS: [&str; 3] = ["parquet", "jsonl", "json"];

/// The words Hugging Face takes for each split in file and folder names.
fn split_words(split: &str) -> Vec<&str> {
    match split {
        "train" => vec!["train", "training"],
        "validation" | "val" => vec!["validation", "valid", "val", "dev"],
        "test" => vec!["test", "testing", "eval", "evaluation"],
        other => vec![other],
    }
}

/// The words of a path: its folders' and file's names split at `-`, `_`, `.` and `/`.
fn words(path: &str) -> Vec<String> {
    path.split(['/', '-', '_', '.', ' '])
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

fn is_data(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    !name.starts_with('.')
        && DATA_EXTENSIONS
            .iter()
            .any(|e| name.to_ascii_lowercase().ends_with(&format!(".{e}")))
}

/// The data files of `split` (in `subset`'s folder when given) among a repository's files.
pub fn split_files(files: &[String], split: &str, subset: Option<&str>) -> Vec<String> {
    let data: Vec<&String> = files
        .iter()
        .filter(|f| is_data(f))
        .filter(|f| subset.is_none_or(|s| f.split('/').any(|part| part == s)))
        .collect();
    let wanted = split_words(split);
    let named: Vec<String> = data
        .iter()
        .filter(|f| words(f).iter().any(|w| wanted.contains(&w.as_str())))
        .map(|f| f.to_string())
        .collect();
    if !named.is_empty() || split != "train" {
        return named;
    }
    // Files that name no split at all are the train split.
    let any_split = [
        "train",
        "training",
        "validation",
        "valid",
        "val",
        "dev",
        "test",
        "testing",
        "eval",
        "evaluation",
    ];
    data.iter()
        .filter(|f| !words(f).iter().any(|w| any_split.contains(&w.as_str())))
        .map(|f| f.to_string())
        .collect()
}

/// A data file's rows as JSON objects.
pub fn read_rows(path: &Path, shown: &str) -> RunResult<Vec<Map<String, Value>>> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if extension == "parquet" {
        return super::parquet_rows::read(path, shown);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| RunError::failed(format!("Cannot read {shown}: {e}.")))?;
    let bad = |why: String| {
        RunError::failed(format!(
            "{shown} is not the dataset's JSON ({why}): fetch it again."
        ))
    };
    let whole = serde_json::from_str::<Value>(&text);
    let items = match whole {
        Ok(Value::Array(items)) => items,
        Ok(Value::Object(object)) if extension == "json" => {
            match object.into_iter().find_map(|(_, v)| v.as_array().cloned()) {
                Some(items) => items,
                None => return Err(bad("an object holding no list of rows".into())),
            }
        }
        Ok(Value::Object(object)) => vec![Value::Object(object)],
        Ok(_) => return Err(bad("neither rows nor a list of them".into())),
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str::<Value>)
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string()))?,
    };
    Ok(items
        .into_iter()
        .filter_map(|item| match item {
            Value::Object(row) => Some(row),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_split_is_found_by_its_names() {
        let repo = files(&[
            ".gitattributes",
            "README.md",
            "data/train-00000-of-00002.parquet",
            "data/train-00001-of-00002.parquet",
            "data/test-00000-of-00001.parquet",
        ]);
        assert_eq!(split_files(&repo, "train", None).len(), 2);
        assert_eq!(
            split_files(&repo, "test", None),
            ["data/test-00000-of-00001.parquet"]
        );
        let subsets = files(&[
            "main/test-00000-of-00001.parquet",
            "socratic/test-00000-of-00001.parquet",
        ]);
        assert_eq!(
            split_files(&subsets, "test", Some("socratic")),
            ["socratic/test-00000-of-00001.parquet"]
        );
        let plain = files(&["test.jsonl"]);
        assert_eq!(split_files(&plain, "test", None), ["test.jsonl"]);
        let val = files(&["mmstar/val-00000.parquet", "other.txt"]);
        assert_eq!(split_files(&val, "val", None), ["mmstar/val-00000.parquet"]);
        let unnamed = files(&["question.jsonl", "data/extra.json"]);
        assert_eq!(
            split_files(&unnamed, "train", None).len(),
            2,
            "no split named: train"
        );
        assert!(split_files(&unnamed, "test", None).is_empty());
    }

    #[test]
    fn json_lines_and_lists_are_rows() {
        let dir = tempfile::tempdir().unwrap();
        let lines = dir.path().join("a.jsonl");
        std::fs::write(&lines, "{\"problem\": \"x\"}\n\n{\"problem\": \"y\"}\n").unwrap();
        assert_eq!(read_rows(&lines, "a").unwrap().len(), 2);
        let list = dir.path().join("b.json");
        std::fs::write(&list, "{\"data\": [{\"q\": 1}, {\"q\": 2}, 3]}").unwrap();
        assert_eq!(read_rows(&list, "b").unwrap().len(), 2);
        std::fs::write(&list, "{\"q\": 1}\n{\"q\": 2}").unwrap();
        assert_eq!(
            read_rows(&list, "b").unwrap().len(),
            2,
            "JSON Lines in a .json"
        );
        std::fs::write(&list, "{oops").unwrap();
        assert!(read_rows(&list, "b")
            .unwrap_err()
            .to_string()
            .contains("b is not the dataset's JSON"));
    }
}

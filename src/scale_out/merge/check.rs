//! Whether the files given to `inferperf merge` are the shards of one run: the same settings
//! (but for what differs by nature between shards: the shard itself, the command line, the
//! output paths), one file per shard index of one shard count, none missing unless the user
//! allows it, a model, and levels rather than a timeline. Each refusal is one sentence that
//! names the setting or the file; what is merged anyway (an unfinished or interrupted shard,
//! a shard that ended on an error) comes back as notes.

use serde_json::Value;

use super::Shard;
use inferperf_wire::error::{RunError, RunResult};

/// The settings that differ between the shards of one run by nature, as JSON paths.
const PER_SHARD_SETTINGS: [&[&str]; 5] = [
    &["shard"],
    &["arguments"],
    &["csv_files"],
    &["outputs"],
    &["llm", "artifact_dir"],
];

/// Refuses files that are not the shards of one run; returns the notes about those merged
/// as they are.
pub fn check(shards: &[Shard], allow_missing: bool) -> RunResult<Vec<String>> {
    for shard in shards {
        check_content(shard)?;
    }
    check_settings(shards)?;
    let mut notes = check_indexes(shards, allow_missing)?;
    notes.extend(shards.iter().filter_map(state_note));
    Ok(notes)
}

/// A shard that can be merged at all: it measured levels of a model.
fn check_content(shard: &Shard) -> RunResult<()> {
    let file = &shard.file;
    if file.model.is_none() {
        let why = file
            .error
            .as_deref()
            .map_or(String::new(), |e| format!(" ({e})"));
        return Err(RunError::bad_option(format!(
            "{} has no model: that shard stopped before it measured anything{why}; run it again.",
            shard.path
        )));
    }
    if file.timeline.is_some() {
        return Err(RunError::bad_option(format!(
            "{} is a --ramp / --load-steps run (per-second buckets): inferperf merge merges runs measured in levels.",
            shard.path
        )));
    }
    Ok(())
}

/// The first setting in which a file differs from the first one, named with both values.
fn check_settings(shards: &[Shard]) -> RunResult<()> {
    let Some((first, rest)) = shards.split_first() else {
        return Ok(());
    };
    let base = comparable(first)?;
    for shard in rest {
        if let Some((path, a, b)) = first_difference(&base, &comparable(shard)?, "settings") {
            return Err(RunError::bad_option(format!(
                "shard files differ in {path}: {} has {}, {} has {}; merge only shards of one run.",
                first.path,
                text(&a),
                shard.path,
                text(&b)
            )));
        }
    }
    Ok(())
}

/// The settings as JSON without those that differ between shards by nature.
fn comparable(shard: &Shard) -> RunResult<Value> {
    let mut value = serde_json::to_value(&shard.file.settings).map_err(|e| {
        RunError::failed(format!("Cannot read the settings of {}: {e}.", shard.path))
    })?;
    for path in PER_SHARD_SETTINGS {
        remove(&mut value, path);
    }
    Ok(value)
}

fn remove(value: &mut Value, path: &[&str]) {
    match path {
        [] => {}
        [last] => {
            if let Some(object) = value.as_object_mut() {
                object.remove(*last);
            }
        }
        [first, rest @ ..] => {
            if let Some(inner) = value.get_mut(*first) {
                remove(inner, rest);
            }
        }
    }
}

/// Where two JSON values first differ: the dotted path and both values there.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<(String, Value, Value)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            keys.into_iter().find_map(|key| {
                let (left, right) = (x.get(key), y.get(key));
                let (left, right) = (
                    left.cloned().unwrap_or(Value::Null),
                    right.cloned().unwrap_or(Value::Null),
                );
                first_difference(&left, &right, &format!("{at}.{key}"))
            })
        }
        _ if a == b => None,
        _ => Some((at.to_string(), a.clone(), b.clone())),
    }
}

/// A value as the sentence shows it: a string without quotes, anything else as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One file per shard index of one shard count; a missing index is refused unless allowed.
fn check_indexes(shards: &[Shard], allow_missing: bool) -> RunResult<Vec<String>> {
    let mut count: Option<(u32, &str)> = None;
    let mut seen: Vec<(u32, &str)> = Vec::new();
    for shard in shards {
        let Some(record) = &shard.file.settings.shard else {
            return Err(RunError::bad_option(format!(
                "{} is not a shard of a run (its settings have no shard): inferperf merge takes the results files of the shards of one run (--shard I/N).",
                shard.path
            )));
        };
        let (index, n) = (record.index, record.count);
        match count {
            Some((m, other)) if m != n => {
                return Err(RunError::bad_option(format!(
                    "shard files disagree on the shard count: {other} is one of {m} shards, {} one of {n}; merge only shards of one run.",
                    shard.path
                )))
            }
            _ => count = Some((n, &shard.path)),
        }
        if index >= n {
            return Err(RunError::bad_option(format!(
                "{} says it is shard {index} of {n}, but shards are numbered 0 to {}.",
                shard.path,
                n.saturating_sub(1)
            )));
        }
        if let Some((_, other)) = seen.iter().find(|(i, _)| *i == index) {
            return Err(RunError::bad_option(format!(
                "{other} and {} are both shard {index} of {n}: give each shard's results file once.",
                shard.path
            )));
        }
        seen.push((index, &shard.path));
    }
    let n = count.map_or(0, |c| c.0);
    missing(&seen, n, allow_missing)
}

/// The shard indexes not given: refused, or a note with `--allow-missing`.
fn missing(seen: &[(u32, &str)], n: u32, allow_missing: bool) -> RunResult<Vec<String>> {
    let absent: Vec<String> = (0..n)
        .filter(|i| !seen.iter().any(|(s, _)| s == i))
        .map(|i| i.to_string())
        .collect();
    if absent.is_empty() {
        return Ok(Vec::new());
    }
    let plural = if absent.len() == 1 { "" } else { "s" };
    let list = absent.join(", ");
    if !allow_missing {
        return Err(RunError::bad_option(format!(
            "shard{plural} {list} of {n} {} missing: add {} results file{plural}, or --allow-missing to merge the {} given (the merged load is then theirs only).",
            if absent.len() == 1 { "is" } else { "are" },
            if absent.len() == 1 { "its" } else { "their" },
            seen.len()
        )));
    }
    Ok(vec![format!(
        "shard{plural} {list} of {n} missing (--allow-missing): the figures are those of the {} shards given, not of the whole load.",
        seen.len()
    )])
}

/// A note for a shard merged although it did not end normally.
fn state_note(shard: &Shard) -> Option<String> {
    let file = &shard.file;
    if let Some(error) = &file.error {
        return Some(format!(
            "{} ended on an error ({error}); the levels it finished are merged.",
            shard.path
        ));
    }
    if file.interrupted {
        return Some(format!(
            "{} was interrupted (Ctrl-C); the levels it finished are merged.",
            shard.path
        ));
    }
    (!file.finished).then(|| {
        format!(
            "{} is unfinished (the shard was still running, or was killed); the levels written so far are merged.",
            shard.path
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_is_named_by_its_path() {
        let a = json!({"model_name": "m", "load": {"mode": "concurrency", "start": 8}});
        let b = json!({"model_name": "m", "load": {"mode": "concurrency", "start": 16}});
        let (path, x, y) = first_difference(&a, &b, "settings").unwrap();
        assert_eq!(path, "settings.load.start");
        assert_eq!((text(&x), text(&y)), ("8".into(), "16".into()));
        assert!(first_difference(&a, &a, "settings").is_none());
        let c = json!({"model_name": "m", "load": {"mode": "concurrency", "start": 8}, "x": 1});
        let (path, x, _) = first_difference(&a, &c, "settings").unwrap();
        assert_eq!((path.as_str(), x), ("settings.x", Value::Null));
    }

    #[test]
    fn per_shard_settings_are_left_out() {
        let mut v = json!({"shard": {"index": 1}, "llm": {"artifact_dir": "a", "endpoint": "e"}});
        for path in PER_SHARD_SETTINGS {
            remove(&mut v, path);
        }
        assert_eq!(v, json!({"llm": {"endpoint": "e"}}));
    }
}

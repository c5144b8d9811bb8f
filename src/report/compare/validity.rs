//! Whether a run compared can be judged at all: a gate that compares a broken candidate
//! level by level passes it whenever the levels it did measure look fine. A run is not
//! valid when it ended on an error, was interrupted, was cut off before it ended, lacks a
//! level the baseline measured, or had a level in which no request succeeded. `compare`
//! fails on each such run (exit 1) unless `--allow-partial` accepts it, and then says so.

use super::{load_text, same_load, Run};

/// The sentences saying why each run (the baseline first) cannot be judged as a whole.
pub fn problems(runs: &[Run]) -> Vec<String> {
    let Some(baseline) = runs.first() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for run in runs {
        found.extend(run_end(run));
        found.extend(empty_levels(run));
        if !std::ptr::eq(run, baseline) {
            found.extend(missing_levels(baseline, run));
        }
    }
    found
}

/// How the run ended, when not as asked.
fn run_end(run: &Run) -> Option<String> {
    let file = &run.file;
    let measured = file.levels.len();
    if let Some(error) = &file.error {
        return Some(format!(
            "{} ended on an error ({error}) after {measured} level(s): it is not a whole run.",
            run.name
        ));
    }
    if file.interrupted {
        return Some(format!(
            "{} was interrupted (Ctrl-C) after {measured} level(s): it is not a whole run.",
            run.name
        ));
    }
    (!file.finished).then(|| {
        format!(
            "{} did not finish (still running, or cut off) after {measured} level(s): it is not a whole run.",
            run.name
        )
    })
}

/// The levels in which no request succeeded: nothing of the server was measured there.
fn empty_levels(run: &Run) -> Vec<String> {
    (run.file.levels.iter())
        .filter(|l| l.merged.ok == 0)
        .map(|l| {
            format!(
                "{} at {}: no request succeeded ({} failed).",
                run.name,
                load_text(&l.load),
                l.merged.failed
            )
        })
        .collect()
}

/// The baseline's levels the run did not measure.
fn missing_levels(baseline: &Run, run: &Run) -> Option<String> {
    let missing: Vec<String> = (baseline.file.levels.iter())
        .filter(|a| !run.file.levels.iter().any(|b| same_load(&a.load, &b.load)))
        .map(|a| load_text(&a.load))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "{} lacks {} of {}'s levels ({}): it cannot be judged on them.",
            run.name,
            missing.len(),
            baseline.name,
            missing.join(", ")
        )
    })
}

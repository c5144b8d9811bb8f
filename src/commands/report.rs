//! The `report` command: the HTML page of a results file (or a report folder), rendered
//! again by the same code a run's `--report-dir` uses.

use std::path::Path;

use inferperf_wire::error::{RunError, RunResult, EXIT_OK};

/// `inferperf report RESULTS -o FILE.html`: the page of a results file (or a report
/// folder), written to `out`; prints the path.
pub fn run(results: &Path, out: &Path) -> RunResult<i32> {
    let file = crate::results::read(results)?;
    crate::report::html::write(&file, out).map_err(|e| {
        RunError::bad_option(format!(
            "Cannot write the HTML report {}: {e}.",
            out.display()
        ))
    })?;
    println!("{}", out.display());
    Ok(EXIT_OK)
}

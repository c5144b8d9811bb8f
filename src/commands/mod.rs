//! The commands, one file each: `profile` (the main job), `serve` (the embedded server),
//! `demo`, `sweep` (a server setting against the curve), `compare` and `report` (readers of
//! results files) and `merge` (a sharded run's files into one run). They sit at the bottom
//! of the one path (docs/architecture.md): each builds what it needs from its flags and drives the boxes above
//! it; `main.rs` only parses the command line and dispatches here. What the commands share
//! is here too: watching Ctrl-C and the exit code of a run it cut short.

pub mod compare;
pub mod demo;
pub mod merge;
pub mod profile;
pub mod report;
pub mod serve;
pub mod sweep;

use std::io::IsTerminal;
use std::sync::Arc;

use crate::load::profiler::Interrupt;
use inferperf_wire::error::{RunError, EXIT_INTERRUPTED};

/// First Ctrl-C: finish the current window and write every report (then exit 130). Second:
/// exit 130 now.
pub fn watch_ctrl_c(interrupt: Arc<Interrupt>) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        // The progress line may be drawn on standard error: write over it, not after it.
        let clear = if std::io::stderr().is_terminal() {
            "\r\x1b[2K"
        } else {
            ""
        };
        eprintln!("{clear}Interrupted: finishing the current window and writing the reports (Ctrl-C again to exit now).");
        interrupt.raise();
        if tokio::signal::ctrl_c().await.is_ok() {
            // No destructor runs on this exit: the run's shared-memory objects go now.
            inferperf_wire::shm::unlink_all_created();
            std::process::exit(EXIT_INTERRUPTED);
        }
    });
}

/// A run cut short by Ctrl-C exits with 130 once its reports are written, whatever the
/// levels measured by then earned (an error that followed is still printed).
pub fn interrupted(interrupt: &Interrupt, result: Result<i32, RunError>) -> Result<i32, RunError> {
    if !interrupt.is_raised() {
        return result;
    }
    if let Err(e) = result {
        eprintln!("error: {e}");
    }
    Ok(EXIT_INTERRUPTED)
}

//! Errors that end a run, each carrying perf_analyzer's exit code: 3 for a bad option,
//! 99 for everything else. (2, "unstable", is not an error: the run reports its numbers;
//! 130 is a run cut short with Ctrl-C.)

use thiserror::Error;

/// perf_analyzer's exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_UNSTABLE: i32 = 2;
pub const EXIT_BAD_OPTION: i32 = 3;
pub const EXIT_GENERIC: i32 = 99;
/// A run cut short with Ctrl-C (SIGINT), as shells report a command killed by it (128 + 2);
/// the reports of the levels finished by then are written first.
pub const EXIT_INTERRUPTED: i32 = 130;

/// A reason to stop, with one sentence that names the problem and what to do.
#[derive(Debug, Error)]
pub enum RunError {
    /// A flag, or a combination of flags, is wrong.
    #[error("{0}")]
    BadOption(String),
    /// Anything else: the server, the model, the network, a file.
    #[error("{0}")]
    Failed(String),
}

impl RunError {
    pub fn bad_option(msg: impl Into<String>) -> Self {
        RunError::BadOption(msg.into())
    }

    pub fn failed(msg: impl Into<String>) -> Self {
        RunError::Failed(msg.into())
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::BadOption(_) => EXIT_BAD_OPTION,
            RunError::Failed(_) => EXIT_GENERIC,
        }
    }
}

pub type RunResult<T> = Result<T, RunError>;

//! What the profiler asks of the other processes of its run: when the first window may
//! start, and whether every one of them may end the level. A run alone waits for nothing
//! and decides by itself ([`Alone`]); the shards of a run (`--start-at`, MPI) are tied by
//! `scale_out::shards`, which implements [`Ties`] above this box, so the driver knows
//! nothing of MPI.

use futures::future::BoxFuture;

use super::interrupt::Interrupt;
use inferperf_wire::error::RunResult;

/// What every process of the run decided about the window just cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreement {
    /// Every process's level may end (stable, unstable after `-r`, …).
    pub all_done: bool,
    /// Some process was interrupted (Ctrl-C): every one stops.
    pub any_interrupted: bool,
}

impl Agreement {
    /// What a process measuring alone decides: its own view.
    pub fn alone(done: bool, interrupted: bool) -> Agreement {
        Agreement {
            all_done: done,
            any_interrupted: interrupted,
        }
    }
}

/// The ties between this process and the others measuring the same run.
pub trait Ties: Send + Sync {
    /// Waits until the first window may start; a note when it started late.
    fn first_window<'a>(
        &'a self,
        interrupt: &'a Interrupt,
    ) -> BoxFuture<'a, RunResult<Option<String>>>;

    /// Shares this process's view of the window just cut: whether its level may end and
    /// whether it was interrupted.
    fn agree(&self, done: bool, interrupted: bool) -> BoxFuture<'_, RunResult<Agreement>>;
}

/// No other process: the first window starts at once and this process's view decides.
pub struct Alone;

impl Ties for Alone {
    fn first_window<'a>(
        &'a self,
        _interrupt: &'a Interrupt,
    ) -> BoxFuture<'a, RunResult<Option<String>>> {
        Box::pin(async { Ok(None) })
    }

    fn agree(&self, done: bool, interrupted: bool) -> BoxFuture<'_, RunResult<Agreement>> {
        Box::pin(async move { Ok(Agreement::alone(done, interrupted)) })
    }
}

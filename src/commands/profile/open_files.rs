//! Every in-flight slot holds a connection, and each connection is a file descriptor: a
//! concurrency the process cannot open files for would fail to connect part of its slots
//! and measure something other than what was asked. So the run raises its open-files limit
//! to the hard limit first, and refuses, with the numbers, a concurrency beyond it.

use crate::config::{LoadConfig, LoadMode, Protocol, TargetConfig};
use inferperf_wire::error::{RunError, RunResult};

/// Descriptors kept aside for what is not a load connection: the runtime, the metrics and
/// statistics scrapes, the report files.
const SPARE: u64 = 64;

/// Raises the soft limit on open files to the hard limit; returns the limit now in force
/// (`None` when it cannot be read).
pub fn raise_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}

/// The most connections the run can hold open at once, when that is known ahead: one per
/// slot of `load` (gRPC to `target`: one per `--grpc-connection-share` slots).
pub fn connections_needed(load: &LoadConfig, target: &TargetConfig) -> Option<u64> {
    let slots = match load.mode {
        LoadMode::Concurrency => load.max_concurrency(),
        _ if load.mode.is_open_loop() => load.max_concurrency,
        _ => None,
    }? as u64;
    let share = target.grpc_connection_share.max(1) as u64;
    Some(match (target.protocol, target.llm().is_some()) {
        (Protocol::Grpc, false) => slots.div_ceil(share),
        _ => slots,
    })
}

/// Raises the limit and refuses a run that needs more connections than it allows.
pub fn check(load: &LoadConfig, target: &TargetConfig) -> RunResult<()> {
    let (Some(limit), Some(needed)) = (raise_limit(), connections_needed(load, target)) else {
        return Ok(());
    };
    if needed + SPARE > limit {
        return Err(RunError::bad_option(format!(
            "This run needs {needed} connections open at once (plus {SPARE} files for itself), but this process may open only {limit} files (the hard limit of `ulimit -n`): raise the hard limit, lower the concurrency, or split the load over several client processes."
        )));
    }
    Ok(())
}

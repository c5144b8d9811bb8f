//! `--shared-memory` and `--output-shared-memory-size`: which runs can pass tensors through
//! Triton's system shared-memory extension, and the one sentence for those that cannot.

use super::ServiceKind;
use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// perf_analyzer's default `--output-shared-memory-size`, in bytes.
pub const DEFAULT_OUTPUT_SIZE: u64 = 102_400;

/// How tensors reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SharedMemory {
    /// In the request and answer bodies.
    #[default]
    None,
    /// In POSIX shared-memory regions registered with the server.
    System,
}

/// The shared-memory settings of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmConfig {
    pub mode: SharedMemory,
    /// Bytes of each output's region per batch item (`--output-shared-memory-size`).
    pub output_size: u64,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            mode: SharedMemory::None,
            output_size: DEFAULT_OUTPUT_SIZE,
        }
    }
}

/// Reads the two flags and refuses the runs that cannot use system shared memory.
pub(super) fn parse(args: &ProfileArgs, kind: ServiceKind) -> RunResult<ShmConfig> {
    let output_size = args
        .pa
        .output_shared_memory_size
        .unwrap_or(DEFAULT_OUTPUT_SIZE);
    if output_size == 0 {
        return Err(RunError::bad_option(
            "--output-shared-memory-size must be at least 1 byte.",
        ));
    }
    let mode = match args.pa.shared_memory.as_deref().map(str::trim) {
        None | Some("none") => SharedMemory::None,
        Some("system") => SharedMemory::System,
        Some("cuda") => {
            return Err(RunError::bad_option(
                "--shared-memory cuda needs a GPU build of inferperf with CUDA, and this build has none: use --shared-memory system or none.",
            ))
        }
        Some(other) => {
            return Err(RunError::bad_option(format!(
                "--shared-memory '{other}' is not one of none, system or cuda."
            )))
        }
    };
    if mode == SharedMemory::System {
        refuse_unsupported(args, kind)?;
    }
    Ok(ShmConfig { mode, output_size })
}

fn refuse_unsupported(args: &ProfileArgs, kind: ServiceKind) -> RunResult<()> {
    let refuse = |why: &str| {
        Err(RunError::bad_option(format!(
            "--shared-memory system {why}"
        )))
    };
    if kind == ServiceKind::TritonCApi {
        return refuse("has nothing to add with --service-kind triton_c_api: Triton in process reads the inputs where inferperf holds them, with no copy; drop --shared-memory.");
    }
    if kind != ServiceKind::Triton {
        return refuse("works with Triton's system shared-memory extension (--service-kind triton or kserve), not with this --service-kind.");
    }
    if args.streaming {
        return refuse("does not work with --streaming: drop one of them.");
    }
    let compression = args.pa.grpc_compression_algorithm.as_deref();
    if compression.is_some_and(|c| c.trim() != "none") {
        return refuse("does not work with --grpc-compression-algorithm (its requests carry no tensor data to compress): drop one of them.");
    }
    if args.url.len() > 1 || args.url.iter().any(|u| u.contains(',')) {
        return refuse("registers its regions with one server: give one -u.");
    }
    Ok(())
}

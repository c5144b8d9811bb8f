//! AIPerf 0.13's defaults, for a command line that is AIPerf's ([`crate::cli::Dialect`]):
//! what AIPerf does where the line is silent, written into the flags before they are read,
//! so that the rest of the configuration never asks whose line it was. Measured against
//! AIPerf 0.13 itself: with no bound it sends 10 requests (whatever the concurrency, and
//! wrapping around an input file); `--conversation-num N` plays N sessions once; an input
//! file's format is its first record's shape unless `--custom-dataset-type` names it; a trace
//! whose first record has a timestamp is replayed once at its timestamps; the endpoint is chat; the seed comes from the system's entropy; the
//! synthetic prompts number `--conversation-num`, else `--request-count`, else 100.

use std::io::BufRead;
use std::path::Path;

use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// Requests of an AIPerf run that names no bound (`--request-count`, `--benchmark-duration`,
/// `--conversation-num`, a fixed schedule).
pub const AIPERF_REQUEST_COUNT: u64 = 10;

/// The input formats AIPerf replays at their timestamps when the first record has one.
const TRACE_TYPES: &[&str] = &[
    "mooncake_trace",
    "bailian_trace",
    "burst_gpt_trace",
    "baseten_trace",
    "sagemaker_data_capture",
    "tracelab",
    "weka_trace",
];

/// Fills in AIPerf's defaults where the flags are silent.
pub(super) fn apply(args: &mut ProfileArgs) -> RunResult<()> {
    default_endpoint(args);
    // AIPerf reads the server's /metrics unless told not to (quietly off when it has none).
    if !args.aiperf.no_server_metrics && args.server_metrics.is_none() {
        args.server_metrics = Some(Vec::new());
    }
    detect_dataset_type(args)?;
    auto_fixed_schedule(args)?;
    default_request_count(args);
    if args.seed.is_none() {
        // Repeated runs send one workload each time (AIPerf's --set-consistent-seed): 42.
        let r = &args.aiperf_repeats;
        let consistent = r.num_profile_runs.is_some_and(|n| n > 1) && !r.no_set_consistent_seed;
        args.seed = Some(match consistent {
            true => 42,
            false => rand::random::<u32>() as u64,
        });
    }
    if args.llm.num_prompts.is_none() {
        let sessions = args.sessions.conversation_num.map(|n| n as usize);
        let requests = (args.request_count > 0).then_some(args.request_count as usize);
        args.llm.num_prompts = sessions.or(requests);
    }
    Ok(())
}

/// AIPerf's endpoint type is chat: an AIPerf line that names no API is an OpenAI chat run.
fn default_endpoint(args: &mut ProfileArgs) {
    let named = args.service_kind.is_some()
        || args.aiperf.endpoint_type.is_some()
        || args.aiperf.custom_endpoint.is_some();
    if !named {
        args.aiperf.endpoint_type = Some("chat".into());
    }
}

/// AIPerf's 10 requests when nothing else bounds the run.
fn default_request_count(args: &mut ProfileArgs) {
    let bounded = args.request_count > 0
        || args.aiperf.benchmark_duration.is_some()
        || args.sessions.conversation_num.is_some()
        || args.fixed_schedule
        || args.ramp.is_some()
        || args.load_steps.is_some();
    if !bounded {
        args.request_count = AIPERF_REQUEST_COUNT;
    }
}

/// An input file without `--custom-dataset-type` is read as the format its first record
/// has, as AIPerf reads it.
fn detect_dataset_type(args: &mut ProfileArgs) -> RunResult<()> {
    let Some(file) = &args.llm.input_file else {
        return Ok(());
    };
    if args.workload.custom_dataset_type.is_none() {
        args.workload.custom_dataset_type = super::detect::dataset_type(file)?.map(String::from);
    }
    Ok(())
}

/// AIPerf replays a trace at its timestamps, once, when its type is named and its first
/// record carries a timestamp (`--no-fixed-schedule`: as any other input file).
fn auto_fixed_schedule(args: &mut ProfileArgs) -> RunResult<()> {
    if args.fixed_schedule || args.aiperf.no_fixed_schedule {
        return Ok(());
    }
    let (Some(kind), Some(file)) = (&args.workload.custom_dataset_type, &args.llm.input_file)
    else {
        return Ok(());
    };
    let kind = kind.trim().replace('-', "_");
    if !TRACE_TYPES.contains(&kind.as_str()) || !first_record_has_timestamp(file) {
        return Ok(());
    }
    if args.aiperf.request_rate.is_some() || args.aiperf.arrival_smoothness.is_some() {
        return Err(RunError::bad_option(format!(
            "--input-file {} is a {kind} trace with timestamps, which AIPerf replays at its timestamps, and --request-rate asks for a rate: add --no-fixed-schedule to send the trace's requests at the rate instead.",
            file.display()
        )));
    }
    args.fixed_schedule = true;
    Ok(())
}

/// Whether the first non-empty line of a JSON Lines file is an object with a non-null
/// `timestamp`. A file that cannot be read says nothing here: reading it later says why.
fn first_record_has_timestamp(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let first = std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .find(|line| !line.trim().is_empty());
    first
        .and_then(|line| serde_json::from_str::<serde_json::Value>(&line).ok())
        .is_some_and(|record| record.get("timestamp").is_some_and(|t| !t.is_null()))
}

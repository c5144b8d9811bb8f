//! Which part of a trace is replayed and how fast: `--fixed-schedule-start-offset` and
//! `--fixed-schedule-end-offset` keep the requests whose timestamps are within them (both
//! ends included, as AIPerf), `--replay-speedup` divides timestamps and turn delays, and
//! `--max-context-length` drops the requests whose prompt and asked answer are longer
//! (a session's every turn, when one of them is), counted and said, not sent.

use std::collections::HashSet;

use crate::config::workload::TraceSlice;
use crate::data::entry::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::number::{readable, A_DAY_MS};

/// What the slice left out, for the console.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    pub outside: usize,
    pub too_long: usize,
}

/// The entries within the slice, their times scaled; says what was dropped.
pub fn apply(entries: Vec<Entry>, slice: &TraceSlice) -> RunResult<Vec<Entry>> {
    let total = entries.len();
    let (kept, dropped) = select(entries, slice);
    if dropped.outside > 0 {
        println!(
            "Replaying {} of the trace's {total} requests: {} are outside --fixed-schedule-start-offset/--fixed-schedule-end-offset.",
            total - dropped.outside,
            dropped.outside
        );
    }
    if dropped.too_long > 0 {
        println!(
            "Dropped {} of {total} requests longer than --max-context-length {} tokens (prompt and asked answer); they are not sent.",
            dropped.too_long,
            slice.max_context.unwrap_or_default()
        );
    }
    if kept.is_empty() {
        return Err(RunError::bad_option(
            "No request of the input file is left to send after --fixed-schedule-start-offset, --fixed-schedule-end-offset and --max-context-length: widen them.",
        ));
    }
    check_span(&kept)?;
    Ok(kept)
}

/// A replay lasts at most a day: its timestamps (after the slice and the speed-up) span at
/// most a day, so that no send waits longer and no time overflows.
fn check_span(kept: &[Entry]) -> RunResult<()> {
    let times = kept.iter().filter_map(|e| e.timestamp_ms);
    let (first, last) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
        (lo.min(t), hi.max(t))
    });
    if last - first <= A_DAY_MS {
        return Ok(());
    }
    Err(RunError::bad_option(format!(
        "The input file's timestamps run from {} to {} ms, more than a day ({} ms) of replay: keep a part with --fixed-schedule-start-offset and --fixed-schedule-end-offset, or replay it faster with --replay-speedup.",
        readable(first),
        readable(last),
        readable(A_DAY_MS)
    )))
}

/// The kept entries and the counts of those left out.
pub fn select(entries: Vec<Entry>, slice: &TraceSlice) -> (Vec<Entry>, Dropped) {
    let mut dropped = Dropped::default();
    let within = |e: &Entry| match e.timestamp_ms {
        Some(t) => slice.start_ms.is_none_or(|s| t >= s) && slice.end_ms.is_none_or(|end| t <= end),
        None => true,
    };
    let too_long = |e: &Entry| {
        let Some(limit) = slice.max_context else {
            return false;
        };
        e.prompt.as_ref().is_some_and(|p| {
            p.input_tokens as u64 + p.max_tokens.unwrap_or(0) as u64 > limit as u64
        })
    };
    let long_sessions: HashSet<u32> = entries
        .iter()
        .filter(|e| too_long(e))
        .filter_map(|e| e.turn.map(|t| t.session))
        .collect();
    let mut kept = Vec::with_capacity(entries.len());
    for mut entry in entries {
        if !within(&entry) {
            dropped.outside += 1;
            continue;
        }
        let in_long_session = entry
            .turn
            .is_some_and(|t| long_sessions.contains(&t.session));
        if too_long(&entry) || in_long_session {
            dropped.too_long += 1;
            continue;
        }
        entry.timestamp_ms = entry.timestamp_ms.map(|t| t / slice.speedup);
        if let Some(turn) = &mut entry.turn {
            turn.delay_ms = turn.delay_ms.map(|d| d / slice.speedup);
        }
        kept.push(entry);
    }
    (kept, dropped)
}

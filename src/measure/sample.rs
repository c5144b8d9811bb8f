//! One finished request as the driver saw it, and the per-slot buffer it goes into. The
//! driver only appends here; windows are cut from these buffers off the hot path.

use std::sync::Mutex;
use std::time::Instant;

use crate::backend::ErrorKind;

/// Timestamps and outcome of one request. All instants come from the monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// When the request was meant to go (open loop); equal to `sent` in closed loop.
    pub scheduled: Instant,
    /// When the client began sending it.
    pub sent: Instant,
    /// Nanoseconds from `sent` until the request was handed to the connection.
    pub send_ns: u32,
    /// Nanoseconds spent receiving and decoding the answer after its first byte.
    pub recv_ns: u32,
    /// When the final response was complete.
    pub done: Instant,
    pub error: Option<ErrorKind>,
}

impl Sample {
    /// Latency from the actual send to the final response (the service time), in ns.
    pub fn latency_ns(&self) -> u64 {
        self.done.saturating_duration_since(self.sent).as_nanos() as u64
    }

    /// Latency from the scheduled send to the final response, in ns: what the user of the
    /// service experiences when the client could not send on time.
    pub fn latency_from_schedule_ns(&self) -> u64 {
        self.done
            .saturating_duration_since(self.scheduled)
            .as_nanos() as u64
    }
}

/// The samples one in-flight slot has finished since the last window cut. Only its slot
/// writes to it; the lock is contended only at window ends, when the profiler takes the
/// samples out.
#[derive(Debug, Default)]
pub struct SlotBuffer {
    samples: Mutex<Vec<Sample>>,
}

impl SlotBuffer {
    pub fn push(&self, sample: Sample) {
        self.samples
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push(sample);
    }

    /// Moves every sample whose final response arrived at or before `boundary` into `out`;
    /// later samples stay for the next window.
    pub fn drain_until(&self, boundary: Instant, out: &mut Vec<Sample>) {
        let mut samples = self
            .samples
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let before = out.len();
        out.extend(samples.iter().filter(|s| s.done <= boundary).copied());
        if out.len() - before == samples.len() {
            samples.clear();
        } else {
            samples.retain(|s| s.done > boundary);
        }
    }

    /// Number of samples waiting to be cut into a window.
    pub fn len(&self) -> usize {
        self.samples
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

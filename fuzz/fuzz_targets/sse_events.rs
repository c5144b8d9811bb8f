#![no_main]
//! See inferperf_wire::fuzzing::sse_events.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf_wire::fuzzing::sse_events(data));

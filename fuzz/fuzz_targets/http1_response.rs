#![no_main]
//! See inferperf_wire::fuzzing::http1_response.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf_wire::fuzzing::http1_response(data));

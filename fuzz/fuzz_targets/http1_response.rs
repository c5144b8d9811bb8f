#![no_main]
//! See inferperf::fuzzing::http1_response.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf::fuzzing::http1_response(data));

#![no_main]
//! See inferperf::fuzzing::input_data.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf::fuzzing::input_data(data));

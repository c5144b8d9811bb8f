#![no_main]
//! See inferperf::fuzzing::answers.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf::fuzzing::answers(data));

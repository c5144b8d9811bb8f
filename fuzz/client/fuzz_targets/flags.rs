#![no_main]
//! See inferperf::fuzzing::flags.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf::fuzzing::flags(data));

#![no_main]
//! See inferperf_wire::fuzzing::kserve_binary.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf_wire::fuzzing::kserve_binary(data));

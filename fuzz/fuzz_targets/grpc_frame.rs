#![no_main]
//! See inferperf::fuzzing::grpc_frame.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf::fuzzing::grpc_frame(data));

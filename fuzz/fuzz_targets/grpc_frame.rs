#![no_main]
//! See inferperf_wire::fuzzing::grpc_frame.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| inferperf_wire::fuzzing::grpc_frame(data));

//! Every input the fuzz targets ever crashed on (`fuzz/regressions/<target>/`), run through
//! the same entry points as the targets, so that plain `cargo test` keeps them fixed.

use std::path::Path;

use inferperf::fuzzing;

/// Runs `entry` on each file of `fuzz/regressions/<target>/`, naming the file that fails.
fn replay(target: &str, entry: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let Ok(files) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut paths: Vec<_> = files.map(|f| f.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| entry(&data));
        assert!(outcome.is_ok(), "{} still fails", path.display());
    }
}

#[test]
fn http1_response() {
    replay("http1_response", fuzzing::http1_response);
}

#[test]
fn kserve_json() {
    replay("kserve_json", fuzzing::kserve_json);
}

#[test]
fn kserve_binary() {
    replay("kserve_binary", fuzzing::kserve_binary);
}

#[test]
fn grpc_frame() {
    replay("grpc_frame", fuzzing::grpc_frame);
}

#[test]
fn sse_events() {
    replay("sse_events", fuzzing::sse_events);
}

#[test]
fn input_data() {
    replay("input_data", fuzzing::input_data);
}

#[test]
fn flags() {
    replay("flags", fuzzing::flags);
}

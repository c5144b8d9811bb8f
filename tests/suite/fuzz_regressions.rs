//! The fuzz targets' inputs on stable, so that plain `cargo test` covers them: every input
//! a target ever crashed on (`fuzz/regressions/<target>/`) through the same entry points as
//! the targets, and for the targets on the client's own readers — which CI does not build
//! with `cargo fuzz` (that build is the whole client again; `bench/fuzz/run.sh` runs them
//! for as long as asked) — their seeds and a fixed number of seeded mutations of them. A
//! mutation that fails is written to `target/fuzz-smoke/` and named.

use std::path::{Path, PathBuf};

use inferperf::fuzzing;
use inferperf_wire::fuzzing as wire_fuzzing;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, in name order (none when the folder is missing).
fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(files) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = files.map(|f| f.unwrap().path()).collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

/// Runs `entry` on each file of `fuzz/regressions/<target>/`, naming the file that fails.
fn replay(target: &str, entry: fn(&[u8])) {
    for (path, data) in inputs("regressions", target) {
        let outcome = std::panic::catch_unwind(|| entry(&data));
        assert!(outcome.is_ok(), "{} still fails", path.display());
    }
}

/// The strings of a libFuzzer dictionary (`"..."` lines, with `\xNN`, `\"` and `\\`).
fn dictionary(target: &str) -> Vec<Vec<u8>> {
    let path = fuzz_dir().join("dict").join(format!("{target}.dict"));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let quoted = text.lines().filter_map(|l| {
        let l = l.trim();
        let start = l.find('"')?;
        l[start + 1..]
            .strip_suffix('"')
            .filter(|_| !l.starts_with('#'))
    });
    quoted.map(unescape).collect()
}

fn unescape(s: &str) -> Vec<u8> {
    let (mut out, bytes, mut i) = (Vec::new(), s.as_bytes(), 0);
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'\\', Some(b'x')) if i + 4 <= bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 4;
            }
            (b'\\', Some(&c)) => {
                out.push(c);
                i += 2;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// One mutation of `input`: a bit flipped, a byte set, inserted or removed, a range
/// removed or repeated, a dictionary string inserted, or a piece of another seed spliced in.
fn mutate(rng: &mut StdRng, input: &mut Vec<u8>, seeds: &[Vec<u8>], dict: &[Vec<u8>]) {
    let at = |rng: &mut StdRng, len: usize| rng.random_range(0..=len);
    match rng.random_range(0..7) {
        0 if !input.is_empty() => {
            let i = rng.random_range(0..input.len());
            input[i] ^= 1 << rng.random_range(0..8);
        }
        1 if !input.is_empty() => {
            let i = rng.random_range(0..input.len());
            input[i] = rng.random();
        }
        2 => {
            let i = at(rng, input.len());
            input.insert(i, rng.random());
        }
        3 if !input.is_empty() => {
            let i = rng.random_range(0..input.len());
            let end = (i + rng.random_range(1..=16)).min(input.len());
            input.drain(i..end);
        }
        4 if !input.is_empty() => {
            let i = rng.random_range(0..input.len());
            let end = (i + rng.random_range(1..=16)).min(input.len());
            let piece = input[i..end].to_vec();
            let to = at(rng, input.len());
            input.splice(to..to, piece);
        }
        5 if !dict.is_empty() => {
            let word = &dict[rng.random_range(0..dict.len())];
            let i = at(rng, input.len());
            input.splice(i..i, word.iter().copied());
        }
        _ => {
            let other = &seeds[rng.random_range(0..seeds.len())];
            let from = at(rng, other.len());
            let to = at(rng, input.len());
            input.truncate(to);
            input.extend_from_slice(&other[from..]);
        }
    }
}

/// Seeds, past crashes and `runs` seeded mutations of them (up to `max_len` bytes)
/// through `entry`.
fn smoke(target: &str, entry: fn(&[u8]), runs: usize, max_len: usize) {
    let mut seeds: Vec<Vec<u8>> = inputs("corpus", target)
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    seeds.extend(inputs("regressions", target).into_iter().map(|(_, d)| d));
    assert!(!seeds.is_empty(), "fuzz/corpus/{target}/ has seeds");
    smoke_on(target, &seeds, &dictionary(target), entry, runs, max_len);
}

/// [`smoke`] on given seeds and dictionary.
fn smoke_on(
    target: &str,
    seeds: &[Vec<u8>],
    dict: &[Vec<u8>],
    entry: fn(&[u8]),
    runs: usize,
    max_len: usize,
) {
    let mut rng = StdRng::seed_from_u64(1);
    for n in 0..seeds.len() + runs {
        let mut input = seeds[n % seeds.len()].clone();
        if n >= seeds.len() {
            for _ in 0..rng.random_range(1..=4) {
                mutate(&mut rng, &mut input, seeds, dict);
            }
            input.truncate(max_len);
        }
        if std::panic::catch_unwind(|| entry(&input)).is_err() {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-smoke");
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{target}-{n}"));
            std::fs::write(&path, &input).unwrap();
            panic!("{target} fails on mutation {n}: {}", path.display());
        }
    }
}

#[test]
fn http1_response() {
    replay("http1_response", wire_fuzzing::http1_response);
}

#[test]
fn kserve_json() {
    replay("kserve_json", wire_fuzzing::kserve_json);
}

#[test]
fn kserve_binary() {
    replay("kserve_binary", wire_fuzzing::kserve_binary);
}

#[test]
fn grpc_frame() {
    replay("grpc_frame", wire_fuzzing::grpc_frame);
}

#[test]
fn sse_events() {
    replay("sse_events", wire_fuzzing::sse_events);
}

#[test]
fn answers() {
    smoke("answers", fuzzing::answers, 1_000_000, 8192);
}

#[test]
fn input_data() {
    smoke("input_data", fuzzing::input_data, 2_000_000, 8192);
}

#[test]
fn flags() {
    smoke("flags", fuzzing::flags, 10_000, 1024);
}

#[test]
fn the_mutations_reach_what_the_seeds_do_not() {
    let seeds = vec![b"data: {}\n\n".to_vec()];
    let dict = dictionary("answers");
    assert!(
        dict.iter().any(|w| w == b"[DONE]"),
        "the dictionary is read"
    );
    assert_eq!(unescape(r#"a\x0a\"\\"#), b"a\n\"\\");
    let mut rng = StdRng::seed_from_u64(1);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let mut input = seeds[0].clone();
        mutate(&mut rng, &mut input, &seeds, &dict);
        seen.insert(input);
    }
    assert!(seen.len() > 100, "mutations differ: {}", seen.len());
}

#[test]
fn a_mutation_that_fails_is_kept_and_named() {
    fn entry(data: &[u8]) {
        assert!(!data.contains(&b'!'), "a bang");
    }
    let seeds = [b"no bang here".to_vec()];
    let failed = std::panic::catch_unwind(|| smoke_on("self-test", &seeds, &[], entry, 10_000, 64));
    let message = *failed.unwrap_err().downcast::<String>().unwrap();
    let path = message.rsplit(": ").next().unwrap();
    let kept = std::fs::read(path).unwrap();
    assert!(kept.contains(&b'!'), "{message}");
    std::fs::remove_file(path).unwrap();
}

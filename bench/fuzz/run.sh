#!/usr/bin/env bash
# Fuzzes inferperf's readers of untrusted input with cargo fuzz (libFuzzer; needs the
# nightly toolchain). Usage:
#
#   bench/fuzz/run.sh SECONDS [TARGET...]   each target (default: all) for SECONDS
#   bench/fuzz/run.sh --smoke [TARGET...]   each target for a fixed number of inputs (CI;
#                                           default: the wire crate's targets)
#   bench/fuzz/run.sh --build [TARGET...]   the build alone (CI starts it beside the tests)
#
# Targets on the wire crate alone (fuzz/, entry points in crates/wire/src/fuzzing.rs):
# http1_response, kserve_json, kserve_binary, grpc_frame, sse_events. Targets on the client's
# own readers (fuzz/client/, entry points in src/fuzzing.rs): answers, input_data, flags —
# they link the whole client, so CI runs them on stable instead (their seeds, past crashes
# and seeded mutations, in tests/suite/fuzz_regressions.rs) and builds only the wire
# crate's with cargo fuzz; a timed run builds what its targets need.
# One fuzzing process at a time. Each target starts from its seeds (fuzz/corpus/TARGET,
# committed), its past crashes (fuzz/regressions/TARGET, committed) and its dictionary
# (fuzz/dict/TARGET.dict, if any), and keeps what it
# grows in fuzz/work/TARGET/corpus (not committed). The smoke is reproducible: a fixed seed
# and a fixed number of inputs per target (about 8 s each here, 30 s at most), so CI fails
# only where the same run fails on any machine; finding new crashes is the timed runs' job.
# Prints the executions done and the
# crashes found per target; exits 1 if any target crashed: the input is in
# fuzz/work/TARGET/artifacts/. Once fixed, copy it to fuzz/regressions/TARGET/ (then
# tests/suite/fuzz_regressions.rs replays it on stable with `cargo test`).
#
# Environment: FUZZ_TARGET_DIR, where the fuzz build goes (default fuzz/target, shared by
# both packages);
# FUZZ_SANITIZER, cargo fuzz's -s (default none: the fuzzed parsers are safe Rust, with no
# `unsafe` on their paths, so AddressSanitizer has no memory error to find there and only
# slows the build and the runs; `address` brings it back).
set -euo pipefail
cd "$(dirname "$0")/../.."

WIRE=(http1_response kserve_json kserve_binary grpc_frame sse_events)
CLIENT=(answers input_data flags)
ALL=("${WIRE[@]}" "${CLIENT[@]}")
usage() {
    echo "usage: bench/fuzz/run.sh SECONDS|--smoke|--build [TARGET...] (targets: ${ALL[*]})" >&2
    exit 2
}
# The package (folder) a target is built in.
package_of() {
    if [[ " ${CLIENT[*]} " == *" $1 "* ]]; then echo fuzz/client; else echo fuzz; fi
}
[ $# -ge 1 ] || usage
case "$1" in
    --smoke) seconds=30 smoke=1 ;;
    --build) seconds=0 ;;
    ''|*[!0-9]*) usage ;;
    *) seconds=$1 ;;
esac
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    if [ "$seconds" -gt 0 ] && [ -z "${smoke:-}" ]; then targets=("${ALL[@]}"); else targets=("${WIRE[@]}"); fi
fi
for t in "${targets[@]}"; do
    [[ " ${ALL[*]} " == *" $t "* ]] || { echo "unknown target: $t" >&2; usage; }
done

# Inputs per target in the smoke: about 8 s of each on this 2-core machine.
smoke_runs() {
    case "$1" in
        http1_response) echo 3000000 ;;
        kserve_json) echo 800000 ;;
        kserve_binary) echo 1400000 ;;
        grpc_frame) echo 750000 ;;
        sse_events) echo 250000 ;;
        answers) echo 250000 ;;
        input_data) echo 1600000 ;;
        flags) echo 3500 ;;
    esac
}

# Longest input per target: room for several headers, messages or events, and for argv.
max_len() {
    case "$1" in
        flags) echo 1024 ;;
        *) echo 8192 ;;
    esac
}

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "bench/fuzz/run.sh: the nightly toolchain is missing (rustup toolchain install nightly)" >&2
    exit 3
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

target_dir=$(realpath -m "${FUZZ_TARGET_DIR:-fuzz/target}")
sanitizer=${FUZZ_SANITIZER:-none}
packages=()
for t in "${targets[@]}"; do
    p=$(package_of "$t")
    [[ " ${packages[*]} " == *" $p "* ]] || packages+=("$p")
done
for p in "${packages[@]}"; do
    echo "== cargo +nightly fuzz build -O -s $sanitizer (release with debug assertions and overflow checks, $p/Cargo.toml)"
    build_start=$SECONDS
    # --fuzz-dir: without it, cargo fuzz in fuzz/client/ finds fuzz/ above it.
    (cd "$p" && cargo +nightly fuzz build -O -s "$sanitizer" --fuzz-dir . --target-dir "$target_dir")
    echo "   built in $((SECONDS - build_start)) s"
done
[ "$seconds" -gt 0 ] || exit 0
bin_dir=$target_dir/x86_64-unknown-linux-gnu/release

failed=0
summary=()
for t in "${targets[@]}"; do
    work=fuzz/work/$t
    mkdir -p "$work/corpus" "$work/artifacts" "fuzz/corpus/$t"
    inputs=("$work/corpus" "fuzz/corpus/$t")
    [ -d "fuzz/regressions/$t" ] && inputs+=("fuzz/regressions/$t")
    options=()
    [ -f "fuzz/dict/$t.dict" ] && options+=(-dict="fuzz/dict/$t.dict")
    [ -n "${smoke:-}" ] && options+=(-seed=1 -runs="$(smoke_runs "$t")")
    log=$work/last.log
    before=$(find "$work/artifacts" -type f | wc -l)
    echo "== $t: ${smoke:+$(smoke_runs "$t") inputs, }${seconds} s at most"
    status=0
    # With FUZZ_SANITIZER=address: no allocation stacks in ASan's bookkeeping (faster, above all for clap in flags); a
    # crash still prints its own stack.
    ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0} "$bin_dir/$t" "${inputs[@]}" \
        -max_total_time="$seconds" -max_len="$(max_len "$t")" \
        -rss_limit_mb=2048 -timeout=5 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/" "${options[@]}" >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(( $(find "$work/artifacts" -type f | wc -l) - before ))
    if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
        crashes=1 # libFuzzer failed without leaving an input (see the log)
    fi
    if [ "$crashes" -gt 0 ]; then
        failed=1
        grep -E "^(==[0-9]+==ERROR|thread '|SUMMARY|artifact_prefix|Test unit written)" "$log" | head -8 || true
        echo "   log: $log"
    fi
    summary+=("$(printf '%-15s %12s executions  %d crash(es)' "$t" "${execs:-?}" "$crashes")")
done

echo "== summary (${smoke:+a fixed seed and count, }${seconds} s at most per target)"
printf '%s\n' "${summary[@]}"
exit $failed

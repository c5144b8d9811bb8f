#!/usr/bin/env bash
# Streamed answers of a decoupled model, inferperf beside perf_analyzer 2.50 on the embedded
# server's `stream` model, whose every answer comes at a known time: request and response
# throughput, first-response and inter-response latency and answers per request against that
# truth and against the server's own statistics, and each client's CPU per request.
#
# Usage: bench/stream/run.sh [--concurrency 1,8,64] [--responses 5] [--first-ms 10]
#                            [--interval-ms 4] [--instances 64] [--window-ms 2000]
# Env:   PERF_ANALYZER=path   perf_analyzer to use (else installed into target/bench-venv)
# Prints the table and writes it to bench/stream/results.md (--out FILE elsewhere).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib.sh

PERF_ANALYZER_MISSING=""
if ! setup_perf_analyzer || ! "$PA" --version >>"$BENCH_LOG" 2>&1; then
    PERF_ANALYZER_MISSING="perf_analyzer 2.50 could not be installed or started (see $BENCH_LOG)"
    echo "$PERF_ANALYZER_MISSING; its rows are skipped."
    PA=""
fi

echo "== building (release)"
cargo build --release --quiet
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Run a copy, so that a rebuild during the run does not swap the binary under it.
cp target/release/inferperf "$TMP/inferperf"
INFERPERF="$TMP/inferperf" PERF_ANALYZER="$PA" PERF_ANALYZER_MISSING="$PERF_ANALYZER_MISSING" \
    python3 bench/stream/stream.py "$@"

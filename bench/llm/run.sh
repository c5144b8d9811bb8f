#!/usr/bin/env bash
# Streamed LLM answers, inferperf beside AIPerf 0.13 on the embedded server's `llm` model (one
# server-sent event per token): each client's CPU per output token and per request, its peak
# RSS, the requests and tokens per second it got, and whether it held the asked number of
# streams; then one inferperf at the highest concurrency with its RSS sampled every second.
#
# With the word-level tokenizer written below, each tool also runs with the server sending no
# usage and its tokenizer counting the answers (inferperf-tok, aiperf-tok).
#
# Usage: bench/llm/run.sh [--concurrency 64,1000,10000] [--seconds 30] [--ttft-ms 200]
#                         [--itl-ms 1] [--tools inferperf,inferperf-tok,aiperf,aiperf-tok]
#                         [--aiperf-cap 150] [--soak-seconds 60] [--out FILE]
# Env:   AIPERF=path   the aiperf to use (else .venv-e2e/aiperf from scripts/e2e-setup, else
#                      aiperf==0.13.0 installed into target/bench-aiperf)
#        INFERPERF_BIN=path   an inferperf binary to run instead of building one
# Prints the table and writes it to bench/llm/results.md (--out FILE elsewhere).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib.sh

# One connection per stream: at 10,000 streams the client and the server (started from here,
# so with the same limit) each hold 10,000 sockets. Raise the soft limit to the hard one.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 10500 ]; then
    echo "note: open files limited to $(ulimit -n) (hard limit); 10,000 streams need about 10,500"
fi

# install_aiperf: AIPerf 0.13 into target/bench-aiperf (Python >= 3.10; ~90 s from PyPI).
install_aiperf() {
    local venv=target/bench-aiperf
    if [ ! -x "$venv/bin/aiperf" ]; then
        echo "== installing aiperf 0.13.0 into $venv (log in $BENCH_LOG)" >&2
        local py
        py=$(command -v python3.11 || command -v python3)
        if ! {
            "$py" -m venv "$venv" && "$venv/bin/pip" install -q 'aiperf==0.13.0'
        } >>"$BENCH_LOG" 2>&1; then
            echo "could not install aiperf 0.13.0 into $venv with pip (see $BENCH_LOG)" >&2
            return 1
        fi
    fi
    AIPERF=$PWD/$venv/bin/aiperf
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
AIPERF=${AIPERF:-}
LLM_BENCH_AIPERF_MISSING=""
LLM_BENCH_TOKENIZER=""
if [[ " $* " != *" --tools inferperf "* ]]; then
    if [ -z "$AIPERF" ] && [ -x .venv-e2e/aiperf/bin/aiperf ]; then
        AIPERF=$PWD/.venv-e2e/aiperf/bin/aiperf
    fi
    [ -n "$AIPERF" ] || install_aiperf || LLM_BENCH_AIPERF_MISSING="aiperf 0.13.0 could not be installed (see $BENCH_LOG)"
    if [ -n "$AIPERF" ]; then
        # The tokenizer AIPerf needs offline (and both tools count with in the -tok runs),
        # written with the Python of AIPerf's venv.
        if "$(dirname "$AIPERF")/python" bench/llm/tokenizer.py "$TMP/tokenizer" >>"$BENCH_LOG" 2>&1; then
            LLM_BENCH_TOKENIZER=$TMP/tokenizer
        else
            LLM_BENCH_AIPERF_MISSING="its tokenizer could not be written with $(dirname "$AIPERF")/python (see $BENCH_LOG)"
        fi
    fi
    [ -z "$LLM_BENCH_AIPERF_MISSING" ] || echo "$LLM_BENCH_AIPERF_MISSING; the AIPerf rows are skipped."
fi

if [ -n "${INFERPERF_BIN:-}" ]; then
    echo "== using $INFERPERF_BIN (INFERPERF_BIN: not built here)"
else
    echo "== building (release)"
    cargo build --release --quiet
fi
# Run a copy, so that a rebuild during the run does not swap the binary under it.
cp "${INFERPERF_BIN:-${CARGO_TARGET_DIR:-target}/release/inferperf}" "$TMP/inferperf"
INFERPERF="$TMP/inferperf" AIPERF="$AIPERF" LLM_BENCH_TOKENIZER="$LLM_BENCH_TOKENIZER" \
    LLM_BENCH_AIPERF_MISSING="$LLM_BENCH_AIPERF_MISSING" python3 bench/llm/llm.py "$@"

#!/usr/bin/env bash
# Entry point of the client-cost benchmark (bench/client/README.md): what inferperf spends
# per request, in CPU and memory, beside perf_analyzer 2.50, wrk and ghz on the same embedded
# server. This script installs the peer tools that are missing (wrk, perf_analyzer into
# target/bench-venv, ghz into target/bench-go with Go), builds inferperf, copies the binary so
# that a rebuild during the run cannot swap it, and hands over to bench.py. A peer that cannot
# be installed is skipped, with its reason, rather than failing the run.
#
# Usage: bench/client/run.sh [--quick] [--pin] [--tools ...] [--baseline REV] [...]
#        (--help lists the flags). --baseline REV builds inferperf at git revision REV in
#        target/bench-baseline and alternates it with the current build: before/after figures
#        from one run on one server.
# Env:   PERF_ANALYZER=path, PERF_ANALYZER_LIB=dir   perf_analyzer to use (as bench/rate)
# Prints the tables and writes them to bench/client/results.md (--out FILE elsewhere).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib.sh

# Bad flags and --help answer at once, before anything is installed.
python3 bench/client/bench.py --validate-only "$@"
for arg in "$@"; do
  case $arg in -h | --help) exit 0 ;; esac
done

# install_ghz: ghz v0.93.0 into target/bench-go/bin with `go install`; GHZ_MISSING says why not.
install_ghz() {
  GHZ=$PWD/target/bench-go/bin/ghz
  [ -x "$GHZ" ] && return 0
  if ! command -v go >/dev/null 2>&1; then
    GHZ_MISSING="Go is not installed, so ghz could not be built"
  else
    echo "== installing ghz v0.93.0 into target/bench-go/bin (go install; log in $BENCH_LOG)"
    GOBIN=$PWD/target/bench-go/bin go install github.com/bojand/ghz/cmd/ghz@v0.93.0 >>"$BENCH_LOG" 2>&1 && return 0
    GHZ_MISSING="go install of ghz v0.93.0 failed (see $BENCH_LOG)"
  fi
  echo "$GHZ_MISSING; the ghz rows are skipped."
  GHZ=""
}

# find_wrk: WRK, installed if missing; WRK_MISSING says why not.
find_wrk() {
  WRK=$(command -v wrk || true)
  [ -n "$WRK" ] && return 0
  if need_wrk; then
    WRK=$(command -v wrk)
  else
    WRK_MISSING="wrk could not be installed with apt-get (see $BENCH_LOG)"
    echo "$WRK_MISSING; the wrk rows are skipped."
  fi
}

# find_perf_analyzer: PA (bench/lib.sh), checked to start; PERF_ANALYZER_MISSING says why not.
find_perf_analyzer() {
  PA=""
  if ! setup_perf_analyzer; then
    PERF_ANALYZER_MISSING="perf_analyzer 2.50 could not be installed (see $BENCH_LOG)"
  elif [ ! -x "$PA" ]; then
    PERF_ANALYZER_MISSING="PERF_ANALYZER=$PA is not an executable file"
  elif ! "$PA" --version >>"$BENCH_LOG" 2>&1; then
    PERF_ANALYZER_MISSING="$PA does not start (missing libcudart or libb64? see $BENCH_LOG)"
  else
    return 0
  fi
  echo "$PERF_ANALYZER_MISSING; the perf_analyzer rows are skipped."
}

# build_baseline REV: inferperf at REV, built in its own worktree and target directory;
# BASELINE is the binary, BASELINE_MISSING why there is none.
build_baseline() {
    local rev=$1 tree=$PWD/target/bench-baseline
    BASELINE_COMMIT=$(git rev-parse --short "$rev^{commit}" 2>/dev/null) || {
        BASELINE_MISSING="--baseline $rev is not a git revision here"
        echo "$BASELINE_MISSING; the baseline rows are skipped."
        return 0
    }
    echo "== building the baseline inferperf at $rev ($BASELINE_COMMIT) in $tree (log in $BENCH_LOG)"
    git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"
    if git worktree add --detach "$tree" "$rev" >>"$BENCH_LOG" 2>&1 \
        && (cd "$tree" && CARGO_TARGET_DIR="$tree-target" cargo build --release --quiet) >>"$BENCH_LOG" 2>&1; then
        BASELINE_BIN=$tree-target/release/inferperf
    else
        BASELINE_MISSING="the baseline at $rev did not build (see $BENCH_LOG)"
        echo "$BASELINE_MISSING; the baseline rows are skipped."
    fi
}

BASELINE_REV=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --baseline) BASELINE_REV=${args[i + 1]:-} ;;
        --baseline=*) BASELINE_REV=${args[i]#--baseline=} ;;
    esac
done

WRK_MISSING="" PERF_ANALYZER_MISSING="" GHZ_MISSING="" BASELINE_MISSING="" BASELINE_BIN="" BASELINE_COMMIT=""
[ -n "$BASELINE_REV" ] && build_baseline "$BASELINE_REV"
find_wrk
find_perf_analyzer
install_ghz
export WRK_MISSING PERF_ANALYZER_MISSING GHZ_MISSING BASELINE_MISSING BASELINE_COMMIT

echo "== building (release)"
cargo build --release --quiet
# Run a copy, so that a rebuild during the run does not swap the binary under it; bench.py
# removes this directory when it ends.
BENCH_TMP=$(mktemp -d)
cp target/release/inferperf "$BENCH_TMP/inferperf"
BASELINE=""
if [ -n "$BASELINE_BIN" ]; then
    cp "$BASELINE_BIN" "$BENCH_TMP/inferperf-baseline"
    BASELINE=$BENCH_TMP/inferperf-baseline
fi

export BENCH_TMP INFERPERF="$BENCH_TMP/inferperf" PERF_ANALYZER="$PA" WRK GHZ BASELINE
exec python3 bench/client/bench.py "$@"

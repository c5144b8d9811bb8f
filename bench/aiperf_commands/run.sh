#!/usr/bin/env bash
# Runs AIPerf 0.13's documented command lines (tests/e2e/test_aiperf_commands.py) with
# another inferperf client, to count how many ran before a change:
#
#   bench/aiperf_commands/run.sh                 # this tree's target/release/inferperf
#   bench/aiperf_commands/run.sh PATH/inferperf  # that binary
#   bench/aiperf_commands/run.sh COMMIT          # that commit, built in a scratch worktree
#
# The server is always this tree's binary (`inferperf serve`, built first), so that only
# the client differs. A commit is checked out with `git worktree add` under
# $SCRATCH (default target/aiperf-commands-build), this tree's target/ copied in (only the
# inferperf crate then recompiles), built, run, and the worktree removed. The table goes to
# target/e2e/aiperf-commands-LABEL.md (LABEL: the commit, or `bin`), the summary line to
# stdout. The test's pass or fail is not this script's: it exits 0 when the harness ran.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export E2E_VENVS="${E2E_VENVS:-$ROOT/.venv-e2e}" PYTHONDONTWRITEBYTECODE=1
export CARGO_PROFILE_RELEASE_LTO="${CARGO_PROFILE_RELEASE_LTO:-false}"
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS="${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-16}"
SCRATCH="${SCRATCH:-$ROOT/target/aiperf-commands-build}"
WORKTREE=""

cleanup() {
  if [ -n "$WORKTREE" ] && [ -d "$WORKTREE" ]; then
    git -C "$ROOT" worktree remove --force "$WORKTREE"
  fi
}
trap cleanup EXIT

echo "== building this tree's inferperf (the server)"
cargo build --release --quiet --bin inferperf
SERVER_BIN="$ROOT/target/release/inferperf"

ARG="${1:-$SERVER_BIN}"
if [ -x "$ARG" ] && [ -f "$ARG" ]; then
  CLIENT_BIN=$(realpath "$ARG")
  LABEL=bin
else
  COMMIT=$(git rev-parse --verify "$ARG^{commit}")
  LABEL=${COMMIT:0:7}
  WORKTREE="$SCRATCH/$LABEL"
  echo "== building $COMMIT in $WORKTREE"
  mkdir -p "$SCRATCH"
  git worktree add --detach "$WORKTREE" "$COMMIT"
  cp -r "$ROOT/target" "$WORKTREE/"
  (cd "$WORKTREE" && cargo build --release --quiet --bin inferperf)
  CLIENT_BIN="$WORKTREE/target/release/inferperf"
fi

echo "== AIPerf's documented lines: client $CLIENT_BIN, server $SERVER_BIN"
mkdir -p target/e2e
rm -f target/e2e/aiperf-commands.md
status=0
AIPERF_COMMANDS=1 INFERPERF_BIN="$CLIENT_BIN" AIPERF_COMMANDS_SERVER_BIN="$SERVER_BIN" \
  "$E2E_VENVS/triton/bin/python" -m pytest tests/e2e/test_aiperf_commands.py -q -s -p no:cacheprovider \
  >"$ROOT/target/e2e/aiperf-commands-$LABEL.log" 2>&1 || status=$?
if [ ! -f target/e2e/aiperf-commands.md ]; then
  tail -20 "target/e2e/aiperf-commands-$LABEL.log" >&2
  echo "the harness wrote no table (pytest exit $status)" >&2
  exit 1
fi
cp target/e2e/aiperf-commands.md "target/e2e/aiperf-commands-$LABEL.md"
grep -h "aiperf commands:" "target/e2e/aiperf-commands-$LABEL.log" | tail -1
echo "table: target/e2e/aiperf-commands-$LABEL.md (pytest exit $status; its log beside it)"

#!/usr/bin/env bash
# Open-loop request rate, inferperf beside perf_analyzer, on the same embedded server in
# the same run: the highest rate inferperf sustains with under 1% of sends more than 1 ms
# late, with its p99 send lag, and at every rate what perf_analyzer's request-rate mode
# (--async, its open loop) achieves: its send rate, its share of delayed requests, its
# throughput and latency.
#
# The server (`inferperf serve`, model noop) is pinned to CPU 0 and each client to the
# other CPUs when there are two or more; both clients use the same -p/-r/-s.
#
# Usage: bench/rate/run.sh [RATE...]   (default: 1000 2000 5000 10000 15000 20000 30000)
# Env:   PERF_ANALYZER=path   perf_analyzer 2.50 to use (else it is installed into
#                             target/bench-venv from the tritonclient[all]==2.50.0 wheel)
#        PERF_ANALYZER_LIB=dir  directory of libcudart (default: next to PERF_ANALYZER's venv)
#        WINDOW_MS=2000       measurement window of both tools
# Prints the table and writes it to bench/rate/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(1000 2000 5000 10000 15000 20000 30000)
WINDOW_MS=${WINDOW_MS:-2000}
OUT=bench/rate/results.md
TMP=$(mktemp -d)
SERVER_PID=""

cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# perf_analyzer: the given one, or the tritonclient wheel's in target/bench-venv.
source bench/lib.sh
setup_perf_analyzer || exit 1

echo "== building (release)"
cargo build --release --quiet
# Run a copy, so that a rebuild during the run does not swap the binary under it.
cp target/release/inferperf "$TMP/inferperf"
BIN="$TMP/inferperf"

CPUS=$(nproc)
if [ "$CPUS" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
  SERVER_CPUS="taskset -c 0"
  CLIENT_LIST=1
  [ "$CPUS" -gt 2 ] && CLIENT_LIST="1-$((CPUS - 1))"
  CLIENT_CPUS="taskset -c $CLIENT_LIST"
  SPLIT="server CPU 0, client CPU $CLIENT_LIST"
else
  SERVER_CPUS=""
  CLIENT_CPUS=""
  SPLIT="not pinned"
fi

echo "== starting inferperf serve (noop)"
$SERVER_CPUS "$BIN" serve --http-port 0 --grpc-port 0 --model noop=noop >"$TMP/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do
  grep -q "HTTP on" "$TMP/serve.log" 2>/dev/null && break
  sleep 0.1
done
HTTP=$(sed -n 's/.*HTTP on \([0-9.:]*\),.*/\1/p' "$TMP/serve.log" | head -n 1)
[ -n "$HTTP" ] || { echo "the server did not start:" >&2; cat "$TMP/serve.log" >&2; exit 1; }
COMMON=(-m noop -u "$HTTP" -p "$WINDOW_MS" -r 3 -s 100)
# Bound each client run (perf_analyzer can hang once the server falls behind).
LIMIT=$((WINDOW_MS * 6 / 1000 + 30))

# field FILE REGEX: the first capture group of the first line matching REGEX (sed -E).
field() {
  sed -nE "s/$2/\\1/p" "$1" | head -n 1
}

ROWS=()
BEST_RATE=""
BEST_LAG=""
for rate in "${RATES[@]}"; do
  echo "== rate $rate/s: inferperf"
  timeout "$LIMIT" $CLIENT_CPUS "$BIN" "${COMMON[@]}" --request-rate-range "$rate" >"$TMP/ip.log" 2>&1 || true
  ip_sent=$(field "$TMP/ip.log" '.*Send rate: ([0-9.]+) req\/sec.*')
  ip_late=$(field "$TMP/ip.log" '.*late sends \(>1 ms\): ([0-9.]+)%.*')
  ip_lag=$(field "$TMP/ip.log" '.*send lag p50 [0-9]+ usec, p99 ([0-9]+) usec.*')
  ip_tput=$(field "$TMP/ip.log" '^    Throughput: ([0-9.]+) infer\/sec.*')
  ip_p99=$(field "$TMP/ip.log" '^    p99 latency: ([0-9]+) usec.*')

  echo "== rate $rate/s: perf_analyzer"
  timeout "$LIMIT" $CLIENT_CPUS "$PA" "${COMMON[@]}" --request-rate-range "$rate" --async -f "$TMP/pa.csv" >"$TMP/pa.log" 2>&1 || true
  pa_sent=$(field "$TMP/pa.log" '.*Avg send request rate: ([0-9.]+) infer\/sec.*')
  pa_delayed=$(field "$TMP/pa.log" '.* ([0-9.]+)% of the requests were delayed.*')
  # perf_analyzer prints its send rate and delayed share only when over 1% were delayed.
  [ -n "$(field "$TMP/pa.log" '^    Throughput: ([0-9.]+).*')" ] && [ -z "$pa_delayed" ] && pa_delayed="<1"
  pa_tput=$(field "$TMP/pa.log" '^    Throughput: ([0-9.]+) infer\/sec.*')
  pa_avg=$(field "$TMP/pa.log" '^    Avg latency: ([0-9]+) usec.*')
  pa_p99=$(field "$TMP/pa.log" '^    p99 latency: ([0-9]+) usec.*')
  if [ -z "$pa_tput" ]; then
    pa_note=$(grep -m1 -iE "error|failed|unstable" "$TMP/pa.log" || echo "no report within $LIMIT s")
    echo "   perf_analyzer: $pa_note"
  fi

  ROWS+=("| $rate | ${ip_sent:--} | ${ip_late:--}% | ${ip_lag:--} | ${ip_tput:--} | ${ip_p99:--} | ${pa_sent:--} | ${pa_delayed:--}% | ${pa_tput:--} | ${pa_avg:--} | ${pa_p99:--} |")
  if [ -n "$ip_late" ] && awk -v l="$ip_late" 'BEGIN { exit !(l < 1.0) }'; then
    BEST_RATE=$rate
    BEST_LAG=$ip_lag
  fi
done

{
  echo "# Request rate: inferperf beside perf_analyzer"
  echo
  echo "\`bench/rate/run.sh ${RATES[*]}\` on $(date -u +%Y-%m-%d), $CPUS CPUs ($SPLIT), load average $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Embedded server, model noop over HTTP; both clients -p $WINDOW_MS -r 3 -s 100; perf_analyzer 2.50 (tritonclient wheel) with --async."
  echo
  echo "| target /s | inferperf sent /s | late >1 ms | send lag p99 us | answered /s | p99 latency us (from schedule) | perf_analyzer sent /s | delayed | throughput /s | avg latency us | p99 latency us (from send) |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
  echo
  if [ -n "$BEST_RATE" ]; then
    echo "Highest rate inferperf sustained with under 1% late sends: **$BEST_RATE/s**, p99 send lag $BEST_LAG us."
  else
    echo "inferperf had 1% or more late sends at every rate tried."
  fi
  echo
  echo "perf_analyzer prints its send rate and share of delayed requests only when over 1% were delayed (shown as - and <1% otherwise), and counts latency from the actual send; inferperf counts latency from the scheduled send, so a client that falls behind shows it in the latency."
} | tee "$OUT"

#!/usr/bin/env bash
# How much CPU the embedded server spends per inference on `identity` (16 x FP32) over
# HTTP and gRPC, driven by inferperf and, for HTTP, by wrk posting the same KServe JSON.
# For each driver: the server's CPU time (utime + stime from /proc/PID/stat) and the
# inferences it served (its statistics endpoint) before and after, giving CPU µs per
# inference and inferences per second per server core. The server is pinned to CPU 0 and
# the driver to the other CPUs when there are two or more, so "per core" is literal; wrk
# also runs once on the server's own CPU ("shared"), which shows what waking a peer on
# another CPU costs the server (see bench/server/README.md).
#
# Usage: bench/server/run.sh [seconds per wrk run, default 10]
# Prints the table and writes it to bench/server/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

WRK_SECONDS=${1:-10}
CONCURRENCY=32
OUT=bench/server/results.md
TMP=$(mktemp -d)
SERVER_PID=""

cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

source bench/lib.sh
need_wrk || exit 1
echo "== building (release)"
cargo build --release --quiet
# Run a copy, so that a rebuild during the run does not swap the binary under it.
cp target/release/inferperf "$TMP/inferperf"
BIN="$TMP/inferperf"

CPUS=$(nproc)
if [ "$CPUS" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
  SERVER_CPUS="taskset -c 0"
  DRIVER_LIST=1
  [ "$CPUS" -gt 2 ] && DRIVER_LIST="1-$((CPUS - 1))"
  DRIVER_CPUS="taskset -c $DRIVER_LIST"
  SPLIT="server CPU 0, driver CPU $DRIVER_LIST"
else
  SERVER_CPUS=""
  DRIVER_CPUS=""
  SPLIT="not pinned"
fi
TICKS=$(getconf CLK_TCK)

echo "== starting inferperf serve (identity, FP32 [16])"
$SERVER_CPUS "$BIN" serve --http-port 0 --grpc-port 0 \
  --model identity=identity:datatype=FP32,shape=16,max_batch=8 >"$TMP/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do
  grep -q "HTTP on" "$TMP/serve.log" 2>/dev/null && break
  sleep 0.1
done
LINE=$(head -n 1 "$TMP/serve.log")
HTTP=$(sed -E 's/.*HTTP on ([0-9.:]+),.*/\1/' <<<"$LINE")
GRPC=$(sed -E 's/.*gRPC on ([0-9.:]+),.*/\1/' <<<"$LINE")
[ -n "$HTTP" ] && [ -n "$GRPC" ] || { echo "the server did not start: $(cat "$TMP/serve.log")"; exit 1; }
echo "   HTTP $HTTP, gRPC $GRPC, server pid $SERVER_PID"

server_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$SERVER_PID/stat"; }
inferences() {
  curl -s "http://$HTTP/v2/models/identity/stats" | grep -o '"inference_count":[0-9]*' | cut -d: -f2
}
now() { date +%s.%N; }

BODY='{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"FP32","data":[0.5,1.5,2.5,3.5,4.5,5.5,6.5,7.5,8.5,9.5,10.5,11.5,12.5,13.5,14.5,15.5]}]}'
cat >"$TMP/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$BODY'
wrk.headers["Content-Type"] = "application/json"
LUA
STATUS=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "$BODY" "http://$HTTP/v2/models/identity/infer")
[ "$STATUS" = 200 ] || { echo "the JSON body is refused (HTTP $STATUS)"; exit 1; }

ROWS=()
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
# measure DRIVER PROTOCOL PLACEMENT COMMAND...: runs the command and adds a table row.
measure() {
  local driver=$1 protocol=$2 placement=$3
  shift 3
  echo "== $driver, $protocol: $*"
  local t0 c0 n0 t1 c1 n1
  n0=$(inferences); c0=$(server_ticks); t0=$(now)
  local rc=0
  "$@" >"$TMP/driver.log" 2>&1 || rc=$?
  # inferperf exits 2 when a level is unstable; its load was still applied.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
    echo "   the driver failed (exit $rc):"; tail -n 5 "$TMP/driver.log"; return 0
  fi
  t1=$(now); c1=$(server_ticks); n1=$(inferences)
  local row
  row=$(awk -v n=$((n1 - n0)) -v c=$((c1 - c0)) -v hz="$TICKS" -v t0="$t0" -v t1="$t1" \
    -v d="$driver" -v p="$protocol" -v pl="$placement" 'BEGIN {
      secs = t1 - t0; cpu = c / hz;
      rate = n / secs; us = (n > 0) ? cpu * 1e6 / n : 0; per_core = (cpu > 0) ? n / cpu : 0;
      printf "| %s | %s | %s | %d | %.0f | %.2f | %.0f%% | %.1f | %.0f |", d, p, pl, n, rate, cpu, 100 * cpu / secs, us, per_core
    }')
  echo "   $row"
  ROWS+=("$row")
}

measure "inferperf (binary tensors)" HTTP split $DRIVER_CPUS "$BIN" -m identity -u "$HTTP" -i http \
  --concurrency-range "$CONCURRENCY" -p 3000
measure "inferperf (JSON tensors)" HTTP split $DRIVER_CPUS "$BIN" -m identity -u "$HTTP" -i http \
  --input-tensor-format json --output-tensor-format json --concurrency-range "$CONCURRENCY" -p 3000
measure "inferperf" gRPC split $DRIVER_CPUS "$BIN" -m identity -u "$GRPC" -i grpc \
  --concurrency-range "$CONCURRENCY" -p 3000
measure "wrk (same JSON body)" HTTP split $DRIVER_CPUS wrk -t1 -c"$CONCURRENCY" -d"${WRK_SECONDS}s" \
  -s "$TMP/post.lua" "http://$HTTP/v2/models/identity/infer"
if [ -n "$SERVER_CPUS" ]; then
  measure "wrk (same JSON body)" HTTP shared $SERVER_CPUS wrk -t1 -c"$CONCURRENCY" -d"${WRK_SECONDS}s" \
    -s "$TMP/post.lua" "http://$HTTP/v2/models/identity/infer"
fi

HEADER="| driver | protocol | CPUs | inferences | inferences/s | server CPU s | server busy | server CPU µs / inference | inferences/s per server core |
|---|---|---|---|---|---|---|---|---|"
{
  echo "# Embedded server: CPU per inference"
  echo
  echo "\`bench/server/run.sh\` on $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)'),"
  echo "$CPUS CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average before the run: $LOAD."
  echo "CPUs: split = $SPLIT; shared = server and driver both on CPU 0."
  echo "Model identity (FP32 [16], batch 1 per request), $CONCURRENCY requests in flight."
  echo
  echo "$HEADER"
  printf '%s\n' "${ROWS[@]}"
} >"$OUT"
echo
echo "$HEADER"
printf '%s\n' "${ROWS[@]}"
echo
echo "written to $OUT"

#!/usr/bin/env bash
# What TLS costs the client: inferperf's client CPU per request over HTTPS and gRPC over TLS
# beside plain HTTP and gRPC, at concurrency 16 and 64, against two embedded servers (one
# plain, one with `serve --tls-cert/--tls-key`) on loopback. The figure is the `Client CPU:
# N usec per request` line of each level (the client process's CPU time over the requests it
# completed); handshakes are made before measuring, so this is the cost of encrypting and
# decrypting the requests and answers. CPU time moves with whatever else the machine runs,
# so, when valgrind is installed, a second table gives the client's user-space instructions
# per request (callgrind; the difference between runs of 2,000 and 12,000 requests, so
# start-up, discovery and handshakes cancel out), which does not. Certificates are made with
# openssl in a temporary directory.
#
# Usage: bench/tls/run.sh [BINARY]   (default: builds with cargo build --release)
# Env:   WINDOW_MS (default 2000), MODEL (default identity), REPEAT (default 3: each figure
#        is the median of REPEAT runs, the four kinds taking turns, as a shared machine's
#        load drifts)
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${1:-}
if [ -z "$BIN" ]; then
  cargo build --release --quiet
  BIN=${CARGO_TARGET_DIR:-target}/release/inferperf
fi
WINDOW_MS=${WINDOW_MS:-2000}
MODEL=${MODEL:-identity}
REPEAT=${REPEAT:-3}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# make_certs: a CA and a server certificate for 127.0.0.1 signed by it.
make_certs() {
  (
    cd "$WORK"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
      -out ca.pem -days 2 -subj "/CN=bench CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key \
      -out server.csr -subj "/CN=127.0.0.1"
    printf "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n" >ext.cnf
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
      -out server.pem -days 2 -extfile ext.cnf
  ) >/dev/null 2>&1
}

# serve NAME ARGS...: starts a server on free ports; sets HTTP_NAME and GRPC_NAME.
serve() {
  local name=$1
  shift
  "$BIN" serve --http-port 0 --grpc-port 0 "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 50); do
    grep -q "HTTP on" "$WORK/$name.log" && break
    sleep 0.1
  done
  local line
  line=$(grep "HTTP on" "$WORK/$name.log")
  printf -v "HTTP_$name" '%s' "$(sed -E 's/.*HTTP on ([^,]+),.*/\1/' <<<"$line")"
  printf -v "GRPC_$name" '%s' "$(sed -E 's/.*gRPC on ([0-9.:]+).*/\1/' <<<"$line")"
}

# cpu_per_request ARGS...: the `Client CPU` figures of the levels 16 and 64, space-separated
# (an unstable level, exit 2, still has its figure).
cpu_per_request() {
  { "$BIN" -m "$MODEL" --concurrency-range 16:64:48 -p "$WINDOW_MS" -s 50 -r 4 --no-progress "$@" || true; } \
    | sed -nE 's/.*Client CPU: ([0-9.]+) usec per request.*/\1/p' | tr '\n' ' '
}

make_certs
serve plain
serve tls --tls-cert "$WORK/server.pem" --tls-key "$WORK/server.key"
CA=$WORK/ca.pem

# Each kind's figures of every round, one line per round: "c16 c64".
declare -A RUNS
for _ in $(seq "$REPEAT"); do
  RUNS[http]+="$(cpu_per_request -u "$HTTP_plain")"$'\n'
  RUNS[https]+="$(cpu_per_request -u "https://$HTTP_tls" --ssl-https-ca-certificates-file "$CA")"$'\n'
  RUNS[grpc]+="$(cpu_per_request -i grpc -u "$GRPC_plain")"$'\n'
  RUNS[grpcs]+="$(cpu_per_request -i grpc -u "grpcs://$GRPC_tls" --ssl-grpc-root-certifications-file "$CA")"$'\n'
done

# median KIND COLUMN: the median of a kind's figures at concurrency 16 (1) or 64 (2).
median() {
  printf '%s' "${RUNS[$1]}" | awk -v c="$2" 'NF >= c { print $c }' | sort -n \
    | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
h16=$(median http 1) h64=$(median http 2) s16=$(median https 1) s64=$(median https 2)
g16=$(median grpc 1) g64=$(median grpc 2) t16=$(median grpcs 1) t64=$(median grpcs 2)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }'; }
echo "Client CPU per request (usec, median of $REPEAT), model $MODEL, windows of $WINDOW_MS ms, $(nproc) cores"
printf "%-6s %-12s %8s %8s %8s\n" "" "" "plain" "TLS" "TLS/plain"
printf "%-6s %-12s %8s %8s %8s\n" "HTTP" "c=16" "$h16" "$s16" "$(ratio "$h16" "$s16")"
printf "%-6s %-12s %8s %8s %8s\n" "HTTP" "c=64" "$h64" "$s64" "$(ratio "$h64" "$s64")"
printf "%-6s %-12s %8s %8s %8s\n" "gRPC" "c=16" "$g16" "$t16" "$(ratio "$g16" "$t16")"
printf "%-6s %-12s %8s %8s %8s\n" "gRPC" "c=64" "$g64" "$t64" "$(ratio "$g64" "$t64")"

command -v valgrind >/dev/null 2>&1 || {
  echo "(valgrind is not installed: no instruction counts)"
  exit 0
}

# instructions N ARGS...: the client's user-space instructions over a run of N requests.
instructions() {
  local n=$1
  shift
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" -m "$MODEL" --no-progress \
    --request-count "$n" "$@" 2>&1 | sed -nE 's/.*Collected : ([0-9]+).*/\1/p'
}

# per_request C ARGS...: instructions per request at concurrency C.
per_request() {
  local c=$1 few many
  shift
  few=$(instructions 2000 --concurrency-range "$c" "$@")
  many=$(instructions 12000 --concurrency-range "$c" "$@")
  echo $(((many - few) / 10000))
}

echo
echo "Client instructions per request (user space, callgrind), model $MODEL"
printf "%-6s %-12s %8s %8s %8s\n" "" "" "plain" "TLS" "TLS/plain"
for c in 16 64; do
  p=$(per_request "$c" -u "$HTTP_plain")
  t=$(per_request "$c" -u "https://$HTTP_tls" --ssl-https-ca-certificates-file "$CA")
  printf "%-6s %-12s %8s %8s %8s\n" "HTTP" "c=$c" "$p" "$t" "$(ratio "$p" "$t")"
done
for c in 16 64; do
  p=$(per_request "$c" -i grpc -u "$GRPC_plain")
  t=$(per_request "$c" -i grpc -u "grpcs://$GRPC_tls" --ssl-grpc-root-certifications-file "$CA")
  printf "%-6s %-12s %8s %8s %8s\n" "gRPC" "c=$c" "$p" "$t" "$(ratio "$p" "$t")"
done

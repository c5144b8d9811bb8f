#!/usr/bin/env python3
"""Streamed answers of a decoupled model, measured by inferperf and perf_analyzer side by side.

Why this exists: a decoupled model answers many times per request, and a client that times
only one answer (perf_analyzer's case) or that cannot keep up with the answers misreports the
server. The embedded server's `stream` model answers with a known truth — N answers, the
first F ms after its execution starts, then M ms apart, on I instances — so every figure
can be held against it: request and response throughput (c / (F + (N-1)·M) when c ≤ I),
first-response latency (F), inter-response latency (M), answers per request (N). The
server's own statistics give the requests and answers it served. Each tool's client CPU is
its process's user + system time (wait4) over the requests the server counted.
Python 3 standard library only; bench/stream/run.sh builds inferperf and starts this.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/stream/run.sh", description=__doc__.split("\n")[0])
    p.add_argument("--concurrency", default="1,8,64", help="levels (default 1,8,64)")
    p.add_argument("--responses", type=int, default=5, help="answers per request N (5)")
    p.add_argument("--first-ms", type=float, default=10.0, help="first answer after F ms (10)")
    p.add_argument("--interval-ms", type=float, default=4.0, help="then every M ms (4)")
    p.add_argument("--instances", type=int, default=64, help="model instances I (64)")
    p.add_argument("--window-ms", type=int, default=2000, help="-p of both tools (2000)")
    p.add_argument("--out", default="bench/stream/results.md", help="results file")
    args = p.parse_args(argv)
    try:
        args.levels = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        p.error(f"--concurrency takes comma-separated whole numbers, not '{args.concurrency}'")
    if min(args.levels) < 1 or args.responses < 1 or args.instances < 1:
        p.error("concurrency, responses and instances must be at least 1")
    return args


class Server:
    def __init__(self, binary, model, tmp):
        self.log = os.path.join(tmp, "serve.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([binary, "serve", "--http-port", "0", "--grpc-port", "0",
                                          "--model", model], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            found = re.search(r"HTTP on ([0-9.:]+), gRPC on ([0-9.:]+)", open(self.log).read())
            if found:
                self.http, self.grpc = found.groups()
                return
            time.sleep(0.05)
        raise SystemExit(f"bench/stream: the server did not start: {open(self.log).read()[:300]}")

    def served(self):
        """(requests, non-empty answers) the server has counted for `tokens`."""
        with urllib.request.urlopen(f"http://{self.http}/v2/models/tokens/stats", timeout=10) as r:
            stats = json.load(r)["model_stats"][0]
        answers = sum(s["success"]["count"] for s in stats.get("response_stats", {}).values())
        return stats["inference_stats"]["success"]["count"], answers

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_tool(argv, env=None, timeout=120):
    """(exit code, CPU seconds of the process, stdout+stderr)."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = b""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > timeout:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    out = proc.stdout.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, out


def row_of(path):
    with open(path, newline="") as f:
        return next(csv.DictReader(f))


def measure(tool, binary, server, level, args, tmp, env=None):
    csv_path = os.path.join(tmp, f"{tool}-c{level}.csv")
    argv = [binary, "-m", "tokens", "-u", server.grpc, "-i", "grpc", "--streaming",
            "--concurrency-range", str(level), "-p", str(args.window_ms), "-f", csv_path]
    if tool == "perf_analyzer":
        argv.append("--async")
    before = server.served()
    code, cpu, out = run_tool(argv, env=env)
    after = server.served()
    requests, answers = after[0] - before[0], after[1] - before[1]
    result = dict(tool=tool, level=level, code=code, requests=requests, answers=answers,
                  cpu_us=cpu / requests * 1e6 if requests else None)
    if code not in (0, 2) or not os.path.exists(csv_path):
        result["failure"] = next((l for l in out.splitlines() if "rror" in l), f"exit {code}")
        return result
    row = row_of(csv_path)
    result.update(tput=float(row["Inferences/Second"]),
                  rtput=float(row.get("Response Throughput") or "nan"),
                  p50=float(row["p50 latency"]),
                  first=float(row.get("p50 first response latency") or "nan"),
                  first99=float(row.get("p99 first response latency") or "nan"),
                  gap=float(row.get("p50 inter-response latency") or "nan"),
                  gap99=float(row.get("p99 inter-response latency") or "nan"),
                  per_request=float(row.get("Responses per request") or "nan"))
    return result


def fmt(value, digits=0):
    if value is None or value != value:
        return "-"
    return f"{value:,.{digits}f}"


def dev(value, truth):
    if value is None or value != value or not truth:
        return "-"
    return f"{(value - truth) / truth * 100:+.1f}%"


def report(args, results, skipped):
    stream_ms = args.first_ms + (args.responses - 1) * args.interval_ms
    lines = ["# Streamed answers: inferperf beside perf_analyzer on a decoupled model", "",
             f"`bench/stream/run.sh {' '.join(sys.argv[1:])}` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
             f"load average {open('/proc/loadavg').read().split()[0]}.", "",
             f"- Server: `inferperf serve --model tokens=stream:responses={args.responses},"
             f"first_ms={args.first_ms:g},interval_ms={args.interval_ms:g},instances={args.instances}`: "
             f"{args.responses} answers per request, the first {args.first_ms:g} ms after the "
             f"execution starts, then every {args.interval_ms:g} ms ({stream_ms:g} ms a request).",
             f"- Both tools over gRPC `--streaming`, `-p {args.window_ms}`; perf_analyzer 2.50 with "
             "`--async`. Truth: throughput c / stream time while c ≤ instances.",
             "- Client CPU: the process's user + system time over the requests the server counted."]
    lines += [f"- {family}: not run ({why})." for family, why in skipped.items()]
    lines += ["", "| tool | c | req/s (truth) | dev | answers/s | answers/req | first p50 / p99 ms "
              "| gap p50 / p99 ms | latency p50 ms | server req / answers | client CPU µs/req |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        truth = min(r["level"], args.instances) / stream_ms * 1000
        if "failure" in r:
            lines.append(f"| {r['tool']} | {r['level']} | {r['failure'][:60]} |||||||||")
            continue
        lines.append(
            f"| {r['tool']} | {r['level']} | {fmt(r['tput'], 1)} ({truth:.1f}) | {dev(r['tput'], truth)} "
            f"| {fmt(r['rtput'], 1)} | {fmt(r['per_request'], 2)} "
            f"| {fmt(r['first'] / 1000, 2)} / {fmt(r['first99'] / 1000, 2)} "
            f"| {fmt(r['gap'] / 1000, 2)} / {fmt(r['gap99'] / 1000, 2)} | {fmt(r['p50'] / 1000, 2)} "
            f"| {r['requests']:,} / {r['answers']:,} | {fmt(r['cpu_us'], 1)} |")
    ratios = []
    for level in args.levels:
        cpu = {r["tool"]: r.get("cpu_us") for r in results if r["level"] == level}
        if cpu.get("inferperf") and cpu.get("perf_analyzer"):
            ratios.append(f"c={level}: {cpu['inferperf'] / cpu['perf_analyzer']:.2f}")
    if ratios:
        lines += ["", "inferperf / perf_analyzer client CPU per request: " + ", ".join(ratios) + "."]
    lines += ["", "perf_analyzer writes neither first-response nor inter-response latency nor "
              "answers per request (shown as -): it times a request to its last answer only."]
    return "\n".join(lines) + "\n"


def main(argv):
    args = parse_args(argv)
    binary = os.environ.get("INFERPERF", "target/release/inferperf")
    pa = os.environ.get("PERF_ANALYZER", "")
    skipped = {} if pa and os.access(pa, os.X_OK) else {
        "perf_analyzer": os.environ.get("PERF_ANALYZER_MISSING") or "not installed"}
    tmp = tempfile.mkdtemp(prefix="bench-stream-")
    model = (f"tokens=stream:responses={args.responses},first_ms={args.first_ms:g},"
             f"interval_ms={args.interval_ms:g},instances={args.instances}")
    server = Server(binary, model, tmp)
    results = []
    try:
        for level in args.levels:
            tools = [("inferperf", binary)] + ([] if skipped else [("perf_analyzer", pa)])
            for tool, path in tools:
                result = measure(tool, path, server, level, args, tmp)
                print(f"  {tool} c={level}: {result}", flush=True)
                results.append(result)
    finally:
        server.stop()
    text = report(args, results, skipped)
    print("\n" + text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

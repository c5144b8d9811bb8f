#!/usr/bin/env python3
"""Client-cost benchmark: what the load generator itself costs, beside its peers.

Why this exists: a load generator that spends more CPU per request than the server it
measures reports its own limits, not the server's. This drives the embedded server with
inferperf, perf_analyzer 2.50, wrk and ghz at the same concurrencies, alternating them, and
gives each client's CPU (rusage) per request the server counted, its peak RSS and its own
throughput and latency; then a memory soak of inferperf at concurrency 1000 and its time from
spawn to first request. Python 3 standard library only; bench/client/run.sh installs the
tools and starts it (see bench/client/README.md).
"""
import argparse
import csv
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass

import report
from procs import Proc, first_error_line, kill_live_groups, proc_status_kib, read_text, run_bounded

MODEL = "identity"
SERVER_MODEL = "identity=identity:datatype=FP32,shape=16,max_batch=8"
VALUES = [i + 0.5 for i in range(16)]
# perf_analyzer 2.50's synchronous HTTP client stops reporting at concurrency >= 16 when a
# window holds too many requests: its main thread waits in LoadManager::SwapRequestRecords
# (seen in gdb) while the worker threads keep filling the records, and its memory climbs
# past 1 GiB. Against this server (25,000-90,000 requests/s) it hung with -p 2000 and, on a
# faster machine, with -p 1000; with -p 500 it finishes. Both window tools use the same -p.
WINDOW_MS = 500
MAX_TRIALS = 10  # the default of inferperf and perf_analyzer
# The soak runs windows of this length that never stabilise (-s 0.01), so that the run lasts
# the whole soak and goes through many window ends.
SOAK_WINDOW_S = 5
GRPC_SHARE = 6  # in-flight gRPC requests per connection (inferperf, perf_analyzer)
FAMILIES = ("inferperf", "perf_analyzer", "wrk", "ghz", "baseline")
TOOLS = (
    "inferperf http-binary", "inferperf http-json", "inferperf grpc",
    "perf_analyzer http-binary", "perf_analyzer http-json", "perf_analyzer grpc",
    "wrk http-binary", "wrk http-json", "ghz grpc",
    "baseline http-binary", "baseline http-json", "baseline grpc",
)
# Families that run inferperf's flags and write perf_analyzer's CSV.
WINDOW_TOOLS = ("inferperf", "perf_analyzer", "baseline")


def usage_error(message):
    print(f"bench/client: {message}.", file=sys.stderr)
    sys.exit(3)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        usage_error(message)


def parse_args(argv):
    p = Parser(prog="bench/client/run.sh", description="Client cost per request of inferperf, perf_analyzer, wrk and ghz "
                           "against the embedded server (see bench/client/README.md).")
    p.add_argument("--repeats", type=int, help="repeats of the side-by-side table (default 3)")
    p.add_argument("--concurrency", help="comma-separated levels (default 1,16,64,256)")
    p.add_argument("--tools", help="comma-separated subset: a family (inferperf, perf_analyzer, "
                                   "wrk, ghz) or 'FAMILY/PROTOCOL', e.g. wrk/http-json")
    p.add_argument("--seconds", type=int, help="duration of each wrk and ghz run (default 8)")
    p.add_argument("--soak-seconds", type=int, help="memory soak duration (default 60)")
    p.add_argument("--startups", type=int, help="startup samples per client (default 10)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 repeat, concurrency 1,64, 4 s, soak 15 s, 3 startups")
    p.add_argument("--pin", action="store_true",
                   help="server on CPU 0, every client on the other CPUs (taskset)")
    p.add_argument("--pa-async", action="store_true", help="run perf_analyzer with --async")
    p.add_argument("--no-soak", action="store_true", help="skip the memory soak")
    p.add_argument("--no-startup", action="store_true", help="skip the startup measurement")
    p.add_argument("--no-callgrind", action="store_true",
                   help="skip the instruction counts (callgrind; skipped anyway without valgrind)")
    p.add_argument("--window-ms", type=int, default=WINDOW_MS,
                   help=f"-p of inferperf and perf_analyzer (default {WINDOW_MS})")
    p.add_argument("--timeout", type=int, help="bound of each inferperf and perf_analyzer "
                                               "run, s (default: 10 windows x 1.2 + 20 s)")
    p.add_argument("--baseline", metavar="REV",
                   help="also run inferperf built from git revision REV (the 'baseline' rows, "
                        "alternated with the others; run.sh builds it)")
    p.add_argument("--out", default="bench/client/results.md", help="results file")
    p.add_argument("--validate-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    apply_defaults(args)
    args.levels = parse_levels(args.concurrency)
    args.selected = parse_tools(args.tools, args.baseline)
    if args.pin and ((os.cpu_count() or 1) < 2 or not shutil.which("taskset")):
        usage_error("--pin needs taskset and at least 2 CPUs")
    return args


def apply_defaults(args):
    quick = args.quick
    defaults = dict(repeats=1 if quick else 3, concurrency="1,64" if quick else "1,16,64,256",
                    seconds=4 if quick else 8, soak_seconds=15 if quick else 60,
                    startups=3 if quick else 10, timeout=timeout_window_tools(args.window_ms))
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("repeats", "seconds", "soak_seconds", "startups", "timeout", "window_ms"):
        if getattr(args, name) < 1:
            usage_error(f"--{name.replace('_', '-')} must be at least 1")


def timeout_window_tools(window_ms):
    return int(MAX_TRIALS * 1.2 * window_ms / 1000 + 20)


def parse_levels(text):
    try:
        levels = [int(part) for part in text.split(",")]
    except ValueError:
        usage_error(f"--concurrency takes comma-separated positive integers, not '{text}'")
    if not levels or min(levels) < 1:
        usage_error(f"--concurrency takes comma-separated positive integers, not '{text}'")
    return levels


def parse_tools(text, baseline=None):
    """The tools asked for; with --baseline, the baseline of each inferperf tool chosen too."""
    chosen = select_tools(text)
    if baseline:
        chosen += [t.replace("inferperf", "baseline") for t in chosen if t.startswith("inferperf")]
    elif any(t.startswith("baseline") for t in chosen):
        usage_error("the baseline rows need --baseline REV")
    return [t for t in TOOLS if t in chosen]


def select_tools(text):
    if not text:
        return [t for t in TOOLS if not t.startswith("baseline")]
    chosen = []
    for entry in text.split(","):
        name = re.sub(r"[/:]", " ", entry.strip())
        match = [t for t in TOOLS if t == name or t.split()[0] == name]
        if not match:
            usage_error(f"unknown tool '{entry}' (known: {', '.join(FAMILIES)}, or one of "
                        f"{', '.join(t.replace(' ', '/') for t in TOOLS)})")
        chosen += [t for t in match if t not in chosen]
    return chosen


# ---------------------------------------------------------------- server

class Server:
    """The embedded server, started on free ports and stopped at exit."""

    def __init__(self, binary, prefix, tmp):
        self.log = os.path.join(tmp, "serve.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                prefix + [binary, "serve", "--http-port", "0", "--grpc-port", "0",
                          "--model", SERVER_MODEL],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        self.http, self.grpc = self.wait_for_ports()

    def wait_for_ports(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.proc.poll() is None:
            line = read_text(self.log).split("\n")[0]
            found = re.search(r"HTTP on ([0-9.:]+), gRPC on ([0-9.:]+)", line)
            if found:
                return found.group(1), found.group(2)
            time.sleep(0.05)
        self.stop()
        raise SystemExit(f"bench/client: the server did not start: {read_text(self.log)[:300]}")

    def stats(self):
        """(inference_count, last_inference ms) of the model."""
        url = f"http://{self.http}/v2/models/{MODEL}/stats"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                stats = json.load(response)["model_stats"][0]
            return stats["inference_count"], stats["last_inference"]
        except (OSError, ValueError, KeyError, IndexError) as e:
            raise SystemExit(f"bench/client: the server's statistics cannot be read ({e}).")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


# ---------------------------------------------------------------- request bodies

def binary_body():
    header = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 64}}],
                         "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]},
                        separators=(",", ":")).encode()
    return header + struct.pack("<16f", *VALUES), {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(header))}


def json_body():
    body = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "FP32",
                                   "data": VALUES}]}, separators=(",", ":")).encode()
    return body, {"Content-Type": "application/json"}


def ghz_data():
    return json.dumps({"model_name": MODEL, "inputs": [{
        "name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
        "contents": {"fp32_contents": VALUES}}]}, separators=(",", ":"))


def write_wrk_script(tmp, protocol, body, headers):
    """A wrk script posting BODY (read from a file, binary safe) with HEADERS."""
    body_path = os.path.join(tmp, f"{protocol}.body")
    with open(body_path, "wb") as f:
        f.write(body)
    lines = [f'local f = assert(io.open("{body_path}", "rb"))', 'wrk.method = "POST"',
             'wrk.body = f:read("*a")', "f:close()"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    script = os.path.join(tmp, f"{protocol}.lua")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    return script


def check_body(http, protocol, body, headers):
    url = f"http://{http}/v2/models/{MODEL}/infer"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status = response.status
    except urllib.error.HTTPError as e:
        status = e.code
    if status != 200:
        raise SystemExit(f"bench/client: the server refuses wrk's {protocol} body (HTTP {status}).")


# ---------------------------------------------------------------- one run

@dataclass
class Run:
    tool: str
    level: int
    served: int
    proc: Proc
    tput: float = None
    p50: float = None
    p99: float = None
    note: str = ""
    failure: str = ""  # why the tool's own figures are missing

    @property
    def cpu_us(self):
        return self.proc.cpu / self.served * 1e6 if self.served > 0 else None


def tool_paths():
    """From run.sh's environment: INFERPERF, PERF_ANALYZER, WRK, GHZ (FAMILY_MISSING: why not)."""
    env = os.environ.get
    return {"inferperf": env("INFERPERF", "target/release/inferperf"),
            "baseline": env("BASELINE", ""),
            "perf_analyzer": env("PERF_ANALYZER", "target/bench-venv/bin/perf_analyzer"),
            "wrk": env("WRK", shutil.which("wrk") or ""),
            "ghz": env("GHZ", shutil.which("ghz") or "target/bench-go/bin/ghz")}


class Bench:
    """Everything one invocation shares: tools, server, placement, scratch files."""

    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        cpus = os.cpu_count() or 1
        client_cpus = "1" if cpus == 2 else f"1-{cpus - 1}"
        self.server_prefix = ["taskset", "-c", "0"] if args.pin else []
        self.client_prefix = ["taskset", "-c", client_cpus] if args.pin else []
        self.placement = (f"server on CPU 0, every client on CPU {client_cpus} (taskset)"
                          if args.pin else f"nothing pinned ({cpus} CPUs shared)")
        self.paths = tool_paths()
        self.server_model, self.window_ms = SERVER_MODEL, args.window_ms
        self.skipped = self.find_missing()
        self.server = None
        self.scripts = {}
        self.counter = 0

    def find_missing(self):
        return {family: os.environ.get(f"{family.upper()}_MISSING") or f"no {family} binary ('{path}')"
                for family, path in self.paths.items()
                if (not path or not os.access(path, os.X_OK))
                and (family != "baseline" or self.args.baseline)}

    def tools(self):
        return [t for t in self.args.selected if t.split()[0] not in self.skipped]

    def start(self):
        self.server = Server(self.paths["inferperf"], self.server_prefix, self.tmp)
        for protocol, (body, headers) in (("http-binary", binary_body()),
                                          ("http-json", json_body())):
            if f"wrk {protocol}" in self.tools():
                check_body(self.server.http, protocol, body, headers)
                self.scripts[protocol] = write_wrk_script(self.tmp, protocol, body, headers)

    def log_stem(self, name):
        self.counter += 1
        return os.path.join(self.tmp, f"{self.counter:03d}-{name.replace(' ', '-')}")

    def window_argv(self, family, protocol, level, csv_path):
        grpc = protocol == "grpc"
        argv = [self.paths[family], "-m", MODEL, "-u", self.server.grpc if grpc else self.server.http,
                "-i", "grpc" if grpc else "http", "--concurrency-range", str(level),
                "-p", str(self.window_ms), "-f", csv_path]
        if protocol == "http-json":
            argv += ["--input-tensor-format", "json", "--output-tensor-format", "json"]
        if family == "perf_analyzer" and self.args.pa_async:
            argv.append("--async")
        return argv

    def peer_argv(self, family, protocol, level):
        seconds = str(self.args.seconds)
        if family == "wrk":
            return [self.paths["wrk"], "-t1", f"-c{level}", f"-d{seconds}s", "--latency",
                    "-s", self.scripts[protocol], f"http://{self.server.http}/v2/models/{MODEL}/infer"]
        return [self.paths["ghz"], "--insecure", "--proto", "crates/wire/proto/grpc_service.proto",
                "--import-paths", "crates/wire/proto", "--call", "inference.GRPCInferenceService/ModelInfer",
                "-d", ghz_data(), "-c", str(level), "--connections", str(grpc_connections(level)),
                "-z", f"{seconds}s", "-O", "json", self.server.grpc]

    def measure(self, tool, level):
        family, protocol = tool.split()
        stem = self.log_stem(f"{tool}-c{level}")
        window_tool = family in WINDOW_TOOLS
        argv = (self.window_argv(family, protocol, level, stem + ".csv") if window_tool
                else self.peer_argv(family, protocol, level))
        timeout = self.args.timeout if window_tool else self.args.seconds + 15
        before, _ = self.server.stats()
        proc = run_bounded(self.client_prefix + argv, timeout, stem)
        after, _ = self.server.stats()
        run = Run(tool, level, after - before, proc)
        read_figures(run, family, stem, level)
        return run


def grpc_connections(level):
    """gRPC connections for `level` requests in flight: one per GRPC_SHARE, as inferperf's
    default and perf_analyzer's client library (a channel is shared by up to 6 clients)."""
    return -(-level // GRPC_SHARE)


# ---------------------------------------------------------------- tool outputs

def read_figures(run, family, stem, level):
    """The tool's own throughput, p50 and p99 (µs), or why there are none (run.failure)."""
    proc = run.proc
    window_tool = family in WINDOW_TOOLS
    first_error = first_error_line(proc.stderr + proc.stdout)
    if proc.hung:
        run.failure = "hung"
        return
    if proc.exit not in ((0, 2) if window_tool else (0,)):
        run.failure = f"failed (exit {proc.exit}: {first_error})"
        return
    if proc.exit == 2:
        run.note = "unstable"
    try:
        if window_tool:
            run.tput, run.p50, run.p99 = parse_window_csv(stem + ".csv")
        elif family == "wrk":
            run.tput, run.p50, run.p99, run.note = parse_wrk(proc.stdout)
        else:
            run.tput, run.p50, run.p99, run.note = parse_ghz(proc.stdout, level)
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError, StopIteration):
        label = "unstable, no report" if proc.exit == 2 else "failed, no figures"
        run.failure, run.note = f"{label} (exit {proc.exit}: {first_error})", ""


def parse_window_csv(path):
    with open(path, newline="") as f:
        row = next(csv.DictReader(f))
    return float(row["Inferences/Second"]), float(row["p50 latency"]), float(row["p99 latency"])


WRK_UNITS = {"us": 1, "ms": 1e3, "s": 1e6}


def parse_wrk(text):
    tput = float(re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M).group(1))
    percentiles = {int(p): float(v) * WRK_UNITS[unit] for p, v, unit in
                   re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)}
    notes = []
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if bad:
        notes.append(f"{bad.group(1)} non-2xx answers")
    socket = re.search(r"Socket errors: (.*)", text)
    if socket:
        notes.append(f"socket errors: {socket.group(1).strip()}")
    return tput, percentiles[50], percentiles[99], "; ".join(notes)


def parse_ghz(text, level):
    report = json.loads(text)
    latency = {int(e["percentage"]): e["latency"] / 1000 for e in report["latencyDistribution"]}
    errors = sum(n for code, n in report.get("statusCodeDistribution", {}).items() if code != "OK")
    note = ""
    # Requests still in flight when -z ends are cancelled (Unavailable): at most one per slot.
    if errors > level:
        first = next(iter(report.get("errorDistribution") or {"?": 0}))
        note = f"{errors} errors: {first[:60]}"
    return report["rps"], latency[50], latency[99], note


# ---------------------------------------------------------------- side-by-side table

def side_by_side(bench):
    runs = []
    tools = bench.tools()
    for repeat in range(bench.args.repeats):
        for level in bench.args.levels:
            shift = repeat % len(tools)
            for tool in tools[shift:] + tools[:shift]:
                run = bench.measure(tool, level)
                print(f"  [repeat {repeat + 1}, c={level}] {describe(run)}", flush=True)
                runs.append(run)
    return runs


def describe(run):
    own = run.failure or f"{run.tput:.0f} infer/s, p50 {run.p50:.0f} us, p99 {run.p99:.0f} us"
    cpu = f"{run.cpu_us:.1f} us/req" if run.cpu_us is not None else "no requests"
    return (f"{run.tool}: {own}; CPU {cpu} over {run.served} requests in {run.proc.wall:.1f} s, "
            f"{report.fmt(run.proc.rss_mib, 1)} MiB{'; ' + run.note if run.note else ''}")


# ---------------------------------------------------------------- memory soak

def soak(bench, protocol):
    grpc = protocol == "grpc"
    seconds = bench.args.soak_seconds
    stem = bench.log_stem(f"soak-{protocol}")
    argv = [bench.paths["inferperf"], "-m", MODEL,
            "-u", bench.server.grpc if grpc else bench.server.http, "-i", "grpc" if grpc else "http",
            "--concurrency-range", "1000", "-p", str(SOAK_WINDOW_S * 1000), "-s", "0.01",
            "-r", str(max(seconds // SOAK_WINDOW_S, 3)),
            "-f", stem + ".csv"]
    samples = []  # (seconds since spawn, VmRSS KiB)

    def sample(pid, elapsed):
        if elapsed >= len(samples) + 1:
            samples.append((elapsed, proc_status_kib(pid, "VmRSS")))

    before, _ = bench.server.stats()
    proc = run_bounded(bench.client_prefix + argv, seconds + 60, stem, on_tick=sample)
    after, _ = bench.server.stats()
    samples = [(t, kib) for t, kib in samples if kib is not None]
    # Steady state: once windows older than the last 3 are folded to their percentiles.
    settle = 4 * SOAK_WINDOW_S if seconds >= 8 * SOAK_WINDOW_S else seconds / 3
    return dict(protocol=protocol, proc=proc, served=after - before, samples=samples,
                settle=settle, mid=seconds / 2, at_settle=rss_at(samples, settle),
                at_mid=rss_at(samples, seconds / 2),
                at_end=samples[-1][1] / 1024 if samples else None,
                slope=slope_mib_per_min([(t, k) for t, k in samples if t >= settle]),
                per_request=growth_per_request(samples, settle, after - before, seconds),
                failure="hung" if proc.hung else ("" if proc.exit in (0, 2) else
                                                 f"failed (exit {proc.exit}: "
                                                 f"{first_error_line(proc.stderr + proc.stdout)})"))


def rss_at(samples, seconds):
    later = [kib for t, kib in samples if t >= seconds]
    return later[0] / 1024 if later else None


def growth_per_request(samples, settle, served, seconds):
    """Bytes of RSS growth after `settle` per request served after it (requests spread evenly)."""
    start, end = rss_at(samples, settle), samples[-1][1] / 1024 if samples else None
    later = served * max(seconds - settle, 0) / seconds
    return (end - start) * 2**20 / later if start is not None and end is not None and later else None


def slope_mib_per_min(samples):
    if len(samples) < 2:
        return None
    ts = [t for t, _ in samples]
    mib = [kib / 1024 for _, kib in samples]
    t_mean, m_mean = statistics.fmean(ts), statistics.fmean(mib)
    var = sum((t - t_mean) ** 2 for t in ts)
    cov = sum((t - t_mean) * (m - m_mean) for t, m in zip(ts, mib))
    return cov / var * 60 if var else None


# ---------------------------------------------------------------- startup

def startup(bench, family):
    argv = [bench.paths[family], "-m", MODEL, "-u", bench.server.http,
            "--concurrency-range", "1", "--request-count", "1"]
    valid, counts = [], []
    for _ in range(bench.args.startups):
        before, _ = bench.server.stats()
        proc = run_bounded(bench.client_prefix + argv, 30, bench.log_stem(f"startup-{family}"))
        after, last_ms = bench.server.stats()
        counts.append(after - before)
        if after - before == 1 and not proc.hung:
            valid.append(last_ms - proc.spawned_ms)
    return dict(family=family, valid=valid, counts=counts)


# ---------------------------------------------------------------- the whole run

# Instructions per request: the difference between runs of these many requests, so that
# start-up and discovery cancel out.
FEW_REQUESTS, MANY_REQUESTS = 2000, 12000
COUNT_LEVELS = (16, 64)


def instructions(bench, family, protocol, level, requests):
    """The client's user-space instructions (callgrind) over a run of `requests` requests."""
    grpc = protocol == "grpc"
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", bench.paths[family],
            "-m", MODEL, "-u", bench.server.grpc if grpc else bench.server.http,
            "-i", "grpc" if grpc else "http", "--concurrency-range", str(level),
            "--request-count", str(requests), "--no-progress"]
    stem = bench.log_stem(f"callgrind-{family}-{protocol}-c{level}-{requests}")
    proc = run_bounded(argv, 600, stem)
    found = re.findall(r"Collected : (\d+)", proc.stderr + proc.stdout)
    return int(found[-1]) if found and proc.exit in (0, 2) else None


def instruction_counts(bench):
    """Instructions per request of inferperf (and the baseline) over HTTP binary and gRPC."""
    counts = []
    families = [f for f in ("inferperf", "baseline")
                if f not in bench.skipped and (f != "baseline" or bench.args.baseline)]
    for family in families:
        for protocol in ("http-binary", "grpc"):
            for level in COUNT_LEVELS:
                print(f"== instructions per request, {family} {protocol} c={level} (callgrind)", flush=True)
                few = instructions(bench, family, protocol, level, FEW_REQUESTS)
                many = instructions(bench, family, protocol, level, MANY_REQUESTS)
                per = (many - few) / (MANY_REQUESTS - FEW_REQUESTS) if few and many else None
                counts.append({"family": family, "protocol": protocol, "level": level, "per": per})
    return counts


def run_all(bench):
    a = bench.args
    load_before = report.load_average()
    bench.start()
    print(f"== server: HTTP {bench.server.http}, gRPC {bench.server.grpc}; {bench.placement}", flush=True)
    for family, reason in bench.skipped.items():
        print(f"== {family} rows skipped: {reason}", flush=True)
    runs = side_by_side(bench) if bench.tools() else []
    soaks = []
    if not a.no_soak:
        for protocol in ("http-binary", "grpc"):
            print(f"== memory soak, inferperf {protocol}, c=1000, {a.soak_seconds} s", flush=True)
            soaks.append(soak(bench, protocol))
    counts = []
    if not a.no_callgrind and shutil.which("valgrind"):
        counts = instruction_counts(bench)
    elif not a.no_callgrind:
        print("== valgrind is not installed: no instruction counts", flush=True)
    startups = []
    if not a.no_startup:
        for family in ("inferperf", "perf_analyzer"):
            if family not in bench.skipped:
                print(f"== startup to first request, {family} x{a.startups}", flush=True)
                startups.append(startup(bench, family))
    return report.report(bench, runs, soaks, startups, counts, load_before, report.load_average())


def main(argv):
    args = parse_args(argv)
    if args.validate_only:
        return 0
    tmp = os.environ.get("BENCH_TMP") or tempfile.mkdtemp(prefix="bench-client-")
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in background
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))
    bench = Bench(args, tmp)
    try:
        text = run_all(bench)
    finally:
        kill_live_groups()
        if bench.server:
            bench.server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n" + text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print("bench/client: interrupted.", file=sys.stderr)
        sys.exit(130)

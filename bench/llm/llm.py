#!/usr/bin/env python3
"""Streamed LLM answers: inferperf beside AIPerf 0.13 on the embedded `llm` model, client cost.

Why this exists: an LLM benchmark reads tens of thousands of server-sent events a second, and a
client that spends tens of microseconds of CPU per event, or that cannot keep the asked number of
streams open, measures itself instead of the server. Both tools drive the same embedded server
(`inferperf serve --model chat=llm:...`, one event per token, `itl_ms` apart) at the same
concurrency, prompt size and answer length for the same time, one after the other. For each
run this measures, from outside the tool:
- its CPU: user + system time of its whole process tree (AIPerf runs several processes), from
  wait4 (which includes the descendants it waited for) and from /proc/PID/stat of every process
  in its session sampled twice a second, the larger of the two;
- its memory: the peak of the summed RSS (and PSS, which splits shared pages) of those processes;
- what the server counted (`GET /v1/inferperf/stats`): requests, completed, output tokens;
- the streams it held open: the server side's established TCP connections (`ss`), sampled.
CPU per output token and per request are over the tokens and requests the *server* counted:
over the whole run (start-up included), and over the steady middle of the run (the part
between 25% and 90% of the time the server was producing tokens for the tool).
With a tokenizer (the word-level one run.sh writes), `inferperf-tok` and `aiperf-tok` are the
same runs with the server sending no `usage` (stream_options.include_usage false) and each tool
counting every answer's tokens with that tokenizer; `inferperf` is then given the same
--tokenizer, so that inferperf against inferperf-tok is the cost of counting alone.
A last run keeps inferperf at the highest concurrency for --soak-seconds and samples its RSS
every second. Python 3 standard library only; bench/llm/run.sh builds inferperf and starts this.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
MODEL = "chat"
# The tools: each client with the server's usage counting its output tokens, then with no usage
# sent and the client's tokenizer counting them.
TOOLS = ("inferperf", "inferperf-tok", "aiperf", "aiperf-tok")
# What a tool is called in the table.
SHOWN = {"inferperf": "inferperf", "aiperf": "aiperf", "inferperf-tok": "inferperf, tokenizer",
         "aiperf-tok": "aiperf, tokenizer"}
NO_USAGE = '{"include_usage":false}'


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/llm/run.sh", description=__doc__.split("\n")[0])
    p.add_argument("--concurrency", default="64,1000,10000", help="levels (64,1000,10000)")
    p.add_argument("--seconds", type=int, default=30,
                   help="measured time per tool and level (30): inferperf 3 windows of a third "
                        "each, AIPerf --benchmark-duration")
    p.add_argument("--ttft-ms", type=float, default=200, help="server time to first token (200)")
    p.add_argument("--itl-ms", type=float, default=1, help="server time between tokens (1)")
    p.add_argument("--output-tokens", type=int, default=64, help="tokens per answer (64)")
    p.add_argument("--input-tokens", type=int, default=100, help="words per prompt (100)")
    p.add_argument("--tools", default=",".join(TOOLS),
                   help="inferperf,aiperf (usage-counted), inferperf-tok,aiperf-tok (no usage: "
                        "the tokenizer counts the answers); all four by default")
    p.add_argument("--aiperf-cap", type=int, default=150,
                   help="seconds AIPerf may take beyond --seconds before it is stopped (150)")
    p.add_argument("--grace", type=int, default=30,
                   help="AIPerf --benchmark-grace-period, seconds (30)")
    p.add_argument("--soak-seconds", type=int, default=60,
                   help="the RSS run of inferperf at the highest level (60; 0: none)")
    p.add_argument("--out", default="bench/llm/results.md", help="results file")
    p.add_argument("--keep", action="store_true",
                   help="keep the tools' logs and AIPerf's artifacts (printed at the end)")
    args = p.parse_args(argv)
    try:
        args.levels = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        p.error(f"--concurrency takes comma-separated whole numbers, not '{args.concurrency}'")
    if min(args.levels) < 1 or args.seconds < 3:
        p.error("concurrency must be at least 1 and --seconds at least 3")
    args.tools = [t for t in args.tools.split(",") if t]
    if not set(args.tools) <= set(TOOLS):
        p.error(f"--tools takes some of {','.join(TOOLS)}")
    return args


# ---------------------------------------------------------------- the server

class Server:
    def __init__(self, binary, model, tmp):
        self.log = os.path.join(tmp, "serve.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([binary, "serve", "--http-port", "0", "--grpc-port", "0",
                                          "--model", model], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            found = re.search(r"HTTP on ([0-9.]+):(\d+)", open(self.log).read())
            if found:
                self.host, self.port = found.group(1), int(found.group(2))
                self.http = f"{self.host}:{self.port}"
                return
            time.sleep(0.05)
        raise SystemExit(f"bench/llm: the server did not start: {open(self.log).read()[:300]}")

    def stats(self, timeout=10):
        """The llm model's counters: requests, streamed, completed, cancelled, failed,
        prompt_tokens, completion_tokens, events."""
        url = f"http://{self.http}/v1/inferperf/stats"
        with urllib.request.urlopen(url, timeout=timeout) as r:
            data = json.load(r)["data"]
        return next(m for m in data if m["model"] == MODEL)

    def in_flight(self, s):
        return s["requests"] - s["completed"] - s["cancelled"] - s["failed"]

    def settle(self, limit=60):
        """Waits until the engine holds no request (a stopped client's streams are dropped at
        their next step), then a moment for the machine to calm down."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                if self.in_flight(self.stats()) <= 0:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        time.sleep(2)

    def cpu_seconds(self):
        return proc_cpu(self.proc.pid) or 0.0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def established(port):
    """Established TCP connections whose local port is the server's: the streams open."""
    try:
        out = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{port} )"],
                             capture_output=True, timeout=10, text=True).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return sum(1 for line in out.splitlines() if line.strip())


# ---------------------------------------------------------------- /proc

def read_stat(pid):
    """(ppid, session, cpu seconds, rss KiB) of a process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[1]), int(fields[3]), (int(fields[11]) + int(fields[12])) / CLK_TCK,
            int(fields[21]) * PAGE_KIB)


def proc_cpu(pid):
    st = read_stat(pid)
    return st[2] if st else None


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            found = re.search(r"^Pss:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            found = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def tree(root):
    """{pid: (cpu s, rss KiB)} of every live process in root's session or descended from it."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = read_stat(int(name))
            if st:
                stats[int(name)] = st
    members = {pid for pid, st in stats.items() if st[1] == root}
    if root in stats:
        members.add(root)
    grew = True
    while grew:
        grew = False
        for pid, st in stats.items():
            if pid not in members and st[0] in members:
                members.add(pid)
                grew = True
    return {pid: (stats[pid][2], stats[pid][3]) for pid in members}


class Sampler(threading.Thread):
    """Samples a client's process tree (CPU, RSS, PSS) and the server (counters, open
    connections) every `every` seconds while the client runs."""

    def __init__(self, root, server, every, with_server=True):
        super().__init__(daemon=True)
        self.root, self.server, self.every, self.with_server = root, server, every, with_server
        self.cpu_last = {}  # pid -> its last CPU seconds seen
        self.pids = set()
        self.samples = []  # dicts: t, cpu, rss, pss, procs, hwm, stats, conns
        self.halt = threading.Event()

    def run(self):
        start = time.monotonic()
        tick = 0
        while not self.halt.is_set():
            self.sample(start)
            tick += 1
            self.halt.wait(max(0.0, start + tick * self.every - time.monotonic()))

    def sample(self, start):
        procs = tree(self.root)
        for pid, (cpu, _) in procs.items():
            self.cpu_last[pid] = cpu
        self.pids |= set(procs)
        s = dict(t=time.monotonic() - start, cpu=sum(self.cpu_last.values()),
                 rss=sum(rss for _, rss in procs.values()),
                 pss=sum(pss_kib(pid) or 0 for pid in procs), procs=len(procs),
                 hwm=status_kib(self.root, "VmHWM"), stats=None, conns=None)
        if self.with_server:
            s["t_server"] = time.monotonic() - start
            try:
                s["stats"] = self.server.stats(timeout=2)
            except (OSError, ValueError):
                pass
            s["conns"] = established(self.server.port)
        self.samples.append(s)

    def stop(self):
        self.halt.set()
        self.join()


def run_client(argv, cap, log_stem, server, every=0.5, with_server=True, env=None):
    """Runs a client in its own session, sampled; stops its process group after `cap` s
    (SIGTERM, SIGKILL 10 s later). Returns what was seen."""
    out_path, err_path = log_stem + ".out", log_stem + ".err"
    floor_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    sampler = Sampler(proc.pid, server, every, with_server)
    sampler.start()
    term_at = None
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.monotonic() - start
            if term_at is None and elapsed > cap:
                term_at = elapsed
                kill_group(proc.pid, signal.SIGTERM)
            elif term_at is not None and elapsed > term_at + 10:
                kill_group(proc.pid, signal.SIGKILL)
            time.sleep(0.05)
    except BaseException:
        kill_group(proc.pid, signal.SIGKILL)
        raise
    wall = time.monotonic() - start
    sampler.stop()
    leftovers = sorted(tree(proc.pid))
    for pid in leftovers:  # processes of this client's session still alive: ours to end
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    rusage_cpu = usage.ru_utime + usage.ru_stime
    sampled_cpu = sampler.samples[-1]["cpu"] if sampler.samples else 0.0
    hwm = max((s["hwm"] or 0 for s in sampler.samples), default=0)
    return dict(wall=wall, exit=os.waitstatus_to_exitcode(status), capped=term_at is not None,
                cpu=max(rusage_cpu, sampled_cpu), rusage_cpu=rusage_cpu, sampled_cpu=sampled_cpu,
                # ru_maxrss carries this Python's own peak into the child at exec: above that
                # floor it is the child's peak, else the VmHWM polled while it ran.
                maxrss_kib=usage.ru_maxrss if usage.ru_maxrss > floor_kib else hwm,
                samples=sampler.samples, procs=len(sampler.pids), leftovers=leftovers,
                out=read_text(out_path), err=read_text(err_path))


def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


# ---------------------------------------------------------------- the two tools

def inferperf_argv(binary, server, level, args, tokenizer="", counted=False):
    """inferperf's command; with `tokenizer`, --tokenizer; `counted`: the server is asked for no
    usage, so the tokenizer counts every answer."""
    window = args.seconds * 1000 // 3
    argv = [binary, "-m", MODEL, "-u", server.http, "--service-kind", "openai",
            "--endpoint", "v1/chat/completions", "--streaming",
            "--output-tokens-mean", str(args.output_tokens), "--output-tokens-mean-deterministic",
            "--synthetic-input-tokens-mean", str(args.input_tokens),
            "--concurrency-range", str(level), "-p", str(window), "-s", "999", "-r", "3"]
    if tokenizer:
        argv += ["--tokenizer", tokenizer]
    if counted:
        argv += ["--extra-inputs", f"stream_options:{NO_USAGE}"]
    return argv


def aiperf_argv(aiperf, tokenizer, server, level, args, artifacts, counted=False):
    """AIPerf's command; `counted`: the server is asked for no usage (AIPerf sets
    include_usage only when the request does not say it) and AIPerf counts every answer with
    its tokenizer (no --use-server-token-count)."""
    argv = [aiperf, "profile", "-m", MODEL, "--url", f"http://{server.http}",
            "--endpoint-type", "chat", "--streaming", "--concurrency", str(level),
            "--benchmark-duration", str(args.seconds),
            "--benchmark-grace-period", str(args.grace),
            "--isl", str(args.input_tokens), "--osl", str(args.output_tokens),
            "--extra-inputs", f"min_tokens:{args.output_tokens}",
            "--extra-inputs", "ignore_eos:true"]
    if counted:
        # Its key:value form splits at every ':' and ',': the JSON form.
        argv += ["--extra-inputs", json.dumps({"stream_options": json.loads(NO_USAGE)})]
    else:
        argv.append("--use-server-token-count")
    return argv + ["--tokenizer", tokenizer, "--random-seed", "1",
                   "--no-gpu-telemetry", "--no-server-metrics", "--ui-type", "none",
                   "--artifact-dir", artifacts]


def inferperf_own(out):
    """What inferperf reported: throughput, mean latency, its own CPU estimate, errors."""
    own = {}
    for key, pattern in (("rps", r"(?<!Response )Throughput: ([\d.]+) infer/sec"),
                         ("latency_us", r"Avg latency: (\d+) usec"),
                         ("cpu_req_us", r"Client CPU: ([\d.]+) usec per request"),
                         ("cpu_tok_us", r"([\d.]+) usec per output token"),
                         ("requests", r"Request count: (\d+)")):
        found = re.findall(pattern, out)
        if found:
            own[key] = float(found[-1])
    if "latency_us" not in own:
        # The LLM console has no "Avg latency" line: the summary's last line has it.
        found = re.findall(r"throughput: [\d.]+ infer/sec, latency (\d+) usec", out)
        if found:
            own["latency_us"] = float(found[-1])
    if "rps" in own and "latency_us" in own:
        own["concurrency"] = own["rps"] * own["latency_us"] / 1e6  # Little's law
    errors = [l.strip() for l in out.splitlines() if re.search(r"error|fail", l, re.I)]
    own["errors"] = errors[:3]
    # "Tokens counted with ..." (once at the start, and per level with how the output
    # lengths were counted: by usage, by the tokenizer).
    counted = [l.strip() for l in out.splitlines() if "Tokens counted with" in l]
    own["counted"] = counted[-1] if counted else None
    return own


def aiperf_own(artifacts):
    path = os.path.join(artifacts, "profile_export_aiperf.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        d = json.load(f)

    def avg(tag):
        return (d.get(tag) or {}).get("avg")

    return dict(rps=avg("request_throughput"), tps=avg("output_token_throughput"),
                concurrency=avg("effective_concurrency"), requests=avg("request_count"),
                errors_count=avg("error_request_count") or 0, duration=avg("benchmark_duration"),
                credit_wait_ms=(d.get("credit_to_start_latency") or {}).get("p50"),
                cancelled=d.get("was_cancelled"), osl=avg("output_sequence_length"))


# ---------------------------------------------------------------- figures

def interpolate(samples, key, t):
    """The value of samples[key] at time t, linearly between the samples around it."""
    points = [(s["t"], s[key]) for s in samples]
    if not points:
        return None
    if t <= points[0][0]:
        return points[0][1]
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return v0 + (v1 - v0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0)
    return points[-1][1]


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def steady(run):
    """Rates and CPU over the steady middle of the time the server produced tokens for the
    client: from 25% to 90% of it."""
    points = [s for s in run["samples"] if s.get("stats")]
    tokens = [(s["t_server"], s["stats"]["completion_tokens"]) for s in points]
    moving = [t for (t, v), (_, prev) in zip(tokens[1:], tokens) if v > prev]
    if len(moving) < 3:
        return {}
    first, last = moving[0], moving[-1]
    lo, hi = first + 0.25 * (last - first), first + 0.9 * (last - first)
    inside = [s for s in points if lo <= s["t_server"] <= hi]
    if len(inside) < 2:
        return {}
    a, b = inside[0], inside[-1]
    dt = b["t_server"] - a["t_server"]
    dtok = b["stats"]["completion_tokens"] - a["stats"]["completion_tokens"]
    dreq = b["stats"]["completed"] - a["stats"]["completed"]
    dcpu = interpolate(run["samples"], "cpu", b["t_server"]) - \
        interpolate(run["samples"], "cpu", a["t_server"])
    engine = [s["stats"]["requests"] - s["stats"]["completed"] - s["stats"]["cancelled"]
              - s["stats"]["failed"] for s in inside]
    full = next((s["t_server"] for s in points if (s["conns"] or 0) >= run["level"]), None)
    return dict(seconds=dt, rps=dreq / dt if dt else None, tps=dtok / dt if dt else None,
                all_open_at=full,
                cpu_tok_us=dcpu / dtok * 1e6 if dtok else None,
                cpu_req_us=dcpu / dreq * 1e6 if dreq else None,
                cpu_share=dcpu / dt if dt else None,
                conns=median(s["conns"] for s in inside),
                conns_max=max((s["conns"] or 0 for s in points), default=None),
                engine=median(engine), active=last - first)


def measure(tool, argv, cap, server, level, tmp, env=None):
    before = server.stats()
    server_cpu0 = server.cpu_seconds()
    stem = os.path.join(tmp, f"{tool}-c{level}")
    run = run_client(argv, cap, stem, server, env=env)
    run["level"] = level
    with open(stem + ".samples.json", "w") as f:
        json.dump(run["samples"], f)
    server.settle()
    after = server.stats()
    delta = {k: after[k] - before[k] for k in after if isinstance(after[k], int)}
    result = dict(tool=tool, level=level, run=run, delta=delta, steady=steady(run),
                  server_cpu=server.cpu_seconds() - server_cpu0)
    peak_rss = max((s["rss"] for s in run["samples"]), default=0)
    result["rss_mib"] = (run["maxrss_kib"] if tool.startswith("inferperf") else peak_rss) / 1024
    result["pss_mib"] = max((s["pss"] for s in run["samples"]), default=0) / 1024
    tokens, requests = delta["completion_tokens"], delta["completed"]
    result["cpu_tok_us"] = run["cpu"] / tokens * 1e6 if tokens else None
    result["cpu_req_us"] = run["cpu"] / requests * 1e6 if requests else None
    return result


def soak(binary, server, level, args, tmp):
    """inferperf alone at `level` for --soak-seconds: its RSS and the open connections every
    second."""
    shape = argparse.Namespace(**vars(args))
    shape.seconds = args.soak_seconds
    argv = inferperf_argv(binary, server, level, shape)
    stem = os.path.join(tmp, f"soak-c{level}")
    run = run_client(argv, args.soak_seconds + 120, stem, server, every=1.0)
    with open(stem + ".samples.json", "w") as f:
        json.dump(run["samples"], f)
    server.settle()
    run["soak_seconds"] = args.soak_seconds
    return run


# ---------------------------------------------------------------- report

def fmt(value, digits=0):
    if value is None or value != value:
        return "-"
    return f"{value:,.{digits}f}"


def row(r, args):
    run, st, d = r["run"], r["steady"], r["delta"]
    own = r.get("own", {})
    notes = []
    if run["capped"]:
        notes.append(f"stopped at the {run['wall']:.0f} s cap")
    if run["exit"] not in (0,):
        notes.append(f"exit {run['exit']}")
    if d.get("cancelled"):
        notes.append(f"{d['cancelled']:,} streams cancelled")
    if d.get("failed"):
        notes.append(f"{d['failed']:,} failed at the server")
    if own.get("errors_count"):
        notes.append(f"{own['errors_count']:,.0f} errors reported")
    if own.get("credit_wait_ms") is not None:
        notes.append(f"credit-to-start p50 {own['credit_wait_ms']:,.0f} ms")
    if own.get("errors"):
        notes.append(own["errors"][0][:60].replace("|", "/"))
    if own.get("counted") and r["tool"] == "inferperf-tok":
        found = re.search(r"\(([^()]*by usage[^()]*)\)", own["counted"])
        notes.append(found.group(1) if found else own["counted"][:80].replace("|", "/"))
    if own.get("osl") is not None and r["tool"].startswith("aiperf"):
        notes.append(f"OSL avg {own['osl']:,.1f}")
    if run["leftovers"]:
        notes.append(f"{len(run['leftovers'])} processes left behind (killed)")
    held = f"{fmt(st.get('conns'))} / {fmt(st.get('engine'))} / {fmt(own.get('concurrency'))}"
    opened = (f"{fmt(st.get('conns_max'))} ("
              + (f"all at {st['all_open_at']:.0f} s" if st.get("all_open_at") is not None
                 else "never all") + ")")
    return (f"| {SHOWN[r['tool']]} | {r['level']:,} | {run['wall']:.0f} | {d['completed']:,} "
            f"| {fmt(st.get('rps'), 0)} | {fmt(st.get('tps'), 0)} | {held} | {opened} "
            f"| {run['cpu']:.1f} | {fmt(st.get('cpu_tok_us'), 1)} | {fmt(st.get('cpu_req_us'), 0)} "
            f"| {fmt(r['cpu_tok_us'], 1)} | {fmt(r['cpu_req_us'], 0)} "
            f"| {fmt(r['rss_mib'], 0)} / {fmt(r['pss_mib'], 0)} | {run['procs']} "
            f"| {'; '.join(notes) or 'ok'} |")


def report(args, results, soak_run, skipped, load_before, load_after):
    stream_ms = args.ttft_ms + (args.output_tokens - 1) * args.itl_ms
    lines = ["# LLM streaming: inferperf beside AIPerf 0.13, client cost", "",
             f"`bench/llm/run.sh {' '.join(sys.argv[1:])}` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
             f"load average {load_before} before, {load_after} after (the machine may be "
             "shared).", "",
             f"- Server: `inferperf serve --model {MODEL}=llm:ttft_ms={args.ttft_ms:g},"
             f"itl_ms={args.itl_ms:g},output_tokens={args.output_tokens},"
             f"max_batch={max(args.levels)},instances=1`: each answer {args.output_tokens} events "
             f"of one token, the first {args.ttft_ms:g} ms after arrival, then every "
             f"{args.itl_ms:g} ms ({stream_ms:g} ms a request when the server keeps up, so at "
             f"most c / {stream_ms / 1000:g} s requests/s).",
             f"- Both tools: chat completions, streamed, {args.input_tokens}-word prompts, "
             f"{args.output_tokens} output tokens (`min_tokens`, `ignore_eos`), closed loop at "
             f"concurrency c for {args.seconds} s: inferperf `-p {args.seconds * 1000 // 3} -s 999 "
             f"-r 3`, AIPerf `--benchmark-duration {args.seconds} --benchmark-grace-period "
             f"{args.grace}` with a word-level tokenizer (`--use-server-token-count` in its usage rows); AIPerf capped "
             f"at {args.seconds + args.aiperf_cap} s.",
             "- req/s, tok/s: the server's completed requests and output tokens per second over "
             "the steady part of the run (25%–90% of the time it produced tokens for the tool).",
             "- streams held: the server side's established connections (median over the steady "
             "part) / requests in the server's engine (median; it counts a request done when its "
             "last token is produced, so under overload, when events queue behind the writes, it "
             "reads low) / the tool's own figure (inferperf: throughput × mean latency; AIPerf: "
             "its Effective Concurrency). Most conns: the most established connections seen, "
             "and how many seconds after the tool started all c were open at once.",
             "- client CPU: user + system seconds of the tool's whole process tree (wait4 and "
             "/proc, the larger); per token and per request over the steady part, and over the "
             "whole run (start-up and shutdown included) against everything the server counted.",
             "- peak RSS: inferperf's own; AIPerf the peak of the sum over its processes. PSS "
             "splits shared pages between processes.",
             "- notes: for AIPerf its Credit-to-Start Latency p50, how long a request it had "
             "issued (counted in its concurrency) waited inside AIPerf before it was sent, and "
             "its output sequence length; for `inferperf, tokenizer`: how its output lengths "
             "were counted (by usage, by the tokenizer)."]
    if {"inferperf-tok", "aiperf-tok"} & set(args.tools):
        lines += [f"- `, tokenizer` rows: the server sends no usage (`--extra-inputs "
                  f"stream_options:{NO_USAGE}` to both tools) and each tool counts every answer's "
                  "tokens with the same word-level tokenizer (`--tokenizer DIR`; AIPerf without "
                  "`--use-server-token-count`); inferperf's usage rows get the same `--tokenizer`, "
                  "so inferperf against inferperf, tokenizer is the cost of counting alone."]
    lines += [f"- {tool}: not run ({why})." for tool, why in skipped.items()]
    lines += ["", "| tool | c | wall s | requests (server) | req/s | output tok/s "
              "| streams held: conns / engine / own | most conns (when all c were open) "
              "| client CPU s | CPU µs/token (steady) "
              "| CPU µs/req (steady) | CPU µs/token (whole run) | CPU µs/req (whole run) "
              "| peak RSS / PSS MiB | processes | notes |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    lines += [row(r, args) for r in results]
    lines += ratio_lines(args, results)
    if soak_run:
        lines += soak_lines(soak_run, max(args.levels))
    return "\n".join(lines) + "\n"


def ratio(a, b):
    """`x steady, y whole run` of a's CPU per output token over b's."""
    steady_a, steady_b = a["steady"].get("cpu_tok_us"), b["steady"].get("cpu_tok_us")
    part = f"{steady_a / steady_b:.3f} steady" if steady_a and steady_b else "- steady"
    if a["cpu_tok_us"] and b["cpu_tok_us"]:
        part += f", {a['cpu_tok_us'] / b['cpu_tok_us']:.3f} whole run"
    return part


def counting_cost(a, b):
    """What counting with the tokenizer added per request and per token: b (tokenizer) less a
    (usage), over the steady parts."""
    parts = []
    for key, unit in (("cpu_req_us", "µs/req"), ("cpu_tok_us", "µs/token")):
        x, y = a["steady"].get(key), b["steady"].get(key)
        if x is not None and y is not None:
            parts.append(f"{y - x:+,.1f} {unit} ({x:,.1f} → {y:,.1f})")
    return ", ".join(parts) or "-"


def ratio_lines(args, results):
    pairs = (("inferperf", "aiperf", "inferperf / AIPerf client CPU per output token, both "
              "counting by usage"),
             ("inferperf-tok", "aiperf-tok", "inferperf / AIPerf client CPU per output token, "
              "both counting with the tokenizer (no usage)"))
    lines = []
    for mine, theirs, title in pairs:
        parts = []
        for level in args.levels:
            by = {r["tool"]: r for r in results if r["level"] == level}
            if mine in by and theirs in by:
                parts.append(f"c={level:,}: {ratio(by[mine], by[theirs])}")
        if parts:
            lines += ["", f"{title}: " + "; ".join(parts) + "."]
    parts = []
    for level in args.levels:
        by = {r["tool"]: r for r in results if r["level"] == level}
        if "inferperf" in by and "inferperf-tok" in by:
            parts.append(f"c={level:,}: {counting_cost(by['inferperf'], by['inferperf-tok'])}")
    if parts:
        lines += ["", "inferperf's cost of counting with the tokenizer (tokenizer rows less usage "
                  "rows, client CPU, steady part): " + "; ".join(parts) + "."]
    return lines


def soak_lines(run, level):
    samples = [s for s in run["samples"] if s["rss"]]
    if not samples:
        return ["", f"RSS run at c={level:,}: no samples."]
    # While it ran: up to the last second with (nearly) all its connections open; after
    # that it is closing them and freeing memory.
    most = max((s["conns"] or 0 for s in samples), default=0)
    last_full = max((i for i, s in enumerate(samples) if (s["conns"] or 0) >= 0.99 * most),
                    default=len(samples) - 1) if most else len(samples) - 1
    running = samples[:last_full + 1]
    rss = [(s["t"], s["rss"] / 1024) for s in running]
    values = [v for _, v in rss]
    lines = ["", f"## inferperf's RSS at c={level:,}", "",
             f"One inferperf process at c={level:,} for {run['soak_seconds']} s "
             f"(`-p {run['soak_seconds'] * 1000 // 3} -s 999 -r 3`, wall {run['wall']:.0f} s, "
             f"exit {run['exit']}), RSS (VmRSS) sampled every second.", "",
             f"- While it ran "
             f"({len(values)} samples, up to t = {rss[-1][0]:.0f} s): first {values[0]:.1f} MiB, "
             f"min {min(values):.1f}, max {max(values):.1f}, last {values[-1]:.1f}; peak "
             f"(VmHWM) {run['maxrss_kib'] / 1024:.1f} MiB."]
    if len(samples) > len(running):
        lines[-1] += (f" Then, closing its connections, {samples[-1]['rss'] / 1024:.1f} MiB "
                      f"at t = {samples[-1]['t']:.0f} s.")
    tail = [s for s in running if s["t"] >= running[-1]["t"] - 30]
    if len(tail) > 1:
        a, b = tail[0], tail[-1]
        grew = (b["rss"] - a["rss"]) / 1024
        line = (f"- Last 30 s of the run (t = {a['t']:.0f}–{b['t']:.0f} s): "
                f"{min(s['rss'] for s in tail) / 1024:.1f}–{max(s['rss'] for s in tail) / 1024:.1f}"
                f" MiB, {grew:+.1f} MiB ({grew / (b['t'] - a['t']):+.2f} MiB/s)")
        if a.get("stats") and b.get("stats"):
            done = b["stats"]["completed"] - a["stats"]["completed"]
            if done:
                line += (f" while the server completed {done:,} requests "
                         f"({(b['rss'] - a['rss']) * 1024 / done:+.0f} bytes per request)")
        lines.append(line + ".")
    conns = [(s["t"], s["conns"]) for s in samples if s["conns"] is not None]
    if conns:
        full = next((t for t, c in conns if c >= level), None)
        lines.append(f"- Server-side established connections: most {most:,}; "
                     + (f"all {level:,} open from t = {full:.0f} s." if full is not None
                        else f"never all {level:,} at once."))
    shown = samples[::5]
    lines += ["", "| t s | " + " | ".join(f"{s['t']:.0f}" for s in shown) + " |",
              "|---|" + "---:|" * len(shown),
              "| RSS MiB | " + " | ".join(f"{s['rss'] / 1024:.1f}" for s in shown) + " |",
              "| conns | " + " | ".join(fmt(s["conns"]) for s in shown) + " |"]
    return lines


def main(argv):
    args = parse_args(argv)
    binary = os.environ.get("INFERPERF", "target/release/inferperf")
    aiperf = os.environ.get("AIPERF", "")
    tokenizer = os.environ.get("LLM_BENCH_TOKENIZER", "")
    skipped = {}
    aiperf_tools = {"aiperf", "aiperf-tok"} & set(args.tools)
    if aiperf_tools and not (aiperf and os.access(aiperf, os.X_OK) and tokenizer):
        skipped["AIPerf"] = os.environ.get("LLM_BENCH_AIPERF_MISSING") or "not installed"
        args.tools = [t for t in args.tools if t not in aiperf_tools]
    if "inferperf-tok" in args.tools and not tokenizer:
        skipped["inferperf, tokenizer"] = ("no tokenizer: run.sh writes it with AIPerf's Python "
                                           "(see above)")
        args.tools = [t for t in args.tools if t != "inferperf-tok"]
    tmp = tempfile.mkdtemp(prefix="bench-llm-")
    model = (f"{MODEL}=llm:ttft_ms={args.ttft_ms:g},itl_ms={args.itl_ms:g},"
             f"output_tokens={args.output_tokens},max_batch={max(args.levels)},instances=1")
    load_before = open("/proc/loadavg").read().split()[0]
    server = Server(binary, model, tmp)
    results, soak_run = [], None
    # AIPerf reads its settings from AIPERF_* variables: give it none of this bench's.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIPERF", "LLM_BENCH"))}
    env["TMPDIR"] = os.path.join(tmp, "aiperf-tmp")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    try:
        for level in args.levels:
            for tool in args.tools:
                print(f"== {tool} c={level} ({args.seconds} s)", flush=True)
                counted = tool.endswith("-tok")
                if tool.startswith("inferperf"):
                    argv = inferperf_argv(binary, server, level, args, tokenizer, counted)
                    result = measure(tool, argv, args.seconds + 60, server, level, tmp)
                    result["own"] = inferperf_own(result["run"]["out"] + result["run"]["err"])
                else:
                    artifacts = os.path.join(tmp, f"{tool}-c{level}")
                    argv = aiperf_argv(aiperf, tokenizer, server, level, args, artifacts, counted)
                    result = measure(tool, argv, args.seconds + args.aiperf_cap, server, level,
                                     tmp, env=env)
                    result["own"] = aiperf_own(artifacts)
                    if not result["own"]:
                        tail = (result["run"]["err"] or result["run"]["out"]).strip().splitlines()
                        result["own"]["errors"] = [f"no results: {tail[-1] if tail else 'no output'}"]
                print("   " + row(result, args), flush=True)
                results.append(result)
        if args.soak_seconds and "inferperf" in args.tools:
            level = max(args.levels)
            print(f"== inferperf c={level}, RSS every second for {args.soak_seconds} s", flush=True)
            soak_run = soak(binary, server, level, args, tmp)
    finally:
        server.stop()
    load_after = open("/proc/loadavg").read().split()[0]
    text = report(args, results, soak_run, skipped, load_before, load_after)
    print("\n" + text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    if args.keep:
        print(f"written to {args.out}; logs and AIPerf's artifacts in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Markdown report of the client-cost benchmark (bench/client/bench.py runs, this writes).

Why this exists: the figures only mean something beside the conditions they were taken in,
so the report carries the machine, load, placement, durations and tool versions with the
tables: medians over the repeats per tool and concurrency, inferperf's ratios to its peers of
the same protocol, the memory soak, startup to first request, and one line per target.
"""
import os
import re
import statistics
import subprocess
import sys
import time

# inferperf's peers of the same protocol, for the ratios.
PEERS = {
    "http-binary": ("perf_analyzer http-binary", "wrk http-binary", "baseline http-binary"),
    "http-json": ("perf_analyzer http-json", "wrk http-json", "baseline http-json"),
    "grpc": ("perf_analyzer grpc", "ghz grpc", "baseline grpc"),
}


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise(runs):
    """Medians over the repeats of one tool at one level."""
    measured = [r for r in runs if not r.failure]
    cpu = [r.cpu_us for r in runs if r.cpu_us is not None]
    notes, failure = [], next((r.failure for r in runs if r.failure), "")
    outcomes = [r.failure or r.note for r in runs]
    for outcome in sorted(set(outcomes) - {""}):
        notes.append(f"{outcomes.count(outcome)}/{len(runs)} {outcome}")
    return dict(tput=median_of(r.tput for r in measured), p50=median_of(r.p50 for r in measured),
                p99=median_of(r.p99 for r in measured), cpu=median_of(cpu),
                cpu_range=(min(cpu), max(cpu)) if cpu else None,
                rss=median_of(r.proc.rss_mib for r in runs),
                failure=failure if not measured else "", notes="; ".join(notes))


def fmt(value, digits=0):
    return "-" if value is None else f"{value:,.{digits}f}"


def table_rows(bench, runs):
    summary = {}
    rows = ["| tool | c | infer/s | p50 µs | p99 µs | client CPU µs/req | per repeat (min–max) "
            "| peak RSS MiB | note |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for tool in bench.tools():
        for level in bench.args.levels:
            s = summarise([r for r in runs if r.tool == tool and r.level == level])
            summary[tool, level] = s
            own = ([fmt(s["tput"]), fmt(s["p50"]), fmt(s["p99"])] if not s["failure"]
                   else [s["failure"].split(" (")[0].split(",")[0]] * 3)
            spread = "-" if not s["cpu_range"] else f"{s['cpu_range'][0]:.1f}–{s['cpu_range'][1]:.1f}"
            note = s["notes"]
            if tool.startswith("perf_analyzer") and bench.args.pa_async:
                note = "--async" + (f"; {note}" if note else "")
            rows.append(f"| {tool} | {level} | {' | '.join(own)} | {fmt(s['cpu'], 1)} | {spread} "
                        f"| {fmt(s['rss'], 1)} | {note} |")
    return rows, summary


def ratio_rows(bench, summary):
    rows = ["| inferperf | c | peer | CPU/req ratio | peak RSS ratio |", "|---|---:|---|---:|---:|"]
    for protocol, peers in PEERS.items():
        mine = f"inferperf {protocol}"
        for level in bench.args.levels:
            for peer in peers:
                if (mine, level) not in summary or (peer, level) not in summary:
                    continue
                a, b = summary[mine, level], summary[peer, level]
                rows.append(f"| {protocol} | {level} | {peer} | {ratio(a['cpu'], b['cpu'])} "
                            f"| {ratio(a['rss'], b['rss'])} |")
    return rows


def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}"


def soak_rows(results):
    s0 = results[0]
    rows = [f"| protocol | requests (server) | client CPU µs/req | peak RSS MiB | RSS at "
            f"{s0['settle']:g} s | at {s0['mid']:g} s | at end | growth after "
            f"{s0['settle']:g} s, MiB/min | bytes/request | note |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in results:
        cpu = s["proc"].cpu / s["served"] * 1e6 if s["served"] else None
        note = s["failure"] or ("" if s["served"] else "the server counted no requests")
        rows.append(f"| {s['protocol']} | {s['served']:,} | {fmt(cpu, 1)} "
                    f"| {fmt(s['proc'].rss_mib, 1)} | {fmt(s['at_settle'], 1)} "
                    f"| {fmt(s['at_mid'], 1)} | {fmt(s['at_end'], 1)} | {fmt(s['slope'], 2)} "
                    f"| {fmt(s['per_request'], 2)} | {note} |")
    return rows


def startup_rows(results, total):
    rows = ["| client | valid samples | median ms | max ms | note |", "|---|---:|---:|---:|---|"]
    for s in results:
        odd = [c for c in s["counts"] if c != 1]
        note = (f"{len(odd)} run(s) did not send exactly 1 inference (sent {sorted(set(odd))}); "
                "those are left out" if odd else "")
        rows.append(f"| {s['family']} | {len(s['valid'])}/{total} | {fmt(median_of(s['valid']), 1)} "
                    f"| {fmt(max(s['valid'], default=None), 1)} | {note} |")
    return rows


def verdict(ok, measured=True):
    return "**met**" if ok else ("**not met**" if measured else "not measured")


def cpu_targets(bench, summary):
    lines = []
    for protocol, limit in (("http-binary", 5), ("grpc", 10)):
        figures = {c: summary.get((f"inferperf {protocol}", c), {}).get("cpu")
                   for c in bench.args.levels if c in (16, 64, 256)}
        measured = any(v is not None for v in figures.values())
        ok = measured and all(v is not None and v <= limit for v in figures.values())
        shown = ", ".join(f"c={c}: {fmt(v, 1)}" for c, v in figures.items()) or "none of these levels run"
        lines.append(f"- inferperf client CPU ≤ {limit} µs/request over {protocol} at c=16, 64, 256: "
                     f"{verdict(ok, measured)} ({shown})")
    ratios = []
    for protocol in PEERS:
        for c in bench.args.levels:
            a = summary.get((f"inferperf {protocol}", c), {}).get("cpu")
            b = summary.get((f"perf_analyzer {protocol}", c), {}).get("cpu")
            if a is not None and b:
                ratios.append((a / b, protocol, c))
    worst = max(ratios) if ratios else None
    shown = f"highest ratio {worst[0]:.2f}, {worst[1]} at c={worst[2]}" if worst else "no pair measured"
    lines.append("- inferperf ≤ 1/10 of perf_analyzer's CPU per request at every concurrency: "
                 f"{verdict(worst and worst[0] <= 0.1, bool(worst))} ({shown})")
    return lines


def soak_target(bench, s):
    peak = s["proc"].rss_mib
    ok = (not s["failure"] and s["served"] > 0 and peak is not None and peak <= 64
          and s["slope"] is not None and s["slope"] < 1
          and s["per_request"] is not None and s["per_request"] < 1)
    return (f"- peak RSS ≤ 64 MiB at c=1000 over {bench.args.soak_seconds} s and flat (growth "
            f"< 1 MiB/min and < 1 byte/request), {s['protocol']}: {verdict(ok)} ({fmt(peak, 1)} MiB, "
            f"{fmt(s['slope'], 2)} MiB/min, {fmt(s['per_request'], 2)} bytes/request"
            f"{', ' + s['failure'] if s['failure'] else ''})")


def startup_target(s):
    med = median_of(s["valid"])
    return (f"- inferperf startup to first request < 100 ms: {verdict(med is not None and med < 100)} "
            f"(median {fmt(med, 1)} ms, max {fmt(max(s['valid'], default=None), 1)} ms)")


def target_lines(bench, summary, soaks, startups):
    lines = cpu_targets(bench, summary) + grpc_target(bench, summary) if summary else []
    lines += [soak_target(bench, s) for s in soaks]
    lines += [startup_target(s) for s in startups if s["family"] == "inferperf"]
    return lines or ["- nothing measured that a target applies to"]


def command_output(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return lines[0].strip() if lines else "unknown"


def tool_versions(bench):
    versions = []
    for family, path in bench.paths.items():
        if family == "baseline" and not bench.args.baseline:
            continue
        if family in bench.skipped:
            versions.append(f"{family}: not available ({bench.skipped[family]})")
        elif family == "perf_analyzer":
            versions.append(f"perf_analyzer: {perf_analyzer_version(path)}")
        elif family == "wrk":
            versions.append(f"wrk: {command_output([path, '-v'])}")
        else:
            version = command_output([path, "--version"])
            note = " (a `go install` build; run.sh installs v0.93.0)" if version == "dev" else ""
            versions.append(f"{family}: {version}{note}")
    return versions


def perf_analyzer_version(path):
    site = os.path.join(os.path.dirname(os.path.abspath(path)), "..", "lib")
    for root, dirs, _ in os.walk(site):
        for d in dirs:
            found = re.match(r"tritonclient-([\d.]+)\.dist-info$", d)
            if found:
                return f"{found.group(1)} (tritonclient wheel, {path})"
    return f"version unknown ({path})"


def git_commit():
    commit = command_output(["git", "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], capture_output=True).returncode != 0
    return commit + (" with local changes" if dirty else "")


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    with open("/proc/cpuinfo") as f:
        found = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
    return found.group(1) if found else "unknown model"


def header_lines(bench, load_before, load_after):
    a = bench.args
    command = "bench/client/run.sh" + "".join(" " + arg for arg in sys.argv[1:])
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    pa_mode = "--async" if a.pa_async else "synchronous (its default)"
    return ["# Client cost per request: inferperf beside perf_analyzer, wrk and ghz", "",
            f"`{command}` on {when}, commit {git_commit()}.", "",
            f"- CPUs: {os.cpu_count()} ({cpu_model()}); load average before {load_before}, "
            f"after {load_after}.",
            f"- Placement: {bench.placement}.",
            f"- Server: `inferperf serve`, model {bench.server_model}. Connections: over HTTP "
            "one per in-flight request (every tool); over gRPC one per 6 in-flight requests "
            "(inferperf's default, perf_analyzer's client library shares a channel among 6 "
            "clients, ghz `--connections` set to match).",
            f"- Repeats: {a.repeats}, tool order rotated each repeat; concurrency "
            f"{','.join(map(str, a.levels))}; inferperf and perf_analyzer `-p {bench.window_ms}` "
            f"(each run bounded at {a.timeout} s), wrk and ghz {a.seconds} s each; perf_analyzer "
            f"{pa_mode}.",
            "- Tools: " + "; ".join(tool_versions(bench)) + "."] + (
                [f"- baseline: inferperf built from `{a.baseline}` "
                 f"({os.environ.get('BASELINE_COMMIT', '?')}), run with the same flags."]
                if a.baseline else [])


def grpc_rows(bench, summary):
    """inferperf's gRPC CPU per request beside its HTTP binary's, at each level (and the
    baseline's, when there is one)."""
    rows = ["| build | c | http-binary µs/req | grpc µs/req | grpc / http-binary |",
            "|---|---:|---:|---:|---:|"]
    for family in ("inferperf", "baseline"):
        for level in bench.args.levels:
            http = summary.get((f"{family} http-binary", level), {}).get("cpu")
            grpc = summary.get((f"{family} grpc", level), {}).get("cpu")
            if http is None and grpc is None:
                continue
            rows.append(f"| {family} | {level} | {fmt(http, 1)} | {fmt(grpc, 1)} | {ratio(grpc, http)} |")
    return rows


def count_rows(counts):
    """Instructions per request, gRPC beside HTTP binary, per build and level."""
    by = {(c["family"], c["protocol"], c["level"]): c["per"] for c in counts}
    rows = ["| build | c | http-binary | grpc | grpc / http-binary |", "|---|---:|---:|---:|---:|"]
    for family, level in sorted({(c["family"], c["level"]) for c in counts},
                                key=lambda k: (k[0] != "inferperf", k[1])):
        http, grpc = by.get((family, "http-binary", level)), by.get((family, "grpc", level))
        rows.append(f"| {family} | {level} | {fmt(http)} | {fmt(grpc)} | {ratio(grpc, http)} |")
    return rows


def grpc_target(bench, summary):
    """gRPC's client CPU per request at most 1.1x HTTP binary's at c=16 and 64."""
    pairs = {}
    for c in (16, 64):
        http = summary.get(("inferperf http-binary", c), {}).get("cpu")
        grpc = summary.get(("inferperf grpc", c), {}).get("cpu")
        if http and grpc is not None:
            pairs[c] = grpc / http
    measured = len(pairs) == 2
    ok = measured and all(r <= 1.1 for r in pairs.values())
    shown = ", ".join(f"c={c}: {r:.2f}" for c, r in pairs.items()) or "not both levels run"
    return [f"- inferperf gRPC client CPU per request ≤ 1.1× its HTTP binary's at c=16 and 64: "
            f"{verdict(ok, measured)} ({shown})"]


def report(bench, runs, soaks, startups, counts, load_before, load_after):
    lines = header_lines(bench, load_before, load_after)
    summary = {}
    if runs:
        rows, summary = table_rows(bench, runs)
        lines += ["", f"## Side by side (medians over {bench.args.repeats} repeat{'s' if bench.args.repeats > 1 else ''})", ""] + rows
        ratios = ratio_rows(bench, summary)
        if len(ratios) > 2:
            lines += ["", "## inferperf / peer (below 1: inferperf spends less)", ""] + ratios
        grpc = grpc_rows(bench, summary)
        if len(grpc) > 2:
            lines += ["", "## gRPC beside HTTP binary (client CPU per request, medians)", ""] + grpc
    if counts:
        lines += ["", f"## Client instructions per request (callgrind, user space; runs of "
                      f"{12000:,} minus {2000:,} requests)", ""] + count_rows(counts)
    if soaks:
        lines += ["", f"## Memory soak: inferperf at c=1000 for {bench.args.soak_seconds} s", ""] + soak_rows(soaks)
    if startups:
        lines += ["", "## Startup to first request (spawn to the server's last_inference)", ""]
        lines += startup_rows(startups, bench.args.startups)
    lines += ["", "## Targets", ""] + target_lines(bench, summary, soaks, startups)
    return "\n".join(lines) + "\n"



"""AIPerf 0.13's documented command lines, run unchanged as `inferperf profile …` against
`inferperf serve` (issue 45): how many run, and whether each that ran sent the requests
AIPerf's rules give it.

Every line of fixtures/aiperf_documented_commands.jsonl (302, each with its page and commit)
is pointed at this machine and capped in time and size (aiperf_commands_lib.py says how; the
report says each rewrite), run in a folder of its own under target/e2e/aiperf-commands/ with
a bounded wait, one line after another, and its outcome recorded:
- ran: exit 0 or 2; the requests the servers received (/v1/inferperf/stats, all models, less
  inferperf's pre-flight request to each server before each run) must agree with AIPerf's
  count for the line, and none may have failed;
- refused: exit 3 with "--X is AIPerf's, and inferperf does not take it", where the flag
  table (src/cli/aiperf_flags.rs) refuses --X; or exit 3 with a sentence naming a flag the
  table takes differently, saying which of its values are refused (several models, AMD SMI,
  several DCGM pages…);
- rejected as AIPerf rejects it: exit 3 on a line AIPerf 0.13's own parser rejects, or that
  AIPerf 0.13 refuses when it starts (the fixture's `aiperf_0_13_run`);
- unavailable: the line needs what this machine has not (UNAVAILABLE: a GPU; a hub dataset;
  the page's own server, for a template endpoint)
  and failed at run time (exit 99), which does not fail the test;
- failed: anything else, which fails the test, as does a count that disagrees.
The table goes to target/e2e/aiperf-commands.md (with the failures grouped by cause), a
summary line to the e2e summary.

AIPERF_COMMANDS_ONLY=3,17,… runs only those lines (their index in the fixture, from 0).
One server serves every line; a line that names several servers (--url repeated) gets one
more per extra server. AIPERF_COMMANDS_SERVER_BIN serves with another binary than INFERPERF
(the client under test): bench/aiperf_commands/run.sh runs an older client that way.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from aiperf_commands_lib import (
    FIXTURE, FLAG_TABLE, Here, expected_requests, main_name, prepare, profile_runs, refused_differently, refused_flags,
    sweep_runs,
)
from conftest import SUMMARY, serve_with_metrics
from e2e_lib import ARTIFACTS, INFERPERF, http_status, note, post_json

SERVER_BIN = Path(os.environ.get("AIPERF_COMMANDS_SERVER_BIN", INFERPERF))
WORK = ARTIFACTS / "aiperf-commands"
REPORT = ARTIFACTS / "aiperf-commands.md"
# A line's bound: 90 s, as encoding the 20 synthetic 1080p VP9 clips of the video tutorial's
# line takes about 60 s of both cores here (AIPerf encodes them too).
LINE_TIMEOUT = 90
# inferperf's pre-flight check sends one request to each server before each run (conn.rs
# `probe`).
PREFLIGHT_PER_RUN = 1
REFUSAL = re.compile(r"--([a-z0-9-]+) is AIPerf's, and inferperf does not take it")
LLM = "llm:ttft_ms=2,itl_ms=0.2,max_batch=1024"
MODELS = {"llm": LLM, "llm2": LLM, "embed": "embeddings:ms=0"}

# Lines that need what this machine cannot give, by a flag value: (flag, value, reason).
# Such a line that fails is listed with the reason and does not fail the test.
UNAVAILABLE = [
    ("--gpu-telemetry", "pynvml", "NVIDIA's NVML: needs an NVIDIA GPU and driver"),
    ("--gpu-telemetry", "amdsmi", "AMD SMI: needs an AMD GPU"),
    ("--video-codec", "h264_nvenc", "NVIDIA's hardware video encoder: needs an NVIDIA GPU"),
]
PUBLIC_DATASET = "a Hugging Face hub dataset, and no cached copy here (no network)"
TEMPLATE = (
    "a template endpoint for the page's own server (its route and body are that server's, "
    "which inferperf serve does not have)"
)


class Server:
    """One `inferperf serve` with two llm models and an embeddings model."""

    def __init__(self, name):
        self.process, self.host_port, self.metrics_host_port = serve_with_metrics(name, SERVER_BIN, MODELS)

    def start(self):
        self.process.start()
        self.process.wait_until(self.listed, 30, "/v1/models")
        self.process.wait_until(self.answers, 30, "a chat completion")

    def listed(self):
        return http_status(f"http://{self.host_port}/v1/models") == 200

    def counts(self):
        """Requests received so far and, of those, failed ones (all models)."""
        with urllib.request.urlopen(f"http://{self.host_port}/v1/inferperf/stats", timeout=5) as answer:
            models = json.loads(answer.read())["data"]
        return Counter({key: sum(m[key] for m in models) for key in ("requests", "failed")})

    def answers(self):
        body = {"model": "llm", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        answer = post_json(f"http://{self.host_port}/v1/chat/completions", body)
        return answer["choices"][0]["message"]["content"] == "tok tok "


class Servers:
    """The first server, and more started when a line names several servers (--url
    repeated): server k is `get(k)`; `counts()` adds up all of them."""

    def __init__(self):
        self.started = []

    def get(self, k):
        while len(self.started) <= k:
            server = Server(f"aiperf-commands-serve-{len(self.started)}")
            self.started.append(server)
            server.start()
        return self.started[k].host_port, self.started[k].metrics_host_port

    def counts(self):
        total = Counter()
        for server in self.started:
            total.update(server.counts())
        return total

    def stop(self):
        for server in self.started:
            server.process.stop()


@pytest.fixture(scope="module")
def servers():
    pool = Servers()
    try:
        pool.get(0)
        SUMMARY["start"]["aiperf-commands-serve"] = pool.started[0].process.ready()
        yield pool
    finally:
        pool.stop()


def run_bounded(argv, cwd, env, name):
    """Runs argv in cwd with its output under WORK/name.*; (exit code, stderr, wall s, CPU s
    of the process and its children). A run past LINE_TIMEOUT is killed (its group) and
    reported as exit code None."""
    out_path, err_path = WORK / f"{name}.stdout", WORK / f"{name}.stderr"
    started = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [str(a) for a in argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=err, start_new_session=True,
        )
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - started > LINE_TIMEOUT:
                os.killpg(proc.pid, signal.SIGKILL)
                _, _, usage = os.wait4(proc.pid, 0)
                code = None
                break
            time.sleep(0.01)
        proc.returncode = code if code is not None else -9
    seconds = time.monotonic() - started
    return code, err_path.read_text(errors="replace"), seconds, usage.ru_utime + usage.ru_stime


def first_sentence(text):
    for row in text.splitlines():
        row = row.strip()
        if row and not row.startswith(("Note:", "[WARNING]", "warning:")):
            return row[:300]
    return "(no output)"


def unavailable_reason(line):
    tokens = line.argv
    for flag, value, reason in UNAVAILABLE:
        for i, token in enumerate(tokens[:-1]):
            if token == flag and tokens[i + 1] == value:
                return reason
    if line.options.has("public-dataset"):
        return f"--public-dataset {line.options.value('public-dataset')}: {PUBLIC_DATASET}"
    if line.options.value("endpoint-type") == "template":
        return TEMPLATE
    return None


def refused_as_taken_differently(line, stderr, differently):
    """The first sentence names a flag of the line that the table takes differently,
    refusing some of its values."""
    sentence = first_sentence(stderr)
    names = [n for n in differently if main_name(f"--{n}") in line.options.given]
    return next((n for n in names if re.search(rf"--{n}\b(?!-)", sentence)), None)


def judge(line, code, stderr, seen, refused, differently):
    """(outcome, verdict, cause): verdict is ok, unavailable or FAIL."""
    in_line = [f for f in line.options.given if f in refused]
    said = REFUSAL.search(stderr)
    if code in (0, 2):
        if in_line:
            return "ran", "FAIL", f"ran although the table refuses --{in_line[0]}"
        if seen["failed"]:
            return "ran", "FAIL", f"the server failed {seen['failed']} requests"
        if not line.expected.agrees(seen["requests"]):
            rules = line.expected.text()
            return "ran", "FAIL", f"the server saw {seen['requests']} requests, AIPerf's rules give {rules}"
        return "ran", "ok", ""
    if code == 3 and said and said.group(1) in refused:
        return f"refused (--{said.group(1)})", "ok", ""
    cause = "timed out" if code is None else first_sentence(stderr)
    outcome = "timeout" if code is None else f"failed (exit {code})"
    aiperf_rejects = line.record["aiperf_0_13_parse"] != "ok" or "aiperf_0_13_run" in line.record
    if code == 3 and aiperf_rejects:
        return "rejected, as AIPerf 0.13 rejects it", "ok", cause
    flag = refused_as_taken_differently(line, stderr, differently) if code == 3 else None
    if flag is not None:
        return f"refused (--{flag}, taken differently)", "ok", cause
    reason = unavailable_reason(line)
    # Only a failure at run time (exit 99) is the machine's: a refused option is inferperf's.
    # A template line's pre-flight request to a route inferperf serve lacks is refused too.
    missing_route = reason == TEMPLATE and code == 3 and "answered HTTP 4" in cause
    if reason is not None and (code == 99 or missing_route):
        return outcome, "unavailable", f"{reason}; inferperf said: {cause}"
    return outcome, "FAIL", cause


CAUSES = [
    (r"(--[a-z0-9-]+) is an AIPerf flag inferperf does not have yet", r"\1: an AIPerf flag inferperf lacks"),
    (r"--custom-dataset-type '(speed_bench)[^']*'", r"--custom-dataset-type \1_*: a format not read"),
    (r"--custom-dataset-type '([^']+)' is not a format", r"--custom-dataset-type \1: a format not read"),
    (r"--endpoint-type '([^']+)' is not an endpoint type", r"--endpoint-type \1: not an endpoint type spoken"),
]


def cause_key(cause):
    """A failure's cause without what varies from line to line (ports, paths, values)."""
    for pattern, key in CAUSES:
        match = re.search(pattern, cause)
        if match:
            return match.expand(key)
    cause = re.sub(r"^error: ", "", cause)
    cause = re.sub(r"127\.0\.0\.1:\d+", "HOST", cause)
    return re.sub(r"\d+ requests", "N requests", cause)


def causes_section(rows):
    """The failures grouped by cause, most lines first."""
    groups = {}
    for row in rows:
        if row["verdict"] == "FAIL":
            groups.setdefault(cause_key(row["cause"]), []).append(str(row["index"]))
    lines = ["", "## Failures by cause", "", "| lines | cause | line numbers |", "|---|---|---|"]
    for key, indices in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"| {len(indices)} | {cell(key)} | {', '.join(indices)} |")
    return lines


def unavailable_section(rows):
    """The lines this machine cannot run, with the reason."""
    unavailable = [row for row in rows if row["verdict"] == "unavailable"]
    lines = ["", "## Lines this machine cannot run", ""]
    if not unavailable:
        return lines + ["None."]
    return lines + [f"- {row['index']} ({row['source']}): {cell(row['cause'])}" for row in unavailable]


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_report(rows, seconds, counts):
    cpu = sum(float(row["cpu"]) for row in rows)
    lines = [
        "# AIPerf 0.13's documented command lines against `inferperf serve`",
        "",
        f"Client: `{INFERPERF}`; server: `{SERVER_BIN}`. {len(rows)} lines in {seconds:.0f} s "
        f"({cpu:.0f} s of client CPU): " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ".",
        "",
        "Seen: the requests the servers received, less inferperf's pre-flight request to each "
        "server before each run. Expected: AIPerf 0.13's rules for the line as rewritten. "
        "s: the line's run time; cpu: the client's CPU seconds.",
        "",
        "| # | source | line | rewrites | outcome | expected | seen | s | cpu | verdict | cause |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    columns = (
        "index", "source", "command", "rewrites", "outcome", "expected", "seen", "seconds", "cpu",
        "verdict", "cause",
    )
    lines += ["| " + " | ".join(cell(row[k]) for k in columns) + " |" for row in rows]
    REPORT.write_text("\n".join(lines + causes_section(rows) + unavailable_section(rows)) + "\n")


def preflight_requests(line):
    """inferperf's pre-flight check: one request to each server, before each run."""
    urls = {u for values in line.options.given.get("url", [[]]) for v in values for u in v.split(",")}
    runs = len(sweep_runs(line.options)) * profile_runs(line.options)
    return PREFLIGHT_PER_RUN * max(1, len(urls)) * runs


def outcome_kind(row):
    """ran, refused, failed, timeout, rejected…, or unavailable."""
    return "unavailable" if row["verdict"] == "unavailable" else row["outcome"].split(" (")[0]


def seen_text(seen):
    return seen["requests"] if not seen["failed"] else f"{seen['requests']}, {seen['failed']} failed"


def run_line(index, record, servers, tokenizer, table):
    folder = WORK / f"{index:03d}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    line = prepare(index, record, Here(servers.get, tokenizer, folder))
    line.expected = expected_requests(line)
    # No hub downloads (only 127.0.0.1 is reached); a cached copy in the usual cache is used.
    env = dict(os.environ, **line.env, HF_HUB_OFFLINE="1")
    before = servers.counts()
    code, stderr, seconds, cpu = run_bounded([INFERPERF, "profile", *line.argv], folder, env, f"{index:03d}")
    seen = servers.counts()
    seen.subtract(before)
    seen["requests"] -= preflight_requests(line)
    outcome, verdict, cause = judge(line, code, stderr, seen, *table)
    ran = outcome == "ran"
    return {
        "index": index,
        "source": f"{record['source']}@{record['commit'][:8]}",
        "command": record["command"],
        "rewrites": "; ".join(line.rewrites),
        "outcome": outcome,
        "expected": line.expected.text() if ran else "",
        "seen": seen_text(seen) if ran else "",
        "verdict": verdict,
        "cause": cause,
        "seconds": f"{seconds:.1f}",
        "cpu": f"{cpu:.2f}",
    }


@pytest.mark.skipif(
    os.environ.get("AIPERF_COMMANDS") != "1",
    reason="AIPERF_COMMANDS=1 runs the 302 lines (about 10 minutes; bench/aiperf_commands/run.sh sets it)",
)
def test_documented_commands(servers, tokenizer):
    table = (refused_flags(), refused_differently())
    assert len(table[0]) > 50 and table[1], f"the flag table {FLAG_TABLE} looks unread: {table}"
    records = [json.loads(row) for row in FIXTURE.read_text().splitlines() if row.strip()]
    WORK.mkdir(parents=True, exist_ok=True)
    only = os.environ.get("AIPERF_COMMANDS_ONLY")
    chosen = {int(i) for i in only.split(",")} if only else None
    started = time.monotonic()
    rows = [
        run_line(index, record, servers, tokenizer, table)
        for index, record in enumerate(records)
        if chosen is None or index in chosen
    ]
    seconds = time.monotonic() - started
    counts = Counter(outcome_kind(row) for row in rows)
    write_report(rows, seconds, counts)
    failed = [row for row in rows if row["verdict"] == "FAIL"]
    cpu = sum(float(row["cpu"]) for row in rows)
    note(
        f"aiperf commands: {len(rows)} documented lines in {seconds:.0f} s ({cpu:.0f} s client CPU): "
        + ", ".join(f"{n} {k}" for k, n in counts.most_common())
        + f"; {len(failed)} fail the test (table: {REPORT.relative_to(ARTIFACTS.parent.parent)})"
    )
    assert not failed, f"{len(failed)} lines failed or disagree on the count:\n" + "\n".join(
        f"#{row['index']} {row['source']}: {row['outcome']}: {row['cause']}" for row in failed
    )

"""A sample of AIPerf 0.13's documented `aiperf profile` lines run side by side (issue 45,
part 6): each line once by AIPerf 0.13 itself and once as `inferperf profile` with the same
argv, against one `inferperf serve`, to show that inferperf does what AIPerf does with a
line, not only that it accepts it. (test_aiperf_commands.py runs all 302 lines through
inferperf alone and judges them by AIPerf's counting rules as aiperf_commands_lib.py writes
them down; this test asks AIPerf itself.)

One line per feature (SAMPLE), rewritten as test_aiperf_commands.py rewrites it
(aiperf_commands_lib.prepare: this machine's URL and models, the local tokenizer, the
page's input files, counts capped at 20), some capped lower still so that the module stays
under about 4 minutes (AIPerf takes 8-15 s to start and stop). Both tools get the same argv
plus what AIPerf needs to run offline: `--tokenizer` (else AIPerf looks the model name up on
the Hugging Face hub) and `--ui-type none`; each its own `--artifact-dir`. Which tool goes
first alternates from line to line. Per line:
- requests: the server's count (/v1/inferperf/stats, all models, less inferperf's pre-flight
  request) is the same for both, and so is each export's `request_count`;
- ISL and OSL: the means in profile_export_aiperf.json are equal (each tool makes its own
  prompts): exactly for fixed lengths, within 4 standard errors of a difference of two means
  where the line samples lengths (`--isl-stddev`, `--osl-stddev`);
- TTFT p50 (streamed lines) and request throughput within 10 %. Where they are further
  apart, the server says whose figure is off: its own TTFT (its vLLM-style histogram)
  and mean request time (its KServe statistics) over AIPerf's run, and from that time the
  throughput a closed-loop line's concurrency can get (for embeddings, the model's
  capacity). When inferperf's figure is within 15 % of the server's and AIPerf's further
  off, the gap is AIPerf's own time per request at that load (a Python client on 2 cores:
  its TTFT p50 1.1-1.6× the server's and its throughput 0.6-0.9× at 30-190 requests/s in
  rehearsals, inferperf's within 1.10× and 0.94×), recorded with the ratios; otherwise it
  is inferperf's disagreement.
A line AIPerf itself fails, or a figure AIPerf does not report, is recorded with the reason.
A disagreement of inferperf's fails the test unless KNOWN lists it (with why), in which case
the table says KNOWN; a KNOWN entry that no longer happens fails it too, so that the list
stays true. The table: target/e2e/aiperf-side-by-side.md. AIPERF_SIDE_BY_SIDE_ONLY=14,91,…
runs only those rows (Sample.key).

The model (`ttft_ms=40,itl_ms=4`, 1024 slots: nothing queues) is slow enough that a client's
overhead weighs little in TTFT or throughput at low load. The tokenizer is the e2e byte
tokenizer (conftest `tokenizer`) with the server's generated token "tok " added as one
token, so that the server's `usage` and the tokenizer count answers alike, as a model's own
tokenizer does; one more row runs line 147 with the plain byte tokenizer, in which they
differ, and one more line 14 with aiperf_inputs' trace as written, which AIPerf 0.13 refuses
(consistent_trace).
"""

import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from aiperf_commands_lib import FIXTURE, Here, Options, expected_requests, main_name, prepare
from conftest import SUMMARY, serve_with_metrics
from e2e_lib import ARTIFACTS, INFERPERF, VENVS, http_status, note
from test_aiperf_commands import preflight_requests

AIPERF = VENVS / "aiperf" / "bin" / "aiperf"
WORK = ARTIFACTS / "aiperf-side-by-side"
REPORT = ARTIFACTS / "aiperf-side-by-side.md"
LLM = "llm:ttft_ms=40,itl_ms=4,max_batch=1024"
# One embeddings instance: 20 ms a request, one at a time, so 50 requests/s at most. (The
# server keeps no statistics of its OpenAI embeddings requests but their count.)
EMBED_MS = 20
MODELS = {"llm": LLM, "llm2": LLM, "embed": f"embeddings:ms={EMBED_MS},instances=1"}
GENERATED_TOKEN = "tok "
TIMEOUT = {"aiperf": 90, "inferperf": 60}
TOLERANCE = 0.10
# How close to the server's own figure inferperf's must be for a gap to AIPerf's to count as
# AIPerf's: a 512×512 image's upload and a busy machine put inferperf's TTFT p50 at up to
# 1.10× the server's in rehearsals (its mean up to 1.15×).
SERVER_TOLERANCE = 0.15


@dataclasses.dataclass
class Sample:
    index: int  # the line's index in the fixture, from 0
    feature: str
    caps: dict = dataclasses.field(default_factory=dict)  # AIPerf main name → a lower cap
    byte_tokenizer: bool = False  # the plain byte tokenizer, in which "tok " is 4 tokens
    trace_as_written: bool = False  # aiperf_inputs' mooncake trace as it is (see consistent_trace)

    @property
    def key(self):
        suffixes = {"-byte-tokenizer": self.byte_tokenizer, "-trace-as-written": self.trace_as_written}
        return f"{self.index}" + "".join(suffix for suffix, given in suffixes.items() if given)


# The sample, one line per feature: Sample(the line's index in the fixture, the feature it
# covers, caps lower than aiperf_commands_lib's), its AIPerf page beside it.
SAMPLE = [
    Sample(113, "plain chat, not streamed (concurrency 1)"),  # local-tokenizer.md
    Sample(114, "chat streamed, --concurrency 4"),  # local-tokenizer.md
    # openai-text-endpoints.md
    Sample(149, "completions endpoint, ISL/OSL sampled (±4)", {"request-count": 8}),
    Sample(187, "--request-rate 50 (constant) with --concurrency 50"),  # request-rate-concurrency.md
    Sample(147, "synthetic ISL 100 / OSL 200, fixed", {"request-count": 5}),  # same page
    Sample(280, "images (--image-width-mean 512 …)"),  # vision.md
    Sample(70, "audio (--audio-length-mean 5 …)"),  # audio.md
    # multi-turn.md
    Sample(121, "multi-turn: --conversation-num, --conversation-turn-mean 3", {"conversation-num": 4}),
    Sample(14, "trace replay: mooncake_trace, --fixed-schedule"),  # trace-replay.md
    Sample(91, "embeddings"),  # embeddings.md
    Sample(290, "warm-up: --warmup-request-count 20"),  # warmup.md
    Sample(97, "--extra-inputs min_tokens:200 ignore_eos:true", {"request-count": 8}),  # gpu-telemetry.md
    Sample(147, "OSL when the tokenizer is not the server's", {"request-count": 3}, byte_tokenizer=True),
    Sample(14, "a trace with a hash id at two block sizes", trace_as_written=True),
    # synthesis.md, prefix-synthesis.md
    Sample(11, "trace synthesis: speed-up 2, prefixes 1.5x, answers 2x, --synthesis-max-isl"),
    Sample(159, "trace synthesis: 5 prefix trees, prompts 0.8x"),
]
# Every feature asked for has a documented line. Open loop: the documented lines with a
# request rate and a fixed count use Poisson arrivals (54, 142, 283: over 20 requests the
# throughput then varies by about 20 % with the seed), but for 187, whose arrivals are
# constant; 187 is the open-loop sample.

# inferperf's disagreements with AIPerf 0.13 that are known: (sample key, figure) → why.
KNOWN = {
    ("147-byte-tokenizer", "output_sequence_length"): "inferperf takes a request's output "
    "length from the server's usage when it sends one (src/load/answer_tokens.rs, "
    "docs/aiperf.md); AIPerf 0.13 counts the answer's text with the tokenizer unless "
    "--use-server-token-count",
}


# ---------------------------------------------------------------------------------------
# the server and the tokenizer


class Server:
    """One `inferperf serve` with the MODELS."""

    def __init__(self):
        self.process, self.host_port, self.metrics_host_port = serve_with_metrics(
            "aiperf-sbs-serve", INFERPERF, MODELS
        )

    def address(self, k):
        assert k == 0, "no sample line names a second server"
        return self.host_port, self.metrics_host_port

    def snapshot(self):
        """The server's counters so far, all models: requests and failed (its stats
        extension), the TTFT histogram's sum (s) and count, the KServe statistics' successes
        and their time (ns)."""
        stats = json.loads(self.get("/v1/inferperf/stats"))["data"]
        metrics = self.get("/metrics")
        models = json.loads(self.get("/v2/models/stats"))["model_stats"]
        kserve = [m["inference_stats"]["success"] for m in models]
        return {
            "requests": sum(m["requests"] for m in stats),
            "failed": sum(m["failed"] for m in stats),
            "ttft_s": metric_sum(metrics, "vllm:time_to_first_token_seconds_sum"),
            "ttft_count": metric_sum(metrics, "vllm:time_to_first_token_seconds_count"),
            "success_ns": sum(s["ns"] for s in kserve),
            "success_count": sum(s["count"] for s in kserve),
        }

    def get(self, path):
        with urllib.request.urlopen(f"http://{self.host_port}{path}", timeout=5) as answer:
            return answer.read().decode()


def metric_sum(text, name):
    return sum(float(v) for v in re.findall(rf"^{re.escape(name)}\{{[^}}]*\}} (\S+)$", text, re.M))


@pytest.fixture(scope="module")
def server(inferperf_bin):
    started = Server()
    started.process.start()
    try:
        listed = lambda: http_status(f"http://{started.host_port}/v1/models") == 200  # noqa: E731
        started.process.wait_until(listed, 30, "/v1/models")
        SUMMARY["start"]["aiperf-sbs-serve"] = started.process.ready()
        yield started
    finally:
        started.process.stop()


def with_added_token(source, folder, token):
    """A copy of the tokenizer folder `source` in which `token` is one token."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(source, folder)
    path = folder / "tokenizer.json"
    document = json.loads(path.read_text())
    document["added_tokens"].append({
        "id": 1 + max(document["model"]["vocab"].values()), "content": token,
        "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False,
    })
    path.write_text(json.dumps(document))
    return folder


@pytest.fixture(scope="module")
def tokenizers(tokenizer):
    """{False: the byte tokenizer with the server's generated token as one token, True: the
    plain byte tokenizer}, by Sample.byte_tokenizer."""
    answers = with_added_token(tokenizer, ARTIFACTS / "aiperf-sbs-tokenizer", GENERATED_TOKEN)
    return {False: answers, True: tokenizer}


# ---------------------------------------------------------------------------------------
# one line, both tools


def records():
    return [json.loads(row) for row in FIXTURE.read_text().splitlines() if row.strip()]


def lower_caps(line, caps):
    """Caps some flags of the prepared line lower than aiperf_commands_lib's CAPS, saying so."""
    out, current = [], None
    for token in line.argv:
        name = main_name(token)
        if name is not None:
            current = name
        elif current in caps and re.fullmatch(r"[0-9.]+", token) and float(token) > caps[current]:
            line.rewrites.append(f"--{current} {token} → {caps[current]}")
            token = str(caps[current])
        out.append(token)
    line.argv = out


def offline_flags(line, tokenizer):
    """What AIPerf needs to run here, given to both tools."""
    options, added = Options.of(line.argv), []
    if not options.has("tokenizer"):
        added += ["--tokenizer", str(tokenizer)]
    if not options.has("ui-type"):
        added += ["--ui-type", "none"]
    if added:
        line.rewrites.append("added for AIPerf offline: " + " ".join(added))
    return added


def consistent_trace(line, folder):
    """aiperf_inputs writes its mooncake trace with hash_ids [i % 3] over lengths 100 to
    280, which AIPerf 0.13 refuses (a hash id must stand for one block size). Rewritten so
    that a prompt is the shared 512-token block 0, then a block of its own of 100 + 20 i
    tokens; the last record has no hash ids (a prompt of its length from the corpus), as
    AIPerf 0.13 decodes 10 or more hash-id prompts in worker processes that load the
    tokenizer in offline mode, where a tokenizer folder given by path fails to load."""
    for path, written in line.inputs.items():
        if written.what != "mooncake_trace":
            continue
        file = folder / path
        rows = [json.loads(r) for r in file.read_text().splitlines() if r.strip()]
        for i, record in enumerate(rows):
            record.update(input_length=512 + record["input_length"], hash_ids=[0, 1 + i])
        del rows[-1]["hash_ids"]
        file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        line.rewrites.append(f"{path}: input_length 512 + (100 + 20 i), hash_ids [0, 1 + i] but the last")


def run_bounded(argv, cwd, env, log, timeout):
    """(exit code or None on timeout, seconds); stdout and stderr go to log.*; a run past
    `timeout` has its process group killed."""
    started = time.monotonic()
    with open(f"{log}.stdout", "wb") as out, open(f"{log}.stderr", "wb") as err:
        proc = subprocess.Popen(
            [str(a) for a in argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=err, start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
    return code, time.monotonic() - started


def first_error(log):
    """The first line of a run's output that says what went wrong."""
    for path in (Path(f"{log}.stderr"), Path(f"{log}.stdout")):
        for row in path.read_text(errors="replace").splitlines():
            if re.search(r"error|Error|refused|not take", row):
                return row.strip()[:240]
    return "(no error line)"


@dataclasses.dataclass
class Run:
    tool: str
    code: int
    seconds: float
    seen: int  # requests the server received for this run (inferperf's pre-flight taken off)
    server: dict  # the server's counters over this run (Server.snapshot differences)
    export: dict  # profile_export_aiperf.json, or {}
    log: str

    @property
    def ran(self):
        return self.code in (0, 2) and bool(self.export)

    def figure(self, tag, stat="avg"):
        value = self.export.get(tag, {})
        return value.get(stat) if isinstance(value, dict) else None


def read_export(folder):
    found = sorted(Path(folder).rglob("profile_export_aiperf.json"))
    return json.loads(found[0].read_text()) if found else {}


def run_tool(tool, line, server, folder, env):
    artifacts = folder / tool
    shutil.rmtree(artifacts, ignore_errors=True)
    argv = [AIPERF if tool == "aiperf" else INFERPERF, "profile", *line.argv, "--artifact-dir", artifacts]
    before = server.snapshot()
    code, seconds = run_bounded(argv, folder, env, folder / tool, TIMEOUT[tool])
    after = server.snapshot()
    delta = {key: after[key] - before[key] for key in after}
    seen = delta["requests"] - (preflight_requests(line) if tool == "inferperf" else 0)
    return Run(tool, code, seconds, seen, delta, read_export(artifacts), str(folder / tool))


def run_line(sample, position, server, tokenizer):
    folder = WORK / sample.key
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    line = prepare(sample.index, records()[sample.index], Here(server.address, tokenizer, folder))
    if not sample.trace_as_written:
        consistent_trace(line, folder)
    lower_caps(line, sample.caps)
    line.argv += offline_flags(line, tokenizer)
    line.options = Options.of(line.argv)
    line.expected = expected_requests(line)
    scratch = WORK / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **line.env, TMPDIR=str(scratch), HF_HOME=str(WORK / "hf-home"))
    order = ("aiperf", "inferperf") if position % 2 == 0 else ("inferperf", "aiperf")
    runs = {tool: run_tool(tool, line, server, folder, env) for tool in order}
    return line, runs["aiperf"], runs["inferperf"]


# ---------------------------------------------------------------------------------------
# judging a line


@dataclasses.dataclass
class Truth:
    """The server's own figures over a run's requests, None where it has none: its mean
    TTFT and request time (ms), and the throughput a closed-loop line can get from it at
    that request time (requests/s; for embeddings, the embed model's capacity)."""

    ttft: float = None
    latency: float = None
    throughput: float = None

    @classmethod
    def of(cls, run, line):
        s = run.server
        ttft = 1000 * s["ttft_s"] / s["ttft_count"] if s["ttft_count"] else None
        latency = s["success_ns"] / 1e6 / s["success_count"] if s["success_count"] else None
        slots = closed_loop_slots(line.options)
        if line.options.value("endpoint-type") == "embeddings":
            return cls(ttft, latency, slots and 1000 / EMBED_MS)
        return cls(ttft, latency, slots and latency and 1000 * slots / latency)

    def ratio(self, run, tag, stat="avg"):
        """A tool's figure over the server's own of the same span."""
        own, value = self.figure(tag), run.figure(tag, stat)
        return None if value is None or not own else value / own

    def figure(self, tag):
        return {
            "time_to_first_token": self.ttft, "request_latency": self.latency,
            "request_throughput": self.throughput,
        }[tag]


def closed_loop_slots(options):
    """How many requests a closed-loop line keeps in flight: its --concurrency, or its
    requests (sessions when it has them) when fewer; None when its last wave is partial, or
    for a line with a rate, a schedule or an input file (a trace plays on its timestamps)."""
    open_loop = ("request-rate", "fixed-schedule", "user-centric-rate", "input-file")
    if any(options.has(flag) for flag in open_loop):
        return None
    slots = options.number("concurrency", 1)
    units = options.number("conversation-num") or options.number("request-count", 10)
    if units % slots and units > slots:
        return None
    return min(slots, units)


def sampled_tolerance(options, stddev_flag, count):
    """How far two tools' means of a sampled length may fall apart: 4 standard errors of
    the difference of two means of `count` draws (0 for a fixed length)."""
    stddev = options.number(stddev_flag, 0) or 0
    return 4 * stddev * math.sqrt(2 / count) if stddev and count else 0.0


def compare_lengths(line, aiperf, inferperf, problems):
    count = aiperf.figure("request_count") or 0
    for tag, stddev_flag in (
        ("input_sequence_length", "prompt-input-tokens-stddev"),
        ("output_sequence_length", "prompt-output-tokens-stddev"),
    ):
        a, i = aiperf.figure(tag), inferperf.figure(tag)
        if a is None:
            problems.append(("aiperf", tag, "AIPerf reports none"))
        elif i is None:
            problems.append(("FAIL", tag, f"inferperf reports none; AIPerf {a:.1f}"))
        elif abs(a - i) > sampled_tolerance(line.options, stddev_flag, count) + 1e-6:
            problems.append(("FAIL", tag, f"AIPerf {a:.2f}, inferperf {i:.2f}"))


# A timing figure, its statistic, and the figures the server also has that explain it.
# The server's TTFT is the same for every request here (no prefill cost, no queue), so its
# mean is its median too.
TIMING = (
    ("time_to_first_token", "p50", (("time_to_first_token", "p50"),)),
    ("request_throughput", "avg", (("request_throughput", "avg"), ("request_latency", "avg"))),
)


def server_evidence(truth, aiperf, inferperf, evidence):
    """Why two tools' figures differ, when the server says inferperf's is within
    SERVER_TOLERANCE of its own and AIPerf's further off; else None."""
    for tag, stat in evidence:
        a_over, i_over = truth.ratio(aiperf, tag, stat), truth.ratio(inferperf, tag, stat)
        if a_over is None or i_over is None:
            continue
        if abs(i_over - 1) <= SERVER_TOLERANCE and abs(a_over - 1) > abs(i_over - 1):
            return f"{tag} {stat} {a_over:.2f}× the server's for AIPerf, {i_over:.2f}× for inferperf"
        return None
    return None


def compare_timing(aiperf, inferperf, truth, problems):
    for tag, stat, evidence in TIMING:
        a, i = aiperf.figure(tag, stat), inferperf.figure(tag, stat)
        if a is None and i is None:
            continue
        if a is None:
            problems.append(("aiperf", tag, f"AIPerf reports none; inferperf {i:.2f}"))
            continue
        if i is None:
            problems.append(("FAIL", tag, f"inferperf reports none; AIPerf {a:.2f}"))
            continue
        if abs(a - i) <= TOLERANCE * max(a, i):
            continue
        said = f"{stat} AIPerf {a:.2f}, inferperf {i:.2f}, {abs(a - i) / max(a, i):.0%} apart"
        why = server_evidence(truth, aiperf, inferperf, evidence)
        problems.append(("aiperf", tag, f"{said}; {why}") if why else ("FAIL", tag, said))


def judge(line, aiperf, inferperf, truth):
    """[(kind, figure, text)]: kind FAIL (an inferperf disagreement), aiperf (AIPerf's own
    behaviour, recorded) or rules (aiperf_commands_lib's count rules disagree with AIPerf)."""
    problems = []
    if not inferperf.ran:
        problems.append(("FAIL", "run", f"inferperf exit {inferperf.code}: {first_error(inferperf.log)}"))
    if inferperf.server["failed"]:
        failed = inferperf.server["failed"]
        problems.append(("FAIL", "run", f"the server failed {failed} of inferperf's requests"))
    if not aiperf.ran:
        problems.append(("aiperf", "run", f"AIPerf exit {aiperf.code}: {first_error(aiperf.log)}"))
        if inferperf.ran and not line.expected.agrees(inferperf.seen):
            said = f"inferperf sent {inferperf.seen}, AIPerf's rules give {line.expected.text()}"
            problems.append(("FAIL", "requests", said))
        return problems
    if not line.expected.agrees(aiperf.seen):
        said = f"AIPerf sent {aiperf.seen}; aiperf_commands_lib expects {line.expected.text()}"
        problems.append(("rules", "requests", said))
    if not inferperf.ran:
        return problems
    if aiperf.seen != inferperf.seen:
        said = f"at the server: AIPerf {aiperf.seen}, inferperf {inferperf.seen}"
        problems.append(("FAIL", "requests", said))
    a, i = aiperf.figure("request_count"), inferperf.figure("request_count")
    if a != i:
        problems.append(("FAIL", "request_count", f"AIPerf {a}, inferperf {i}"))
    compare_lengths(line, aiperf, inferperf, problems)
    compare_timing(aiperf, inferperf, truth, problems)
    return problems


def mark_known(sample, problems):
    """FAIL → KNOWN where KNOWN lists the disagreement."""
    return [
        ("KNOWN" if kind == "FAIL" and (sample.key, figure) in KNOWN else kind, figure, text)
        for kind, figure, text in problems
    ]


def verdict(problems):
    kinds = sorted({kind for kind, _, _ in problems})
    if "FAIL" in kinds:
        return "FAIL"
    return "ok" if not kinds else "ok, " + ", ".join(kinds)


# ---------------------------------------------------------------------------------------
# the report


def number(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f}"


def pair(aiperf, inferperf, tag, stat="avg", digits=1):
    return f"{number(aiperf.figure(tag, stat), digits)} / {number(inferperf.figure(tag, stat), digits)}"


def against_server(truth, aiperf, inferperf, tag, stat="avg"):
    own = truth.figure(tag)
    if own is None:
        return "—"
    ratios = (number(truth.ratio(run, tag, stat), 2) for run in (aiperf, inferperf))
    return f"{own:.1f}: " + " / ".join(ratios)


def row(sample, line, aiperf, inferperf, truth, problems):
    cells = [
        sample.key, sample.feature, f"`{' '.join(line.argv)}`", "; ".join(line.rewrites),
        f"{aiperf.seen} / {inferperf.seen} ({line.expected.text()})",
        pair(aiperf, inferperf, "input_sequence_length"), pair(aiperf, inferperf, "output_sequence_length"),
        pair(aiperf, inferperf, "time_to_first_token", "p50"),
        against_server(truth, aiperf, inferperf, "time_to_first_token", "p50"),
        pair(aiperf, inferperf, "request_latency"),
        against_server(truth, aiperf, inferperf, "request_latency"),
        pair(aiperf, inferperf, "request_throughput", digits=2),
        against_server(truth, aiperf, inferperf, "request_throughput"),
        f"{aiperf.seconds:.1f} / {inferperf.seconds:.1f}",
        verdict(problems), "; ".join(f"{kind} {figure}: {text}" for kind, figure, text in problems),
    ]
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def write_report(rows, seconds):
    lines = [
        "# AIPerf 0.13's documented lines side by side: AIPerf 0.13 and `inferperf profile`",
        "",
        f"Server: `inferperf serve` with {MODELS}. AIPerf `{AIPERF}`, inferperf `{INFERPERF}`. "
        f"{len(rows)} runs of each in {seconds:.0f} s. A cell is AIPerf / inferperf. Requests: "
        "the server's count (inferperf's pre-flight taken off), AIPerf's rules "
        "(aiperf_commands_lib) in brackets. ISL, OSL: mean tokens. TTFT: p50 ms. vs server: "
        "the server's own mean (ms) over AIPerf's run, then each tool's figure over it (TTFT "
        "p50, latency mean); for throughput, what a closed-loop line's concurrency gets at "
        "the server's mean request time (requests/s). "
        "Latency: mean ms. Throughput: requests/s. s: the run's wall time, start-up included.",
        "",
        "| line | feature | argv | rewrites | requests | ISL | OSL | TTFT p50 | TTFT vs server "
        "| latency | latency vs server | throughput | throughput vs server | s | verdict | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Known disagreements (KNOWN in the test):",
        "",
        *[f"- line {key}, {figure}: {why}" for (key, figure), why in KNOWN.items()],
    ]
    REPORT.write_text("\n".join(lines) + "\n")


def side_by_side(sample, position, server, tokenizers):
    """Runs one sample with both tools: (its report row, [(kind, figure, text)])."""
    line, aiperf, inferperf = run_line(sample, position, server, tokenizers[sample.byte_tokenizer])
    truth = Truth.of(aiperf if aiperf.seen else inferperf, line)
    problems = mark_known(sample, judge(line, aiperf, inferperf, truth))
    print(f"\n[e2e] side by side {sample.key}: {verdict(problems)} {problems}", flush=True)
    return row(sample, line, aiperf, inferperf, truth, problems), problems


def outcome(chosen, problems, seconds):
    """Notes the summary line; (the disagreements, the KNOWN ones that did not happen)."""
    found = [(sample, *p) for sample in chosen for p in problems[sample.key]]
    failures = [f"line {s.key} ({s.feature}), {f}: {t}" for s, kind, f, t in found if kind == "FAIL"]
    known = {(s.key, f) for s, kind, f, _ in found if kind == "KNOWN"}
    ran = {s.key for s in chosen}
    gone = [f"line {k}, {f}: {why}" for (k, f), why in KNOWN.items() if k in ran and (k, f) not in known]
    counts = {k: sum(1 for _, kind, _, _ in found if kind == k) for k in ("FAIL", "KNOWN", "aiperf", "rules")}
    note(
        f"aiperf side by side: {len(chosen)} documented lines run by AIPerf 0.13 and inferperf in "
        f"{seconds:.0f} s: {counts['FAIL']} disagreements, {counts['KNOWN']} known ones, "
        f"{counts['aiperf']} AIPerf notes, {counts['rules']} count-rule notes "
        f"(table: {REPORT.relative_to(ARTIFACTS.parent.parent)})"
    )
    return failures, gone


def test_documented_lines_side_by_side(server, tokenizers):
    assert AIPERF.is_file(), f"AIPerf 0.13 is not installed at {AIPERF} (scripts/e2e-setup)"
    only = os.environ.get("AIPERF_SIDE_BY_SIDE_ONLY")
    chosen = [s for s in SAMPLE if not only or s.key in only.split(",")]
    started = time.monotonic()
    rows, problems = [], {}
    for position, sample in enumerate(chosen):
        line_row, problems[sample.key] = side_by_side(sample, position, server, tokenizers)
        rows.append(line_row)
    seconds = time.monotonic() - started
    write_report(rows, seconds)
    failures, gone = outcome(chosen, problems, seconds)
    assert not failures, "inferperf disagrees with AIPerf 0.13:\n" + "\n".join(failures)
    assert not gone, "KNOWN disagreements that no longer happen (remove them):\n" + "\n".join(gone)

"""inferperf's OpenAI mode against llama-cpp-python's server (a random-weight llama written by
the fixture), checked against the server's own timing log and side by side with AIPerf 0.13.

The server decodes one request at a time and every request gets exactly 16 output tokens,
each in its own event. What is true, and so what is checked, level by level (concurrency 1,
2 and a request rate; /v1/chat/completions and /v1/completions, streamed and not):
- Output tokens: 16 per request (the server's usage says 16 for every non-streamed answer:
  the fixture checks it, and the model cannot end a text early), so Output Sequence Length is
  16 for every request, and perf_analyzer's export lists 16 answers per streamed request.
- Each prompt is sent once: a repeated prompt is served from the server's prompt cache
  without its decode, and the level then measures a lighter load than it claims.
- Against llama.cpp's timing lines of the level's own requests (see `expectations`): TTFT
  p50 = prompt decode (+ the other request's whole time at concurrency 2), ITL p50 = the
  server's time per token (decode, sampling, event), throughput = 1 / the request's time at concurrency 2 and = the rate at
  the rate, within 10 % (5 % for the rate). What the server does around the decode (HTTP, the
  chat template, sampling, the event) is in the 10 %: about 4-5 % on a quiet machine.
- Side by side with AIPerf at the same settings (streaming chat, the same prompts file and
  request bodies, concurrency 2 and the rate): request throughput, TTFT p50 and ITL p50, each
  taken against the server's log of that tool's own run, within 5 %; raw within 15 % (see
  test_side_by_side_with_aiperf for why not raw within 5 %).

Timing needs a quiet machine: on 2 cores, other busy processes (a compiler) slow the server's
token decode two- to three-fold, more than any tolerance here.

Each level is its own inferperf run, so that the server's log lines between two marks are that
level's requests. The AIPerf runs (10-20 s each, most of it start-up) are two: concurrency 2
and the request rate, in one module-scoped fixture.
"""

import json
import math
import shutil
from collections import Counter

import pytest

from e2e_lib import ARTIFACTS, INFERPERF, note, run_tool
from llm_lib import ForeignLoad, ServerTruth, level_folder, read_export, run_aiperf, write_prompts

ENDPOINTS = {"chat": "v1/chat/completions", "completions": "v1/completions"}
OUTPUT_TOKENS = 16
# Requests per window: inferperf measures 3 windows per level.
WINDOW_REQUESTS = 8
# The fewest distinct prompts a level draws from: 64 in the file both tools read, 100
# synthetic (inferperf's --num-prompts default).
PROMPTS_AT_LEAST = 64
# About 60 % of the server's capacity here: a request takes about 0.3 s (0.2 s of prompt
# decode, then 16 tokens), so they come 0.5 s apart. At 3/s (0.33 s apart) a run where the
# server was 10 % slower than usual (0.34 s a request) had requests waiting for each other,
# and the time to first token grew with the queue.
RATE = 2
LEVELS = (("concurrency", 1), ("concurrency", 2), ("request_rate", RATE))
AIPERF_LEVELS = (("concurrency", 2), ("request_rate", RATE))
AIPERF_REQUESTS = 24
SERVER_TOLERANCE = 0.10
THROUGHPUT_TOLERANCE = 0.12
PEER_TOLERANCE = 0.05
RAW_PEER_TOLERANCE = 0.15
# Raw figures of two runs compare only when the server served both at this speed (per token).
SAME_SERVER_SPEED = 0.10


def level_id(kind, value):
    return f"{kind}{value}"


@pytest.fixture(scope="module")
def prompts():
    return write_prompts(ARTIFACTS / "llm-prompts.jsonl")


class Level:
    """One profiled level: the tool's run, its export, the server's truth for its requests,
    and how busy the rest of the machine was meanwhile."""

    def __init__(self, run, export, truth, folder, load):
        self.run = run
        self.export = export
        self.truth = truth
        self.folder = folder
        self.load = load

    def text(self):
        return f"{self.export.summary()}; {self.truth.text()}; {self.load.text()}; {self.run.seconds:.1f} s"


def profile(llama, endpoint, streaming, kind, value, prompts=None):
    """inferperf at one level, with GenAI-Perf's flags as the issue gives them."""
    name = f"llm-{endpoint}-{'stream' if streaming else 'plain'}-{level_id(kind, value)}"
    artifact_dir = ARTIFACTS / name
    shutil.rmtree(artifact_dir, ignore_errors=True)
    args = [
        INFERPERF,
        "-m", llama.model,
        "--service-kind", "openai",
        "--endpoint", ENDPOINTS[endpoint],
        "-u", llama.address,
        "--concurrency-range" if kind == "concurrency" else "--request-rate-range", value,
        "--output-tokens-mean", OUTPUT_TOKENS,
        "--output-tokens-mean-deterministic",
        "--measurement-mode", "count_windows",
        "--measurement-request-count", WINDOW_REQUESTS,
        "--stability-percentage", "999",
        "--artifact-dir", artifact_dir,
    ]
    if streaming:
        args.append("--streaming")
    if prompts is None:
        args += ["--synthetic-input-tokens-mean", "16"]
    else:
        args += ["--prompt-source", "file", "--input-file", prompts]
    mark = llama.mark()
    with ForeignLoad(llama.pid) as load:
        run = run_tool(args, name, timeout=300)
        load.tool(run)
    truth = ServerTruth.of(llama.timings(mark, keep=ARTIFACTS / f"{name}.server.log"))
    assert run.returncode in (0, 2), run.show()
    folder = level_folder(artifact_dir, llama.model, endpoint, kind, value)
    return Level(run, read_export(folder), truth, folder, load)


@pytest.fixture(scope="module")
def aiperf_levels(llama, tokenizer, prompts):
    """AIPerf, streaming chat with the prompts file, at concurrency 2 and at the request rate."""
    levels = {}
    for kind, value in AIPERF_LEVELS:
        mark = llama.mark()
        with ForeignLoad(llama.pid) as load:
            run, export = run_aiperf(
                f"chat-stream-{level_id(kind, value)}",
                url=llama.address,
                model=llama.model,
                tokenizer=tokenizer,
                endpoint_type="chat",
                streaming=True,
                request_count=AIPERF_REQUESTS,
                concurrency=value if kind == "concurrency" else None,
                request_rate=value if kind == "request_rate" else None,
                input_file=prompts,
                output_tokens=OUTPUT_TOKENS,
                # The request bodies inferperf sends with --output-tokens-mean-deterministic.
                extra_inputs={"ignore_eos": True, "min_tokens": OUTPUT_TOKENS},
            )
            load.tool(run)
        server_log = export.folder.parent / f"{export.folder.name}.server.log"
        level = Level(run, export, ServerTruth.of(llama.timings(mark, keep=server_log)), export.folder, load)
        levels[(kind, value)] = level
        note(
            f"aiperf  chat stream {level_id(kind, value)}: {level.text()}; its requests over "
            f"first send to last answer: {figure(level, 'request_throughput', 'avg'):.2f}/s"
        )
    return levels


@pytest.fixture(scope="module")
def inferperf_chat_stream(llama, inferperf_bin, prompts, aiperf_levels):
    """inferperf, streaming chat with the same prompts file as AIPerf, at every level, right
    after AIPerf's runs (close in time, on the same warm server)."""
    levels = {}
    for kind, value in LEVELS:
        level = profile(llama, "chat", True, kind, value, prompts=prompts)
        levels[(kind, value)] = level
        note(f"inferperf chat stream {level_id(kind, value)}: {level.text()}")
    return levels


def assert_tokens(level, streaming):
    """Every request of the level had the 16 tokens the server generated for it."""
    export = level.export
    osl = export.metrics.get("output_sequence_length")
    assert osl is not None, f"{level.folder}: no output_sequence_length"
    assert osl["min"] == osl["max"] == OUTPUT_TOKENS, f"{level.folder}: OSL {osl}"
    count = export.get("request_count")
    assert count >= WINDOW_REQUESTS, f"{level.folder}: {count} requests"
    if "total_osl" in export.metrics:
        assert export.get("total_osl") == OUTPUT_TOKENS * count
    assert export.metrics.get("request_error_rate", {}).get("avg", 0) == 0, export.metrics
    for required in ("request_throughput", "request_latency"):
        assert required in export.metrics, f"{level.folder}: no {required}"
    streamed_only = ("time_to_first_token", "inter_token_latency")
    if streaming:
        for tag in streamed_only:
            assert tag in export.metrics, f"{level.folder}: no {tag}"


def assert_request_log(level, streaming):
    """perf_analyzer's profile_export.json of the level: every request had 16 tokens (16
    answers with content when streamed), and no prompt went twice before every prompt had
    gone once (64 in the file, 100 synthetic; a level usually sends fewer, but one that needs
    more windows sends more, e.g. 69 requests at concurrency 2 in a rehearsal). A prompt sent
    again early means the load tester repeats prompts: a server with a prompt cache (llama.cpp, vLLM)
    then skips their prompt decode, and the level measures a lighter load than it claims."""
    with open(level.folder / "profile_export.json") as handle:
        document = json.load(handle)
    requests = [r for experiment in document["experiments"] for r in experiment["requests"]]
    assert requests, f"{level.folder}/profile_export.json lists no request"
    for request in requests:
        assert request.get("output_tokens", OUTPUT_TOKENS) == OUTPUT_TOKENS, request
        if streaming:
            assert len(request["response_timestamps"]) == OUTPUT_TOKENS, request
    prompts = [_prompt_of(r["request_inputs"]["payload"]) for r in requests]
    counts = Counter(prompts)
    repeated = {p: n for p, n in counts.items() if n > 1}
    # A level that needs more windows than usual sends more requests than the file holds:
    # then every prompt must have gone before any goes again (each sent once, or once more
    # than the least sent), never a few prompts over and over.
    cycled = len(counts) >= min(len(requests), PROMPTS_AT_LEAST) and (
        max(counts.values()) - min(counts.values()) <= 1
    )
    assert not repeated or cycled, (
        f"{level.folder}/profile_export.json: {len(repeated)} of the {len(set(prompts))} "
        f"distinct prompts of its {len(requests)} requests went more than once (up to "
        f"{max(repeated.values())} times) before every prompt had gone once, e.g. "
        f"{next(iter(repeated))[:60]!r}; the server's log: {level.truth.text()}"
    )


def _prompt_of(payload):
    body = json.loads(payload) if isinstance(payload, str) else payload
    if "messages" in body:
        return json.dumps(body["messages"])
    return json.dumps(body.get("prompt"))


def assert_close(what, measured, truth, tolerance, evidence):
    assert math.isfinite(measured) and math.isfinite(truth), f"{what}: {measured} vs {truth}"
    error = abs(measured - truth) / truth
    assert error <= tolerance, (
        f"{what}: {measured:.3f} vs {truth:.3f} ({error:.1%} apart, more than {tolerance:.0%})\n"
        f"{evidence}"
    )


def expectations(level, kind, value, streaming=True):
    """What the server's log of the level's requests says each figure must be: a list of
    (tag, stat, expected value, tolerance, judged on a busy machine too). The server decodes
    one request at a time, so:
    - ITL = the time it spends per output token after the first: its decode ("eval time" /
      runs) and the sampling and event around it, from its "total time"
      (LlamaTiming.ms_per_token_served); at every level. The decode alone is about 10 % less
      (5.74 against 6.33 ms at concurrency 1 here): llama-cpp-python's per-token work is real
      server time that every client sees. Both sides slow down together when other processes
      take the CPU, so this holds on a busy machine too (within 2 % beside 1.4 busy cores);
    - the first token reaches a client one served token after the prompt decode ("prompt
      eval time"): llama-cpp-python streams a token's text once it has the next one. Measured
      for inferperf and AIPerf alike: TTFT p50 minus prompt decode p50 was 11.3-14.4 ms
      against 11.4-12.1 ms per served token; so at concurrency 1, TTFT = prompt decode + one
      served token;
    - concurrency 2: each request waits for the whole other request, so TTFT = its total
      time + the above, and it never idles: throughput = 1 / its total time;
    - a request rate below its capacity (a request takes about 0.3 s, they come 1/R apart):
      no request waits, so TTFT = prompt decode + one served token, and throughput = the
      rate.
    The last three need a quiet machine: what surrounds the decode (HTTP, the chat template,
    the client's own scheduling) is not in the log and grows when the CPU is shared."""
    truth = level.truth
    expected = []
    if streaming:
        expected.append(
            ("inter_token_latency", "p50", truth.ms_per_token_served_p50, SERVER_TOLERANCE, True)
        )
    if kind == "concurrency":
        if streaming:
            waited = truth.total_ms_p50 if value == 2 else 0.0
            first = waited + truth.prompt_ms_p50 + truth.ms_per_token_served_p50
            expected.append(("time_to_first_token", "p50", first, ttft_tolerance(truth, first), False))
        if value == 2:
            # Below 1 / total by the server's time per request outside llama.cpp's generation
            # (HTTP, the template, the events), which its log does not show: 1.8 % beside
            # inferperf, 3.5-9 % beside AIPerf here.
            expected.append(
                ("request_throughput", "avg", 1000.0 / truth.total_ms_p50, THROUGHPUT_TOLERANCE, False)
            )
    else:
        if streaming:
            # Arrivals 1/R apart, each served in less than that: no request waits.
            first = truth.prompt_ms_p50 + truth.ms_per_token_served_p50
            expected.append(("time_to_first_token", "p50", first, ttft_tolerance(truth, first), False))
        expected.append(("request_throughput", "avg", rate_throughput(level, value), PEER_TOLERANCE, False))
    return expected


def rate_throughput(level, rate):
    """The request throughput a level at this request rate must show. inferperf's is per
    second of its measured windows: the rate. AIPerf's is read as its requests over the span
    from its first send to its last answer (see `figure`): n requests 1/R apart and the last
    one's time, n / ((n - 1) / R + its total time)."""
    if not aiperf_span(level.export):
        return float(rate)
    count = level.export.get("request_count")
    return count / ((count - 1) / float(rate) + level.truth.total_ms_p50 / 1000.0)


def aiperf_span(export):
    """Whether the export is AIPerf's own: it has benchmark_duration, first send to last
    answer (inferperf's has not)."""
    return "benchmark_duration" in export.metrics


def figure(level, tag, stat):
    """A figure of the level's export. AIPerf 0.13's request_throughput divides its requests
    by its profiling phase, which starts before its first send (0.5 s before on a quiet
    machine here, 1.8 s in a CI run: 1.95 and 1.77 requests/s for 24 sent at 2/s), so for
    AIPerf the requests over its benchmark_duration (first send to last answer) stand for
    the throughput the server saw."""
    export = level.export
    if (tag, stat) == ("request_throughput", "avg") and aiperf_span(export):
        return export.get("request_count") / export.get("benchmark_duration")
    return export.get(tag, stat)


def ttft_tolerance(truth, first):
    """SERVER_TOLERANCE, plus one served token's time: the log cannot tell whether the first
    token's event cost a whole step after the prompt decode or only the sampling and the
    event (it is sampled from the prompt decode's logits), nor the HTTP around it. With
    prompts of exactly the asked tokens the prompt decode is short (26 ms for the
    completions levels), and that step alone is 10 % of the time to first token."""
    return SERVER_TOLERANCE + truth.ms_per_token_served_p50 / first


def assert_agrees_with_server(level, kind, value, streaming=True):
    """The level's figures against `expectations`; those that need a quiet machine only when
    it was quiet (see skip_unjudged)."""
    export, truth = level.export, level.truth
    evidence = f"{level.folder}: {export.summary()}\n{truth.text()}; {level.load.text()}"
    # A prompt sent twice in a row is served from the server's prompt cache: no prompt
    # decode, a shorter request, a higher throughput than the load it stands for.
    assert truth.cached == 0, (
        f"{truth.cached} of the {truth.requests} requests repeated the previous request's "
        f"prompt, which the server then took whole from its cache\n{evidence}"
    )
    if streaming and kind == "concurrency":
        assert truth.prompt_timed >= WINDOW_REQUESTS, evidence
    if streaming:
        # No client sees tokens come faster than the server decodes them.
        assert export.get("inter_token_latency", "p50") >= 0.97 * truth.ms_per_token_p50, evidence
    failures = []
    for tag, stat, expected, tolerance, robust in expectations(level, kind, value, streaming):
        if not (robust or level.load.quiet):
            continue
        try:
            assert_close(f"{tag} {stat}", figure(level, tag, stat), expected, tolerance, "")
        except AssertionError as error:
            failures.append(str(error).splitlines()[0])
    assert not failures, "\n".join(failures) + "\n" + evidence


def test_llama_server_generates_exactly_16_tokens(llama):
    """The fixture's own check (usage and events), and the timing lines parse."""
    mark = llama.mark()
    assert llama.check()
    timings = llama.timings(mark)
    assert len(timings) == 4, timings
    assert all(t.eval_runs in (15, 16) for t in timings), timings


def each_level(levels, check):
    """Runs check(kind, value, level) on every level and fails with all that failed, so that
    one failing level does not hide the others."""
    failures = []
    for (kind, value), level in levels.items():
        try:
            check(kind, value, level)
        except AssertionError as error:
            failures.append(f"--- {level_id(kind, value)} ({level.folder})\n{error}")
    assert not failures, "\n".join(failures)


def skip_unjudged(levels):
    """Skips (after the other checks passed) when some level's TTFT and throughput were not
    judged because other processes kept the machine busy during it."""
    busy = [
        f"{name if isinstance(name, str) else level_id(*name)}: {level.load.text()}"
        for name, level in levels.items()
        if not level.load.quiet
    ]
    if busy:
        pytest.skip(
            "TTFT and throughput not judged, the machine was busy ("
            + "; ".join(busy)
            + "); the rest passed"
        )


def test_aiperf_against_the_server(aiperf_levels):
    """AIPerf's own figures, read with the same reader, against the server's log: the check
    that the truth the inferperf tests use is one a second tool also meets."""

    def check(kind, value, level):
        assert_tokens(level, streaming=True)
        assert_agrees_with_server(level, kind, value)

    each_level(aiperf_levels, check)
    skip_unjudged(aiperf_levels)


def test_inferperf_chat_stream_against_the_server(inferperf_chat_stream):
    def check(kind, value, level):
        assert_tokens(level, streaming=True)
        assert_request_log(level, streaming=True)
        assert_agrees_with_server(level, kind, value)

    each_level(inferperf_chat_stream, check)
    skip_unjudged(inferperf_chat_stream)


@pytest.mark.parametrize("kind,value", AIPERF_LEVELS, ids=[level_id(*l) for l in AIPERF_LEVELS])
def test_side_by_side_with_aiperf(inferperf_chat_stream, aiperf_levels, kind, value):
    """Request throughput, TTFT p50 and ITL p50 of both tools at the same level, each taken
    against what the server's log says it must be for the requests of that tool's own run:
    inferperf no further from its server than AIPerf from its own by more than 5 %
    (throughput at concurrency 2: 10 %); raw within 15 %. Closer to the server than AIPerf
    is never a failure: at concurrency 2 AIPerf's TTFT p50 was 5 % under what its server's
    log gives (its next request leaves late, so it waits less) while inferperf's was 0.7 %
    over.

    Why against the server and not raw within 5 %: the two tools run one after the other, so
    the server they measure is not the same (on 2 cores, whatever else runs, the tool's own
    processes included, changes its speed from run to run); each tool is right about the
    server it saw, and the ratio to that server's own log is what must agree. On a quiet
    machine raw figures agree too (concurrency 2: 4.83 vs 4.85 req/s, TTFT p50 314.1 vs 308.1
    ms, ITL p50 6.55 vs 6.25 ms), so the raw check is made when the machine was quiet and
    the server's log gives both runs the same figure within 10 % (each figure on its own:
    the prompt decode for TTFT, the time per served token for ITL, the request's time for
    throughput): a quiet rehearsal saw the server serve inferperf's run 30 % faster than
    AIPerf's (7.05 against 10.11 ms per token by the tools, both within 2 % of the server's
    log), and the raw figures 26 % apart; a CI run saw the same time per token (7.24 against
    7.84 ms) but prompt decodes of 118 against 140 ms, and TTFT p50s 17 % apart, each tool
    within 2.5 % of its server. The throughput at concurrency 2 gets 10 %: 1 / the
    server's total time leaves out its time outside llama.cpp's generation, which varied from
    2 to 9 % between runs (see expectations)."""
    ours, theirs = inferperf_chat_stream[(kind, value)], aiperf_levels[(kind, value)]
    quiet = ours.load.quiet and theirs.load.quiet
    evidence = (
        f"inferperf {ours.folder}: {ours.text()}\n"
        f"aiperf    {theirs.folder}: {theirs.text()}"
    )
    mine = {(t, s): (e, robust) for t, s, e, _, robust in expectations(ours, kind, value)}
    yours = {(t, s): e for t, s, e, _, _ in expectations(theirs, kind, value)}
    failures, lines = [], []
    for tag, stat in (
        ("request_throughput", "avg"),
        ("time_to_first_token", "p50"),
        ("inter_token_latency", "p50"),
    ):
        a, b = figure(ours, tag, stat), figure(theirs, tag, stat)
        line = f"{tag} {stat}: inferperf {a:.2f}, AIPerf {b:.2f} ({(a - b) / b:+.1%})"
        expected, robust = mine[(tag, stat)]
        ra, rb = a / expected, b / yours[(tag, stat)]
        line += f"; against the server: inferperf x{ra:.3f}, AIPerf x{rb:.3f}"
        speeds = expected / yours[(tag, stat)]
        same_server = abs(speeds - 1.0) <= SAME_SERVER_SPEED
        if not same_server:
            line += f" (raw not compared: the server's log gives x{speeds:.2f} AIPerf's run's figure)"
        lines.append(line)
        if not (robust or quiet):
            continue
        tolerance = 2 * PEER_TOLERANCE if (tag, kind) == ("request_throughput", "concurrency") else PEER_TOLERANCE
        if abs(ra - 1.0) > abs(rb - 1.0) + tolerance:
            failures.append(line)
        if quiet and same_server and abs(a - b) / b > RAW_PEER_TOLERANCE:
            failures.append(line + " (raw)")
    note(f"side by side {level_id(kind, value)}: " + "; ".join(lines))
    assert not failures, "\n".join(failures) + "\n" + evidence
    skip_unjudged({f"inferperf at {level_id(kind, value)}": ours, f"AIPerf at {level_id(kind, value)}": theirs})


@pytest.mark.parametrize(
    "endpoint,streaming",
    [("chat", False), ("completions", True), ("completions", False)],
    ids=["chat-plain", "completions-stream", "completions-plain"],
)
def test_inferperf_profiles_llama(llama, inferperf_bin, endpoint, streaming):
    """The other three ways, with inferperf's synthetic prompts (16 words each)."""
    levels = {}
    for kind, value in LEVELS:
        level = profile(llama, endpoint, streaming, kind, value)
        levels[(kind, value)] = level
        note(f"inferperf {endpoint} {'stream' if streaming else 'plain'} {level_id(kind, value)}: "
             f"{level.text()}")

    def check(kind, value, level):
        assert_tokens(level, streaming)
        for export_file in ("profile_export_genai_perf.csv", "profile_export_genai_perf.json"):
            assert (level.folder / export_file).is_file(), f"{level.folder} has no {export_file}"
        assert_request_log(level, streaming)
        assert_agrees_with_server(level, kind, value, streaming)

    each_level(levels, check)
    skip_unjudged(levels)

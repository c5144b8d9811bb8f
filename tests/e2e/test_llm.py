"""inferperf's OpenAI mode against llama-cpp-python's server (a random-weight llama written by
the fixture), checked against the server's own timing log and side by side with AIPerf 0.13.

The server decodes one request at a time and every request gets exactly 16 output tokens,
each in its own event. What is true, and so what is checked:
- Output tokens: 16 per request (the server's usage says 16 for every non-streamed answer:
  the fixture checks it, and the model cannot end a text early), so every level's Output
  Sequence Length is 16 for every request, min = max = 16.
- TTFT at concurrency 1 = the server's prompt decode (llama.cpp's "prompt eval time") plus
  what surrounds it on both sides (HTTP, the chat template, the first token's sampling and
  event): within 10 % of the server's median prompt decode.
- ITL (AIPerf's definition: (latency - TTFT) / (tokens - 1), per request) = the server's
  per-token decode ("eval time" / runs) plus per-token sampling and sending: within 10 % of the
  server's median at every level (a level's requests are decoded one by one, so concurrency
  does not change it).
- Side by side with AIPerf at the same settings (streaming chat, the same prompts file, the
  same levels), request throughput, TTFT p50 and ITL p50 within 5 %.

Each level is its own inferperf run, so that the server's log lines between two marks are that
level's requests. The AIPerf runs (7-10 s of fixed cost each) are two: concurrency 2 and the
request rate, in one module-scoped fixture.
"""

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_lib import ARTIFACTS, INFERPERF, SERVERS, VENVS, note, run_tool
from llm_lib import ServerTruth, read_export, run_aiperf, write_prompts

ENDPOINTS = {"chat": "v1/chat/completions", "completions": "v1/completions"}
OUTPUT_TOKENS = 16
# Requests per window: inferperf measures 3 windows per level.
WINDOW_REQUESTS = 8
# About 60 % of the server's capacity here (a request takes about 0.2 s).
RATE = 3
LEVELS = (("concurrency", 1), ("concurrency", 2), ("request_rate", RATE))
AIPERF_LEVELS = (("concurrency", 2), ("request_rate", RATE))
AIPERF_REQUESTS = 24
SERVER_TOLERANCE = 0.10
PEER_TOLERANCE = 0.05


def level_id(kind, value):
    return f"{kind}{value}"


@pytest.fixture(scope="module")
def prompts():
    return write_prompts(ARTIFACTS / "llm-prompts.jsonl")


@pytest.fixture(scope="module")
def tokenizer():
    """The byte-level tokenizer AIPerf counts with (the model's vocabulary, one token per byte)."""
    folder = ARTIFACTS / "llm-tokenizer"
    subprocess.run(
        [VENVS / "aiperf" / "bin" / "python", SERVERS / "llama_model.py", "tokenizer", folder],
        check=True,
        timeout=120,
    )
    return folder


class Level:
    """One profiled level: the tool's run, its export, and the server's truth for its requests."""

    def __init__(self, run, export, truth, folder):
        self.run = run
        self.export = export
        self.truth = truth
        self.folder = folder


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
    run = run_tool(args, name, timeout=300)
    truth = ServerTruth.of(llama.timings(mark))
    assert run.returncode in (0, 2), run.show()
    folder = level_folder(artifact_dir, llama.model, endpoint, kind, value)
    return Level(run, read_export(folder), truth, folder)


def level_folder(artifact_dir, model, endpoint, kind, value):
    """DIR/<model>-openai-<chat|completions>-concurrency<C> (or -request_rate<R>, the rate
    written as GenAI-Perf writes it, 3 or 3.0)."""
    prefix = f"{model}-openai-{endpoint}-{kind}"
    found = [p for p in Path(artifact_dir).glob(f"{prefix}*") if _number(p.name[len(prefix):]) == value]
    assert len(found) == 1, (
        f"no single level folder {prefix}{value} in {artifact_dir}: "
        f"{sorted(p.name for p in Path(artifact_dir).iterdir()) if Path(artifact_dir).is_dir() else 'no such directory'}"
    )
    return found[0]


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None


@pytest.fixture(scope="module")
def aiperf_levels(llama, tokenizer, prompts):
    """AIPerf, streaming chat with the prompts file, at concurrency 2 and at the request rate."""
    levels = {}
    for kind, value in AIPERF_LEVELS:
        mark = llama.mark()
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
        )
        levels[(kind, value)] = Level(run, export, ServerTruth.of(llama.timings(mark)), export.folder)
        note(f"aiperf  chat stream {level_id(kind, value)}: {export.summary()}; "
             f"{levels[(kind, value)].truth.text()}; {run.seconds:.1f} s")
    return levels


@pytest.fixture(scope="module")
def inferperf_chat_stream(llama, inferperf_bin, prompts, aiperf_levels):
    """inferperf, streaming chat with the same prompts file as AIPerf, at every level (run
    right after AIPerf's runs, so that both see the server in the same state)."""
    levels = {}
    for kind, value in LEVELS:
        level = profile(llama, "chat", True, kind, value, prompts=prompts)
        levels[(kind, value)] = level
        note(f"inferperf chat stream {level_id(kind, value)}: {level.export.summary()}; "
             f"{level.truth.text()}; {level.run.seconds:.1f} s")
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


def assert_close(what, measured, truth, tolerance, evidence):
    assert math.isfinite(measured) and math.isfinite(truth), f"{what}: {measured} vs {truth}"
    error = abs(measured - truth) / truth
    assert error <= tolerance, (
        f"{what}: {measured:.3f} vs {truth:.3f} ({error:.1%} apart, more than {tolerance:.0%})\n"
        f"{evidence}"
    )


def assert_agrees_with_server(level, kind, value, streaming=True, itl_tolerance=SERVER_TOLERANCE):
    """The level's figures against llama.cpp's own timing lines of the same requests. The
    server decodes one request at a time, so:
    - ITL = its per-token decode at every level;
    - concurrency 1: TTFT = its prompt decode;
    - concurrency 2: a request waits for the whole other request, so TTFT = its total time +
      the prompt decode, and the server never idles: throughput = 1 / its total time;
    - request rate R below its capacity: throughput = R."""
    export, truth = level.export, level.truth
    evidence = f"{level.folder}: {export.summary()}\n{truth.text()}"
    # A prompt sent twice in a row is served from the server's prompt cache: no prompt
    # decode, a shorter request, a higher throughput than the load it stands for.
    assert truth.cached == 0, (
        f"{truth.cached} of the {truth.requests} requests repeated the previous request's "
        f"prompt, which the server then took whole from its cache\n{evidence}"
    )
    if streaming:
        assert_close(
            f"ITL p50 at {level_id(kind, value)}",
            export.get("inter_token_latency", "p50"),
            truth.ms_per_token_p50,
            itl_tolerance,
            evidence,
        )
    if kind == "concurrency":
        if streaming:
            assert truth.prompt_timed >= WINDOW_REQUESTS, evidence
            waited = truth.total_ms_p50 if value == 2 else 0.0
            assert_close(
                f"TTFT p50 at {level_id(kind, value)}",
                export.get("time_to_first_token", "p50"),
                waited + truth.prompt_ms_p50,
                SERVER_TOLERANCE,
                evidence,
            )
        if value == 2:
            assert_close(
                "request throughput at concurrency 2",
                export.get("request_throughput"),
                1000.0 / truth.total_ms_p50,
                SERVER_TOLERANCE,
                evidence,
            )
    else:
        assert_close(
            f"request throughput at {level_id(kind, value)}",
            export.get("request_throughput"),
            value,
            PEER_TOLERANCE,
            evidence,
        )


def test_llama_server_generates_exactly_16_tokens(llama):
    """The fixture's own check (usage and events), and the timing lines parse."""
    mark = llama.mark()
    assert llama.check()
    timings = llama.timings(mark)
    assert len(timings) == 4, timings
    assert all(t.eval_runs in (15, 16) for t in timings), timings


def test_aiperf_against_the_server(aiperf_levels):
    """AIPerf's own figures, read with the same reader, against the server's log: the check
    that the truth the inferperf tests use is one a second tool also meets."""
    for (kind, value), level in aiperf_levels.items():
        assert_tokens(level, streaming=True)
        assert_agrees_with_server(level, kind, value)


def test_inferperf_chat_stream_against_the_server(inferperf_chat_stream):
    for (kind, value), level in inferperf_chat_stream.items():
        assert_tokens(level, streaming=True)
        assert_agrees_with_server(level, kind, value)


@pytest.mark.parametrize("kind,value", AIPERF_LEVELS, ids=[level_id(*l) for l in AIPERF_LEVELS])
def test_side_by_side_with_aiperf(inferperf_chat_stream, aiperf_levels, kind, value):
    ours, theirs = inferperf_chat_stream[(kind, value)], aiperf_levels[(kind, value)]
    evidence = (
        f"inferperf {ours.folder}: {ours.export.summary()}; {ours.truth.text()}\n"
        f"aiperf    {theirs.folder}: {theirs.export.summary()}; {theirs.truth.text()}"
    )
    for tag, stat in (
        ("request_throughput", "avg"),
        ("time_to_first_token", "p50"),
        ("inter_token_latency", "p50"),
    ):
        assert_close(
            f"{tag} {stat} at {level_id(kind, value)}, inferperf vs AIPerf",
            ours.export.get(tag, stat),
            theirs.export.get(tag, stat),
            PEER_TOLERANCE,
            evidence,
        )


@pytest.mark.parametrize(
    "endpoint,streaming",
    [("chat", False), ("completions", True), ("completions", False)],
    ids=["chat-plain", "completions-stream", "completions-plain"],
)
def test_inferperf_profiles_llama(llama, inferperf_bin, endpoint, streaming):
    """The other three ways, with inferperf's synthetic prompts (16 words each)."""
    for kind, value in LEVELS:
        level = profile(llama, endpoint, streaming, kind, value)
        note(f"inferperf {endpoint} {'stream' if streaming else 'plain'} {level_id(kind, value)}: "
             f"{level.export.summary()}; {level.truth.text()}; {level.run.seconds:.1f} s")
        assert_tokens(level, streaming)
        assert_agrees_with_server(level, kind, value, streaming)
        for export_file in ("profile_export_genai_perf.csv", "profile_export_genai_perf.json", "profile_export.json"):
            assert (level.folder / export_file).is_file(), f"{level.folder} has no {export_file}"
        with open(level.folder / "profile_export.json") as handle:
            assert json.load(handle), f"{level.folder}/profile_export.json is empty"

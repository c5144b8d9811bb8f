"""Token counts you can trust (issue 32): inferperf's input and output lengths against the
prompt llama.cpp itself evaluated, and side by side with AIPerf making its own prompts.

The server is llama-cpp-python with the random-weight byte-vocabulary model of
servers/llama_model.py; its tokenizer, written for the tools, counts every text as llama.cpp
does (a space is the piece "▁", every other byte one token). What is true, and so what is
checked:
- The chat template adds a fixed number of tokens to every prompt ("user: " before the
  content, "\\nassistant: " after it, the BOS): T, measured from the server before the runs
  (the_chat_template). llama.cpp logs, per request, the prompt it evaluated: the prefix it
  reused from the previous request's cache plus the rest ("prefix-match hit", "remaining"),
  or the prompt decode's tokens when it reused nothing (LlamaTiming.prompt_evaluated).
- Synthetic prompts of N tokens, counted with `--tokenizer <the folder>` and with no
  --tokenizer (counted through llama-cpp-python's POST /extras/tokenize, less the BOS of an
  empty text): the input length inferperf reports is N for every request (min = max = N),
  every request llama.cpp served evaluated N + T tokens, and the server's own count of each
  request's content (read from perf_analyzer's profile_export.json) is N.
- Side by side with AIPerf, each making its own prompts from the same command line
  (synthetic, 32 tokens, 16 output tokens, concurrency 1): the same input and output
  lengths, and llama.cpp evaluated 32 + T tokens for AIPerf's requests too; TTFT p50 and
  request throughput within 10 %, each against llama.cpp's timing of that tool's own requests
  (see test_side_by_side_own_prompts).

One llama server for the module, 12 requests per run at concurrency 1 (a request is 0.15-0.3
s): about a minute for the module, most of it AIPerf's start-up.
"""

import json
import math
import shutil
from pathlib import Path

import pytest

from e2e_lib import ARTIFACTS, INFERPERF, note, post_json, run_tool
from llm_lib import ForeignLoad, ServerTruth, level_folder, read_export, run_aiperf

REQUESTS = 12
OUTPUT_TOKENS = 16
LENGTHS = (32, 200)
# Counting sources: --tokenizer with the test's tokenizer folder, or none (the server's
# tokenize endpoint).
SOURCES = ("tokenizer", "server")
# TTFT p50 and request throughput of the two tools, each against the server's log of its
# own run: at most this far apart; raw, only when the server ran both at the same speed.
PEER_TOLERANCE = 0.10
# Raw, as test_llm's side by side: at a TTFT of 55 ms, 10 % is 5.5 ms, within what the two
# clients' own overheads vary. A CI run saw TTFT p50 52.6 ms for inferperf and 59.4 ms for
# AIPerf (-11.3 %) with the server's prompt decodes 50.4 and 52.8 ms: inferperf's first
# token 2.2 ms after the decode, AIPerf's 6.5 ms; against the server 0.068 apart (within 10 %).
RAW_PEER_TOLERANCE = 0.15
SAME_SERVER_SPEED = 0.10
SIDE_BY_SIDE_TOKENS = 32


def server_tokens(llama, text):
    """llama-cpp-python's count of `text` (POST /extras/tokenize: the BOS included)."""
    answer = post_json(f"http://{llama.address}/extras/tokenize", {"input": text}, timeout=30)
    return len(answer["tokens"])


def server_count(llama, text):
    """The server's count of a text's own tokens: its tokenize count less an empty text's."""
    return server_tokens(llama, text) - server_tokens(llama, "")


def chat_evaluated(llama, content):
    """The prompt llama.cpp evaluated for one chat request with `content` (max_tokens 1)."""
    mark = llama.mark()
    body = {
        "model": llama.model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 1,
    }
    post_json(f"http://{llama.address}/v1/chat/completions", body, timeout=60)
    (timing,) = llama.timings_until(mark, 1)
    return timing.prompt_evaluated


@pytest.fixture(scope="module")
def template(llama):
    """T, the chat template's tokens: what llama.cpp evaluates for a chat request beyond its
    content, for an empty content and for contents of known length (as the server counts
    them), one after the other (so with and without a reused prefix); the same for all."""
    contents = ("", "ka lo mi 42", "zulo 7 vi", "ka lo mi 42 and more, é!")
    found = []
    for content in contents:
        evaluated = chat_evaluated(llama, content)
        counted = server_count(llama, content)
        found.append((content, evaluated, counted, evaluated - counted))
    lines = "; ".join(f"{c!r}: evaluated {e}, content {n}, template {t}" for c, e, n, t in found)
    note(f"chat template: {lines}")
    templates = {t for *_, t in found}
    assert len(templates) == 1, f"the chat template's tokens vary: {lines}"
    # The server's count of a content is the tokenizer's: one token per UTF-8 byte (a space
    # is the piece "▁", one token too).
    for content, _, counted, _ in found:
        assert counted == len(content.encode()), (content, counted)
    return templates.pop()


class Run:
    """One inferperf or AIPerf run: its process, its export, the server's log of its
    requests and how busy the rest of the machine was meanwhile."""

    def __init__(self, tool, run, export, document, truth, folder, load):
        self.tool = tool
        self.run = run
        self.export = export
        self.document = document  # profile_export_aiperf.json, whole
        self.truth = truth
        self.folder = folder
        self.load = load

    def stat(self, tag, stat="avg"):
        return self.export.get(tag, stat)

    def text(self):
        return (
            f"{self.tool}: ISL {self.length('input_sequence_length')}, OSL "
            f"{self.length('output_sequence_length')}, {self.export.summary()}; "
            f"{self.truth.text()}; {self.load.text()}; {self.run.seconds:.1f} s"
        )

    def length(self, tag):
        metric = self.export.metrics.get(tag)
        if metric is None:
            return "none"
        return f"avg {metric['avg']:g} min {metric['min']:g} max {metric['max']:g}"


def profile(llama, name, tokens, tokenizer=None, streaming=True, extra=()):
    """inferperf, chat at concurrency 1 (streamed unless told), REQUESTS requests of synthetic
    prompts of `tokens` tokens and OUTPUT_TOKENS output tokens; counted with `tokenizer` when
    given."""
    artifact_dir = ARTIFACTS / name
    shutil.rmtree(artifact_dir, ignore_errors=True)
    args = [
        INFERPERF,
        "-m", llama.model,
        "-u", llama.address,
        "--service-kind", "openai",
        "--endpoint", "v1/chat/completions",
        "--concurrency-range", 1,
        "--request-count", REQUESTS,
        "--synthetic-input-tokens-mean", tokens,
        "--synthetic-input-tokens-stddev", 0,
        # Each prompt once: a repeated prompt is served from the server's cache.
        "--num-prompts", REQUESTS,
        "--output-tokens-mean", OUTPUT_TOKENS,
        "--output-tokens-mean-deterministic",
        "--artifact-dir", artifact_dir,
    ]
    if tokenizer is not None:
        args += ["--tokenizer", tokenizer]
    if streaming:
        args.append("--streaming")
    args += list(extra)
    mark = llama.mark()
    with ForeignLoad(llama.pid) as load:
        run = run_tool(args, name, timeout=300)
        load.tool(run)
    timings = llama.timings_until(mark, REQUESTS + 1, keep=ARTIFACTS / f"{name}.server.log")
    assert run.returncode in (0, 2), run.show()
    folder = level_folder(artifact_dir, llama.model, "chat", "concurrency", 1)
    document = json.loads((folder / "profile_export_aiperf.json").read_text())
    profiled, checks = split_checks(timings)
    # Before the run inferperf checks the model with one chat request ("Hello", max_tokens 1).
    assert len(checks) <= 1, f"{name}: {len(checks)} short requests besides the run's: {checks}"
    return Run("inferperf", run, read_export(folder), document, ServerTruth.of(profiled), folder, load)


def split_checks(timings):
    """The run's requests (OUTPUT_TOKENS tokens each: OUTPUT_TOKENS - 1 decodes after the
    prompt's) apart from shorter ones (a tool's check of the model before its run)."""
    profiled = [t for t in timings if t.eval_runs >= OUTPUT_TOKENS - 1]
    return profiled, [t for t in timings if t.eval_runs < OUTPUT_TOKENS - 1]


@pytest.fixture(scope="module")
def runs(llama, inferperf_bin, tokenizer):
    """inferperf's runs by (counting source, prompt length), made when first asked for."""
    made = {}

    def get(source, tokens, streaming=True):
        key = (source, tokens, streaming)
        if key not in made:
            name = f"llm-tokens-{source}-{tokens}" + ("" if streaming else "-plain")
            run = profile(llama, name, tokens, tokenizer if source == "tokenizer" else None, streaming)
            note(f"inferperf {source}-counted {tokens}{'' if streaming else ' plain'}: {run.text()}")
            made[key] = run
        return made[key]

    return get


def exported_requests(run):
    """perf_analyzer's profile_export.json of the level: (content, input_tokens,
    output_tokens) per request, in the order they were sent."""
    document = json.loads((run.folder / "profile_export.json").read_text())
    requests = [r for experiment in document["experiments"] for r in experiment["requests"]]
    requests.sort(key=lambda r: r["timestamp"])
    out = []
    for request in requests:
        payload = request["request_inputs"]["payload"]
        body = json.loads(payload) if isinstance(payload, str) else payload
        out.append((body["messages"][-1]["content"], request.get("input_tokens"), request.get("output_tokens")))
    return out


def assert_lengths(run, tokens):
    """Every request had `tokens` input tokens and OUTPUT_TOKENS output tokens, as the tool
    reports them."""
    for tag, want in (("input_sequence_length", tokens), ("output_sequence_length", OUTPUT_TOKENS)):
        metric = run.export.metrics.get(tag)
        assert metric is not None, f"{run.folder}: no {tag}; {sorted(run.export.metrics)}"
        assert metric["min"] == metric["max"] == metric["avg"] == want, f"{run.folder}: {tag} {metric}"
    assert run.stat("request_count") == REQUESTS, f"{run.folder}: {run.stat('request_count')} requests"


def evaluated_table(run, template, exported=None):
    """Per request of the run: (evaluated by llama.cpp, reused prefix, evaluated - T, the
    tool's input tokens)."""
    rows = []
    for i, timing in enumerate(run.truth.timings):
        isl = exported[i][1] if exported and i < len(exported) else None
        rows.append((timing.prompt_evaluated, timing.prefix_hit, timing.prompt_evaluated - template, isl))
    return rows


def table_text(rows):
    return "evaluated (reused) - template = content [ISL]: " + ", ".join(
        f"{e} ({h}) {c}" + (f" [{i}]" if i is not None else "") for e, h, c, i in rows
    )


@pytest.fixture(scope="module")
def aiperf_run(llama, tokenizer, template):
    """AIPerf making its own prompts: the command line of the side-by-side test."""
    mark = llama.mark()
    with ForeignLoad(llama.pid) as load:
        run, export = run_aiperf(
            f"tokens-chat-stream-synthetic{SIDE_BY_SIDE_TOKENS}",
            url=llama.address,
            model=llama.model,
            tokenizer=tokenizer,
            endpoint_type="chat",
            streaming=True,
            request_count=REQUESTS,
            concurrency=1,
            input_tokens=SIDE_BY_SIDE_TOKENS,
            output_tokens=OUTPUT_TOKENS,
            # The request bodies inferperf sends with --output-tokens-mean-deterministic.
            extra_inputs={"ignore_eos": True, "min_tokens": OUTPUT_TOKENS},
        )
        load.tool(run)
    timings = llama.timings_until(mark, REQUESTS, keep=export.folder.parent / f"{export.folder.name}.server.log")
    timings, checks = split_checks(timings)
    assert not checks, f"AIPerf sent {len(checks)} short requests besides its run's: {checks}"
    document = json.loads((export.folder / "profile_export_aiperf.json").read_text())
    result = Run("aiperf", run, export, document, ServerTruth.of(timings), export.folder, load)
    note(f"aiperf synthetic {SIDE_BY_SIDE_TOKENS}: {result.text()}")
    return result


def expected(run):
    """What the server's log of a run's own requests says its TTFT p50 and request
    throughput must be at concurrency 1 (test_llm.expectations): the first token one served
    token after the prompt decode; one request after the other, so 1 / the request's time."""
    truth = run.truth
    return {
        ("time_to_first_token", "p50"): truth.prompt_ms_p50 + truth.ms_per_token_served_p50,
        ("request_throughput", "avg"): 1000.0 / truth.total_ms_p50,
    }


def test_side_by_side_own_prompts(llama, template, aiperf_run, runs):
    """AIPerf and inferperf, each with its own synthetic prompts of 32 tokens from the same
    command line, the same tokenizer: the same ISL and OSL, and llama.cpp evaluated 32 + T
    tokens for every request of both; TTFT p50 and request throughput within 10 %.

    Timing is judged as test_llm's side-by-side judges it: the two runs come one after the
    other, and on 2 cores the server's speed changes from run to run, so each tool's figure
    is taken against what the server's log of that tool's own requests says it must be, and
    those ratios must be within 10 % of each other; the raw figures must be within 15 % only
    when the machine was quiet and the server's log gives both runs the same figure within
    10 % (its time per served token is shown beside them). Timing is not judged on a busy machine (skipped after the
    other checks, saying so)."""
    ours = runs("tokenizer", SIDE_BY_SIDE_TOKENS)
    theirs = aiperf_run
    failures, lines = [], []
    for run in (ours, theirs):
        try:
            assert_lengths(run, SIDE_BY_SIDE_TOKENS)
        except AssertionError as error:
            failures.append(f"{run.tool}: {error}")
        rows = evaluated_table(run, template)
        lines.append(f"{run.tool} {table_text(rows)}")
        if len(rows) != REQUESTS:
            failures.append(f"{run.tool}: the server served {len(rows)} chat requests, not {REQUESTS}")
        wrong = [(i, r[0], r[2]) for i, r in enumerate(rows) if r[2] != SIDE_BY_SIDE_TOKENS]
        if wrong:
            failures.append(
                f"{run.tool}: requests whose evaluated prompt less the template ({template}) is "
                f"not {SIDE_BY_SIDE_TOKENS} (index, evaluated, content): {wrong}"
            )
        if run.truth.cached:
            failures.append(f"{run.tool}: {run.truth.cached} prompts served whole from the cache")
    for tag in ("input_sequence_length", "output_sequence_length"):
        a, b = ours.stat(tag), theirs.stat(tag)
        lines.append(f"{tag} avg: inferperf {a:g}, AIPerf {b:g}")
        if a != b:
            failures.append(f"{tag}: inferperf {a:g}, AIPerf {b:g}")

    quiet = ours.load.quiet and theirs.load.quiet
    speeds = ours.truth.ms_per_token_served_p50 / theirs.truth.ms_per_token_served_p50
    mine, yours = expected(ours), expected(theirs)
    for (tag, stat), want in mine.items():
        a, b = ours.stat(tag, stat), theirs.stat(tag, stat)
        ra, rb = a / want, b / yours[(tag, stat)]
        raw = (a - b) / b
        line = (
            f"{tag} {stat}: inferperf {a:.2f}, AIPerf {b:.2f} ({raw:+.1%}); against the server: "
            f"inferperf x{ra:.3f} (of {want:.2f}), AIPerf x{rb:.3f} (of {yours[(tag, stat)]:.2f})"
        )
        lines.append(line)
        if not all(math.isfinite(x) for x in (a, b, ra, rb)):
            failures.append(line + " (not finite)")
            continue
        if not quiet:
            continue
        if abs(ra - rb) > PEER_TOLERANCE:
            failures.append(line)
        if abs(want / yours[(tag, stat)] - 1.0) > SAME_SERVER_SPEED:
            lines[-1] += " (raw not compared: the server's log differs)"
        elif abs(raw) > RAW_PEER_TOLERANCE:
            failures.append(line + " (raw)")
    lines.append(
        f"server time per served token: inferperf's run {ours.truth.ms_per_token_served_p50:.2f} ms, "
        f"AIPerf's {theirs.truth.ms_per_token_served_p50:.2f} ms (x{speeds:.2f}"
        f"); {ours.load.text()} during inferperf's run, {theirs.load.text()} during AIPerf's"
    )
    note("side by side, own prompts: " + "; ".join(lines))
    evidence = f"\n{ours.text()}\n{theirs.text()}"
    assert not failures, "\n".join(failures) + evidence
    if not quiet:
        pytest.skip(
            f"TTFT and throughput not judged, the machine was busy (inferperf: {ours.load.text()}; "
            f"AIPerf: {theirs.load.text()}); the rest passed"
        )


@pytest.mark.parametrize("tokens", LENGTHS)
@pytest.mark.parametrize("source", SOURCES)
def test_isl_is_what_llama_evaluated(llama, runs, tokenizer, template, source, tokens):
    """Synthetic prompts of `tokens` tokens: the input length inferperf reports, request by
    request, is the prompt llama.cpp evaluated less the chat template."""
    run = runs(source, tokens)
    said = [line for line in run.run.stdout.splitlines() if line.startswith("Tokens counted with")]
    assert len(said) == 1, f"no single 'Tokens counted with' line:\n{run.run.show()}"
    if source == "tokenizer":
        assert str(tokenizer) in said[0] or "tokenizer" in said[0], said
        assert "tokenize endpoint" not in said[0], said
    else:
        assert "tokenize endpoint" in said[0] and "/extras/tokenize" in said[0], said
    config = run.document.get("input_config", {}).get("tokenizer")
    assert isinstance(config, dict), f"{run.folder}: input_config.tokenizer is {config!r}"
    if source == "tokenizer":
        assert config.get("name") == str(tokenizer), config
    else:
        assert config.get("name") is None and "tokenize" in (config.get("counted_with") or ""), config

    exported = exported_requests(run)
    rows = evaluated_table(run, template, exported)
    server_counts = [server_count(llama, content) for content, _, _ in exported]
    note(
        f"{source}-counted {tokens}: ISL {run.length('input_sequence_length')}; template {template}; "
        f"{table_text(rows)}; the server's count of each content: {server_counts}"
    )
    failures = []
    try:
        assert_lengths(run, tokens)
    except AssertionError as error:
        failures.append(str(error))
    if len(exported) != REQUESTS:
        failures.append(f"profile_export.json lists {len(exported)} requests, not {REQUESTS}")
    if len(rows) != len(exported):
        failures.append(f"the server served {len(rows)} chat requests, the export lists {len(exported)}")
    wrong = [(i, r) for i, r in enumerate(rows) if r[2] != tokens or (r[3] is not None and r[3] != r[2])]
    if wrong:
        failures.append(f"requests whose evaluated prompt less the template is not {tokens} or not their ISL: {wrong}")
    miscounted = [(i, c, exported[i][1]) for i, c in enumerate(server_counts) if c != exported[i][1]]
    if miscounted:
        failures.append(f"contents the server counts otherwise than inferperf (index, server, inferperf): {miscounted}")
    assert not failures, "\n".join(failures) + f"\n{run.text()}\n{table_text(rows)}"


def test_usage_prompt_tokens_is_isl_plus_template(runs, template):
    """Not streamed, llama-cpp-python sends usage: its prompt_tokens is the whole evaluated
    prompt, so inferperf's usage_prompt_tokens is ISL + T for every request, the difference
    row says T / ISL, and the output lengths by usage and by the tokenizer agree (16)."""
    tokens = SIDE_BY_SIDE_TOKENS
    run = runs("tokenizer", tokens, streaming=False)
    rows = evaluated_table(run, template, exported_requests(run))
    metrics = run.export.metrics
    shown = {
        tag: {k: metrics[tag].get(k) for k in ("avg", "min", "max")} if tag in metrics else None
        for tag in (
            "usage_prompt_tokens",
            "usage_prompt_tokens_diff_pct",
            "usage_completion_tokens_diff_pct",
            "osl_mismatch_diff_pct",
        )
    }
    note(f"plain {tokens}: {shown}; {table_text(rows)}")
    failures = []
    try:
        assert_lengths(run, tokens)
    except AssertionError as error:
        failures.append(str(error))
    wrong = [(i, r) for i, r in enumerate(rows) if r[2] != tokens]
    if wrong:
        failures.append(f"requests whose evaluated prompt less the template is not {tokens}: {wrong}")
    expected = {
        "usage_prompt_tokens": tokens + template,
        "usage_prompt_tokens_diff_pct": 100.0 * template / tokens,
        "usage_completion_tokens_diff_pct": 0.0,
        "osl_mismatch_diff_pct": 0.0,
    }
    for tag, want in expected.items():
        got = shown[tag]
        if got is None:
            failures.append(f"no {tag} in {run.folder}/profile_export_aiperf.json")
        elif not all(v is not None and abs(v - want) <= 1e-6 * max(1.0, abs(want)) for v in got.values()):
            failures.append(f"{tag}: {got}, not {want:g} for every request")
    assert not failures, "\n".join(failures) + f"\n{run.text()}"


def test_apply_chat_template_counts_what_llama_evaluated(llama, tokenizer, template):
    """--apply-chat-template with the model's own template (written into the tokenizer's
    tokenizer_config.json, as a model's folder has it): inferperf's input length is the
    rendered prompt the server evaluated, request by request (less the BOS llama.cpp puts
    first, which the template does not write), and as long as asked: the template's tokens
    were taken from each synthetic prompt."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "servers"))
    from llama_model import CHAT_TEMPLATE

    folder = ARTIFACTS / "llm-tokenizer-templated"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(tokenizer, folder)
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config["chat_template"] = CHAT_TEMPLATE
    config_file.write_text(json.dumps(config))
    tokens = 64
    run = profile(llama, "llm-tokens-chat-template", tokens, folder, extra=["--apply-chat-template"])
    exported = exported_requests(run)
    rows = evaluated_table(run, template, exported)
    note(f"--apply-chat-template {tokens}: ISL {run.length('input_sequence_length')}; template {template}; {table_text(rows)}")
    # The template around one user message, one token per byte: "user: ", "\n", "assistant: ".
    wrapped = len("user: \nassistant: ".encode())
    bos = template - wrapped
    assert bos in (0, 1), f"the server's template tokens {template}, the rendered wrapping {wrapped}"
    assert len(rows) == len(exported) == REQUESTS, table_text(rows)
    wrong = [(i, r) for i, r in enumerate(rows) if r[0] - bos != r[3] or r[3] != tokens]
    assert not wrong, f"requests whose evaluated prompt (less BOS {bos}) is not their ISL {tokens}: {wrong}"

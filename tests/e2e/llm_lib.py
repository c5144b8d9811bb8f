"""Helpers of the LLM tests: llama.cpp's per-request timing lines, the prompts file, running
AIPerf, and reading an AIPerf-layout export (profile_export_aiperf.json and .csv), which
AIPerf writes and inferperf writes too, so one reader serves both tools."""

import csv
import dataclasses
import json
import os
import random
import re
import shutil
import statistics
import time
from pathlib import Path

from e2e_lib import ARTIFACTS, VENVS, run_tool

AIPERF = VENVS / "aiperf" / "bin" / "aiperf"

# ---------------------------------------------------------------------------------------
# llama.cpp's timing lines

_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
_PREFIX = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
_LOAD = re.compile(r"llama_perf_context_print:\s+load time =")
_PROMPT = re.compile(rf"llama_perf_context_print:\s+prompt eval time =\s+{_NUMBER} ms /\s+(\d+) tokens")
_EVAL = re.compile(rf"llama_perf_context_print:\s+eval time =\s+{_NUMBER} ms /\s+(\d+) runs")
_TOTAL = re.compile(rf"llama_perf_context_print:\s+total time =\s+{_NUMBER} ms /\s+(\d+) tokens")


@dataclasses.dataclass
class LlamaTiming:
    """What llama.cpp printed about one request (llama-cpp-python prints the block after each
    generation; the server runs one generation at a time, so blocks never interleave).

    prompt_ms / prompt_tokens: the prompt's decode (the part not reused from the previous
    request's cache: `prefix_hit` tokens were reused); the first output token is sampled from
    its logits. eval_ms / eval_runs: the one-token decodes after it, one per further output
    token (so the gaps between output tokens). total_ms: from the start of generation to the
    print, sampling included.
    """

    prompt_ms: float = 0.0
    prompt_tokens: int = 0
    eval_ms: float = 0.0
    eval_runs: int = 0
    total_ms: float = 0.0
    total_tokens: int = 0
    prefix_hit: int = 0
    # llama-cpp-python's "remaining R prompt tokens" when it reused a prefix (None when it
    # printed no such line: nothing reused).
    prefix_remaining: int = None

    @property
    def prompt_evaluated(self):
        """The whole prompt llama.cpp ran the model on, chat template included: the reused
        prefix and the rest when a prefix was reused, else the prompt decode's tokens."""
        if self.prefix_remaining is not None:
            return self.prefix_hit + self.prefix_remaining
        return self.prompt_tokens

    @property
    def prompt_timed(self):
        """False when llama.cpp lost the prompt decode's time: after a full reset of its
        cache (no prefix reused) it prints a few hundredths of a millisecond for the whole
        prompt (seen on the first request after start and after a switch of endpoint)."""
        return self.prompt_tokens >= 2 and self.prompt_ms / self.prompt_tokens >= 0.05

    @property
    def ms_per_eval(self):
        return self.eval_ms / self.eval_runs if self.eval_runs else None

    @property
    def ms_per_token_served(self):
        """The server's time between two output tokens, decode + what it does per token
        around it (sampling, detokenizing, the event: llama-cpp-python runs each step of the
        generation in a thread-pool hop), from its own totals. With n = runs + 1 tokens, a
        decode time E per run and a cost s per token: total - prompt = 15 E + 16 s + (a
        little before the prompt), and a client sees the tokens E + s apart; so
        E + s = (total - prompt + E) / n, plus the little before the prompt spread over n."""
        tokens = self.eval_runs + 1
        return (self.total_ms - self.prompt_ms + self.ms_per_eval) / tokens


def parse_llama_timings(text):
    """Every request's timing block in a llama-cpp-python server log, in order."""
    timings, current, prefix, remaining = [], None, 0, None
    for line in text.splitlines():
        if match := _PREFIX.search(line):
            prefix, remaining = int(match.group(1)), int(match.group(2))
        elif _LOAD.search(line):
            current = LlamaTiming(prefix_hit=prefix, prefix_remaining=remaining)
            prefix, remaining = 0, None
        elif current is None:
            continue
        elif match := _PROMPT.search(line):
            current.prompt_ms, current.prompt_tokens = float(match.group(1)), int(match.group(2))
        elif match := _EVAL.search(line):
            current.eval_ms, current.eval_runs = float(match.group(1)), int(match.group(2))
        elif match := _TOTAL.search(line):
            current.total_ms, current.total_tokens = float(match.group(1)), int(match.group(2))
            timings.append(current)
            current = None
    return timings


@dataclasses.dataclass
class ServerTruth:
    """A run's requests as the server timed them (medians over the requests)."""

    timings: list
    requests: int
    prompt_ms_p50: float  # over the requests whose prompt decode was timed
    prompt_timed: int
    ms_per_token_p50: float  # eval_ms / eval_runs: the decode alone
    # The gap between two output tokens as the server spent it: decode + sampling + sending
    # the event (see LlamaTiming.ms_per_token_served).
    ms_per_token_served_p50: float
    total_ms_p50: float
    # Requests whose whole prompt was in the server's cache (the previous request had the
    # same prompt): llama.cpp decoded at most one prompt token for them.
    cached: int

    @classmethod
    def of(cls, timings):
        assert timings, "the server logged no request"
        timed = [t for t in timings if t.prompt_timed]
        evals = [t.ms_per_eval for t in timings if t.eval_runs]
        return cls(
            timings=timings,
            requests=len(timings),
            prompt_ms_p50=statistics.median(t.prompt_ms for t in timed) if timed else float("nan"),
            prompt_timed=len(timed),
            ms_per_token_p50=statistics.median(evals) if evals else float("nan"),
            ms_per_token_served_p50=statistics.median(t.ms_per_token_served for t in timed)
            if timed
            else float("nan"),
            total_ms_p50=statistics.median(t.total_ms for t in timings),
            cached=sum(1 for t in timings if t.prefix_hit > 0 and t.prompt_tokens <= 1),
        )

    def text(self):
        cached = f", {self.cached} prompts whole from the cache" if self.cached else ""
        return (
            f"server: {self.requests} requests, prompt decode p50 {self.prompt_ms_p50:.1f} ms "
            f"({self.prompt_timed} timed{cached}), per token p50 {self.ms_per_token_p50:.2f} ms "
            f"decoding, {self.ms_per_token_served_p50:.2f} ms served, total p50 "
            f"{self.total_ms_p50:.1f} ms"
        )


# ---------------------------------------------------------------------------------------
# other work on the machine

TICK = os.sysconf("SC_CLK_TCK")
# Average cores that processes other than the server and the tool may take during a level
# for its timing to be judged.
FOREIGN_LOAD_LIMIT = 0.25


def machine_busy_seconds():
    """CPU seconds all processes of the machine have spent so far (user, nice, system, irq)."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / TICK


def process_cpu_seconds(pid):
    """CPU seconds of one process (all its threads) so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class ForeignLoad:
    """How much CPU processes other than the server and the tool took during a run, in
    average cores: `with ForeignLoad(server_pid) as load: run = ...; load.tool(run)`."""

    def __init__(self, server_pid):
        self.server_pid = server_pid
        self.cores = None

    def __enter__(self):
        self.started = time.monotonic()
        self.machine = machine_busy_seconds()
        self.server = process_cpu_seconds(self.server_pid)
        self.tool_seconds = 0.0
        return self

    def tool(self, run):
        self.tool_seconds += run.cpu_seconds

    def __exit__(self, *exc):
        wall = time.monotonic() - self.started
        machine = machine_busy_seconds() - self.machine
        server = process_cpu_seconds(self.server_pid) - self.server
        self.cores = max(0.0, machine - server - self.tool_seconds) / max(wall, 1e-9)

    @property
    def quiet(self):
        return self.cores is not None and self.cores <= FOREIGN_LOAD_LIMIT

    def text(self):
        return f"other processes took {self.cores:.2f} cores"


# ---------------------------------------------------------------------------------------
# prompts


def write_prompts(path, count=64, words=16, seed=5):
    """A JSON Lines file of {"text": ...} prompts that both tools read (inferperf's
    --prompt-source file, AIPerf's single_turn custom dataset), so that they send the same
    prompts: pseudo-words of 2-4 syllables, like inferperf's synthetic prompts (a prompt is
    about 110 bytes, so about 110 tokens of the byte vocabulary)."""
    rng = random.Random(seed)
    syllables = "ka lo mi ne ru sa to vi da fe go hu ji po re zu".split()
    vocabulary = ["".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(1000)]
    with open(path, "w") as out:
        for _ in range(count):
            out.write(json.dumps({"text": " ".join(rng.choices(vocabulary, k=words))}) + "\n")
    return path


# ---------------------------------------------------------------------------------------
# AIPerf-layout exports


# The metrics that the LLM tests compare, by tag, with the CSV name AIPerf 0.13 gives them.
CSV_NAMES = {
    "request_throughput": "Request Throughput (requests/sec)",
    "request_latency": "Request Latency (ms)",
    "time_to_first_token": "Time to First Token (ms)",
    "inter_token_latency": "Inter Token Latency (ms)",
    "output_sequence_length": "Output Sequence Length (tokens)",
    "request_count": "Request Count",
}
STATS = ("avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std")


@dataclasses.dataclass
class Export:
    """One artifact directory's profile_export_aiperf.json and .csv.

    metrics: {tag: {"unit": ..., stat: value}} from the JSON (the full precision);
    rows: {CSV name: {stat: value}} from the CSV's first block (metrics with percentiles);
    values: {CSV name: value} from its second block (single values)."""

    folder: Path
    metrics: dict
    rows: dict
    values: dict

    def get(self, tag, stat="avg"):
        try:
            return self.metrics[tag][stat]
        except KeyError:
            raise AssertionError(
                f"{self.folder}/profile_export_aiperf.json has no {stat} of {tag}; it has "
                f"{sorted(self.metrics)}"
            ) from None

    def summary(self, tags=("request_throughput", "time_to_first_token", "inter_token_latency")):
        parts = []
        for tag in tags:
            if tag not in self.metrics:
                continue
            metric = self.metrics[tag]
            stat = "p50" if "p50" in metric else "avg"
            parts.append(f"{tag} {stat} {metric[stat]:.2f} {metric['unit']}")
        return ", ".join(parts)


def read_export(folder):
    """Reads an AIPerf 0.13-layout export and checks that its CSV says what its JSON says:
    the first block (header Metric,avg,...,std) holds exactly the metrics with percentiles,
    the second (Metric,Value) the single-value ones, each row equal to its JSON metric at the
    CSV's two decimals."""
    folder = Path(folder)
    json_path, csv_path = folder / "profile_export_aiperf.json", folder / "profile_export_aiperf.csv"
    assert json_path.is_file() and csv_path.is_file(), (
        f"{folder} lacks profile_export_aiperf.json or .csv; it holds "
        f"{sorted(p.name for p in folder.iterdir()) if folder.is_dir() else 'nothing (no folder)'}"
    )
    document = json.loads(json_path.read_text())
    metrics = {
        tag: value
        for tag, value in document.items()
        if isinstance(value, dict) and "unit" in value and "avg" in value
    }
    blocks, current = [], []
    with open(csv_path, newline="") as handle:
        for row in csv.reader(handle):
            if not row:
                if current:
                    blocks.append(current)
                current = []
            else:
                current.append(row)
    if current:
        blocks.append(current)
    assert len(blocks) == 2, f"{csv_path}: {len(blocks)} blocks, AIPerf writes 2"
    first, second = blocks
    assert first[0] == ["Metric", *STATS], f"{csv_path}: first header {first[0]}"
    assert second[0] == ["Metric", "Value"], f"{csv_path}: second header {second[0]}"
    rows = {
        row[0]: {stat: float(cell) for stat, cell in zip(STATS, row[1:]) if cell != ""}
        for row in first[1:]
    }
    values = {row[0]: float(row[1]) for row in second[1:]}

    with_percentiles = {t for t, m in metrics.items() if "p50" in m}
    assert len(rows) == len(with_percentiles), (
        f"{folder}: {len(rows)} CSV rows with percentiles, {len(with_percentiles)} JSON "
        f"metrics with percentiles"
    )
    assert len(values) == len(metrics) - len(with_percentiles), (
        f"{folder}: {len(values)} single-value CSV rows for "
        f"{len(metrics) - len(with_percentiles)} single-value JSON metrics"
    )
    unmatched = []
    for tag, metric in metrics.items():
        if tag in with_percentiles:
            candidates = [r for r in rows.values() if _same(r.get("avg"), metric["avg"]) and _same(r.get("p50"), metric["p50"])]
        else:
            candidates = [v for v in values.values() if _same(v, metric["avg"])]
        if not candidates:
            unmatched.append(tag)
    assert not unmatched, f"{folder}: JSON metrics without their CSV row: {unmatched}"
    for tag, name in CSV_NAMES.items():
        if tag in metrics:
            assert name in rows or name in values, (
                f"{csv_path}: {tag} is not named {name!r} as AIPerf names it; the rows are "
                f"{sorted(rows) + sorted(values)}"
            )
    return Export(folder=folder, metrics=metrics, rows=rows, values=values)


def _same(csv_value, json_value):
    if csv_value is None or json_value is None:
        return csv_value is None and json_value is None
    return abs(csv_value - json_value) <= 0.006 + 1e-9 * abs(json_value)


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


# ---------------------------------------------------------------------------------------
# AIPerf


def run_aiperf(
    name,
    *,
    url,
    model,
    tokenizer,
    endpoint_type,
    streaming,
    request_count,
    concurrency=None,
    request_rate=None,
    input_file=None,
    dataset_type="single_turn",
    output_tokens=16,
    input_tokens=16,
    extra_inputs=None,
    timeout=300,
):
    """One `aiperf profile` run as real-servers.md says to run it offline, into its own
    artifact folder under target/e2e/aiperf/; returns (ToolRun, Export)."""
    folder = ARTIFACTS / "aiperf" / name
    shutil.rmtree(folder, ignore_errors=True)
    scratch = ARTIFACTS / "aiperf" / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    cmd = [
        AIPERF, "profile",
        "-m", model,
        "--url", f"http://{url}",
        "--endpoint-type", endpoint_type,
        "--tokenizer", tokenizer,
        "--no-gpu-telemetry", "--no-server-metrics",
        "--use-legacy-max-tokens",
        "--ui-type", "none",
        "--artifact-dir", folder,
        "--request-count", request_count,
        "--osl", output_tokens, "--osl-stddev", 0,
        "--random-seed", 1,
    ]
    if streaming:
        cmd.append("--streaming")
    if concurrency is not None:
        cmd += ["--concurrency", concurrency]
    if request_rate is not None:
        # perf_analyzer's and inferperf's default schedule is constant; AIPerf's is Poisson.
        cmd += ["--request-rate", request_rate, "--arrival-pattern", "constant"]
    if extra_inputs:
        cmd += ["--extra-inputs", json.dumps(extra_inputs)]
    if input_file is not None:
        cmd += ["--input-file", input_file, "--custom-dataset-type", dataset_type]
    else:
        cmd += ["--isl", input_tokens, "--isl-stddev", 0]
    # Its memory maps and tokenizer cache stay under target/e2e, not in /tmp or ~/.cache.
    env = dict(os.environ, TMPDIR=str(scratch), HF_HOME=str(ARTIFACTS / "aiperf" / "hf-home"))
    run = run_tool(cmd, f"aiperf-{name}", env=env, timeout=timeout)
    assert run.returncode == 0, run.show()
    return run, read_export(folder)

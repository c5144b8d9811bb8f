"""AIPerf 0.13's documented command lines (fixtures/aiperf_documented_commands.jsonl) made to
run here: what a line is rewritten to so that it points at this machine and runs briefly, the
input files it names, the number of requests AIPerf's rules give it, and how its run ended.

Only what must change is changed, and each change is said (`Line.rewrites`): the shell
variables (the page's values), the server URL (scheme and path kept), the model names (the
served ones), `--tokenizer` (the local tokenizer folder; `builtin` stays), input files (written
by the test; an absolute path becomes one under the line's folder), the URL of a server-metrics
or DCGM page, and caps on counts and times (CAPS). Everything else is as the page wrote it.
"""

import dataclasses
import math
import re
import shlex
from pathlib import Path

from aiperf_inputs import TRACE_TYPES, input_kind, write_input
from e2e_lib import ROOT

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "aiperf_documented_commands.jsonl"
FLAG_TABLE = ROOT / "src" / "cli" / "aiperf_flags.rs"

# The values the pages give their shell variables (comprehensive-llm-benchmarking.md,
# speed-bench.md); the URL and the model are then rewritten like any other.
SHELL_VALUES = {
    "ENDPOINT_URL": "localhost:8000",
    "c": "10",
    "cat": "coding",
    "tier": "low_entropy",
    "ds": "spec_al_gsm8k",
    "count": "1319",
    "MODEL": "meta/llama-3.1-8b-instruct",
    "SPEED_BENCH_DIR": "./datasets/speed-bench",
    "ART": "./artifacts/spec-al",
}

# AIPerf 0.13's aliases (its --help), to its main names.
ALIASES = {
    "model": "model-names", "m": "model-names", "endpoint": "custom-endpoint", "u": "url",
    "transport-type": "transport", "H": "header", "f": "config",
    "num-conversations": "conversation-num", "num-sessions": "conversation-num",
    "num-prompts": "num-dataset-entries",
    "session-turns-mean": "conversation-turn-mean", "session-turns-stddev": "conversation-turn-stddev",
    "session-turn-delay-mean": "conversation-turn-delay-mean",
    "session-turn-delay-stddev": "conversation-turn-delay-stddev",
    "prefix-prompt-pool-size": "prompt-prefix-pool-size", "num-prefix-prompts": "prompt-prefix-pool-size",
    "prefix-prompt-length": "prompt-prefix-length",
    "synthetic-input-tokens-mean": "prompt-input-tokens-mean", "isl": "prompt-input-tokens-mean",
    "synthetic-input-tokens-stddev": "prompt-input-tokens-stddev", "isl-stddev": "prompt-input-tokens-stddev",
    "sequence-distribution": "seq-dist",
    "output-tokens-mean": "prompt-output-tokens-mean", "osl": "prompt-output-tokens-mean",
    "output-tokens-stddev": "prompt-output-tokens-stddev", "osl-stddev": "prompt-output-tokens-stddev",
    "request-rate-mode": "arrival-pattern", "vllm-burstiness": "arrival-smoothness",
    "num-requests": "request-count", "num-warmup-requests": "warmup-request-count",
    "artifact-dir": "output-artifact-dir", "profile-export-file": "profile-export-prefix",
    "ui": "ui-type", "max-workers": "workers-max",
}

# Caps on counts and times (AIPerf's main names): a value above the cap becomes the cap.
CAPS = {
    "request-count": 20,
    "conversation-num": 20,
    "warmup-request-count": 20,
    "num-warmup-sessions": 20,
    "benchmark-duration": 2,
    "warmup-duration": 1,
    "concurrency-ramp-duration": 1,
    "prefill-concurrency-ramp-duration": 1,
    "request-rate-ramp-duration": 1,
    "warmup-concurrency-ramp-duration": 1,
    "warmup-prefill-concurrency-ramp-duration": 1,
    "warmup-request-rate-ramp-duration": 1,
    "conversation-turn-delay-mean": 50,
    "conversation-turn-delay-stddev": 20,
    "profile-run-cooldown-seconds": 0.5,
}

# Flags whose comma lists are sweeps (AIPerf 0.13), and AIPerf's unbounded run.
SWEEPS = (
    "concurrency", "prefill-concurrency", "request-rate", "request-count", "benchmark-duration",
    "conversation-num", "num-users", "prompt-input-tokens-mean", "prompt-input-tokens-stddev",
    "prompt-output-tokens-mean", "prompt-output-tokens-stddev", "conversation-turn-mean",
)
UNBOUNDED_REQUESTS = 10


def main_name(token):
    """AIPerf's main name of a flag token (`--isl` → prompt-input-tokens-mean), or None."""
    if not token.startswith("-") or len(token) < 2 or re.fullmatch(r"-[0-9.]+", token):
        return None
    name = token.lstrip("-").split("=", 1)[0]
    return ALIASES.get(name, name)


def table_flags(taken):
    """Every long name the flag table (src/cli/aiperf_flags.rs) marks `taken` (Refused,
    Differently), with the entry's text."""
    text = FLAG_TABLE.read_text()
    names = {}
    for match in re.finditer(r'flag\(\s*&\[([^\]]*)\],\s*' + taken + r'\(("(?:[^"\\]|\\.)*"|[A-Z_]+)', text):
        for name in re.findall(r'"([^"]+)"', match.group(1)):
            names[name] = match.group(2)
    return names


def refused_flags():
    """Every long name the flag table refuses by name."""
    return set(table_flags("Refused"))


def refused_differently():
    """The flags the table takes differently and whose entry says some of their values are
    refused (several models, AMD SMI, several DCGM pages…)."""
    return {name for name, why in table_flags("Differently").items() if "refused" in why}


@dataclasses.dataclass
class Options:
    """A command line's flags: AIPerf's main name → each occurrence's values."""

    given: dict

    @classmethod
    def of(cls, tokens):
        given, current = {}, None
        for token in tokens:
            name = main_name(token)
            if name is not None:
                current = given.setdefault(name, [])
                current.append([])
            elif current is not None:
                current[-1].append(token)
        return cls(given)

    def has(self, name):
        return name in self.given

    def value(self, name, default=None):
        """The last occurrence's first value."""
        occurrences = self.given.get(name)
        if not occurrences or not occurrences[-1]:
            return default
        return occurrences[-1][0]

    def numbers(self, name):
        """A value as a list of numbers (a comma list is a sweep), or None."""
        value = self.value(name)
        if value is None:
            return None
        return [float(v) for v in value.split(",") if v.strip()]

    def number(self, name, default=None):
        values = self.numbers(name)
        return default if not values else values[0]


# ---------------------------------------------------------------------------------------
# rewriting a line


@dataclasses.dataclass
class Here:
    """What a line is pointed at: the servers (`servers(k)`: the k-th server's HTTP and
    metrics 127.0.0.1:PORT, one per distinct server the line names), their models, the
    tokenizer, the line's folder."""

    servers: object
    tokenizer: Path
    folder: Path
    llm_models: tuple = ("llm", "llm2")
    embeddings_model: str = "embed"
    hosts: dict = dataclasses.field(default_factory=dict)  # the line's host:port → k

    @property
    def host_port(self):
        return self.servers(0)[0]

    def server_for(self, url):
        """This machine's server for a URL of the line: the first host named is server 0,
        the next distinct one server 1, and so on."""
        host = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", url).split("/", 1)[0]
        k = self.hosts.setdefault(host, len(self.hosts))
        return self.servers(k)


@dataclasses.dataclass
class Line:
    index: int
    record: dict
    argv: list = None
    env: dict = None
    rewrites: list = dataclasses.field(default_factory=list)
    options: Options = None
    inputs: dict = dataclasses.field(default_factory=dict)  # path → aiperf_inputs.Written

    @property
    def source(self):
        return self.record["source"]


def expand_shell(command, rewrites):
    """$VAR and ${VAR} with the page's values (none sits inside single quotes here)."""
    used = []

    def value(match):
        name = match.group(1) or match.group(2)
        if name not in SHELL_VALUES:
            raise KeyError(f"shell variable ${name} has no value in SHELL_VALUES")
        used.append(f"${name}={SHELL_VALUES[name]}")
        return SHELL_VALUES[name]

    expanded = re.sub(r"\$\{(\w+)\}|\$(\w+)", value, command)
    if used:
        rewrites.append("shell " + ", ".join(dict.fromkeys(used)))
    return expanded


def local_url(value, host_port, path=None):
    """The URL with this machine's host and port: its scheme (or none) and its path kept,
    unless `path` replaces it."""
    match = re.match(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?(?P<host>[^/?#]*)(?P<rest>.*)$", value)
    rest = match.group("rest") if path is None else path
    return f"{match.group('scheme') or ''}{host_port}{rest}"


def served_model(endpoint_type, position, here):
    if endpoint_type in ("embeddings", "chat_embeddings") or endpoint_type.endswith("_rankings"):
        return here.embeddings_model
    return here.llm_models[min(position, len(here.llm_models) - 1)]


def prepare(index, record, here):
    """The line as it runs here: argv (from `profile` on), env, the rewrites said, the
    input files written."""
    line = Line(index, record)
    rewrites = line.rewrites
    tokens = shlex.split(expand_shell(record["command"], rewrites))
    assert tokens[:2] == ["aiperf", "profile"], tokens
    tokens = tokens[2:]
    options = Options.of(tokens)
    endpoint_type = (options.value("endpoint-type") or "chat").replace("-", "_")
    models = {}
    out, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        name = main_name(token)
        out.append(token)
        i += 1
        if name is None:
            continue
        values = []
        while i < len(tokens) and main_name(tokens[i]) is None:
            values.append(tokens[i])
            i += 1
        out.extend(rewrite_values(name, values, endpoint_type, models, here, line))
    if not options.has("url") and not options.has("config"):
        out += ["--url", here.host_port]
        rewrites.append(f"url added: {here.host_port} (AIPerf's default localhost:8000)")
    env = {}
    for key, value in record["env"].items():
        new = value
        if key == "INFERENCE_URL":
            new = local_url(value, here.host_port)
        elif key == "MODEL_NAME":
            new = served_model(endpoint_type, 0, here)
        if new != value:
            rewrites.append(f"env {key}: {value} → {new}")
        env[key] = new
    write_named_files(line, tokens, options, endpoint_type, here)
    line.argv, line.env, line.options = out, env, Options.of(out)
    return line


def rewrite_values(name, values, endpoint_type, models, here, line):
    """The values of one flag occurrence, rewritten when they must point here or be capped."""
    rewrites = line.rewrites
    if name == "url":
        new = [local_url(v, here.server_for(v)[0]) for v in values]
    elif name == "server-metrics":
        new = [local_url(v, here.server_for(v)[0]) if ":" in v or v.startswith("http") else v for v in values]
    elif name == "gpu-telemetry":
        new = [
            local_url(v, here.server_for(v)[1], "/gpu/metrics") if ":" in v and not v.endswith(".csv") else v
            for v in values
        ]
    elif name == "model-names":
        new = []
        for value in values:
            names = []
            for model in value.split(","):
                if model not in models:
                    models[model] = served_model(endpoint_type, len(models), here)
                names.append(models[model])
            new.append(",".join(names))
    elif name == "tokenizer":
        new = [v if v == "builtin" else str(here.tokenizer) for v in values]
    elif name == "input-file":
        new = [relative_if_absolute(v) for v in values]
    elif name in CAPS:
        new = [cap(name, v) for v in values]
    else:
        return values
    if new != values:
        said = " ".join(shlex.quote(v) for v in values)
        rewrites.append(f"--{name} {said} → {' '.join(shlex.quote(v) for v in new)}")
    return new


def relative_if_absolute(path):
    """An absolute input path of a page (/path/to/…) as the same path under the line's folder."""
    return path.lstrip("/") if path.startswith("/") else path


def cap(name, value):
    parts = []
    for part in value.split(","):
        try:
            number = float(part)
        except ValueError:
            return value
        parts.append(str(CAPS[name]) if number > CAPS[name] else part)
    return ",".join(parts)


def write_named_files(line, tokens, options, endpoint_type, here):
    """Writes the files the line names, in the format its page describes."""
    dataset_type = (options.value("custom-dataset-type") or "").replace("-", "_") or None
    model = served_model(endpoint_type, 0, here)
    offsets = options.has("fixed-schedule-start-offset") or options.has("fixed-schedule-end-offset")
    for path in options.given.get("input-file", [[]])[-1]:
        local = relative_if_absolute(path)
        long_trace = offsets and dataset_type == "mooncake_trace"
        kind = input_kind(local, dataset_type, endpoint_type, line.source, long_trace)
        line.inputs[local] = write_input(here.folder / local, kind, model)
    for path in options.given.get("system-prompt-file", [[]])[-1]:
        write_input(here.folder / path, "system_prompt", model)
    for path in options.given.get("config", [[]])[-1]:
        write_input(here.folder / path, "yaml", model)
    for occurrence in options.given.get("extra-inputs", []):
        for value in occurrence:
            if value.startswith("payload_template:") and value.endswith(".json"):
                write_input(here.folder / value.split(":", 1)[1], "template", model)


# ---------------------------------------------------------------------------------------
# the requests AIPerf's rules give a line


@dataclasses.dataclass
class Expected:
    """How many requests the server should see for the line (AIPerf's rules): `exact`, at
    `least` or at `most` that many; None when the line's time bounds the run."""

    count: int = None
    bound: str = "exact"  # exact | least | most
    why: str = ""

    def text(self):
        if self.count is None:
            return f"— ({self.why})"
        sign = {"exact": "", "least": "≥ ", "most": "≤ "}[self.bound]
        return f"{sign}{self.count} ({self.why})"

    def agrees(self, seen):
        if self.count is None:
            return seen > 0
        if self.bound == "least":
            return seen >= self.count
        if self.bound == "most":
            return 0 < seen <= self.count
        return seen == self.count


def sweep_runs(options):
    """Each run's values of the swept flags ({} for a line that is not a sweep)."""
    given = {name: options.value(name) for name in SWEEPS if options.value(name)}
    lists = {name: value.split(",") for name, value in given.items() if "," in value}
    if not lists:
        return [{}]
    if options.value("sweep-type") == "zip":
        return [dict(zip(lists, values)) for values in zip(*lists.values())]
    runs = [{}]
    for name, values in lists.items():
        runs = [dict(run, **{name: v}) for run in runs for v in values]
    return runs


def expected_requests(line):
    """The requests of every run of the line, warm-up included (AIPerf 0.13's rules, as
    /work/notes/aiperf_defaults.md gathers them: an unbounded run is 10 requests, a count,
    N sessions × turns, a trace's records in a fixed schedule)."""
    options = line.options
    runs = sweep_runs(options)
    total, bound, whys = 0, "exact", []
    for run in runs:
        one = expected_one_run(options, run, line.inputs)
        if one.count is None:
            return one
        total += one.count
        bound = one.bound if one.bound != "exact" else bound
        whys.append(one.why)
    why = whys[0] if len(runs) == 1 else f"{len(runs)} runs: " + "; ".join(dict.fromkeys(whys))
    return Expected(total, bound, why)


def profile_runs(options):
    """--num-profile-runs: how many times each run is repeated (AIPerf 0.13: 1 to 10)."""
    return int(options.number("num-profile-runs", 1))


def expected_one_run(options, run, inputs):
    def number(name, default=None):
        if name in run:
            return float(run[name])
        return options.number(name, default)

    written = next(iter(inputs.values()), None)
    dataset_type = (options.value("custom-dataset-type") or "").replace("-", "_")
    warmup, warm_why = warmup_requests(options, written)
    profiled = profiled_requests(options, number, written, dataset_type)
    if profiled.count is None:
        return profiled
    bound = profiled.bound
    # Repeated runs: every run's requests; the warm-up in the first run only, unless each
    # run is to warm up.
    repeats = profile_runs(options)
    warmups = repeats if options.has("no-profile-run-disable-warmup-after-first") else 1
    profiled_all = profiled.count * repeats
    if repeats > 1:
        profiled = Expected(profiled_all, bound, f"{repeats} profile runs × {profiled.why}")
    if warmup is None:
        return Expected(profiled_all, "least", f"{profiled.why} + a timed warm-up")
    why = profiled.why + (f" + {warm_why}" if warmup else "")
    return Expected(profiled_all + warmup * warmups, bound, why)


def warmup_requests(options, written):
    if options.has("warmup-duration"):
        return None, "timed warm-up"
    count = options.number("warmup-request-count")
    if count is not None:
        return int(count), f"warm-up {int(count)}"
    sessions = options.number("num-warmup-sessions")
    if sessions is not None:
        turns = options.number("conversation-turn-mean", 1)
        return int(sessions * turns), f"warm-up {int(sessions)} sessions × {int(turns)} turns"
    return 0, ""


def profiled_requests(options, number, written, dataset_type):
    request_count = number("request-count")
    sessions = number("conversation-num")
    fixed = options.has("fixed-schedule") or (
        dataset_type in TRACE_TYPES and written is not None and written.timestamps
        and not options.has("no-fixed-schedule")
    )
    if fixed and written is not None and written.timestamps:
        count, why = trace_requests(options, written)
        if request_count is not None and request_count < count:
            return Expected(int(request_count), "exact", f"--request-count of a {count}-request schedule")
        return Expected(count, "exact", why)
    if options.has("user-centric-rate"):
        return Expected(None, why="user-centric: users at a rate")
    if number("benchmark-duration") is not None:
        limit = request_count if request_count is not None else None
        if limit is not None:
            return Expected(int(limit), "most", "--request-count, or fewer in --benchmark-duration")
        return Expected(None, why="--benchmark-duration")
    if sessions is not None:
        return session_requests(int(sessions), options, number, written)
    if request_count is not None:
        if options.has("request-cancellation-rate") and options.number("request-cancellation-delay", 0) == 0:
            why = "--request-count; a request cancelled at once may never reach the server"
            return Expected(int(request_count), "most", why)
        return Expected(int(request_count), "exact", "--request-count")
    return Expected(UNBOUNDED_REQUESTS, "exact", "AIPerf's unbounded run")


def trace_requests(options, written):
    """A fixed schedule plays every conversation once, those whose first timestamp is within
    the offsets (inclusive)."""
    start = options.number("fixed-schedule-start-offset", -math.inf)
    end = options.number("fixed-schedule-end-offset", math.inf)
    count = sum(t for t, ts in zip(written.sessions, written.timestamps) if start <= ts <= end)
    offsets = "" if (start, end) == (-math.inf, math.inf) else " within the offsets"
    return count, f"the trace's {count} requests{offsets}"


def session_requests(sessions, options, number, written):
    if written is not None and written.sessions:
        turns = [written.sessions[i % len(written.sessions)] for i in range(sessions)]
        return Expected(sum(turns), "exact", f"{sessions} sessions of the file")
    mean = number("conversation-turn-mean", 1)
    if number("conversation-turn-stddev", 0) == 0:
        return Expected(int(sessions * mean), "exact", f"{sessions} sessions × {int(mean)} turns")
    return Expected(sessions, "least", f"{sessions} sessions of random length")

"""Helpers shared by the e2e tests: where things are, running a tool with its CPU time
measured, reading perf_analyzer-style CSV reports, Triton statistics, and the summary."""

import csv
import dataclasses
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVERS = Path(__file__).resolve().parent / "servers"
VENVS = Path(os.environ.get("E2E_VENVS", ROOT / ".venv-e2e")).resolve()
CARGO_TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
INFERPERF = Path(os.environ.get("INFERPERF_BIN", CARGO_TARGET / "release" / "inferperf"))
ARTIFACTS = ROOT / "target" / "e2e"

# Lines for the summary printed at the end of the run, and the servers' start times.
SUMMARY = {"lines": [], "start": {}}


def note(line):
    """Prints a line now and keeps it for the summary at the end."""
    print(f"\n[e2e] {line}", flush=True)
    SUMMARY["lines"].append(line)


@dataclasses.dataclass
class ToolRun:
    cmd: list
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    cpu_seconds: float  # user + system time of the process and its children
    rows: list  # the CSV report's rows, when there is one
    ended: float = 0.0  # time.monotonic() when the process was seen to exit

    def show(self):
        return (
            f"$ {' '.join(self.cmd)}\nexit code {self.returncode}\n--- stdout\n{self.stdout}"
            f"--- stderr\n{self.stderr}"
        )

    def row(self, concurrency):
        for row in self.rows:
            if int(row["Concurrency"]) == concurrency:
                return row
        raise AssertionError(f"no CSV row for concurrency {concurrency} in:\n{self.show()}")


def run_tool(cmd, name, env=None, timeout=300):
    """Runs cmd to the end with stdout and stderr kept under ARTIFACTS/name.*, and returns
    its exit code, output and CPU time (from wait4's rusage of that very process)."""
    cmd = [str(part) for part in cmd]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out_path, err_path = ARTIFACTS / f"{name}.stdout", ARTIFACTS / f"{name}.stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, start_new_session=True
        )
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                pytest.fail(
                    f"{' '.join(cmd)} did not finish in {timeout} s; its output is in "
                    f"{out_path} and {err_path}"
                )
            time.sleep(0.02)
        ended = time.monotonic()
        seconds = ended - started
    # wait4 reaped the process: tell Popen so that it does not wait for it again.
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ToolRun(
        cmd=cmd,
        returncode=proc.returncode,
        stdout=out_path.read_text(errors="replace"),
        stderr=err_path.read_text(errors="replace"),
        seconds=seconds,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        rows=[],
        ended=ended,
    )


def read_csv(path):
    """A perf_analyzer-style CSV report as a list of {column: float} rows."""
    with open(path, newline="") as handle:
        rows = []
        for row in csv.DictReader(handle):
            rows.append({key: float(value) for key, value in row.items() if key and value != ""})
        return rows


def run_inferperf(args, name, timeout=300):
    """Runs inferperf with args and `-f ARTIFACTS/name.csv`; reads the CSV when written."""
    csv_path = ARTIFACTS / f"{name}.csv"
    csv_path.unlink(missing_ok=True)
    run = run_tool([INFERPERF, *args, "-f", csv_path], name, timeout=timeout)
    if csv_path.is_file():
        run.rows = read_csv(csv_path)
    return run


def run_perf_analyzer(exe, env, args, name, timeout=300):
    csv_path = ARTIFACTS / f"{name}.csv"
    csv_path.unlink(missing_ok=True)
    run = run_tool([exe, *args, "-f", csv_path], name, env=env, timeout=timeout)
    if csv_path.is_file():
        run.rows = read_csv(csv_path)
    return run


def assert_profiled(run, levels):
    """inferperf finished (0 ok, 2 unstable but reported), wrote one CSV row per level with
    sane numbers, and its console report shows no errors (it prints an `Errors:` line only
    when there were some)."""
    assert run.returncode in (0, 2), run.show()
    assert "Errors:" not in run.stdout, run.show()
    assert sorted(int(r["Concurrency"]) for r in run.rows) == sorted(levels), run.show()
    for row in run.rows:
        assert row["Inferences/Second"] > 0, run.show()
        assert 0 < row["p50 latency"] <= row["p99 latency"], run.show()


def levels_text(run):
    """`c1: 512.3 infer/s p50 1.94 ms; c2: ...` for the summary."""
    parts = []
    for row in sorted(run.rows, key=lambda r: r["Concurrency"]):
        parts.append(
            f"c{int(row['Concurrency'])}: {row['Inferences/Second']:.1f} infer/s, "
            f"p50 {row['p50 latency'] / 1000:.2f} ms"
        )
    unstable = " (unstable: exit 2)" if run.returncode == 2 else ""
    return "; ".join(parts) + unstable


@dataclasses.dataclass
class Stats:
    """Cumulative counters of one model from Triton's statistics extension."""

    inference_count: int = 0
    execution_count: int = 0
    success: int = 0
    fail: int = 0
    queue_ns: int = 0
    compute_input_ns: int = 0
    compute_infer_ns: int = 0
    compute_output_ns: int = 0

    @classmethod
    def from_triton(cls, model_stats):
        s = model_stats["inference_stats"]
        return cls(
            inference_count=int(model_stats.get("inference_count", 0)),
            execution_count=int(model_stats.get("execution_count", 0)),
            success=int(s["success"]["count"]),
            fail=int(s["fail"]["count"]),
            queue_ns=int(s["queue"]["ns"]),
            compute_input_ns=int(s["compute_input"]["ns"]),
            compute_infer_ns=int(s["compute_infer"]["ns"]),
            compute_output_ns=int(s["compute_output"]["ns"]),
        )

    def __sub__(self, other):
        return Stats(
            **{
                field.name: getattr(self, field.name) - getattr(other, field.name)
                for field in dataclasses.fields(self)
            }
        )


def http_status(url, headers=None, timeout=2.0):
    """The HTTP status of a GET, or None when the server does not answer."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return None


def post_json(url, body, timeout=10.0):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())


def add_sub(module, client, a, b):
    """Sends a and b to Triton's add_sub; returns (OUTPUT0, OUTPUT1)."""
    inputs = [module.InferInput("INPUT0", [16], "INT32"), module.InferInput("INPUT1", [16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("add_sub", inputs)
    return result.as_numpy("OUTPUT0"), result.as_numpy("OUTPUT1")

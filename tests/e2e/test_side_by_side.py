"""inferperf and perf_analyzer 2.50 side by side against Triton's `sleep10` (one instance, no
batching, 10 ms of sleep per request) at concurrency 1, 2 and 3, with the truth taken from
Triton's own statistics.

The model serves one request at a time, so its real service time per request is the compute
time Triton records for it (compute input + infer + output; about 11 ms on a quiet machine, a
little over the 10 ms of sleep). With c >= 2 requests kept in flight the instance never idles:
    truth throughput = 1 / service time,  truth p50 latency = c x service time.
At c = 1 the instance idles while each answer and the next request cross between client and
server (about 0.5 ms here, 3-5 % of the service time), so 1 / service time overstates what any
closed loop can reach there. The throughput that holds at every level is the rate at which
Triton itself completed requests (its success counter over the poll clock), which is checked
too; the p50 truth c x service time holds at c = 1 as well (it leaves out the same 0.5 ms).

A tool reports the merge of a level's last 3 windows, so the truth is taken over that same
stretch of time: the statistics are polled every 100 ms while the tool runs (inferperf's
windows last exactly -p; perf_analyzer's 1.2 x -p). On a loaded machine the service time
drifts by several percent within a run, so a whole-run average is not the truth of the windows
a tool reported.

Each tool runs once per level, the two alternating which goes first. A tool's CPU time per
request is its process's user + system time (rusage from wait4) over all the requests Triton
served during its run.
"""

import threading
import time

import pytest

from e2e_lib import note, run_inferperf, run_perf_analyzer

LEVELS = (1, 2, 3)
WINDOW_MS = 2000
WINDOWS = ["-p", str(WINDOW_MS), "-s", "10"]
TOLERANCE = 0.05
# How long the 3 reported windows of each tool last, in seconds.
REPORTED_SPAN = {"inferperf": 3 * WINDOW_MS / 1000, "perf_analyzer": 3 * 1.2 * WINDOW_MS / 1000}


class StatsPoller:
    """Polls a model's statistics every `period` seconds in a thread: (monotonic time, Stats)."""

    def __init__(self, triton, model, period=0.1):
        self.triton = triton
        self.model = model
        self.period = period
        self.snapshots = [(time.monotonic(), triton.stats(model))]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.wait(self.period):
            asked = time.monotonic()
            try:
                stats = self.triton.stats(self.model)
            except OSError:
                continue
            self.snapshots.append(((asked + time.monotonic()) / 2, stats))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.snapshots.append((time.monotonic(), self.triton.stats(self.model)))

    def whole(self):
        """The delta over the whole run."""
        return self.snapshots[-1][1] - self.snapshots[0][1]

    def rate(self, start, end):
        """Requests the server completed per second between the first snapshot after `start`
        and the last one before `end`."""
        inside = [(taken, stats) for taken, stats in self.snapshots if start <= taken <= end]
        assert len(inside) >= 2, f"fewer than 2 statistics snapshots in [{start}, {end}]"
        (t0, first), (t1, last) = inside[0], inside[-1]
        return (last.success - first.success) / (t1 - t0)

    def since(self, start):
        """The delta from the last snapshot taken at or before `start` to the end."""
        before = self.snapshots[0][1]
        for taken, stats in self.snapshots:
            if taken > start:
                break
            before = stats
        return self.snapshots[-1][1] - before


def deviation(measured, truth):
    return (measured - truth) / truth


def service_ns(delta):
    return (delta.compute_input_ns + delta.compute_infer_ns + delta.compute_output_ns) / delta.success


def test_side_by_side_with_perf_analyzer_on_sleep10(triton, inferperf_bin, perf_analyzer):
    exe, env = perf_analyzer
    cpu = {"inferperf": [0.0, 0], "perf_analyzer": [0.0, 0]}
    table = []
    misses = []
    for index, c in enumerate(LEVELS):
        tools = ("inferperf", "perf_analyzer") if index % 2 == 0 else ("perf_analyzer", "inferperf")
        for tool in tools:
            with StatsPoller(triton, "sleep10") as poller:
                if tool == "inferperf":
                    run = run_inferperf(
                        [
                            "-m", "sleep10",
                            "-u", triton.http,
                            "-H", f"triton-access-token: {triton.token}",
                            "--concurrency-range", str(c),
                            *WINDOWS,
                        ],
                        f"side-inferperf-c{c}",
                    )
                else:
                    run = run_perf_analyzer(
                        exe,
                        env,
                        [
                            "-m", "sleep10",
                            "-u", triton.http,
                            "-H", f"triton-access-token:{triton.token}",
                            "--concurrency-range", str(c),
                            *WINDOWS,
                        ],
                        f"side-perf_analyzer-c{c}",
                    )
            whole = poller.whole()
            assert whole.fail == 0, run.show()
            assert whole.success > 0, run.show()
            cpu[tool][0] += run.cpu_seconds
            cpu[tool][1] += whole.success

            reported_from = run.ended - REPORTED_SPAN[tool]
            service = service_ns(poller.since(reported_from))
            truth_throughput = 1e9 / service
            truth_p50_ms = c * service / 1e6
            served = poller.rate(reported_from, run.ended - 0.2)
            entry = {
                "c": c,
                "tool": tool,
                "exit": run.returncode,
                "run_service_ms": service_ns(whole) / 1e6,
                "service_ms": service / 1e6,
                "truth_throughput": truth_throughput,
                "served": served,
                "truth_p50_ms": truth_p50_ms,
                "throughput": None,
                "p50_ms": None,
            }
            if tool == "inferperf":
                assert run.returncode in (0, 2), run.show()
                assert "Errors:" not in run.stdout, run.show()
            rows = [r for r in run.rows if int(r["Concurrency"]) == c]
            if rows:
                entry["throughput"] = rows[0]["Inferences/Second"]
                entry["p50_ms"] = rows[0]["p50 latency"] / 1000
            elif tool == "inferperf":
                pytest.fail(f"inferperf wrote no CSV row for concurrency {c}:\n{run.show()}")
            if tool == "inferperf":
                checks = [
                    ("throughput vs Triton's completion rate", entry["throughput"], served),
                    ("p50 vs c x service time", entry["p50_ms"], truth_p50_ms),
                ]
                if c >= 2:
                    checks.append(
                        ("throughput vs 1 / service time", entry["throughput"], truth_throughput)
                    )
                for what, measured, truth in checks:
                    if abs(deviation(measured, truth)) > TOLERANCE:
                        misses.append(
                            f"c={c} {what}: inferperf {measured:.2f}, truth {truth:.2f} "
                            f"({deviation(measured, truth):+.1%}, more than {TOLERANCE:.0%})"
                        )
            table.append(entry)

    note(
        f"side by side on Triton sleep10 over HTTP (-p {WINDOW_MS} -s 10); truth from Triton's "
        "statistics over each tool's reported windows"
    )
    note(
        f"  c  {'tool':<13}  {'service ms':>10} {'(whole)':>8}  {'1/service':>9}  "
        f"{'Triton rate':>11}  {'inf/s':>7} {'vs 1/svc':>8} {'vs rate':>7}  "
        f"{'c x svc ms':>10}  {'p50 ms':>7} {'dev':>6}"
    )
    for e in table:
        head = (
            f"  {e['c']}  {e['tool']:<13}  {e['service_ms']:10.2f} "
            f"{'(%.2f)' % e['run_service_ms']:>8}  {e['truth_throughput']:9.1f}  "
            f"{e['served']:11.1f}"
        )
        if e["throughput"] is None:
            note(f"{head}  no row (exit {e['exit']})")
            continue
        note(
            f"{head}  {e['throughput']:7.1f} "
            f"{deviation(e['throughput'], e['truth_throughput']):+8.1%} "
            f"{deviation(e['throughput'], e['served']):+7.1%}  "
            f"{e['truth_p50_ms']:10.2f}  {e['p50_ms']:7.2f} "
            f"{deviation(e['p50_ms'], e['truth_p50_ms']):+6.1%}"
            + ("  [unstable]" if e["exit"] == 2 else "")
        )
    per_request = {tool: seconds / count for tool, (seconds, count) in cpu.items()}
    note(
        "  CPU per request: inferperf %.1f us (%.2f s for %d requests), perf_analyzer %.1f us "
        "(%.2f s for %d requests); inferperf / perf_analyzer = %.2f"
        % (
            per_request["inferperf"] * 1e6,
            cpu["inferperf"][0],
            cpu["inferperf"][1],
            per_request["perf_analyzer"] * 1e6,
            cpu["perf_analyzer"][0],
            cpu["perf_analyzer"][1],
            per_request["inferperf"] / per_request["perf_analyzer"],
        )
    )
    assert not misses, "inferperf is off the truth:\n" + "\n".join(misses)

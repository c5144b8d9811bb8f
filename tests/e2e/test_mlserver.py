"""inferperf against a stock Seldon MLServer 1.7: no model-configuration endpoint, no
statistics, no binary tensor extension, outputs with `"parameters": {"content_type": "np"}`."""

import re

from e2e_lib import (
    assert_profiled,
    http_status,
    levels_text,
    note,
    run_inferperf,
    run_perf_analyzer,
)


def test_mlserver_is_stock(mlserver):
    """What makes MLServer different from Triton, checked so the tests below mean something."""
    assert http_status(f"http://{mlserver.http}/v2/models/echo/config") == 404
    assert mlserver.http_output["parameters"] == {"content_type": "np"}


def test_inferperf_profiles_mlserver_http_with_m_and_u_only(mlserver, inferperf_bin):
    """The user's command exactly: `inferperf -m echo -u HOST:PORT` (5 s windows)."""
    run = run_inferperf(["-m", "echo", "-u", mlserver.http], "mlserver-http-default", timeout=240)
    assert_profiled(run, [1])
    assert re.search(r"Throughput: [0-9.]+ infer/sec", run.stdout), run.show()
    note(f"mlserver echo     http {levels_text(run)}  [-m -u only]")


def test_inferperf_profiles_mlserver_grpc(mlserver, inferperf_bin):
    run = run_inferperf(
        [
            "-m", "echo",
            "-u", mlserver.grpc,
            "-i", "grpc",
            "--concurrency-range", "1:2",
            "-p", "1000", "-s", "20", "-r", "6",
        ],
        "mlserver-grpc",
    )
    assert_profiled(run, [1, 2])
    note(f"mlserver echo     grpc {levels_text(run)}")


def test_perf_analyzer_fails_against_mlserver(mlserver, perf_analyzer):
    """perf_analyzer needs Triton's /v2/models/M/config, which MLServer does not have."""
    exe, env = perf_analyzer
    for protocol in ("http", "grpc"):
        run = run_perf_analyzer(
            exe,
            env,
            ["-m", "echo", "-u", mlserver.address(protocol), "-i", protocol, "-p", "1000"],
            f"perf_analyzer-mlserver-{protocol}",
            timeout=60,
        )
        message = (run.stderr.strip() or run.stdout.strip()).splitlines()[-1:]
        note(f"perf_analyzer vs mlserver {protocol}: exit {run.returncode}: {' '.join(message)}")
        assert run.returncode != 0, run.show()
        assert not run.rows, run.show()

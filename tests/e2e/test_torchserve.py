"""TorchServe 0.12 from PyPI, with a handler that answers 64 bytes per request:
`--service-kind torchserve` sends perf_analyzer's TORCHSERVE_INPUT data, counts what
TorchServe counts (its own ts_inference_requests_total, within 3%), reads the model from the
management API and shows the `Server:` block from TorchServe's metrics."""

import json
import re

from e2e_lib import ARTIFACTS, assert_profiled, levels_text, note, run_inferperf

REQUESTS = 1500


def request_count(run):
    counts = [int(n) for n in re.findall(r"Request count: (\d+)", run.stdout)]
    assert len(counts) == 1, run.show()
    return counts[0]


def input_data():
    """perf_analyzer's TorchServe data: two files whose bytes are the bodies."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, body in enumerate((b"\x00" * 16, bytes(range(64)))):
        path = ARTIFACTS / f"torchserve-body-{k}.bin"
        path.write_bytes(body)
        paths.append(str(path))
    data = ARTIFACTS / "torchserve-input.json"
    data.write_text(json.dumps({"data": [{"TORCHSERVE_INPUT": [p]} for p in paths]}))
    return str(data)


def test_inferperf_counts_what_torchserve_counts(torchserve, inferperf_bin):
    before = torchserve.requests()
    run = run_inferperf(
        [
            "-m", "echo", "--service-kind", "torchserve", "-u", torchserve.inference,
            "--torchserve-management-url", torchserve.management,
            "--metrics-url", f"{torchserve.metrics}/metrics",
            "--input-data", input_data(), "--concurrency-range", "2",
            "--request-count", str(REQUESTS),
        ],
        "torchserve",
    )
    assert_profiled(run, [2])
    counted = torchserve.requests() - before
    sent = request_count(run)
    assert sent == REQUESTS, run.show()
    assert abs(counted - sent) <= 0.03 * counted, f"torchserve {counted}, inferperf {sent}"
    assert "Server:" in run.stdout, run.show()
    assert re.search(r"Successful request count: \d+", run.stdout), run.show()
    assert "queue" in run.stdout and "compute infer" in run.stdout, run.show()
    # TorchServe's Requests2XX/4XX/5XX count the whole server's answers: every request of
    # the window was a 2XX one, and none failed.
    answers = re.search(r"Server-wide answers, all models \(2XX/4XX/5XX\): (\d+) / (\d+) / (\d+)", run.stdout)
    assert answers, run.show()
    ok, client_errors, server_errors = map(int, answers.groups())
    assert ok >= 0.97 * sent and (client_errors, server_errors) == (0, 0), run.show()
    note(
        f"torchserve echo http c2: {levels_text(run)}; TorchServe counted {counted}, "
        f"inferperf {sent}"
    )


def test_inferperf_finds_the_management_api_and_refuses_an_unknown_model(torchserve, inferperf_bin):
    run = run_inferperf(
        [
            "-m", "nothing", "--service-kind", "torchserve", "-u", torchserve.inference,
            "--torchserve-management-url", torchserve.management,
        ],
        "torchserve-unknown",
    )
    assert run.returncode == 99, run.show()
    assert "has no model 'nothing' registered" in run.stderr, run.show()

"""inferperf against NVIDIA Triton 2.51 (PyTriton) over HTTP and gRPC."""

import json
import re
import urllib.error
import urllib.request

import numpy as np
import pytest

from e2e_lib import ARTIFACTS, add_sub, assert_profiled, levels_text, note, run_inferperf

PROTOCOLS = ("http", "grpc")
# Short windows: these tests check that inferperf works against the real server; the
# accuracy check is the side-by-side test's job.
QUICK = ["--concurrency-range", "1:2", "-p", "1000", "-s", "20", "-r", "6"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_add_sub_outputs_are_right(triton, protocol):
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    module = httpclient if protocol == "http" else grpcclient
    rng = np.random.default_rng(6)
    a = rng.integers(-1000, 1000, 16, dtype=np.int32)
    b = rng.integers(-1000, 1000, 16, dtype=np.int32)
    with module.InferenceServerClient(url=triton.address(protocol)) as client:
        sums, diffs = add_sub(module, client, a, b)
    assert sums.dtype == np.int32 and diffs.dtype == np.int32
    assert np.array_equal(sums, a + b)
    assert np.array_equal(diffs, a - b)


def test_statistics_need_the_access_token(triton):
    url = f"http://{triton.http}/v2/models/identity/stats"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 403
    assert triton.stats("identity").inference_count >= 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ("identity", "add_sub", "sleep10"))
def test_inferperf_profiles_triton(triton, inferperf_bin, model, protocol):
    before = triton.stats(model)
    run = run_inferperf(
        [
            "-m", model,
            "-u", triton.address(protocol),
            "-i", protocol,
            "-H", f"triton-access-token: {triton.token}",
            *QUICK,
        ],
        f"triton-{model}-{protocol}",
    )
    delta = triton.stats(model) - before
    assert_profiled(run, [1, 2])
    # The model failed no request, and served at least the requests inferperf reported
    # (the reported ones are those of each level's last 3 windows).
    assert delta.fail == 0, run.show()
    reported = sum(int(n) for n in re.findall(r"Request count: (\d+)", run.stdout))
    assert 0 < reported <= delta.success, run.show()
    if model == "sleep10":
        for row in run.rows:
            c = int(row["Concurrency"])
            assert row["Inferences/Second"] < 101, run.show()
            assert row["p50 latency"] > c * 10_000 * 0.95, run.show()
    note(f"triton   {model:<8} {protocol:<4} {levels_text(run)}")


def test_dynamic_batching_is_visible(triton, inferperf_bin):
    before = triton.stats("identity")
    run = run_inferperf(
        [
            "-m", "identity",
            "-u", triton.http,
            "-H", f"triton-access-token: {triton.token}",
            "--concurrency-range", "8",
            "-p", "1000", "-s", "20", "-r", "6",
        ],
        "triton-identity-c8",
    )
    delta = triton.stats("identity") - before
    assert_profiled(run, [8])
    assert delta.fail == 0
    assert delta.execution_count < delta.inference_count, (
        f"no dynamic batching seen: {delta.inference_count} inferences in "
        f"{delta.execution_count} executions"
    )
    note(
        f"triton   identity http c8: {levels_text(run)}; Triton ran {delta.inference_count} "
        f"inferences in {delta.execution_count} executions "
        f"(mean batch {delta.inference_count / delta.execution_count:.2f})"
    )


SERVER_COLUMNS = (
    "Network+Server Send/Recv",
    "Server Queue",
    "Server Compute Input",
    "Server Compute Infer",
    "Server Compute Output",
)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_server_block_from_statistics(triton, inferperf_bin, protocol):
    """Triton's statistics sit behind an access token: with `-H` inferperf reads them over
    the run's own protocol, prints perf_analyzer's Server block per level, fills the CSV's
    server columns, and adds Triton's metrics and the where-the-time-went line."""
    before = triton.stats("sleep10")
    run = run_inferperf(
        [
            "-m", "sleep10",
            "-u", triton.address(protocol),
            "-i", protocol,
            "-H", f"triton-access-token: {triton.token}",
            "--collect-metrics", "--metrics-url", f"127.0.0.1:{triton.metrics_port}/metrics",
            "--metrics-interval", "250",
            *QUICK,
        ],
        f"triton-server-block-{protocol}",
    )
    delta = triton.stats("sleep10") - before
    assert_profiled(run, [1, 2])
    assert "no server-side breakdown" not in run.stdout, run.show()
    counts = [int(n) for n in re.findall(r"Successful request count: (\d+)", run.stdout)]
    client = [int(n) for n in re.findall(r"Request count: (\d+)", run.stdout)]
    assert len(counts) == 2, run.show()
    # The server block covers the merged windows, as the client counts do, give or take the
    # requests in flight at the windows' ends; all of them are within the whole run's delta.
    for server_count, client_count in zip(counts, client):
        assert abs(server_count - client_count) <= 2 * 2 * 3 + 1, run.show()
    assert sum(counts) <= delta.success, run.show()
    infer = [int(n) for n in re.findall(r"compute infer (\d+) usec", run.stdout)]
    # The "10 ms" Python model takes a little more here (see real-servers.md).
    assert all(9_500 <= us <= 20_000 for us in infer), run.show()
    assert "Server Prometheus Metrics:" in run.stdout, run.show()
    assert "Where the time went: client send" in run.stdout, run.show()
    for row in run.rows:
        for column in SERVER_COLUMNS:
            assert column in row, f"no {column} column:\n{run.show()}"
        assert 9_500 <= row["Server Compute Infer"] <= 20_000, run.show()
    server_line = next(l for l in run.stdout.splitlines() if "Avg request latency" in l)
    note(f"triton   server block {protocol}: {server_line.strip()}")


def test_triton_engine_metrics_from_its_own_page(triton, inferperf_bin):
    """--server-metrics on Triton's own /metrics page: the engine is recognised from its
    nv_ names, and per level the requests Triton counted (nv_inference_request_success) are
    the client's, within the requests in flight at the windows' ends; its queue gauge
    (nv_inference_pending_request_count) is read; the figures reach the console, the CSV and
    results.json; and Triton's statistics extension holds the whole run's truth."""
    results = ARTIFACTS / "triton-engine-metrics.json"
    results.unlink(missing_ok=True)
    before = triton.stats("sleep10")
    run = run_inferperf(
        [
            "-m", "sleep10",
            "-u", triton.http,
            "-H", f"triton-access-token: {triton.token}",
            "--server-metrics", f"http://127.0.0.1:{triton.metrics_port}/metrics",
            "--metrics-interval", "250",
            "--results-file", results,
            *QUICK,
        ],
        "triton-engine-metrics",
    )
    delta = triton.stats("sleep10") - before
    assert_profiled(run, [1, 2])
    assert run.stdout.count("Engine (its own metrics)") == 2, run.show()
    assert run.stdout.count("Counted by the engine: ") == 2, run.show()
    file = json.loads(results.read_text())
    engine_total = 0
    for level in file["levels"]:
        merged = level["merged"]
        engine = merged["engine"]
        requests = next(c for c in engine["counts"] if c["what"] == "requests")
        assert requests["client"] == merged["ok"], engine
        # The windows' ends cut requests in flight: at most the concurrency per window.
        c = level["load"]["concurrency"]
        assert abs(requests["engine"] - requests["client"]) <= c * len(level["merged_windows"]), engine
        assert engine["waiting"] is not None and engine["waiting"]["avg"] >= 0, engine
        engine_total += requests["engine"]
    assert 0 < engine_total <= delta.success, (engine_total, delta.success)
    for row in run.rows:
        assert "Engine Requests Waiting Avg (requests)" in row, run.show()
    note(f"triton   engine metrics: Triton counted {engine_total:.0f} requests in the measured windows, "
         f"{delta.success} over the whole run (statistics extension)")


def test_every_answer_of_a_decoupled_model_is_measured(triton, inferperf_bin):
    """Triton's decoupled model answers five times per request over ModelStreamInfer: with
    --streaming every answer is timed and checked, and perf_analyzer's Response Throughput
    is five times the request throughput; without it the run is refused in one sentence."""
    token = ["-H", f"triton-access-token: {triton.token}"]
    refused = run_inferperf(
        ["-m", "stream5", "-u", triton.grpc, "-i", "grpc", *token, "--concurrency-range", "1"],
        "triton-stream5-unary",
    )
    assert refused.returncode == 3, refused.show()
    assert "is decoupled" in refused.stderr and "--streaming" in refused.stderr, refused.show()
    before = triton.stats("stream5")
    run = run_inferperf(
        ["-m", "stream5", "-u", triton.grpc, "-i", "grpc", "--streaming", *token, *QUICK],
        "triton-stream5",
    )
    delta = triton.stats("stream5") - before
    assert_profiled(run, [1, 2])
    assert delta.fail == 0, run.show()
    assert "Responses per request: avg 5," in run.stdout, run.show()
    for row in run.rows:
        assert row["Responses per request"] == 5, run.show()
        ratio = row["Response Throughput"] / row["Inferences/Second"]
        assert abs(ratio - 5) < 0.01, run.show()
        # The model sleeps 5 ms before each answer; Python adds a little.
        assert 4_500 <= row["p50 inter-response latency"] <= 15_000, run.show()
        assert row["p50 first response latency"] >= 4_500, run.show()
        assert row["p50 latency"] >= 5 * 4_500, run.show()
    gap = run.rows[0]["p50 inter-response latency"] / 1000
    note(f"triton   stream5 grpc --streaming: {levels_text(run)}; p50 gap {gap:.2f} ms")

"""TF Serving both ways, with the official `tensorflow-serving-api` package as the reference
(no TF Serving binary installs here): inferperf profiles a PredictionService written with
its generated messages and counts what the server counts; and the official Python client
calls inferperf's embedded TF Serving endpoint and gets the right answers."""

import json
import re
import subprocess

from e2e_lib import SERVERS, VENVS, assert_profiled, levels_text, note, run_inferperf

EMBEDDED_MODELS = {"identity": "identity"}
REQUESTS = 2000


def request_count(run):
    counts = [int(n) for n in re.findall(r"Request count: (\d+)", run.stdout)]
    assert len(counts) == 1, run.show()
    return counts[0]


def test_inferperf_counts_what_the_tfs_server_counts(tfs_server, inferperf_bin):
    before = tfs_server.predictions()
    run = run_inferperf(
        [
            "-m", "echo", "--service-kind", "tfserving", "-i", "grpc", "-u", tfs_server.grpc,
            "-b", "2", "--concurrency-range", "4", "--request-count", str(REQUESTS),
        ],
        "tfs-grpc",
    )
    assert_profiled(run, [4])
    counted = tfs_server.predictions() - before
    sent = request_count(run)
    assert sent == REQUESTS, run.show()
    assert abs(counted - sent) <= 0.03 * counted, f"server {counted}, inferperf {sent}"
    note(f"tfs      echo     grpc  c4 b2: {levels_text(run)}; server counted {counted}, inferperf {sent}")


def test_inferperf_profiles_the_tfs_server_over_time_windows(tfs_server, inferperf_bin):
    run = run_inferperf(
        [
            "-m", "echo", "--service-kind", "tfserving", "-i", "grpc", "-u", tfs_server.grpc,
            "--concurrency-range", "1:2", "-p", "1000", "-s", "20", "-r", "6",
        ],
        "tfs-grpc-windows",
    )
    assert_profiled(run, [1, 2])
    assert "Server:" not in run.stdout, run.show()
    note(f"tfs      echo     grpc  {levels_text(run)}")


def test_official_client_calls_the_embedded_server(embedded_server):
    run = subprocess.run(
        [VENVS / "tfs" / "bin" / "python", SERVERS / "tfs_client.py", embedded_server.grpc, "identity"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    answer = json.loads(run.stdout)
    assert answer["signatures"] == ["serving_default"], answer
    assert (answer["input"], answer["output"]) == ("INPUT0", "OUTPUT0"), answer
    assert answer["input_dtype"] == answer["output_dtype"] == "DT_FLOAT", answer
    assert answer["input_shape"] == [-1, 16] and answer["output_shape"] == [2, 16], answer
    assert answer["equal"] and answer["answer_model"] == "identity", answer
    note("tfs      official PredictionServiceStub -> inferperf serve: metadata and Predict right")


def test_inferperf_profiles_the_embedded_tf_endpoints(embedded_server, inferperf_bin):
    for protocol, address in (("grpc", embedded_server.grpc), ("http", embedded_server.http)):
        run = run_inferperf(
            [
                "-m", "identity", "--service-kind", "tfserving", "-i", protocol, "-u", address,
                "--concurrency-range", "4", "-p", "1000", "-s", "20", "-r", "6",
            ],
            f"tfs-embedded-{protocol}",
        )
        assert_profiled(run, [4])
        note(f"tfs      identity {protocol:<4} embedded: {levels_text(run)}")

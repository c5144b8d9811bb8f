"""`--service-kind triton_c_api` on real Triton 2.51: inferperf loads the libtritonserver of
nvidia-pytriton at run time (its folder given as --triton-server-directory, with the Python
backend in its backends/), starts Triton in its own process on a model repository the test
writes, and profiles through the C API. The same repository is served by the tritonserver
binary over HTTP and gRPC, and the three are set side by side on the same identity model, as
the demo does for the embedded server; a decoupled model streams its answers in process as
over gRPC. Answers are validated (a wrong expected value is
counted as an error, never a success), the server block comes from Triton's own statistics
read through the C API, and the sequence model plays whole sequences with none rejected."""

import json
import os
import re

import pytest

from conftest import SUMMARY, ServerProcess, free_ports
from e2e_lib import ARTIFACTS, INFERPERF, note, run_tool
from triton_repo_lib import (
    PlainTriton,
    in_process_directory,
    pytriton_server_dir,
    tritonserver_command,
    tritonserver_env,
    write_identity,
    write_repository,
)

VALUES = [i + 0.25 for i in range(16)]

DECOUPLED_MODEL = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Three answers per request, each the input, then the final flag alone."""

    def execute(self, requests):
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            sender = request.get_response_sender()
            for _ in range(3):
                sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT0", x)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''


@pytest.fixture(scope="module")
def triton_folder(tmp_path_factory):
    """The repository (seq_acc, capi_identity) and the install folder beside it."""
    server_dir, _ = pytriton_server_dir()
    if not (server_dir / "bin" / "tritonserver").is_file():
        pytest.skip(f"no tritonserver under {server_dir} (see scripts/e2e-setup).")
    folder = tmp_path_factory.mktemp("triton-c-api")
    repo, _ = write_repository(folder)
    write_identity(repo, "capi_identity")
    write_identity(repo, "capi_decoupled", model=DECOUPLED_MODEL, decoupled=True)
    return in_process_directory(folder), repo


@pytest.fixture(scope="module")
def network_triton(triton_folder):
    folder, repo = triton_folder
    ports = free_ports(3)
    process = ServerProcess(
        "triton-c-api-net", tritonserver_command(repo, folder / "backends", ports),
        env=tritonserver_env(dict(os.environ)), cwd=folder,
    )
    server = PlainTriton(ports, process)
    try:
        process.start()
        process.wait_until(server.sequence_answers, 120, "a two-request sequence")
        SUMMARY["start"]["triton-c-api-net"] = process.ready()
        yield server
    finally:
        process.stop()


def data_file(name, expected):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    path.write_text(json.dumps({
        "data": [{"INPUT0": VALUES}],
        "validation_data": [{"OUTPUT0": expected}],
    }))
    return path


def in_process(triton_folder, args, name):
    """inferperf with Triton in its process: the environment the library and the Python
    backend's stub need (the wheel's libraries, this interpreter's libpython, numpy)."""
    folder, repo = triton_folder
    cmd = [
        INFERPERF, "profile", "--service-kind", "triton_c_api",
        "--triton-server-directory", folder, "--model-repository", repo, *args,
        "-f", ARTIFACTS / f"{name}.csv",
    ]
    return run_tool(cmd, name, env=tritonserver_env(dict(os.environ)), timeout=300)


def networked(server, protocol, args, name):
    cmd = [
        INFERPERF, "profile", "-u", server.address(protocol), "-i", protocol, *args,
        "-f", ARTIFACTS / f"{name}.csv",
    ]
    return run_tool(cmd, name, timeout=300)


def figure(run, pattern):
    found = re.findall(pattern, run.stdout, re.M)
    assert len(found) == 1, run.show()
    return found[0]


def test_in_process_beside_http_and_grpc(triton_folder, network_triton):
    data = data_file("capi-identity.json", VALUES)
    args = [
        "-m", "capi_identity", "--input-data", data, "--concurrency-range", "2", "-p", "1000",
    ]
    runs = {
        "C API": in_process(triton_folder, args, "triton-capi-identity"),
        "HTTP": networked(network_triton, "http", args, "triton-capi-identity-http"),
        "gRPC": networked(network_triton, "grpc", args, "triton-capi-identity-grpc"),
    }
    rates = {}
    for kind, run in runs.items():
        assert run.returncode in (0, 2), run.show()  # 2: reported, not stable in 1 s windows
        # Every answer was validated against validation_data: a wrong one is an error.
        assert "Errors:" not in run.stdout, run.show()
        rates[kind] = float(figure(run, r"^    Throughput: ([\d.]+) infer/sec"))
    capi = runs["C API"]
    assert "Service Kind: TRITON_C_API" in capi.stdout, capi.show()
    assert "Avg C API call time" in capi.stdout, capi.show()
    # Triton's own statistics, read through the C API, count what the client counted (up
    # to the requests in flight at the windows' edges).
    served = int(figure(capi, r"^    Successful request count: (\d+)"))
    counted = int(figure(capi, r"^    Request count: (\d+)"))
    assert counted > 0 and abs(served - counted) <= 20 + counted // 100, capi.show()
    note(
        "triton   capi_identity c2: "
        + ", ".join(f"{kind} {rate:.0f} infer/s" for kind, rate in rates.items())
    )


def test_a_wrong_answer_is_an_error_in_process(triton_folder):
    data = data_file("capi-identity-wrong.json", [v + 1.0 for v in VALUES])
    run = in_process(
        triton_folder,
        ["-m", "capi_identity", "--input-data", data, "--request-count", "50"],
        "triton-capi-wrong",
    )
    # Triton served all 50, and every answer differs from validation_data: 50 errors,
    # counted and reported, not successes.
    assert "Errors: 50 (100.00%): validation × 50" in run.stdout, run.show()
    assert int(figure(run, r"^    Successful request count: (\d+)")) == 50, run.show()


def test_a_decoupled_model_streams_in_process(triton_folder, network_triton):
    data = data_file("capi-decoupled.json", VALUES)
    args = [
        "-m", "capi_decoupled", "--streaming", "--input-data", data, "--request-count", "200",
    ]
    runs = {
        "C API": in_process(triton_folder, args, "triton-capi-decoupled"),
        "gRPC stream": networked(network_triton, "grpc", args, "triton-capi-decoupled-grpc"),
    }
    for run in runs.values():
        assert run.returncode == 0, run.show()
        # Each of the three answers is validated; the final flag alone ends the request.
        assert "Errors:" not in run.stdout, run.show()
        assert "Responses per request: avg 3, p50 3" in run.stdout, run.show()
    first = {k: figure(r, r"First response latency: avg (\d+) usec") for k, r in runs.items()}
    note(
        "triton   capi_decoupled c1, 3 answers per request, first answer: "
        + ", ".join(f"{kind} {usec} usec" for kind, usec in first.items())
    )


def test_sequences_in_process_with_none_rejected(triton_folder):
    args = [
        "-m", "seq_acc", "--sequence-length", "10", "--sequence-length-variation", "0",
        "--concurrency-range", "4", "-p", "2000",
    ]
    run = in_process(triton_folder, args, "triton-capi-sequences")
    assert run.returncode in (0, 2), run.show()
    # A request Triton rejected (unknown or unstarted sequence) would be an error here.
    assert "Errors:" not in run.stdout, run.show()
    rate = float(figure(run, r"Sequences/s: ([\d.]+) \(\d+ sequences ended\)"))
    assert rate > 0, run.show()
    served = int(figure(run, r"^    Successful request count: (\d+)"))
    counted = int(figure(run, r"^    Request count: (\d+)"))
    inferred = int(figure(run, r"^    Inference count: (\d+)"))
    # Triton succeeded at every inference it ran. Its counts come from statistics read at the
    # window edges and the client's from answers timed against those edges, so a request in
    # flight at an edge (at most the 4 in flight) can fall on either side: 2486 against
    # 2485 in one CI run.
    assert served == inferred, run.show()
    assert abs(served - counted) <= 4, run.show()
    note(f"triton   seq_acc C API c4: {rate:.1f} sequences/s, none rejected")


def test_a_missing_library_is_one_sentence(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    run = run_tool(
        [INFERPERF, "profile", "--service-kind", "triton_c_api", "--triton-server-directory",
         tmp_path, "--model-repository", repo, "-m", "capi_identity"],
        "triton-capi-no-library",
    )
    assert run.returncode == 3, run.show()
    assert "holds no lib/libtritonserver.so" in run.stderr, run.show()

"""`--shared-memory system` on real Triton 2.51: the `tritonserver` binary of nvidia-pytriton
started on a repository the test writes, with `shm_identity`, a Python-backend identity
(FP32 [16]). inferperf writes its inputs into POSIX regions, registers them through Triton's
system shared-memory extension, and reads outputs back from per-slot regions; over HTTP and
gRPC Triton's statistics count every request with none failed, validation_data checked
through the output regions finds every answer right, and afterwards neither /dev/shm nor
Triton's status holds an inferperf region. The same runs without shared memory are noted
beside them."""

import json
import os
import re
import urllib.request

import pytest

from conftest import SUMMARY, ServerProcess, free_ports
from e2e_lib import ARTIFACTS, note, run_inferperf
from triton_repo_lib import (
    PlainTriton,
    pytriton_server_dir,
    tritonserver_command,
    tritonserver_env,
    write_identity,
    write_repository,
)


@pytest.fixture(scope="module")
def shm_triton(tmp_path_factory):
    server_dir, _ = pytriton_server_dir()
    if not (server_dir / "bin" / "tritonserver").is_file():
        pytest.skip(f"no tritonserver binary under {server_dir} (see scripts/e2e-setup).")
    folder = tmp_path_factory.mktemp("triton-shm-repo")
    repo, backends = write_repository(folder)
    write_identity(repo, "shm_identity")
    ports = free_ports(3)
    process = ServerProcess(
        "triton-shm", tritonserver_command(repo, backends, ports),
        env=tritonserver_env(dict(os.environ)), cwd=folder,
    )
    server = PlainTriton(ports, process)
    try:
        process.start()
        process.wait_until(lambda: identity_answers(server), 120, "an identity inference")
        SUMMARY["start"]["triton-shm"] = process.ready()
        yield server
    finally:
        process.stop()


def identity_answers(server):
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [16], "data": [1.5] * 16}]}
    request = urllib.request.Request(
        f"http://{server.http}/v2/models/shm_identity/infer",
        data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)["outputs"][0]["data"] == [1.5] * 16


def triton_regions(server):
    """The names Triton lists as registered system shared-memory regions."""
    url = f"http://{server.http}/v2/systemsharedmemory/status"
    with urllib.request.urlopen(url, timeout=5) as answer:
        return [r["name"] for r in json.load(answer)]


def leftover_objects():
    """inferperf objects in /dev/shm whose process is gone."""
    left = []
    for name in os.listdir("/dev/shm"):
        match = re.match(r"inferperf_(\d+)_", name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            left.append(name)
        except PermissionError:
            pass
    return left


def throughput(run):
    found = re.findall(r"^    Throughput: ([\d.]+) infer/sec", run.stdout, re.M)
    assert len(found) == 1, run.show()
    return float(found[0])


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_profiled_through_system_shared_memory(shm_triton, protocol):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    values = [i + 0.5 for i in range(16)]
    data = ARTIFACTS / "triton-shm-data.json"
    data.write_text(json.dumps({
        "data": [{"INPUT0": values}],
        "validation_data": [{"OUTPUT0": values}],
    }))
    rates = {}
    for shm in ("system", "none"):
        before = shm_triton.stats("shm_identity")
        run = run_inferperf(
            [
                "-m", "shm_identity", "-u", shm_triton.address(protocol), "-i", protocol,
                "--shared-memory", shm, "--input-data", data,
                "--concurrency-range", "2", "--request-count", "600",
            ],
            f"triton-shm-{protocol}-{shm}",
        )
        assert run.returncode == 0, run.show()
        # A wrong value read back from an output region would be a validation error.
        assert "Errors:" not in run.stdout, run.show()
        success, fail = (now - then for now, then in zip(shm_triton.stats("shm_identity"), before))
        assert fail == 0, f"Triton failed {fail} requests\n{run.show()}"
        assert success == 600, f"Triton served {success}\n{run.show()}"
        rates[shm] = throughput(run)
    assert not [n for n in triton_regions(shm_triton) if n.startswith("inferperf_")]
    assert leftover_objects() == []
    note(
        f"triton   shm_identity {protocol:<5} c2: {rates['system']:.0f} infer/s with "
        f"--shared-memory system, {rates['none']:.0f} without"
    )

"""Triton 2.51 as a plain server: the `tritonserver` binary and Python backend that
nvidia-pytriton ships, started directly on a model repository the test writes (no PyTriton
in between, so Triton's own sequence batcher and statistics answer). The repository holds
`seq_acc`, a Python-backend accumulator under `sequence_batching`: each request adds its
INPUT to its sequence's sum and answers the sum, taking a fixed 2 ms, so that a client's
sequences per second are the server's and not the client's."""

import json
import shutil
import sysconfig
import urllib.request

from e2e_lib import VENVS

SEQUENCE_CONFIG = """
backend: "python"
max_batch_size: 0
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
}
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

SEQUENCE_MODEL = '''
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def scalar(request, name):
    return int(pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0])


class TritonPythonModel:
    """The running sum of each sequence (by correlation id), reset by START, freed by END."""

    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        answers = []
        for request in requests:
            time.sleep(0.002)
            corrid = scalar(request, "CORRID")
            if scalar(request, "START"):
                self.sums[corrid] = 0
            total = self.sums.get(corrid, 0) + scalar(request, "INPUT")
            self.sums[corrid] = total
            if scalar(request, "END"):
                self.sums.pop(corrid, None)
            out = pb_utils.Tensor("OUTPUT", np.array([total], dtype=np.int32))
            answers.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return answers
'''


IDENTITY_CONFIG = """
backend: "python"
max_batch_size: 0
{policy}input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

IDENTITY_MODEL = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        answers = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", x)
            answers.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return answers
'''


def write_identity(repo, name, model=IDENTITY_MODEL, decoupled=False):
    """A Python-backend model (FP32 [16] in and out; the identity unless `model` is other
    code) named `name` in the repository; `decoupled` makes its transaction policy so."""
    policy = "model_transaction_policy { decoupled: True }\n" if decoupled else ""
    (repo / name / "1").mkdir(parents=True, exist_ok=True)
    (repo / name / "config.pbtxt").write_text(IDENTITY_CONFIG.replace("{policy}", policy))
    (repo / name / "1" / "model.py").write_text(model)


def pytriton_server_dir():
    site = VENVS / "triton" / "lib" / "python3.11" / "site-packages"
    return site / "pytriton" / "tritonserver", site / "nvidia_pytriton.libs"


def write_repository(folder):
    """The model repository, and a backend directory with the Python backend and the stub
    for this Python (tritonserver looks for `<backend dir>/python/`)."""
    server_dir, _ = pytriton_server_dir()
    repo = folder / "repo"
    (repo / "seq_acc" / "1").mkdir(parents=True, exist_ok=True)
    (repo / "seq_acc" / "config.pbtxt").write_text(SEQUENCE_CONFIG)
    (repo / "seq_acc" / "1" / "model.py").write_text(SEQUENCE_MODEL)
    backends = folder / "backends"
    shutil.copytree(server_dir / "backends" / "python", backends / "python", dirs_exist_ok=True)
    stub = server_dir / "python_backend_stubs" / "3.11" / "triton_python_backend_stub"
    shutil.copy2(stub, backends / "python" / stub.name)
    return repo, backends


def in_process_directory(folder):
    """`folder` as a Triton install for `--triton-server-directory`: the repository writer's
    `backends/` is already there; `lib/libtritonserver.so` links to the wheel's library."""
    _, libs = pytriton_server_dir()
    library = next(libs.glob("libtritonserver*.so"))
    (folder / "lib").mkdir(exist_ok=True)
    link = folder / "lib" / "libtritonserver.so"
    if not link.exists():
        link.symlink_to(library)
    return folder


def tritonserver_command(repo, backends, ports):
    server_dir, _ = pytriton_server_dir()
    http, grpc, metrics = ports
    return [
        server_dir / "bin" / "tritonserver",
        f"--model-repository={repo}", f"--backend-directory={backends}",
        "--http-address=127.0.0.1", f"--http-port={http}",
        "--grpc-address=127.0.0.1", f"--grpc-port={grpc}",
        "--metrics-address=127.0.0.1", f"--metrics-port={metrics}",
        "--allow-gpu-metrics=false",
    ]


def tritonserver_env(base):
    """The stub must load this interpreter's libpython and find the venv's packages (numpy)
    through the venv's python first on PATH, and the server its bundled libraries."""
    _, libs = pytriton_server_dir()
    paths = [sysconfig.get_config_var("LIBDIR"), str(libs), base.get("LD_LIBRARY_PATH", "")]
    path = f"{VENVS / 'triton' / 'bin'}:{base.get('PATH', '')}"
    return dict(base, LD_LIBRARY_PATH=":".join(p for p in paths if p), PATH=path)


class PlainTriton:
    """tritonserver on 127.0.0.1 free ports, with its statistics extension open."""

    def __init__(self, ports, process):
        self.http, self.grpc, self.metrics = (f"127.0.0.1:{p}" for p in ports)
        self.process = process

    def address(self, protocol):
        return self.http if protocol == "http" else self.grpc

    def stats(self, model="seq_acc"):
        """(success, fail) request counts of the model."""
        url = f"http://{self.http}/v2/models/{model}/stats"
        with urllib.request.urlopen(url, timeout=5) as answer:
            stats = json.load(answer)["model_stats"][0]["inference_stats"]
        return int(stats["success"]["count"]), int(stats["fail"]["count"])

    def sequence_answers(self):
        """Two requests of one sequence answer the running sum: 5, then 12."""
        sums = []
        for value, flags in ((5, {"sequence_start": True}), (7, {"sequence_end": True})):
            body = {
                "parameters": {"sequence_id": 999_999, **flags},
                "inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1], "data": [value]}],
            }
            request = urllib.request.Request(
                f"http://{self.http}/v2/models/seq_acc/infer",
                data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                sums.append(json.load(answer)["outputs"][0]["data"][0])
        return sums == [5, 12]

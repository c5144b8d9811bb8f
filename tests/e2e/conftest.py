"""Fixtures of the end-to-end suite: real servers started on free loopback ports, the
inferperf and perf_analyzer binaries, and a summary printed at the end of the run.

Every server runs in its own process group, is waited for with a bounded readiness check
and a real inference, and is stopped (SIGTERM to the group, then SIGKILL) when its fixture
ends, whether the tests passed or not. Logs, CSV reports and console outputs are kept under
target/e2e/ for a look after a failure.
"""

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from e2e_lib import (
    ARTIFACTS,
    INFERPERF,
    ROOT,
    SERVERS,
    SUMMARY,
    VENVS,
    Stats,
    add_sub,
    http_status,
    note,
    post_json,
)
from torchserve_lib import TorchServe, torchserve_config, torchserve_store


def free_ports(count):
    """`count` distinct ports that nothing listens on at 127.0.0.1 (the server binds them
    right after)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class ServerProcess:
    """One server process (and its children) in a process group of its own."""

    def __init__(self, name, cmd, env=None, cwd=None):
        self.name = name
        self.cmd = [str(part) for part in cmd]
        self.env = env
        self.cwd = cwd
        self.log_path = ARTIFACTS / f"{name}.log"
        self.proc = None
        self.started = None

    def start(self):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
        )

    def log_tail(self, lines=40):
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def wait_until(self, check, timeout, what):
        """Polls check() until it is true; fails with the log's end when the process dies
        or the time runs out."""
        deadline = time.monotonic() + timeout
        last_error = None
        while True:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"{self.name} exited with code {self.proc.returncode} while waiting for "
                    f"{what}; its log ({self.log_path}) ends with:\n{self.log_tail()}"
                )
            try:
                if check():
                    return
            except Exception as error:  # noqa: BLE001 - any failure means "not yet"
                last_error = error
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{self.name} was not ready ({what}) after {timeout} s (last error: "
                    f"{last_error!r}); its log ({self.log_path}) ends with:\n{self.log_tail()}"
                )
            time.sleep(0.25)

    def ready(self):
        seconds = time.monotonic() - self.started
        note(f"start  {self.name:<9} ready and answering inferences after {seconds:.1f} s")
        return seconds

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None or _group_alive(self.proc.pid):
            started = time.monotonic()
            _signal_group(self.proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while _group_alive(self.proc.pid) and time.monotonic() < deadline:
                self.proc.poll()
                time.sleep(0.1)
            if _group_alive(self.proc.pid):
                _signal_group(self.proc.pid, signal.SIGKILL)
                note(f"stop   {self.name}: SIGTERM was not enough after 20 s; killed")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            print(f"\n[e2e] stopped {self.name} in {time.monotonic() - started:.1f} s")
        self._log.close()


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


# ---------------------------------------------------------------------------------------
# the binaries


@pytest.fixture(scope="session")
def inferperf_bin():
    if not INFERPERF.is_file():
        pytest.fail(f"{INFERPERF} is missing: run `cargo build --release` (scripts/e2e does).")
    return INFERPERF


@pytest.fixture(scope="session")
def perf_analyzer():
    """perf_analyzer 2.50 from the tritonclient wheel, as real-servers.md says to run it:
    (path, environment). Skips, saying why, when it is not installed or does not start."""
    venv = VENVS / "triton"
    exe = venv / "bin" / "perf_analyzer"
    cuda_lib = venv / "lib" / "python3.11" / "site-packages" / "nvidia" / "cuda_runtime" / "lib"
    if not exe.is_file():
        pytest.skip(
            f"perf_analyzer is not installed: the tritonclient[all]==2.50.0 wheel did not put "
            f"it at {exe} (see scripts/e2e-setup's output)."
        )
    if not cuda_lib.is_dir():
        pytest.skip(
            f"perf_analyzer cannot start: nvidia-cuda-runtime-cu12 is not installed in {venv} "
            f"(see {VENVS / 'peer.log'})."
        )
    env = dict(os.environ, LD_LIBRARY_PATH=str(cuda_lib))
    try:
        probe = subprocess.run(
            [str(exe)], env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"perf_analyzer does not start here: {error}.")
    output = probe.stdout + probe.stderr
    if "Usage" not in output:
        first = output.strip().splitlines()[0] if output.strip() else f"exit code {probe.returncode}"
        pytest.skip(f"perf_analyzer does not start here: {first}")
    return exe, env


# ---------------------------------------------------------------------------------------
# NVIDIA Triton (PyTriton)


class Triton:
    models = ("identity", "add_sub", "sleep10", "stream5")

    def __init__(self, http_port, grpc_port, metrics_port, token, process):
        self.http_port = http_port
        self.grpc_port = grpc_port
        self.metrics_port = metrics_port
        self.token = token
        self.process = process
        self.http = f"127.0.0.1:{http_port}"
        self.grpc = f"127.0.0.1:{grpc_port}"
        self.token_header = {"triton-access-token": token}

    def address(self, protocol):
        return self.http if protocol == "http" else self.grpc

    def stats(self, model):
        """The model's statistics (through the access-token header) as a Stats snapshot."""
        request = urllib.request.Request(
            f"http://{self.http}/v2/models/{model}/stats", headers=self.token_header
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = json.loads(answer.read())
        return Stats.from_triton(body["model_stats"][0])

    def infer_check(self):
        """One real inference per model over HTTP and gRPC, with the outputs checked."""
        import numpy as np
        import tritonclient.grpc as grpcclient
        import tritonclient.http as httpclient

        for module, url in ((httpclient, self.http), (grpcclient, self.grpc)):
            with module.InferenceServerClient(url=url) as client:
                for model in self.models:
                    if not client.is_model_ready(model):
                        return False
                x = np.arange(16, dtype=np.float32)
                for model, batched in (("identity", True), ("sleep10", False)):
                    inp = module.InferInput("INPUT0", [1, 16] if batched else [16], "FP32")
                    inp.set_data_from_numpy(x.reshape(1, 16) if batched else x)
                    out = client.infer(model, [inp]).as_numpy("OUTPUT0")
                    assert np.array_equal(out.reshape(16), x), f"{model} answered {out}"
                a = np.arange(16, dtype=np.int32)
                sums, diffs = add_sub(module, client, a, a)
                assert np.array_equal(sums, 2 * a) and np.array_equal(diffs, 0 * a)
        return True


@pytest.fixture(scope="session")
def triton(tmp_path_factory):
    ports = free_ports(3)
    # Hex, so that the token never starts with "-" (argparse would take it for an option).
    token = secrets.token_hex(24)
    workspace = tmp_path_factory.mktemp("triton-workspace")
    # The python-backend stub must load the venv interpreter's libpython (real-servers.md).
    env = dict(os.environ, LD_LIBRARY_PATH=sysconfig.get_config_var("LIBDIR"), PYTHONUNBUFFERED="1")
    process = ServerProcess(
        "triton",
        [
            VENVS / "triton" / "bin" / "python",
            SERVERS / "triton_server.py",
            "--http-port", ports[0],
            "--grpc-port", ports[1],
            "--metrics-port", ports[2],
            f"--token={token}",
            "--workspace", workspace / "pytriton",
        ],
        env=env,
    )
    server = Triton(*ports, token, process)
    try:
        process.start()

        def models_ready():
            return all(
                http_status(f"http://{server.http}/v2/models/{m}/ready") == 200 for m in Triton.models
            )

        process.wait_until(models_ready, 180, "its four models ready")
        process.wait_until(server.infer_check, 30, "a real inference on each model")
        SUMMARY["start"]["triton"] = process.ready()
        yield server
    finally:
        process.stop()


# ---------------------------------------------------------------------------------------
# Seldon MLServer


class V2Server:
    """A KServe v2 server with one model, `echo`, that returns INPUT0 as OUTPUT0."""

    def __init__(self, name, http_port, grpc_port, process):
        self.name = name
        self.http = f"127.0.0.1:{http_port}"
        self.grpc = f"127.0.0.1:{grpc_port}"
        self.process = process

    def address(self, protocol):
        return self.http if protocol == "http" else self.grpc

    def infer_check(self, shape):
        """A real inference over HTTP (JSON) and gRPC; the answer must echo the input."""
        import numpy as np
        import tritonclient.grpc as grpcclient

        data = [float(i) for i in range(16)]
        body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": shape, "data": data}]}
        answer = post_json(f"http://{self.http}/v2/models/echo/infer", body)
        output = answer["outputs"][0]
        assert output["name"] == "OUTPUT0" and output["data"] == data, answer
        self.http_output = output
        with grpcclient.InferenceServerClient(url=self.grpc) as client:
            inp = grpcclient.InferInput("INPUT0", shape, "FP32")
            inp.set_data_from_numpy(np.array(data, dtype=np.float32).reshape(shape))
            result = client.infer("echo", [inp]).get_response()
        assert result.outputs[0].name == "OUTPUT0", result
        return True


@pytest.fixture(scope="module")
def mlserver(tmp_path_factory):
    http_port, grpc_port, metrics_port = free_ports(3)
    folder = tmp_path_factory.mktemp("mlserver")
    (folder / "settings.json").write_text(
        json.dumps(
            {
                "host": "127.0.0.1",
                "http_port": http_port,
                "grpc_port": grpc_port,
                "metrics_port": metrics_port,
            }
        )
    )
    model_dir = folder / "echo"
    model_dir.mkdir()
    shutil.copy(SERVERS / "mlserver_echo.py", model_dir / "mlserver_echo.py")
    tensor = {"datatype": "FP32", "shape": [-1, 16]}
    (model_dir / "model-settings.json").write_text(
        json.dumps(
            {
                "name": "echo",
                "implementation": "mlserver_echo.EchoModel",
                "inputs": [dict(name="INPUT0", **tensor)],
                "outputs": [dict(name="OUTPUT0", **tensor)],
            }
        )
    )
    process = ServerProcess(
        "mlserver",
        [VENVS / "mlserver" / "bin" / "mlserver", "start", folder],
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        cwd=folder,
    )
    server = V2Server("mlserver", http_port, grpc_port, process)
    try:
        process.start()
        process.wait_until(
            lambda: http_status(f"http://{server.http}/v2/models/echo/ready") == 200,
            120,
            "model echo ready",
        )
        process.wait_until(lambda: server.infer_check([1, 16]), 30, "a real inference")
        SUMMARY["start"]["mlserver"] = process.ready()
        yield server
    finally:
        process.stop()


# ---------------------------------------------------------------------------------------
# KServe model server


@pytest.fixture(scope="module")
def kserve():
    http_port, grpc_port = free_ports(2)
    process = ServerProcess(
        "kserve",
        [
            VENVS / "kserve" / "bin" / "python",
            SERVERS / "kserve_echo.py",
            "--http_port", http_port,
            "--grpc_port", grpc_port,
        ],
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        cwd=ARTIFACTS,
    )
    server = V2Server("kserve", http_port, grpc_port, process)
    try:
        process.start()
        process.wait_until(
            lambda: http_status(f"http://{server.http}/v2/models/echo/ready") == 200,
            120,
            "model echo ready",
        )
        process.wait_until(lambda: server.infer_check([1, 16]), 30, "a real inference")
        SUMMARY["start"]["kserve"] = process.ready()
        yield server
    finally:
        process.stop()


# ---------------------------------------------------------------------------------------
# llama-cpp-python's OpenAI-compatible server with a random-weight model written here


class LlamaServer:
    """llama-cpp-python's server on 127.0.0.1 with the model `tiny-llama` (see
    servers/llama_model.py): every request gets exactly max_tokens printable one-byte tokens,
    streamed one per event. `mark()` and `timings(mark)` give llama.cpp's timing blocks of the
    requests served since the mark."""

    model = "tiny-llama"

    def __init__(self, port, process, model_path):
        self.address = f"127.0.0.1:{port}"
        self.process = process
        self.model_path = model_path

    @property
    def pid(self):
        return self.process.proc.pid

    def mark(self):
        return self.process.log_path.stat().st_size

    def timings(self, mark, keep=None):
        """The timing blocks logged since `mark`; `keep`: a path to copy those log lines to."""
        from llm_lib import parse_llama_timings

        with open(self.process.log_path, "rb") as log:
            log.seek(mark)
            text = log.read().decode(errors="replace")
        if keep is not None:
            Path(keep).write_text(text)
        return parse_llama_timings(text)

    def timings_until(self, mark, count, keep=None):
        """The timing blocks since `mark`, waiting (up to 5 s) until it has logged `count` of
        them: it prints a request's block as the generation ends, which may be just after the
        client saw the answer's end."""
        deadline = time.monotonic() + 5
        while True:
            timings = self.timings(mark, keep=keep)
            if len(timings) >= count or time.monotonic() > deadline:
                return timings
            time.sleep(0.1)

    def check(self):
        """Answers of both endpoints, streamed and not, have exactly 16 printable tokens; the
        non-streamed ones say so in their usage, the streamed ones in 16 content events."""
        import re

        allowed = re.compile(r"[a-z0-9]{16}")
        base = f"http://{self.address}/v1"
        chat = {"model": self.model, "messages": [{"role": "user", "content": "ka lo mi"}], "max_tokens": 16}
        completion = {"model": self.model, "prompt": "ka lo mi", "max_tokens": 16}
        answer = post_json(f"{base}/chat/completions", chat, timeout=60)
        text = answer["choices"][0]["message"]["content"]
        assert allowed.fullmatch(text) and answer["usage"]["completion_tokens"] == 16, answer
        answer = post_json(f"{base}/completions", completion, timeout=60)
        text = answer["choices"][0]["text"]
        assert allowed.fullmatch(text) and answer["usage"]["completion_tokens"] == 16, answer
        for path, body, field in (
            ("chat/completions", chat, lambda c: c["delta"].get("content")),
            ("completions", completion, lambda c: c.get("text")),
        ):
            pieces = sse_contents(f"{base}/{path}", dict(body, stream=True), field)
            assert len(pieces) == 16 and all(len(p) == 1 for p in pieces), (path, pieces)
            assert allowed.fullmatch("".join(pieces)), (path, pieces)
        return True


def sse_contents(url, body, field):
    """The non-empty contents of a server-sent-event stream, one per event."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    pieces = []
    with urllib.request.urlopen(request, timeout=60) as answer:
        for line in answer:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            content = field(json.loads(line[6:])["choices"][0])
            if content:
                pieces.append(content)
    return pieces


@pytest.fixture(scope="session")
def tokenizer():
    """The tiny model's tokenizer as a Hugging Face folder (servers/llama_model.py), as the
    tools count with it: one token per byte, a space the piece "▁"."""
    folder = ARTIFACTS / "llm-tokenizer"
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(
        [VENVS / "aiperf" / "bin" / "python", SERVERS / "llama_model.py", "tokenizer", folder],
        check=True,
        timeout=120,
    )
    return folder


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """The server with an 8-layer, 512-wide model (110 MB, written in about a second): one
    llama.cpp thread decodes a token in about 6 ms and a 150-token prompt in about 100 ms
    here, so the server, not the clients, sets the pace. One thread, not two: on 2 cores the
    load tester needs the other one, and two llama.cpp threads that share the cores with a
    client spin at every barrier (measured: 9 ms per token beside AIPerf, 350 ms beside a
    compiler, against 5.7 ms alone)."""
    folder = tmp_path_factory.mktemp("llama")
    model_path = folder / "tiny-llama.gguf"
    python = VENVS / "llama" / "bin" / "python"
    subprocess.run(
        [python, SERVERS / "llama_model.py", "gguf", model_path, "--layers", "8", "--width", "512"],
        check=True,
        timeout=120,
    )
    (port,) = free_ports(1)
    process = ServerProcess(
        "llama",
        [
            python, "-m", "llama_cpp.server",
            "--model", model_path,
            "--model_alias", LlamaServer.model,
            "--host", "127.0.0.1",
            "--port", port,
            "--n_threads", "1",
            "--n_threads_batch", "1",
            # By default a waiting request aborts the running stream (real-servers.md).
            "--interrupt_requests", "false",
        ],
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        cwd=folder,
    )
    server = LlamaServer(port, process, model_path)
    try:
        process.start()
        process.wait_until(
            lambda: http_status(f"http://{server.address}/v1/models") == 200, 120, "/v1/models"
        )
        process.wait_until(server.check, 60, "answers of exactly 16 tokens")
        SUMMARY["start"]["llama"] = process.ready()
        yield server
    finally:
        process.stop()


# ---------------------------------------------------------------------------------------
# inferperf's own embedded server (`inferperf serve`), for tests of the tool's outputs


class EmbeddedServer:
    """`inferperf serve` on 127.0.0.1 with the models asked for (NAME=KIND:OPTS)."""

    def __init__(self, http_port, grpc_port, models, process):
        self.http = f"127.0.0.1:{http_port}"
        self.grpc = f"127.0.0.1:{grpc_port}"
        self.models = models
        self.process = process

    def infer_check(self):
        """Every model is ready and answers a real inference (INPUT0 echoed as OUTPUT0)."""
        data = [float(i) for i in range(16)]
        for name in self.models:
            if http_status(f"http://{self.http}/v2/models/{name}/ready") != 200:
                return False
            body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": data}]}
            answer = post_json(f"http://{self.http}/v2/models/{name}/infer", body)
            output = answer["outputs"][0]
            assert output["name"] == "OUTPUT0" and output["data"] == data, answer
        return True


def serve_with_metrics(name, binary, models):
    """An `inferperf serve` process (not started) with `models` ({"name": "kind:opts"}) and
    a metrics port: (process, HTTP 127.0.0.1:PORT, metrics 127.0.0.1:PORT)."""
    http_port, grpc_port, metrics_port = free_ports(3)
    cmd = [
        binary, "serve",
        "--http-port", http_port, "--grpc-port", grpc_port, "--metrics-port", metrics_port,
    ]
    for model, spec in models.items():
        cmd += ["--model", f"{model}={spec}"]
    return ServerProcess(name, cmd), f"127.0.0.1:{http_port}", f"127.0.0.1:{metrics_port}"


@pytest.fixture(scope="module")
def embedded_server(inferperf_bin, request):
    """The embedded server with the models of the module's EMBEDDED_MODELS
    ({"name": "kind:opts"})."""
    models = request.module.EMBEDDED_MODELS
    http_port, grpc_port = free_ports(2)
    cmd = [inferperf_bin, "serve", "--http-port", http_port, "--grpc-port", grpc_port]
    for name, spec in models.items():
        cmd += ["--model", f"{name}={spec}"]
    process = ServerProcess("inferperf-serve", cmd)
    server = EmbeddedServer(http_port, grpc_port, models, process)
    try:
        process.start()
        process.wait_until(server.infer_check, 30, "its models ready and answering")
        SUMMARY["start"]["inferperf-serve"] = process.ready()
        yield server
    finally:
        process.stop()


# ---------------------------------------------------------------------------------------
# a TF Serving PredictionService written with tensorflow-serving-api (servers/tfs_server.py)


class TfsServer:
    """servers/tfs_server.py on 127.0.0.1: model `echo` over gRPC, and its own count of the
    predictions it answered."""

    def __init__(self, grpc_port, count_port, process):
        self.grpc = f"127.0.0.1:{grpc_port}"
        self.count_url = f"http://127.0.0.1:{count_port}/count"
        self.process = process

    def predictions(self):
        with urllib.request.urlopen(self.count_url, timeout=5) as answer:
            return json.loads(answer.read())["predictions"]

    def answers(self):
        """A real Predict through the official client answers (and counts)."""
        run = subprocess.run(
            [VENVS / "tfs" / "bin" / "python", SERVERS / "tfs_client.py", self.grpc, "echo"],
            capture_output=True, text=True, timeout=60,
        )
        return run.returncode == 0 and json.loads(run.stdout)["equal"]


@pytest.fixture(scope="module")
def tfs_server():
    grpc_port, count_port = free_ports(2)
    process = ServerProcess(
        "tfs-server",
        [
            VENVS / "tfs" / "bin" / "python", SERVERS / "tfs_server.py",
            "--grpc-port", grpc_port, "--count-port", count_port,
        ],
        env=dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2"),
        cwd=ARTIFACTS,
    )
    server = TfsServer(grpc_port, count_port, process)
    try:
        process.start()
        process.wait_until(lambda: server.predictions() >= 0, 120, "its count page")
        process.wait_until(server.answers, 60, "a real Predict")
        SUMMARY["start"]["tfs-server"] = process.ready()
        yield server
    finally:
        process.stop()


# ---------------------------------------------------------------------------------------
# TorchServe 0.12 (venv `torchserve`), with the handler of torchserve_lib.py archived with
# torch-model-archiver


@pytest.fixture(scope="module")
def torchserve(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torchserve")
    bin_dir = VENVS / "torchserve" / "bin"
    env = dict(
        os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}",
        LOG_LOCATION=str(folder / "logs"), METRICS_LOCATION=str(folder / "logs"),
    )
    torchserve_store(folder, env)
    ports = free_ports(3)
    config = torchserve_config(folder, ports)
    process = ServerProcess(
        "torchserve",
        [
            bin_dir / "torchserve", "--start", "--foreground", "--ncs", "--disable-token-auth",
            "--model-store", folder / "store", "--models", "echo=echo.mar",
            "--ts-config", config,
        ],
        env=env,
        cwd=folder,
    )
    server = TorchServe(ports, process, env)
    try:
        process.start()
        process.wait_until(server.predicts, 120, "a real prediction")
        SUMMARY["start"]["torchserve"] = process.ready()
        yield server
    finally:
        # TorchServe's own stop first (its frontend, then its workers), then the group.
        subprocess.run(
            [bin_dir / "torchserve", "--stop"], env=env, cwd=folder, timeout=60,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        process.stop()


# ---------------------------------------------------------------------------------------
# the summary at the end of the run


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    terminalreporter.section("e2e summary")
    times = VENVS / "install-times.txt"
    if times.is_file():
        write("install (scripts/e2e-setup, in parallel):")
        for line in times.read_text().splitlines():
            write("  " + line.replace("== e2e-setup: ", ""))
    for line in SUMMARY["lines"]:
        write(line)
    write(f"logs, CSV and console outputs: {ARTIFACTS.relative_to(ROOT)}/")


def _interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_sessionstart(session):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # A SIGTERM (a CI time-out, say) ends the run like Ctrl-C, so the fixtures still stop
    # the servers.
    signal.signal(signal.SIGTERM, _interrupted)

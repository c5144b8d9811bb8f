"""TorchServe for the e2e suite: a handler that answers 64 bytes per request, archived
with torch-model-archiver; the config.properties that binds TorchServe's three addresses to
127.0.0.1 with Prometheus metrics; and the running server's own request counter."""

import subprocess
import urllib.request

from e2e_lib import VENVS


TORCHSERVE_HANDLER = """
def handle(data, context):
    # One fixed-size answer per request of the batch; None while the worker starts.
    if data is None:
        return None
    return [b"x" * 64 for _ in data]
"""


class TorchServe:
    """TorchServe on 127.0.0.1 free ports: model `echo` (the handler above), its inference,
    management and metrics addresses, and its own request counter."""

    def __init__(self, ports, process, env):
        self.inference, self.management, self.metrics = (f"127.0.0.1:{p}" for p in ports)
        self.process = process
        self.env = env

    def requests(self, model="echo"):
        """ts_inference_requests_total of the model, summed over its versions."""
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as answer:
            page = answer.read().decode()
        total = 0.0
        for line in page.splitlines():
            if line.startswith("ts_inference_requests_total{") and f'model_name="{model}"' in line:
                total += float(line.rsplit(" ", 1)[1])
        return int(total)

    def predicts(self):
        """A real prediction answers with the handler's 64 bytes."""
        request = urllib.request.Request(
            f"http://{self.inference}/predictions/echo", data=b"\0" * 16, method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status == 200 and answer.read() == b"x" * 64


def torchserve_store(folder, env):
    """Writes the handler and archives it as store/echo.mar."""
    (folder / "store").mkdir(parents=True, exist_ok=True)
    (folder / "handler.py").write_text(TORCHSERVE_HANDLER)
    subprocess.run(
        [
            VENVS / "torchserve" / "bin" / "torch-model-archiver", "--model-name", "echo",
            "--version", "1.0", "--handler", folder / "handler.py",
            "--export-path", folder / "store", "--force",
        ],
        check=True, env=env, cwd=folder, timeout=120,
    )


def torchserve_config(folder, ports):
    inference, management, metrics = ports
    path = folder / "config.properties"
    path.write_text(
        f"inference_address=http://127.0.0.1:{inference}\n"
        f"management_address=http://127.0.0.1:{management}\n"
        f"metrics_address=http://127.0.0.1:{metrics}\n"
        "metrics_mode=prometheus\n"
        "default_workers_per_model=1\n"
        "disable_token_authorization=true\n"
        "install_py_dep_per_model=false\n"
    )
    return path

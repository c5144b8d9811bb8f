"""inferperf over TLS and mTLS against real components: NVIDIA Triton 2.51 (PyTriton) with its
gRPC endpoint on TLS, a second one on mTLS, and Debian's nginx as an HTTPS proxy in front of
Triton's HTTP endpoint, as perf_analyzer's manual describes. Each path is profiled (the
server's own statistics count the requests) and each has a bad-certificate case that must end
in one sentence naming the cause, with exit code 99.

The certificates are made by the test (tls_lib.py): a CA, a server certificate for 127.0.0.1
and localhost, a client certificate, and an authority that signed nothing here.
"""

import json
import os
import re
import secrets
import shutil
import sysconfig
import urllib.request

import pytest

from conftest import ServerProcess, free_ports
from e2e_lib import SERVERS, SUMMARY, VENVS, Stats, assert_profiled, http_status, levels_text, note, run_inferperf
from tls_lib import make_certs

QUICK = ["--concurrency-range", "1:2", "-p", "1000", "-s", "20", "-r", "6"]


class TlsTriton:
    """A PyTriton server whose gRPC endpoint speaks TLS (mTLS when `mutual`); its HTTP
    endpoint stays plain, for the statistics."""

    def __init__(self, http_port, grpc_port, token, process):
        self.token = token
        self.http = f"127.0.0.1:{http_port}"
        self.grpcs = f"grpcs://127.0.0.1:{grpc_port}"
        self.grpc_port = grpc_port
        self.process = process

    def stats(self):
        request = urllib.request.Request(
            f"http://{self.http}/v2/models/identity/stats", headers={"triton-access-token": self.token}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return Stats.from_triton(json.loads(answer.read())["model_stats"][0])

    def ready(self):
        return http_status(f"http://{self.http}/v2/models/identity/ready") == 200


def start_tls_triton(name, certs, workspace, mutual):
    ports = free_ports(3)
    token = secrets.token_hex(24)
    env = dict(os.environ, LD_LIBRARY_PATH=sysconfig.get_config_var("LIBDIR"), PYTHONUNBUFFERED="1")
    cmd = [
        VENVS / "triton" / "bin" / "python", SERVERS / "triton_tls_server.py",
        "--http-port", ports[0], "--grpc-port", ports[1], "--metrics-port", ports[2],
        f"--token={token}", "--workspace", workspace / "pytriton",
        "--cert", certs / "server.pem", "--key", certs / "server.key", "--root", certs / "ca.pem",
    ]
    process = ServerProcess(name, cmd + (["--mutual"] if mutual else []), env=env)
    process.start()
    return TlsTriton(ports[0], ports[1], token, process)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("tls-certs"))


@pytest.fixture(scope="module")
def tls_tritons(certs, tmp_path_factory):
    """Both servers start together, then each is waited for."""
    servers = {}
    try:
        for name, mutual in (("triton-tls", False), ("triton-mtls", True)):
            servers[name] = start_tls_triton(name, certs, tmp_path_factory.mktemp(name), mutual)
        for name, server in servers.items():
            server.process.wait_until(server.ready, 180, "its model ready")
            SUMMARY["start"][name] = server.process.ready()
        yield servers
    finally:
        for server in servers.values():
            server.process.stop()


NGINX_CONF = """
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream triton {{ server {upstream}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {certs}/server.pem;
        ssl_certificate_key {certs}/server.key;
        location / {{
            proxy_pass http://triton;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


@pytest.fixture(scope="module")
def nginx(tls_tritons, certs, tmp_path_factory):
    """nginx terminating HTTPS in front of the TLS server's (plain) HTTP endpoint."""
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(exe):
        pytest.fail("nginx is not installed: scripts/e2e-setup installs Debian's nginx")
    directory = tmp_path_factory.mktemp("nginx")
    (port,) = free_ports(1)
    upstream = tls_tritons["triton-tls"]
    conf = directory / "nginx.conf"
    conf.write_text(NGINX_CONF.format(dir=directory, upstream=upstream.http, port=port, certs=certs))
    process = ServerProcess("nginx", [exe, "-c", conf, "-p", directory, "-e", directory / "error.log"])
    try:
        process.start()
        url = f"https://127.0.0.1:{port}/v2/health/ready"
        process.wait_until(lambda: _https_ready(url, certs), 30, "HTTPS answers")
        SUMMARY["start"]["nginx"] = process.ready()
        yield f"https://127.0.0.1:{port}"
    finally:
        process.stop()


def _https_ready(url, certs):
    import ssl

    context = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as answer:
            return answer.status == 200
    except OSError:
        return False


def profile_counted(server, args, name):
    """Profiles `identity` through `args`; the server counted every reported request."""
    before = server.stats()
    token = ["-H", f"triton-access-token: {server.token}"]
    run = run_inferperf(["-m", "identity", *token, *args, *QUICK], name)
    delta = server.stats() - before
    assert_profiled(run, [1, 2])
    assert delta.fail == 0, run.show()
    reported = sum(int(n) for n in re.findall(r"Request count: (\d+)", run.stdout))
    assert 0 < reported <= delta.success, run.show()
    assert "Using TLS to the server" in run.stdout, run.show()
    handshakes = re.search(r"TLS: (\d+) connection\(s\) opened with a handshake, median ([\d.]+) ms", run.stdout)
    assert handshakes, run.show()
    return run, handshakes


def refused(args, name, phrase):
    run = run_inferperf(["-m", "identity", "--concurrency-range", "1", "-p", "500", *args], name, timeout=60)
    assert run.returncode == 99, run.show()
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and phrase in lines[0], run.show()


def test_grpc_over_tls_to_triton(tls_tritons, certs, inferperf_bin):
    server = tls_tritons["triton-tls"]
    ca = ["--ssl-grpc-root-certifications-file", str(certs / "ca.pem")]
    run, handshakes = profile_counted(server, ["-u", server.grpcs, "-i", "grpc", *ca], "tls-grpc")
    note(f"tls      triton grpcs: {levels_text(run)}; handshake median {handshakes[2]} ms")
    # perf_analyzer's spelling: a plain address with --ssl-grpc-use-ssl.
    plain_address = f"127.0.0.1:{server.grpc_port}"
    profile_counted(server, ["-u", plain_address, "-i", "grpc", "--ssl-grpc-use-ssl", *ca], "tls-grpc-use-ssl")
    other = ["--ssl-grpc-root-certifications-file", str(certs / "other-ca.pem")]
    refused(["-u", server.grpcs, "-i", "grpc", *other], "tls-grpc-unknown-ca", "(unknown issuer)")


def test_grpc_over_mtls_to_triton(tls_tritons, certs, inferperf_bin):
    server = tls_tritons["triton-mtls"]
    ca = ["--ssl-grpc-root-certifications-file", str(certs / "ca.pem")]
    identity = [
        "--ssl-grpc-certificate-chain-file", str(certs / "client.pem"),
        "--ssl-grpc-private-key-file", str(certs / "client.key"),
    ]
    run, handshakes = profile_counted(server, ["-u", server.grpcs, "-i", "grpc", *ca, *identity], "mtls-grpc")
    note(f"tls      triton grpcs mTLS: {levels_text(run)}; handshake median {handshakes[2]} ms")
    # Triton's gRPC server closes the connection without an alert; the sentence still says why.
    refused(
        ["-u", server.grpcs, "-i", "grpc", *ca],
        "mtls-grpc-no-client-cert",
        "requires a client certificate (mTLS) and none was given",
    )


def test_https_through_nginx_to_triton(tls_tritons, nginx, certs, inferperf_bin):
    server = tls_tritons["triton-tls"]
    ca = ["--ssl-https-ca-certificates-file", str(certs / "ca.pem")]
    run, handshakes = profile_counted(server, ["-u", nginx, *ca], "tls-https-nginx")
    note(f"tls      nginx https -> triton http: {levels_text(run)}; handshake median {handshakes[2]} ms")
    other = ["--ssl-https-ca-certificates-file", str(certs / "other-ca.pem")]
    refused(["-u", nginx, *other], "tls-https-unknown-ca", "(unknown issuer)")
    named = [*ca, "--ssl-target-name", "models.example.internal"]
    refused(["-u", nginx, *named], "tls-https-name-mismatch", "(name mismatch)")

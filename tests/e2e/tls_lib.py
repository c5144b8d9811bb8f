"""Certificates for the TLS end-to-end tests, made with the openssl command line.

`make_certs(dir)` writes, all PEM:
  ca.pem / ca.key            the test's certificate authority
  server.pem / server.key    a server certificate for 127.0.0.1 and localhost, signed by ca
  client.pem / client.key    a client certificate (clientAuth), signed by ca
  other-ca.pem               an authority that signed nothing here (the "unknown issuer" case)
"""

import os
import subprocess
from pathlib import Path


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _authority(name, cwd):
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
        "-subj", f"/CN=inferperf e2e {name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=cwd,
    )


def _leaf(name, usage, san, cwd):
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=inferperf e2e {name}",
        cwd=cwd,
    )
    extensions = Path(cwd) / f"{name}.ext"
    lines = ["basicConstraints=CA:FALSE", f"extendedKeyUsage={usage}"]
    if san:
        lines.append(f"subjectAltName={san}")
    extensions.write_text("\n".join(lines) + "\n")
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", extensions.name,
        cwd=cwd,
    )


def make_certs(directory):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _authority("ca", directory)
    _authority("other-ca", directory)
    _leaf("server", "serverAuth", "IP:127.0.0.1,DNS:localhost", directory)
    _leaf("client", "clientAuth", None, directory)
    return directory

"""NVIDIA Triton 2.51 (through PyTriton) with its gRPC endpoint on TLS, for the TLS tests.

Run with the triton venv's python, as triton_server.py (conftest.py sets LD_LIBRARY_PATH).

    python triton_tls_server.py --http-port P --grpc-port Q --metrics-port R --token T \
        --workspace DIR --cert server.pem --key server.key --root ca.pem [--mutual]

One model, `identity` (FP32 INPUT0 [16] -> OUTPUT0, max batch 8). gRPC speaks TLS with the
server certificate; with --mutual it also asks for a client certificate signed by --root
(mTLS). HTTP stays plain: the tests read the model's statistics there, with the access token.
"""

import argparse
import logging

import numpy as np
from pytriton.decorators import batch
from pytriton.model_config import ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig


@batch
def identity(INPUT0):
    return {"OUTPUT0": INPUT0}


def main():
    parser = argparse.ArgumentParser()
    for port in ("--http-port", "--grpc-port", "--metrics-port"):
        parser.add_argument(port, type=int, required=True)
    for path in ("--token", "--workspace", "--cert", "--key", "--root"):
        parser.add_argument(path, required=True)
    parser.add_argument("--mutual", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=args.http_port,
        grpc_address="127.0.0.1",
        grpc_port=args.grpc_port,
        metrics_address="127.0.0.1",
        metrics_port=args.metrics_port,
        allow_gpu_metrics=False,
        grpc_use_ssl=True,
        grpc_use_ssl_mutual=args.mutual,
        grpc_server_cert=args.cert,
        grpc_server_key=args.key,
        grpc_root_cert=args.root,
    )
    security = TritonSecurityConfig(access_token=args.token)
    with Triton(config=config, workspace=args.workspace, security_config=security) as triton:
        triton.bind(
            model_name="identity",
            infer_func=identity,
            inputs=[Tensor(name="INPUT0", dtype=np.float32, shape=(16,))],
            outputs=[Tensor(name="OUTPUT0", dtype=np.float32, shape=(16,))],
            config=ModelConfig(max_batch_size=8),
        )
        triton.serve()


if __name__ == "__main__":
    main()

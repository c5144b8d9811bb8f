"""NVIDIA Triton 2.51 (through PyTriton) serving the three models the e2e suite profiles.

Run with the triton venv's python. LD_LIBRARY_PATH must hold the interpreter's libpython
directory (the python-backend stub loads it); conftest.py sets it.

    python triton_server.py --http-port P --grpc-port Q --metrics-port R --token T --workspace DIR

Models:
  identity  FP32 INPUT0 [16] -> OUTPUT0, max batch 8, dynamic batching (0.5 ms queue delay)
  add_sub   INT32 INPUT0, INPUT1 [16] -> OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1
  sleep10   FP32 INPUT0 [16] -> OUTPUT0, sleeps 10 ms per request; one instance, no batching
  stream5   decoupled: FP32 INPUT0 [16] -> five answers OUTPUT0 = INPUT0, 5 ms apart, then the
            end of the stream (the python backend's empty final response); no batching
"""

import argparse
import logging
import time

import numpy as np
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig


@batch
def identity(INPUT0):
    return {"OUTPUT0": INPUT0}


def add_sub(requests):
    answers = []
    for request in requests:
        a = request["INPUT0"]
        b = request["INPUT1"]
        answers.append({"OUTPUT0": (a + b).astype(np.int32), "OUTPUT1": (a - b).astype(np.int32)})
    return answers


def sleep10(requests):
    answers = []
    for request in requests:
        time.sleep(0.01)
        answers.append({"OUTPUT0": request["INPUT0"]})
    return answers


def stream5(requests):
    """A decoupled model: each yield is one answer to every request of the call."""
    for _ in range(5):
        time.sleep(0.005)
        yield [{"OUTPUT0": request["INPUT0"]} for request in requests]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--workspace", required=True)
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
    )
    security = TritonSecurityConfig(access_token=args.token)
    with Triton(config=config, workspace=args.workspace, security_config=security) as triton:
        triton.bind(
            model_name="identity",
            infer_func=identity,
            inputs=[Tensor(name="INPUT0", dtype=np.float32, shape=(16,))],
            outputs=[Tensor(name="OUTPUT0", dtype=np.float32, shape=(16,))],
            config=ModelConfig(
                max_batch_size=8,
                batcher=DynamicBatcher(max_queue_delay_microseconds=500),
            ),
        )
        triton.bind(
            model_name="add_sub",
            infer_func=add_sub,
            inputs=[
                Tensor(name="INPUT0", dtype=np.int32, shape=(16,)),
                Tensor(name="INPUT1", dtype=np.int32, shape=(16,)),
            ],
            outputs=[
                Tensor(name="OUTPUT0", dtype=np.int32, shape=(16,)),
                Tensor(name="OUTPUT1", dtype=np.int32, shape=(16,)),
            ],
            config=ModelConfig(batching=False),
        )
        triton.bind(
            model_name="sleep10",
            infer_func=sleep10,
            inputs=[Tensor(name="INPUT0", dtype=np.float32, shape=(16,))],
            outputs=[Tensor(name="OUTPUT0", dtype=np.float32, shape=(16,))],
            config=ModelConfig(batching=False),
        )
        triton.bind(
            model_name="stream5",
            infer_func=stream5,
            inputs=[Tensor(name="INPUT0", dtype=np.float32, shape=(16,))],
            outputs=[Tensor(name="OUTPUT0", dtype=np.float32, shape=(16,))],
            config=ModelConfig(batching=False, decoupled=True),
        )
        triton.serve()


if __name__ == "__main__":
    main()

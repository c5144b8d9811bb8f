"""A TF Serving PredictionService written with the official `tensorflow-serving-api`
messages and gRPC stubs, the reference encoding for inferperf's TF Serving adapter (no TF
Serving binary can be installed here). One model, `echo`, with the signature
`serving_default`: input `x` (DT_FLOAT, shape [-1, 16]) answered as output `y`, unchanged.

    python tfs_server.py --grpc-port P --count-port Q

It counts the predictions it answered and serves that count, as JSON, on
http://127.0.0.1:Q/count, so the test can hold inferperf's request count against it.
Listens on 127.0.0.1 only.
"""

import argparse
import json
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2
from tensorflow.core.protobuf import meta_graph_pb2
from tensorflow_serving.apis import (
    get_model_metadata_pb2,
    predict_pb2,
    prediction_service_pb2_grpc,
)

MODEL = "echo"
SIGNATURE = "serving_default"
WIDTH = 16


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.predictions = 0

    def add(self):
        with self.lock:
            self.predictions += 1


def shape(*dims):
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims]
    )


def signature():
    info = lambda name: meta_graph_pb2.TensorInfo(
        name=f"{name}:0", dtype=types_pb2.DT_FLOAT, tensor_shape=shape(-1, WIDTH)
    )
    sig = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
    sig.inputs["x"].CopyFrom(info("x"))
    sig.outputs["y"].CopyFrom(info("y"))
    return sig


class Service(prediction_service_pb2_grpc.PredictionServiceServicer):
    def __init__(self, counter):
        self.counter = counter

    def _model(self, spec, context):
        if spec.name != MODEL:
            context.abort(grpc.StatusCode.NOT_FOUND, f"Servable not found for request: Latest({spec.name})")
        if spec.signature_name not in ("", SIGNATURE):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f'Serving signature name: "{spec.signature_name}" not found in signature def',
            )

    def Predict(self, request, context):
        self._model(request.model_spec, context)
        x = request.inputs.get("x")
        if x is None or x.dtype != types_pb2.DT_FLOAT:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "input x (DT_FLOAT) is missing")
        dims = [d.size for d in x.tensor_shape.dim]
        if len(dims) != 2 or dims[1] != WIDTH:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"x has shape {dims}, not [n, {WIDTH}]")
        answer = predict_pb2.PredictResponse()
        answer.model_spec.name = MODEL
        answer.model_spec.version.value = 1
        answer.model_spec.signature_name = SIGNATURE
        y = tensor_pb2.TensorProto()
        y.CopyFrom(x)
        answer.outputs["y"].CopyFrom(y)
        self.counter.add()
        return answer

    def GetModelMetadata(self, request, context):
        self._model(request.model_spec, context)
        answer = get_model_metadata_pb2.GetModelMetadataResponse()
        answer.model_spec.name = MODEL
        answer.model_spec.version.value = 1
        signatures = get_model_metadata_pb2.SignatureDefMap()
        signatures.signature_def[SIGNATURE].CopyFrom(signature())
        answer.metadata["signature_def"].Pack(signatures)
        return answer


def count_server(port, counter):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"predictions": counter.predictions}).encode()
            self.send_response(200 if self.path == "/count" else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--count-port", type=int, required=True)
    args = parser.parse_args()
    counter = Counter()
    count_server(args.count_port, counter)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Service(counter), server)
    server.add_insecure_port(f"127.0.0.1:{args.grpc_port}")
    server.start()
    print(f"tfs_server: serving {MODEL} on 127.0.0.1:{args.grpc_port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()

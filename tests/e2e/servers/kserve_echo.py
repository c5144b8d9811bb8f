"""A stock KServe 0.21 Python model server with one model, `echo`, that returns its input.

    python kserve_echo.py --http_port P --grpc_port Q

(kserve's own flags). The model does not override get_input_types/get_output_types, so
`/v2/models/echo` lists no inputs or outputs, as a stock KServe model does: a client must take
shapes from flags.

KServe binds 0.0.0.0 (REST) and [::] (gRPC) with no flag to change it. The e2e suite sends
traffic to 127.0.0.1 only and must not listen on other interfaces, so this script rewrites
those two listen addresses to 127.0.0.1 before the server starts; nothing else is changed.
"""

import grpc.aio._server
import uvicorn

import kserve
from kserve import InferOutput, InferRequest, InferResponse
from kserve.utils.utils import generate_uuid


_uvicorn_config_init = uvicorn.Config.__init__


def _loopback_uvicorn_config(self, *args, **kwargs):
    kwargs["host"] = "127.0.0.1"
    _uvicorn_config_init(self, *args, **kwargs)


_grpc_add_insecure_port = grpc.aio._server.Server.add_insecure_port


def _loopback_grpc_port(self, address):
    return _grpc_add_insecure_port(self, address.replace("[::]", "127.0.0.1"))


uvicorn.Config.__init__ = _loopback_uvicorn_config
grpc.aio._server.Server.add_insecure_port = _loopback_grpc_port


class EchoModel(kserve.Model):
    def __init__(self, name: str):
        super().__init__(name)
        self.ready = False

    def load(self) -> bool:
        self.ready = True
        return self.ready

    async def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        outputs = []
        for infer_input in payload.inputs:
            array = infer_input.as_numpy()
            name = infer_input.name.replace("INPUT", "OUTPUT")
            output = InferOutput(name=name, shape=list(array.shape), datatype=infer_input.datatype)
            output.set_data_from_numpy(array)
            outputs.append(output)
        return InferResponse(model_name=self.name, infer_outputs=outputs, response_id=generate_uuid())


if __name__ == "__main__":
    model = EchoModel("echo")
    model.load()
    kserve.ModelServer().start([model])

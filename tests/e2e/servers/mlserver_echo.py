"""A stock Seldon MLServer 1.7 custom model: returns its input.

The e2e fixture copies this file into a model folder beside a model-settings.json that
declares INPUT0/OUTPUT0 as FP32 [-1, 16] and points "implementation" at
mlserver_echo.EchoModel, then runs `mlserver start <folder>`. Outputs are encoded with
MLServer's NumpyCodec, so they carry its usual `"parameters": {"content_type": "np"}`.
"""

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse


class EchoModel(MLModel):
    async def load(self) -> bool:
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        outputs = []
        for request_input in payload.inputs:
            array = NumpyCodec.decode_input(request_input)
            name = request_input.name.replace("INPUT", "OUTPUT")
            outputs.append(NumpyCodec.encode_output(name=name, payload=array))
        return InferenceResponse(model_name=self.name, id=payload.id, outputs=outputs)

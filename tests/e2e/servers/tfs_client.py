"""The official TF Serving Python client (tensorflow-serving-api's PredictionServiceStub)
against a PredictionService: GetModelMetadata, then one Predict with a [2, 16] DT_FLOAT
tensor. Prints what came back as one JSON object for the test to check.

    python tfs_client.py ADDRESS MODEL
"""

import json
import sys

import grpc
from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2
from tensorflow_serving.apis import get_model_metadata_pb2, predict_pb2, prediction_service_pb2_grpc


def main():
    address, model = sys.argv[1], sys.argv[2]
    stub = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(address))
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = model
    metadata = stub.GetModelMetadata(request, timeout=10)
    signatures = get_model_metadata_pb2.SignatureDefMap()
    assert metadata.metadata["signature_def"].Unpack(signatures)
    signature = signatures.signature_def["serving_default"]
    (input_name, input_info), = signature.inputs.items()
    (output_name, _), = signature.outputs.items()
    values = [float(i) / 4 for i in range(32)]
    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=2), tensor_shape_pb2.TensorShapeProto.Dim(size=16)]
        ),
        float_val=values,
    )
    predict = predict_pb2.PredictRequest()
    predict.model_spec.name = model
    predict.model_spec.signature_name = "serving_default"
    predict.inputs[input_name].CopyFrom(tensor)
    answer = stub.Predict(predict, timeout=10)
    output = answer.outputs[output_name]
    import numpy as np
    import tensorflow as tf

    got = tf.make_ndarray(output)
    print(json.dumps({
        "signatures": sorted(signatures.signature_def),
        "input": input_name,
        "input_dtype": types_pb2.DataType.Name(input_info.dtype),
        "input_shape": [d.size for d in input_info.tensor_shape.dim],
        "output": output_name,
        "output_dtype": types_pb2.DataType.Name(output.dtype),
        "output_shape": list(got.shape),
        "equal": bool(np.array_equal(got, np.array(values, dtype=np.float32).reshape(2, 16))),
        "answer_model": answer.model_spec.name,
    }))


if __name__ == "__main__":
    main()

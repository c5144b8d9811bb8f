//! Unit tests of the wire formats: every datatype round-trips through JSON, the binary
//! extension and gRPC, in both directions; typed gRPC contents decode; bad input is an error.

use bytes::{BufMut, Bytes, BytesMut};
use half::{bf16, f16};
use serde_json::json;

use super::*;
use crate::model::DataType;
use crate::proto::model_infer_request::InferInputTensor;
use crate::proto::{InferTensorContents, ModelInferRequest, ModelInferResponse};

/// Raw little-endian bytes of a list of values.
macro_rules! le {
    ($($v:expr),* $(,)?) => {{
        let mut b = BytesMut::new();
        $(b.put_slice(&$v.to_le_bytes());)*
        b.freeze()
    }};
}

/// A tensor of shape [2, 3] (or [6] elements) with awkward values of the datatype.
fn sample(datatype: DataType) -> Tensor {
    let data = match datatype {
        DataType::Bool => Bytes::from_static(&[1, 0, 0, 1, 1, 0]),
        DataType::Uint8 => le!(0u8, 1u8, 127u8, 128u8, 254u8, 255u8),
        DataType::Uint16 => le!(0u16, 1u16, 300u16, 32768u16, 65534u16, u16::MAX),
        DataType::Uint32 => le!(0u32, 1u32, 70000u32, 1u32 << 31, 7u32, u32::MAX),
        DataType::Uint64 => le!(
            0u64,
            1u64,
            1u64 << 53,
            (1u64 << 53) + 1,
            1u64 << 63,
            u64::MAX
        ),
        DataType::Int8 => le!(0i8, -1i8, i8::MIN, i8::MAX, 5i8, -100i8),
        DataType::Int16 => le!(0i16, -1i16, i16::MIN, i16::MAX, 300i16, -300i16),
        DataType::Int32 => le!(0i32, -1i32, i32::MIN, i32::MAX, 70000i32, -70000i32),
        DataType::Int64 => le!(0i64, -1i64, i64::MIN, i64::MAX, (1i64 << 53) + 1, -7i64),
        DataType::Fp16 => le!(
            f16::from_f32(0.1),
            f16::from_f32(-2.5),
            f16::MAX,
            f16::MIN_POSITIVE_SUBNORMAL,
            f16::from_f32(-0.0),
            f16::from_f32(65.3)
        ),
        DataType::Bf16 => le!(
            bf16::from_f32(0.1),
            bf16::from_f32(-2.5),
            bf16::MAX,
            bf16::MIN_POSITIVE_SUBNORMAL,
            bf16::from_f32(1e30),
            bf16::from_f32(3.3)
        ),
        DataType::Fp32 => le!(
            0.1f32,
            -1.0e-38f32,
            f32::MAX,
            f32::MIN_POSITIVE,
            1.0f32 / 3.0,
            -0.0f32
        ),
        DataType::Fp64 => le!(
            0.1f64,
            -1.0e-300f64,
            f64::MAX,
            5e-324f64,
            1.0f64 / 3.0,
            2.5f64
        ),
        DataType::Bytes => {
            let items: [&[u8]; 6] = [
                b"",
                b"a",
                "h\u{e9}llo".as_bytes(),
                b"quote\"and\\",
                b"\n\t",
                b"x y",
            ];
            encode_bytes_elements("t", items).unwrap()
        }
    };
    Tensor {
        name: format!("IN_{}", datatype.as_str()),
        datatype,
        shape: vec![2, 3],
        data,
    }
}

fn all_samples() -> Vec<Tensor> {
    DataType::ALL.iter().map(|&t| sample(t)).collect()
}

fn request(binary_output: bool) -> InferRequest {
    let mut parameters = serde_json::Map::new();
    parameters.insert("sequence_id".into(), json!(42));
    parameters.insert("tag".into(), json!("x"));
    InferRequest {
        id: "req-1".into(),
        inputs: all_samples(),
        outputs: vec![
            RequestedOutput {
                name: "A".into(),
                binary: true,
            },
            RequestedOutput {
                name: "B".into(),
                binary: binary_output,
            },
        ],
        binary_output,
        parameters,
    }
}

fn response() -> InferResponse {
    InferResponse {
        model_name: "m".into(),
        model_version: "1".into(),
        id: "req-1".into(),
        outputs: all_samples(),
    }
}

#[test]
fn requests_round_trip_through_json_and_binary() {
    for binary_output in [false, true] {
        let req = request(binary_output);
        for binary_inputs in [false, true] {
            let body = encode_http_request(&req, binary_inputs).unwrap();
            assert_eq!(body.header_len.is_some(), binary_inputs);
            let back = decode_http_request(&body.body, body.header_len).unwrap();
            assert_eq!(back, req, "binary_inputs={binary_inputs}");
            let back = decode_http_request_bytes(&body.body, body.header_len).unwrap();
            assert_eq!(back, req);
        }
    }
}

#[test]
fn responses_round_trip_through_json_binary_and_mixed() {
    let resp = response();
    let choices: [&dyn Fn(&str) -> bool; 3] =
        [&|_| false, &|_| true, &|name: &str| name.contains("INT")];
    for binary in choices {
        let body = encode_http_response(&resp, binary).unwrap();
        let back = decode_http_response(&body.body, body.header_len).unwrap();
        assert_eq!(back, resp);
        let back = decode_http_response_bytes(&body.body, body.header_len).unwrap();
        assert_eq!(back, resp);
    }
    let plain = encode_http_response(&resp, &|_| false).unwrap();
    assert_eq!(plain.header_len, None);
}

#[test]
fn json_uses_plain_numbers_bools_and_strings() {
    let req = InferRequest {
        inputs: vec![
            sample(DataType::Fp16),
            sample(DataType::Bool),
            sample(DataType::Bytes),
        ],
        ..Default::default()
    };
    let body = encode_http_request(&req, false).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body.body).unwrap();
    assert_eq!(v["inputs"][0]["data"][1], json!(-2.5));
    assert_eq!(v["inputs"][0]["shape"], json!([2, 3]));
    assert_eq!(
        v["inputs"][1]["data"],
        json!([true, false, false, true, true, false])
    );
    assert_eq!(v["inputs"][2]["data"][2], json!("h\u{e9}llo"));
    assert!(v.get("id").is_none() && v.get("outputs").is_none());
}

#[test]
fn binary_request_layout_follows_the_extension() {
    let mut req = request(true);
    req.inputs = vec![sample(DataType::Int32), sample(DataType::Bytes)];
    let body = encode_http_request(&req, true).unwrap();
    let header_len = body.header_len.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body.body[..header_len]).unwrap();
    assert_eq!(v["inputs"][0]["parameters"]["binary_data_size"], json!(24));
    assert!(v["inputs"][0].get("data").is_none());
    assert_eq!(v["parameters"]["binary_data_output"], json!(true));
    assert_eq!(v["outputs"][0]["parameters"]["binary_data"], json!(true));
    let tail = &body.body[header_len..];
    assert_eq!(&tail[..24], &req.inputs[0].data[..]);
    assert_eq!(&tail[24..], &req.inputs[1].data[..]);
}

#[test]
fn requests_and_responses_round_trip_through_grpc() {
    let req = request(false);
    let msg = to_grpc_request("m", "2", &req);
    assert_eq!(
        (msg.model_name.as_str(), msg.model_version.as_str()),
        ("m", "2")
    );
    assert_eq!(msg.raw_input_contents.len(), req.inputs.len());
    let mut back = from_grpc_request(msg).unwrap();
    for o in &mut back.outputs {
        o.binary = req.outputs.iter().any(|r| r.name == o.name && r.binary);
    }
    assert_eq!(back, req);
    let resp = response();
    assert_eq!(from_grpc_response(to_grpc_response(&resp)).unwrap(), resp);
}

#[test]
fn typed_grpc_contents_decode() {
    for t in all_samples() {
        let contents = match to_typed_contents(&t) {
            Ok(c) => c,
            Err(WireError::TypedUnsupported { .. }) => {
                assert!(matches!(t.datatype, DataType::Fp16 | DataType::Bf16));
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let msg = ModelInferRequest {
            inputs: vec![InferInputTensor {
                name: t.name.clone(),
                datatype: t.datatype.as_str().into(),
                shape: t.shape.clone(),
                contents: Some(contents.clone()),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(from_grpc_request(msg).unwrap().inputs, vec![t.clone()]);
        let mut resp = to_grpc_response(&InferResponse {
            outputs: vec![t.clone()],
            ..Default::default()
        });
        resp.raw_output_contents.clear();
        resp.outputs[0].contents = Some(contents);
        assert_eq!(from_grpc_response(resp).unwrap().outputs, vec![t]);
    }
}

#[test]
fn foreign_json_with_extra_fields_and_nested_data_decodes() {
    let body = json!({
        "model_name": "m", "model_version": "3", "parameters": {"x": 1},
        "outputs": [
            {"name": "O", "datatype": "FP32", "shape": [2, 2],
             "parameters": {"content_type": "np"}, "data": [[1.0, 2], [3.5, -4]]},
            {"name": "S", "datatype": "BYTES", "shape": [1], "data": ["hi"]}
        ]
    });
    let resp = decode_http_response(body.to_string().as_bytes(), None).unwrap();
    assert_eq!(resp.id, "");
    assert_eq!(resp.outputs[0].data, le!(1.0f32, 2.0f32, 3.5f32, -4.0f32));
    assert_eq!(
        resp.outputs[1].bytes_elements().unwrap(),
        vec![b"hi".as_slice()]
    );
}

#[test]
fn fp32_json_round_trips_exactly_for_many_values() {
    let mut bits = 0x0000_1234u32;
    let values: Vec<f32> = (0..20_000)
        .map(|_| {
            bits = bits.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            f32::from_bits(bits)
        })
        .filter(|x| x.is_finite())
        .collect();
    let mut data = BytesMut::new();
    values.iter().for_each(|v| data.put_f32_le(*v));
    let t = Tensor {
        name: "x".into(),
        datatype: DataType::Fp32,
        shape: vec![values.len() as i64],
        data: data.freeze(),
    };
    let resp = InferResponse {
        outputs: vec![t],
        ..Default::default()
    };
    let body = encode_http_response(&resp, &|_| false).unwrap();
    assert_eq!(decode_http_response(&body.body, None).unwrap(), resp);
}

fn decode_json_request(v: serde_json::Value) -> Result<InferRequest, WireError> {
    decode_http_request(v.to_string().as_bytes(), None)
}

fn one_input(
    datatype: &str,
    shape: serde_json::Value,
    data: serde_json::Value,
) -> serde_json::Value {
    json!({"inputs": [{"name": "X", "datatype": datatype, "shape": shape, "data": data}]})
}

#[test]
fn bad_json_requests_are_errors_naming_the_tensor() {
    let cases = [
        (
            one_input("FP8", json!([1]), json!([1])),
            "unknown datatype 'FP8'",
        ),
        (
            one_input("INT32", json!([-1]), json!([])),
            "negative dimension",
        ),
        (
            one_input("INT32", json!([3]), json!([1, 2])),
            "has 2 elements",
        ),
        (
            one_input("INT8", json!([1]), json!([300])),
            "not a valid INT8 value: 300",
        ),
        (
            one_input("UINT8", json!([1]), json!([-1])),
            "not a valid UINT8",
        ),
        (
            one_input("INT32", json!([1]), json!([1.5])),
            "not a valid INT32",
        ),
        (
            one_input("BOOL", json!([1]), json!([1])),
            "not a valid BOOL",
        ),
        (
            one_input("BYTES", json!([1]), json!([7])),
            "not a valid BYTES",
        ),
        (
            one_input("FP32", json!([1]), json!(["a"])),
            "not a valid FP32",
        ),
        (
            json!({"inputs": [{"name": "X", "datatype": "FP32", "shape": [1]}]}),
            "neither 'data'",
        ),
        (
            json!({"inputs": "no"}),
            "not a valid KServe v2 inference request",
        ),
    ];
    for (body, expected) in cases {
        let err = decode_json_request(body).unwrap_err().to_string();
        assert!(err.contains(expected), "{err:?} lacks {expected:?}");
    }
    assert!(decode_http_request(b"{", None).is_err());
    assert!(decode_http_request(b"", None).is_err());
}

#[test]
fn bad_binary_bodies_are_errors() {
    let req = InferRequest {
        inputs: vec![sample(DataType::Int32)],
        ..Default::default()
    };
    let body = encode_http_request(&req, true).unwrap();
    let header_len = body.header_len.unwrap();
    let too_long = decode_http_request(&body.body, Some(body.body.len() + 1)).unwrap_err();
    assert!(
        matches!(too_long, WireError::HeaderLength { .. }),
        "{too_long}"
    );
    let cut = decode_http_request(&body.body[..body.body.len() - 1], Some(header_len)).unwrap_err();
    assert!(
        matches!(
            cut,
            WireError::BinaryMissing {
                size: 24,
                available: 23,
                ..
            }
        ),
        "{cut}"
    );
    let mut extra = body.body.to_vec();
    extra.push(0);
    let extra = decode_http_request(&extra, Some(header_len)).unwrap_err();
    assert!(
        matches!(extra, WireError::TrailingBinary { extra: 1 }),
        "{extra}"
    );
    let no_header = decode_http_request(&body.body[..header_len], None).unwrap_err();
    assert!(
        matches!(no_header, WireError::BinaryMissing { .. }),
        "{no_header}"
    );
    let both = json!({"inputs": [{"name": "X", "datatype": "INT8", "shape": [1], "data": [1],
        "parameters": {"binary_data_size": 1}}]});
    let both = format!("{both}\u{1}");
    let err = decode_http_request(both.as_bytes(), Some(both.len() - 1)).unwrap_err();
    assert!(matches!(err, WireError::BothData { .. }), "{err}");
}

#[test]
fn bad_tensors_are_refused_when_encoding() {
    let mut t = sample(DataType::Fp32);
    t.shape = vec![7];
    let err = encode_http_request(
        &InferRequest {
            inputs: vec![t],
            ..Default::default()
        },
        true,
    );
    assert!(matches!(
        err,
        Err(WireError::DataSize {
            expected: 28,
            actual: 24,
            ..
        })
    ));

    let nan = Tensor {
        name: "N".into(),
        datatype: DataType::Fp64,
        shape: vec![2],
        data: le!(1.0f64, f64::NAN),
    };
    let err = encode_http_response(
        &InferResponse {
            outputs: vec![nan.clone()],
            ..Default::default()
        },
        &|_| false,
    );
    assert!(
        matches!(err, Err(WireError::NotFinite { index: 1, .. })),
        "{err:?}"
    );
    let ok = encode_http_response(
        &InferResponse {
            outputs: vec![nan],
            ..Default::default()
        },
        &|_| true,
    );
    assert!(ok.is_ok());

    let bin = Tensor {
        name: "S".into(),
        datatype: DataType::Bytes,
        shape: vec![1],
        data: encode_bytes_elements("S", [[0xffu8, 0xfe]]).unwrap(),
    };
    let err = encode_http_request(
        &InferRequest {
            inputs: vec![bin],
            ..Default::default()
        },
        false,
    );
    assert!(
        matches!(err, Err(WireError::NotUtf8 { index: 0, .. })),
        "{err:?}"
    );
}

#[test]
fn malformed_bytes_data_is_an_error() {
    let t = |data: &'static [u8], n: i64| Tensor {
        name: "S".into(),
        datatype: DataType::Bytes,
        shape: vec![n],
        data: Bytes::from_static(data),
    };
    assert!(t(&[1, 0, 0], 1).validate().is_err());
    assert!(t(&[5, 0, 0, 0, b'a'], 1).validate().is_err());
    assert!(matches!(
        t(&[1, 0, 0, 0, b'a'], 2).validate(),
        Err(WireError::ElementCount {
            expected: 2,
            actual: 1,
            ..
        })
    ));
    assert!(t(&[], 0).validate().is_ok());
}

#[test]
fn bad_grpc_messages_are_errors() {
    let req = InferRequest {
        inputs: vec![sample(DataType::Int32), sample(DataType::Fp32)],
        ..Default::default()
    };
    let mut msg = to_grpc_request("m", "", &req);
    msg.raw_input_contents.pop();
    assert!(matches!(
        from_grpc_request(msg),
        Err(WireError::RawCount { raw: 1, tensors: 2 })
    ));

    let mut msg = to_grpc_request("m", "", &req);
    msg.inputs[0].contents = to_typed_contents(&req.inputs[0]).ok();
    assert!(matches!(
        from_grpc_request(msg),
        Err(WireError::MixedContents { .. })
    ));

    let mut msg = to_grpc_request("m", "", &req);
    msg.raw_input_contents[1].pop();
    assert!(matches!(
        from_grpc_request(msg),
        Err(WireError::DataSize { .. })
    ));

    let mut msg = to_grpc_request("m", "", &req);
    msg.inputs[0].datatype = "INT4".into();
    let err = from_grpc_request(msg).unwrap_err().to_string();
    assert!(
        err.contains("'IN_INT32'") && err.contains("'INT4'"),
        "{err}"
    );

    let typed = |datatype: &str, contents: InferTensorContents| ModelInferResponse {
        outputs: vec![crate::proto::model_infer_response::InferOutputTensor {
            name: "O".into(),
            datatype: datatype.into(),
            shape: vec![1],
            contents: Some(contents),
            ..Default::default()
        }],
        ..Default::default()
    };
    let big = InferTensorContents {
        int_contents: vec![200],
        ..Default::default()
    };
    assert!(matches!(
        from_grpc_response(typed("INT8", big)),
        Err(WireError::BadValue { .. })
    ));
    let half = InferTensorContents {
        fp32_contents: vec![1.0],
        ..Default::default()
    };
    assert!(matches!(
        from_grpc_response(typed("FP16", half)),
        Err(WireError::TypedUnsupported { .. })
    ));
    let missing = from_grpc_response(typed("FP32", InferTensorContents::default()));
    assert!(matches!(
        missing,
        Err(WireError::ElementCount { actual: 0, .. })
    ));
}

#[test]
fn error_bodies_and_parameters_are_understood() {
    let err = decode_http_response(br#"{"error":"model is busy"}"#, None).unwrap_err();
    assert_eq!(err, WireError::Server("model is busy".into()));
    let body = json!({"parameters": {"binary_data_output": "yes"}, "inputs": []});
    assert!(decode_json_request(body).is_err());
    let body = json!({"parameters": {"binary_data_output": true},
        "inputs": [], "outputs": [{"name": "A"}, {"name": "B", "parameters": {"binary_data": false}}]});
    let req = decode_json_request(body).unwrap();
    assert!(req.binary_output && req.parameters.is_empty());
    assert_eq!(
        (req.outputs[0].binary, req.outputs[1].binary),
        (true, false)
    );
}

#[test]
fn long_mantissas_read_as_the_nearest_double_and_round_trip() {
    // 34 digits: the nearest double is 1.9999999999990038e33; a best-effort parser reads
    // 1.999999999999004e33, one ulp off, and the re-encoded request then reads differently.
    let long = "1999999999999003872820019684212734";
    let body = format!(
        r#"{{"parameters":{{"sequence_id":{long}}},"inputs":[{{"name":"X","datatype":"FP64","shape":[1],"data":[{long}]}}]}}"#
    );
    let request = decode_http_request(body.as_bytes(), None).unwrap();
    let nearest: f64 = long.parse().unwrap();
    assert_eq!(request.parameters["sequence_id"].as_f64(), Some(nearest));
    assert_eq!(&request.inputs[0].data[..], &nearest.to_le_bytes());
    let again = encode_http_request(&request, false).unwrap();
    assert_eq!(decode_http_request(&again.body, None).unwrap(), request);
}

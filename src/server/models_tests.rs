//! Unit tests of model definitions and what each model kind computes.

use bytes::{BufMut, Bytes, BytesMut};

use super::*;
use crate::wire::RequestedOutput;

fn def(s: &str) -> ModelDef {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn int32(name: &str, shape: Vec<i64>, values: &[i32]) -> Tensor {
    let mut b = BytesMut::new();
    values.iter().for_each(|v| b.put_i32_le(*v));
    Tensor {
        name: name.into(),
        datatype: DataType::Int32,
        shape,
        data: b.freeze(),
    }
}

fn fp32(name: &str, shape: Vec<i64>) -> Tensor {
    let n: i64 = shape.iter().product();
    Tensor {
        name: name.into(),
        datatype: DataType::Fp32,
        shape,
        data: Bytes::from(vec![0u8; n as usize * 4]),
    }
}

fn request(inputs: Vec<Tensor>) -> InferRequest {
    InferRequest {
        id: "7".into(),
        inputs,
        ..Default::default()
    }
}

#[test]
fn definitions_parse_with_defaults_and_options() {
    let d = def("x=identity");
    assert_eq!(
        (d.kind.clone(), d.datatype, d.dims.clone(), d.max_batch),
        (ModelKind::Identity, DataType::Fp32, vec![16], 8)
    );
    let d = def("x=identity:datatype=INT8,shape=4");
    assert_eq!((d.datatype, d.dims.clone()), (DataType::Int8, vec![4]));
    let d = def("img=noop:shape=3,-1,224,datatype=BYTES,max_batch=0");
    assert_eq!(
        (d.dims.clone(), d.datatype, d.max_batch),
        (vec![3, -1, 224], DataType::Bytes, 0)
    );
    assert_eq!(
        def("flaky=fail:rate=0.25").kind,
        ModelKind::Fail { rate: 0.25 }
    );
    assert_eq!(def("flaky=fail").kind, ModelKind::Fail { rate: 0.1 });
    assert_eq!(def("slow=sleep:ms=10").kind, ModelKind::Sleep { ms: 10 });
    let a = def("a=add_sub");
    assert_eq!(
        (a.datatype, a.dims.clone(), a.max_batch),
        (DataType::Int32, vec![16], 0)
    );
    assert_eq!(def("a=add_sub:max_batch=4").max_batch, 4);
}

#[test]
fn definitions_print_in_a_form_that_parses_back() {
    for s in [
        "x=identity",
        "f=fail:rate=0.5,shape=2,3",
        "s=sleep:ms=3",
        "a=add_sub",
        "n=noop:datatype=BF16",
    ] {
        let d = def(s);
        assert_eq!(def(&d.to_string()), d, "{d}");
    }
}

#[test]
fn bad_definitions_name_the_bad_part() {
    let cases = [
        ("identity", "not of the form NAME=KIND"),
        ("=identity", "model name ''"),
        ("a/b=identity", "model name 'a/b'"),
        ("x=magic", "model kind 'magic' is not known"),
        ("x=identity:datatype=FP8", "'datatype=FP8'"),
        ("x=identity:shape=4,-2", "dimension '-2'"),
        ("x=identity:shape=", "'shape='"),
        ("x=identity:max_batch=-1", "'max_batch=-1'"),
        ("x=fail:rate=1.5", "'rate=1.5'"),
        ("x=sleep:ms=fast", "'ms=fast'"),
        (
            "x=identity:rate=0.5",
            "option 'rate' is not known for kind identity",
        ),
        ("x=add_sub:datatype=FP32", "add_sub is INT32 only"),
        ("x=identity:oops", "'oops' is not of the form key=value"),
    ];
    for (text, expected) in cases {
        let err = text.parse::<ModelDef>().unwrap_err();
        assert!(err.contains(expected), "{text}: {err:?} lacks {expected:?}");
    }
}

#[test]
fn defaults_are_identity_and_add_sub() {
    let names: Vec<String> = default_models()
        .into_iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "identity=identity:datatype=FP32,shape=16,max_batch=8",
            "add_sub=add_sub:shape=16,max_batch=0"
        ]
    );
    assert_eq!(default_models()[0].metadata_shape(), vec![-1, 16]);
    assert_eq!(default_models()[1].metadata_shape(), vec![16]);
}

fn run(model: &Model, req: InferRequest) -> Result<InferResponse, InferError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(model.infer(req))
}

#[test]
fn add_sub_wraps_and_identity_echoes() {
    let model = Model::new(def("a=add_sub:shape=3"));
    let req = request(vec![
        int32("INPUT1", vec![3], &[1, 2, -1]),
        int32("INPUT0", vec![3], &[i32::MAX, 5, i32::MIN]),
    ]);
    let resp = run(&model, req).unwrap();
    assert_eq!(resp.id, "7");
    assert_eq!(
        resp.outputs[0],
        int32("OUTPUT0", vec![3], &[i32::MIN, 7, i32::MAX])
    );
    assert_eq!(
        resp.outputs[1],
        int32("OUTPUT1", vec![3], &[i32::MAX - 1, 3, i32::MIN + 1])
    );

    let model = Model::new(def("i=identity:shape=-1"));
    let input = fp32("INPUT0", vec![2, 5]);
    let resp = run(&model, request(vec![input.clone()])).unwrap();
    assert_eq!(
        resp.outputs,
        vec![Tensor {
            name: "OUTPUT0".into(),
            ..input
        }]
    );
}

#[test]
fn requested_outputs_are_filtered_and_checked() {
    let model = Model::new(def("a=add_sub:shape=1"));
    let mut req = request(vec![
        int32("INPUT0", vec![1], &[3]),
        int32("INPUT1", vec![1], &[1]),
    ]);
    req.outputs = vec![RequestedOutput {
        name: "OUTPUT1".into(),
        binary: false,
    }];
    let resp = run(&model, req.clone()).unwrap();
    assert_eq!(resp.outputs, vec![int32("OUTPUT1", vec![1], &[2])]);
    req.outputs[0].name = "OUTPUT9".into();
    let err = run(&model, req).unwrap_err();
    assert!(err.message().contains("'OUTPUT9'"), "{err:?}");
}

#[test]
fn bad_requests_are_refused_with_a_reason() {
    let model = Model::new(def("m=identity:max_batch=4"));
    let cases = [
        (fp32("INPUT0", vec![16]), "expected [batch] + [16]"),
        (fp32("INPUT0", vec![5, 16]), "batch between 1 and 4"),
        (fp32("INPUT0", vec![0, 16]), "batch between 1 and 4"),
        (fp32("INPUT0", vec![1, 15]), "has shape [1, 15]"),
        (
            fp32("INPUT9", vec![1, 16]),
            "unexpected input name 'INPUT9'",
        ),
        (
            int32("INPUT0", vec![1, 16], &[0; 16]),
            "datatype INT32, expected FP32",
        ),
    ];
    for (tensor, expected) in cases {
        let err = run(&model, request(vec![tensor])).unwrap_err();
        assert!(
            matches!(&err, InferError::BadRequest(m) if m.contains(expected)),
            "{err:?}"
        );
    }
    let missing = run(&model, request(vec![])).unwrap_err();
    assert!(missing.message().contains("lacks"), "{missing:?}");
    let twice = run(
        &model,
        request(vec![
            fp32("INPUT0", vec![1, 16]),
            fp32("INPUT0", vec![1, 16]),
        ]),
    );
    assert!(twice.unwrap_err().message().contains("twice"));
}

#[test]
fn fail_rate_is_a_bernoulli_trial() {
    let model = Model::new(def("f=fail:rate=0.3,shape=1,max_batch=0"));
    let n = 20_000;
    let failures = (0..n)
        .filter(|_| run(&model, request(vec![fp32("INPUT0", vec![1])])).is_err())
        .count();
    // Binomial(20000, 0.3): sd ≈ 65; allow 6 sd.
    assert!((failures as i64 - 6000).abs() < 390, "{failures} failures");
    let never = Model::new(def("f=fail:rate=0,shape=1,max_batch=0"));
    assert!(run(&never, request(vec![fp32("INPUT0", vec![1])])).is_ok());
    let always = Model::new(def("f=fail:rate=1,shape=1,max_batch=0"));
    let err = run(&always, request(vec![fp32("INPUT0", vec![1])])).unwrap_err();
    assert!(matches!(err, InferError::Internal(_)));
}

#[test]
fn sleep_waits() {
    let model = Model::new(def("s=sleep:ms=30,shape=1,max_batch=0"));
    let start = std::time::Instant::now();
    run(&model, request(vec![fp32("INPUT0", vec![1])])).unwrap();
    assert!(start.elapsed() >= Duration::from_millis(30));
}

//! Unit tests of model definitions, request checks, what each kind computes, batched
//! execution and the statistics one execution records.

use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};

use super::*;
use crate::def::default_models;
use inferperf_wire::{encode_bytes_elements, RequestedOutput};

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
    let data: Vec<u8> = (0..n * 4).map(|i| i as u8).collect();
    Tensor {
        name: name.into(),
        datatype: DataType::Fp32,
        shape,
        data: Bytes::from(data),
    }
}

fn request(inputs: Vec<Tensor>) -> InferRequest {
    InferRequest {
        id: "7".into(),
        inputs,
        ..Default::default()
    }
}

/// Checks and runs one request alone.
fn run(model: &Model, req: InferRequest) -> Result<InferResponse, InferError> {
    let job = model.check(req, Instant::now())?;
    model.execute(&mut [job]).pop().unwrap()
}

#[test]
fn definitions_parse_with_defaults_and_options() {
    let d = def("x=identity");
    assert_eq!(
        (
            d.kind.clone(),
            d.datatype,
            d.dims.clone(),
            d.max_batch,
            d.instances
        ),
        (ModelKind::Identity, DataType::Fp32, vec![16], 8, 1)
    );
    assert!(!d.dynamic_batching());
    let d = def("x=identity:datatype=INT8,shape=4");
    assert_eq!((d.datatype, d.dims.clone()), (DataType::Int8, vec![4]));
    let d = def("img=noop:shape=3,-1,224,datatype=BYTES,max_batch=0");
    assert_eq!(
        (d.dims.clone(), d.datatype, d.max_batch),
        (vec![3, -1, 224], DataType::Bytes, 0)
    );
    assert_eq!(
        def("flaky=fail:rate=0.25,code=503").kind,
        ModelKind::Fail {
            rate: 0.25,
            code: 503,
            mode: FailMode::Error
        }
    );
    assert_eq!(
        def("flaky=fail").kind,
        ModelKind::Fail {
            rate: 0.1,
            code: 500,
            mode: FailMode::Error
        }
    );
    assert_eq!(
        def("slow=sleep:ms=2.5,dist=exponential,spin=true").kind,
        ModelKind::Sleep {
            ms: 2.5,
            dist: Dist::Exponential,
            spin: true
        }
    );
    let b = def("b=sleep:ms=2,max_batch=8,queue_delay_us=500,preferred_batch=8,4,instances=3");
    assert_eq!(
        (b.queue_delay_us, b.preferred_batch.clone(), b.instances),
        (Some(500), vec![4, 8], 3)
    );
    assert!(b.dynamic_batching());
    assert_eq!(b.max_execution_batch(), 8);
    assert!(def("p=identity:preferred_batch=2").dynamic_batching());
    let e = def("e=echo");
    assert_eq!((e.datatype, e.dims.clone()), (DataType::Bytes, vec![1]));
    let a = def("a=add_sub");
    assert_eq!(
        (a.datatype, a.dims.clone(), a.max_batch),
        (DataType::Int32, vec![16], 0)
    );
}

#[test]
fn definitions_print_in_a_form_that_parses_back() {
    for s in [
        "x=identity",
        "f=fail:rate=0.5,shape=2,3,code=429",
        "s=sleep:ms=3,dist=normal,spin=true,instances=2",
        "b=sleep:ms=2,max_batch=8,queue_delay_us=500,preferred_batch=4,8",
        "a=add_sub",
        "e=echo:shape=2",
        "n=noop:datatype=BF16",
        "f=fail:mode=bad_body,rate=1",
        "f=fail:mode=wrong_values,rate=0.3,datatype=INT8",
        "f=fail:mode=error,code=503",
        "s=stream",
        "s=stream:responses=0,first_ms=0.5,interval_ms=2,dist=exponential,spin=true",
        "s=stream:responses=100000,instances=2,max_batch=4,queue_delay_us=100",
        "c=llm",
        "c=llm:ttft_ms=0,itl_ms=0.5,output_tokens=64,prefill_us_per_token=2.5,tokens_per_event=4,instances=3,max_batch=10000",
        "c=llm:prefix_cache=4096",
        "c=llm:prefix_cache=100,block=32",
        "v=embeddings:dims=1024,ms=0,instances=4",
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
        ("x=fail:code=418", "'code=418'"),
        ("x=sleep:ms=fast", "'ms=fast'"),
        ("x=sleep:ms=-1", "'ms=-1'"),
        ("x=sleep:dist=pareto", "'dist=pareto'"),
        ("x=sleep:spin=yes", "'spin=yes'"),
        ("x=identity:instances=0", "'instances=0'"),
        ("x=identity:preferred_batch=0", "'preferred_batch=0'"),
        ("x=identity:queue_delay_us=soon", "'queue_delay_us=soon'"),
        (
            "x=identity:max_batch=4,preferred_batch=8",
            "larger than max_batch 4",
        ),
        (
            "x=identity:max_batch=0,queue_delay_us=100",
            "needs max_batch ≥ 1",
        ),
        (
            "x=identity:rate=0.5",
            "option 'rate' is not known for kind identity",
        ),
        ("x=add_sub:datatype=FP32", "add_sub is INT32 only"),
        ("x=echo:datatype=FP32", "echo is BYTES only"),
        ("x=identity:oops", "'oops' is not of the form key=value"),
        ("x=stream:responses=-1", "'responses=-1'"),
        ("x=stream:responses=100001", "from 0 to 100000"),
        ("x=stream:first_ms=-3", "'first_ms=-3'"),
        ("x=stream:interval_ms=x", "'interval_ms=x'"),
        ("x=stream:dist=pareto", "'dist=pareto'"),
        ("x=stream:ms=3", "option 'ms' is not known for kind stream"),
        ("x=fail:mode=nope", "'mode=nope'"),
        (
            "x=fail:code=500,mode=bad_body",
            "code= goes only with mode=error",
        ),
        (
            "x=fail:mode=wrong_values,code=503",
            "code= goes only with mode=error",
        ),
        ("x=magic", "stream"),
        ("x=magic", "llm, embeddings"),
        ("x=llm:itl_ms=-1", "'itl_ms=-1'"),
        ("x=llm:itl_ms=0", "at least 0.01 ms"),
        ("x=llm:ttft_ms=soon", "'ttft_ms=soon'"),
        ("x=llm:output_tokens=0", "'output_tokens=0'"),
        ("x=llm:tokens_per_event=0", "'tokens_per_event=0'"),
        ("x=llm:prefill_us_per_token=-2", "'prefill_us_per_token=-2'"),
        ("x=llm:max_batch=0", "'max_batch=0'"),
        ("x=llm:instances=0", "'instances=0'"),
        ("x=llm:prefix_cache=-1", "'prefix_cache=-1'"),
        ("x=llm:block=0", "'block=0'"),
        ("x=llm:tokenizer=/no/such/tokenizer.json", "no such file"),
        (
            "x=llm:shape=4",
            "option 'shape' is not known for kind llm; it takes instances, max_batch, ttft_ms",
        ),
        ("x=llm:ms=3", "option 'ms' is not known for kind llm"),
        ("x=embeddings:dims=0", "'dims=0'"),
        ("x=embeddings:ms=-1", "'ms=-1'"),
        (
            "x=embeddings:max_batch=4",
            "option 'max_batch' is not known for kind embeddings; it takes instances, dims, ms, us_per_token",
        ),
    ];
    for (text, expected) in cases {
        let err = text.parse::<ModelDef>().unwrap_err();
        assert!(err.contains(expected), "{text}: {err:?} lacks {expected:?}");
    }
}

#[test]
fn openai_kinds_have_defaults_and_describe_no_kserve_batch() {
    let d = def("c=llm");
    let ModelKind::Llm(t) = &d.kind else {
        panic!("{d}")
    };
    assert_eq!(
        (t.ttft_ms, t.itl_ms, t.output_tokens, t.prefill_us_per_token),
        (20.0, 5.0, None, 0.0)
    );
    assert_eq!((t.tokens_per_event, d.instances, d.max_batch), (1, 1, 8));
    assert_eq!((d.kserve_max_batch(), d.metadata_shape()), (0, vec![1]));
    let e = def("e=embeddings");
    assert_eq!(
        e.kind,
        ModelKind::Embeddings {
            dims: 16,
            ms: 1.0,
            us_per_token: 0.0
        }
    );
    for d in [d, e] {
        let model = Model::new(d);
        let refused = model.refuse_kserve().unwrap_err();
        assert!(matches!(refused, InferError::Unsupported(_)), "{refused:?}");
        assert!(refused.message().contains("POST /v1/"), "{refused}");
    }
    assert!(Model::new(def("x=identity")).refuse_kserve().is_ok());
}

#[test]
fn defaults_are_identity_add_sub_and_noop() {
    let names: Vec<String> = default_models()
        .into_iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "identity=identity:datatype=FP32,shape=16,max_batch=8",
            "add_sub=add_sub:shape=16,max_batch=0",
            "noop=noop:datatype=FP32,shape=16,max_batch=8",
        ]
    );
    assert_eq!(default_models()[0].metadata_shape(), vec![-1, 16]);
    assert_eq!(default_models()[1].metadata_shape(), vec![16]);
}

#[test]
fn add_sub_wraps_and_identity_echoes() {
    let model = Model::new(def("a=add_sub:shape=3"));
    let req = request(vec![
        int32("INPUT1", vec![3], &[1, 2, -1]),
        int32("INPUT0", vec![3], &[i32::MAX, 5, i32::MIN]),
    ]);
    let resp = run(&model, req).unwrap();
    assert_eq!((resp.id.as_str(), resp.model_name.as_str()), ("7", "a"));
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
    let expected = Tensor {
        name: "OUTPUT0".into(),
        ..input
    };
    assert_eq!(resp.outputs, vec![expected]);
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
fn bad_requests_are_refused_with_a_reason_and_counted() {
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
    let s = model.stats.snapshot("m");
    let i = s.inference_stats.unwrap();
    assert_eq!((i.fail.unwrap().count, i.success.unwrap().count), (8, 0));
    assert_eq!((s.inference_count, s.execution_count), (0, 0));
}

#[test]
fn fail_rate_is_a_bernoulli_trial_with_the_chosen_code() {
    let model = Model::new(def("f=fail:rate=0.3,shape=1,max_batch=0,code=503"));
    let n = 20_000;
    let failures = (0..n)
        .filter(|_| run(&model, request(vec![fp32("INPUT0", vec![1])])).is_err())
        .count();
    // Binomial(20000, 0.3): sd ≈ 65; allow 6 sd.
    assert!((failures as i64 - 6000).abs() < 390, "{failures} failures");
    let s = model.stats.snapshot("f");
    let i = s.inference_stats.unwrap();
    assert_eq!(i.fail.unwrap().count, failures as u64);
    assert_eq!(i.success.unwrap().count, (n - failures) as u64);
    assert_eq!(s.execution_count, n as u64);
    let never = Model::new(def("f=fail:rate=0,shape=1,max_batch=0"));
    assert!(run(&never, request(vec![fp32("INPUT0", vec![1])])).is_ok());
    for (code, status) in [(500, 500), (503, 503), (400, 400), (404, 404), (429, 429)] {
        let always = Model::new(def(&format!("f=fail:rate=1,shape=1,code={code}")));
        let err = run(&always, request(vec![fp32("INPUT0", vec![1, 1])])).unwrap_err();
        assert_eq!(err.http_status(), status);
    }
}

fn job(model: &Model, input: Tensor) -> Job {
    model.check(request(vec![input]), Instant::now()).unwrap()
}

#[test]
fn a_batch_runs_once_and_splits_back_per_request() {
    let model = Model::new(def("i=identity:shape=2,max_batch=8,queue_delay_us=10"));
    let inputs = [
        fp32("INPUT0", vec![1, 2]),
        fp32("INPUT0", vec![3, 2]),
        fp32("INPUT0", vec![2, 2]),
    ];
    let mut jobs: Vec<Job> = inputs.iter().map(|t| job(&model, t.clone())).collect();
    let outcomes = model.execute(&mut jobs);
    for (input, outcome) in inputs.iter().zip(outcomes) {
        let out = &outcome.unwrap().outputs[0];
        assert_eq!((&out.shape, &out.data), (&input.shape, &input.data));
    }
    let s = model.stats.snapshot("i");
    assert_eq!((s.inference_count, s.execution_count), (6, 1));
    let i = s.inference_stats.unwrap();
    assert_eq!((i.success.unwrap().count, i.queue.unwrap().count), (3, 3));
    assert_eq!(i.compute_infer.unwrap().count, 3);
    assert_eq!(s.batch_stats.len(), 1);
    assert_eq!(
        (
            s.batch_stats[0].batch_size,
            s.batch_stats[0].compute_infer.unwrap().count
        ),
        (6, 1)
    );
    assert!(s.last_inference > 0);
}

#[test]
fn echo_batches_strings_of_any_length() {
    let model = Model::new(def("e=echo:max_batch=4,preferred_batch=2"));
    let texts = [vec!["a", "bcd"], vec!["", "ééé"]];
    let tensors: Vec<Tensor> = (texts.iter())
        .map(|t| Tensor {
            name: "INPUT0".into(),
            datatype: DataType::Bytes,
            shape: vec![2, 1],
            data: encode_bytes_elements("INPUT0", t).unwrap(),
        })
        .collect();
    let mut jobs: Vec<Job> = tensors.iter().map(|t| job(&model, t.clone())).collect();
    for (t, outcome) in tensors.iter().zip(model.execute(&mut jobs)) {
        assert_eq!(outcome.unwrap().outputs[0].data, t.data);
    }
}

#[test]
fn service_times_have_the_asked_mean_and_range() {
    let n = 20_000;
    for dist in [Dist::Fixed, Dist::Uniform, Dist::Normal, Dist::Exponential] {
        let draws: Vec<f64> = (0..n)
            .map(|_| service_time(4.0, dist).as_secs_f64() * 1000.0)
            .collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        // Five standard errors of the distribution's own spread: a bound a right draw
        // passes but for about one run in a million (0.1 ms was 3.5 for the exponential).
        let sd = match dist {
            Dist::Fixed => 0.0,
            Dist::Uniform => 8.0 / 12f64.sqrt(),
            Dist::Normal => 1.0,
            Dist::Exponential => 4.0,
        };
        let bound = 5.0 * sd / (n as f64).sqrt() + 1e-9;
        assert!(
            (mean - 4.0).abs() < bound,
            "{dist:?}: mean {mean}, bound ±{bound}"
        );
        let max = draws.iter().cloned().fold(0.0, f64::max);
        match dist {
            Dist::Fixed => assert!(draws.iter().all(|&d| (d - 4.0).abs() < 1e-6)),
            Dist::Uniform => assert!(max <= 8.0),
            Dist::Normal => assert!(max < 4.0 + 6.0),
            Dist::Exponential => assert!(max > 12.0, "{max}"),
        }
        assert!(draws.iter().all(|&d| d >= 0.0));
    }
}

#[test]
fn sleep_waits_once_per_execution() {
    let model = Model::new(def("s=sleep:ms=30,shape=1,max_batch=4,queue_delay_us=1"));
    let mut jobs: Vec<Job> = (0..3)
        .map(|_| job(&model, fp32("INPUT0", vec![1, 1])))
        .collect();
    let start = Instant::now();
    assert!(model.execute(&mut jobs).iter().all(Result::is_ok));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(30) && took < Duration::from_millis(55),
        "{took:?}"
    );
    let spin = Model::new(def("s=sleep:ms=5,spin=true,shape=1"));
    let start = Instant::now();
    assert!(spin.execute(&mut [job(&spin, fp32("INPUT0", vec![1, 1]))])[0].is_ok());
    assert!(start.elapsed() >= Duration::from_millis(5));
}

#[test]
fn stream_defaults_to_five_responses_ten_then_four_ms_apart() {
    assert_eq!(
        def("s=stream").kind,
        ModelKind::Stream {
            responses: 5,
            first_ms: 10.0,
            interval_ms: 4.0,
            dist: Dist::Fixed,
            spin: false
        }
    );
    let model = Model::new(def("s=stream:max_batch=0"));
    assert!(model.decoupled() && model.def.kind.blocks());
    assert!(!Model::new(def("i=identity")).decoupled());
}

#[test]
fn fail_modes_answer_success_with_spoiled_bodies() {
    let input = fp32("INPUT0", vec![1, 4]);
    let bad = Model::new(def("f=fail:mode=bad_body,rate=1,shape=4"));
    let resp = run(&bad, request(vec![input.clone()])).unwrap();
    assert_eq!((resp.id.as_str(), resp.outputs.len()), ("7", 0));
    let wrong = Model::new(def("f=fail:mode=wrong_values,rate=1,shape=4"));
    let resp = run(&wrong, request(vec![input.clone()])).unwrap();
    let out = &resp.outputs[0];
    assert_eq!(
        (out.name.as_str(), out.datatype, &out.shape),
        ("OUTPUT0", DataType::Fp32, &input.shape)
    );
    assert_ne!(out.data, input.data);
    for model in [&bad, &wrong] {
        let i = model.stats.snapshot("f").inference_stats.unwrap();
        assert_eq!((i.success.unwrap().count, i.fail.unwrap().count), (1, 0));
    }
}

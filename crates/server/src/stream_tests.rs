//! Unit tests of one decoupled execution: the answers each request gets, their timing, and
//! what the statistics count per response index.

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::*;
use inferperf_wire::model::DataType;
use inferperf_wire::proto::{InferResponseStatistics, StatisticDuration};
use inferperf_wire::InferRequest;

fn model(text: &str) -> Model {
    Model::new(text.parse().unwrap())
}

fn job(model: &Model, batch: i64, fill: u8) -> Job {
    let input = Tensor {
        name: "INPUT0".into(),
        datatype: DataType::Fp32,
        shape: vec![batch, 2],
        data: Bytes::from(vec![fill; batch as usize * 8]),
    };
    let request = InferRequest {
        id: format!("r{fill}"),
        inputs: vec![input],
        ..Default::default()
    };
    model.check(request, Instant::now()).unwrap()
}

fn drain(answers: &mut mpsc::Receiver<StreamItem>) -> Vec<StreamAnswer> {
    std::iter::from_fn(|| answers.try_recv().ok())
        .map(Result::unwrap)
        .collect()
}

#[test]
fn each_request_gets_its_responses_then_an_empty_final_one() {
    let m = model("s=stream:responses=3,first_ms=5,interval_ms=2,shape=2,max_batch=4");
    let jobs = vec![job(&m, 1, 1), job(&m, 2, 2)];
    let expected: Vec<Bytes> = jobs.iter().map(|j| j.inputs[0].data.clone()).collect();
    let (senders, mut receivers): (Vec<_>, Vec<_>) = (0..2).map(|_| channel(&m)).unzip();
    let start = Instant::now();
    execute(&m, jobs, senders);
    assert!(
        start.elapsed() >= Duration::from_millis(9),
        "{:?}",
        start.elapsed()
    );
    for (answers, data) in receivers.iter_mut().zip(&expected) {
        let answers = drain(answers);
        let lasts: Vec<bool> = answers.iter().map(|a| a.last).collect();
        assert_eq!(lasts, [false, false, false, true]);
        for a in &answers[..3] {
            assert_eq!(a.response.outputs[0].name, "OUTPUT0");
            assert_eq!(&a.response.outputs[0].data, data);
        }
        assert!(answers[3].response.outputs.is_empty());
        assert!(answers[3].response.id.starts_with('r'));
    }
    let s = m.stats.snapshot("s");
    assert_eq!((s.inference_count, s.execution_count), (3, 1));
    let r = &s.response_stats;
    let count = |k: &str, pick: fn(&InferResponseStatistics) -> Option<StatisticDuration>| {
        r.get(k).and_then(pick).map_or(0, |d| d.count)
    };
    for k in ["0", "1", "2"] {
        assert_eq!(count(k, |x| x.success), 2, "{k}");
        assert_eq!(count(k, |x| x.compute_infer), 2, "{k}");
    }
    assert_eq!(
        (count("3", |x| x.empty_response), count("3", |x| x.success)),
        (2, 0)
    );
    let first = r["0"].success.unwrap();
    assert!(first.ns / first.count >= 5_000_000, "{first:?}");
}

#[test]
fn a_gone_client_is_counted_as_cancelled_and_ends_the_execution() {
    let m = model("s=stream:responses=1000,first_ms=1,interval_ms=5,shape=2");
    let (sender, answers) = channel(&m);
    drop(answers);
    let start = Instant::now();
    execute(&m, vec![job(&m, 1, 1)], vec![sender]);
    assert!(start.elapsed() < Duration::from_millis(500));
    let s = m.stats.snapshot("s");
    assert_eq!(s.response_stats["0"].cancel.unwrap().count, 1);
    assert_eq!(s.response_stats.len(), 1);
    let i = s.inference_stats.unwrap();
    assert_eq!((i.fail.unwrap().count, i.success.unwrap().count), (1, 0));
}

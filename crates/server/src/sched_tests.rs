//! Unit tests of the dynamic batcher's decisions and of both scheduler shapes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::*;
use inferperf_wire::model::DataType;
use inferperf_wire::{InferRequest, Tensor};

fn entry(batch: u32, dims: i64, enqueued: Instant) -> Entry {
    let tensor = Tensor {
        name: "INPUT0".into(),
        datatype: DataType::Fp32,
        shape: vec![i64::from(batch), dims],
        data: Bytes::new(),
    };
    Entry {
        job: Job {
            id: String::new(),
            inputs: vec![tensor],
            wanted: u64::MAX,
            batch,
            arrival: enqueued,
            enqueued,
        },
        reply: oneshot::channel().0,
    }
}

fn queue(batches: &[u32], enqueued: Instant) -> VecDeque<Entry> {
    batches.iter().map(|&b| entry(b, 4, enqueued)).collect()
}

fn policy(max: u32, preferred: &[u32], delay_us: u64) -> Policy {
    Policy {
        dynamic: true,
        max,
        preferred: preferred.to_vec(),
        delay: Duration::from_micros(delay_us),
    }
}

#[test]
fn without_dynamic_batching_requests_run_one_by_one() {
    let now = Instant::now();
    let p = Policy {
        dynamic: false,
        ..policy(8, &[], 0)
    };
    assert_eq!(decide(&queue(&[], now), &p, now), Decision::Wait(None));
    assert_eq!(decide(&queue(&[2, 1, 1], now), &p, now), Decision::Take(1));
}

#[test]
fn the_batcher_waits_for_a_full_batch_up_to_the_delay() {
    let t0 = Instant::now();
    let p = policy(8, &[], 500);
    let soon = t0 + Duration::from_micros(100);
    assert_eq!(
        decide(&queue(&[1, 1, 1], t0), &p, soon),
        Decision::Wait(Some(Duration::from_micros(400)))
    );
    let late = t0 + Duration::from_micros(500);
    assert_eq!(decide(&queue(&[1, 1, 1], t0), &p, late), Decision::Take(3));
    assert_eq!(decide(&queue(&[1; 8], t0), &p, soon), Decision::Take(8));
    assert_eq!(decide(&queue(&[1; 11], t0), &p, soon), Decision::Take(8));
    assert_eq!(decide(&queue(&[4, 3, 2], t0), &p, soon), Decision::Take(2));
    assert_eq!(decide(&queue(&[8, 1], t0), &p, soon), Decision::Take(1));
}

#[test]
fn a_preferred_size_runs_at_once() {
    let t0 = Instant::now();
    let p = policy(8, &[4, 8], 1000);
    assert_eq!(decide(&queue(&[1; 5], t0), &p, t0), Decision::Take(4));
    assert_eq!(
        decide(&queue(&[2, 2, 2], t0), &p, t0),
        Decision::Take(1 + 1)
    );
    assert!(matches!(
        decide(&queue(&[1; 3], t0), &p, t0),
        Decision::Wait(Some(_))
    ));
    let late = t0 + Duration::from_millis(1);
    assert_eq!(decide(&queue(&[1; 3], t0), &p, late), Decision::Take(3));
    assert_eq!(decide(&queue(&[1; 5], t0), &p, late), Decision::Take(5));
    // Preferred sizes cap the batch below max_batch.
    let small = policy(4, &[2], 1000);
    assert_eq!(decide(&queue(&[1; 7], t0), &small, t0), Decision::Take(2));
}

#[test]
fn without_a_delay_whatever_is_queued_runs() {
    let t0 = Instant::now();
    assert_eq!(
        decide(&queue(&[1, 1], t0), &policy(8, &[4], 0), t0),
        Decision::Take(2)
    );
    assert_eq!(
        decide(&queue(&[1; 5], t0), &policy(8, &[4], 0), t0),
        Decision::Take(4)
    );
}

#[test]
fn only_requests_of_the_same_shape_batch_together() {
    let t0 = Instant::now();
    let mut q = queue(&[1], t0);
    q.push_back(entry(1, 5, t0));
    q.push_back(entry(1, 4, t0));
    assert_eq!(decide(&q, &policy(8, &[], 500), t0), Decision::Take(1));
}

fn fp32_request(batch: i64) -> InferRequest {
    InferRequest {
        inputs: vec![Tensor {
            name: "INPUT0".into(),
            datatype: DataType::Fp32,
            shape: vec![batch, 1],
            data: Bytes::from(vec![0u8; batch as usize * 4]),
        }],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_requests_are_batched_and_answered() {
    let def: crate::def::ModelDef = "s=sleep:ms=20,shape=1,max_batch=4,queue_delay_us=20000"
        .parse()
        .unwrap();
    let model = Arc::new(Model::new(def));
    let scheduler = Arc::new(Scheduler::new(&model).unwrap());
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (model, scheduler) = (model.clone(), scheduler.clone());
            tokio::spawn(async move {
                let job = model.check(fp32_request(1), Instant::now()).unwrap();
                scheduler.submit(&model, job).await
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().is_ok());
    }
    let s = model.stats.snapshot("s");
    assert_eq!((s.inference_count, s.execution_count), (4, 1));
    scheduler.close();
    let job = model.check(fp32_request(1), Instant::now()).unwrap();
    let err = scheduler.submit(&model, job).await.unwrap_err();
    assert!(matches!(err, InferError::Unavailable(_)), "{err:?}");
}

#[tokio::test]
async fn direct_requests_run_on_the_callers_task() {
    let def: crate::def::ModelDef = "i=identity:shape=1,instances=2".parse().unwrap();
    let model = Arc::new(Model::new(def));
    let scheduler = Scheduler::new(&model).unwrap();
    assert!(matches!(scheduler, Scheduler::Direct(_)));
    for _ in 0..10 {
        let job = model.check(fp32_request(2), Instant::now()).unwrap();
        assert!(scheduler.submit(&model, job).await.is_ok());
    }
    let s = model.stats.snapshot("i");
    assert_eq!((s.inference_count, s.execution_count), (20, 10));
    assert_eq!(
        (
            s.batch_stats[0].batch_size,
            s.batch_stats[0].compute_infer.unwrap().count
        ),
        (2, 10)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_waiting_when_the_queue_closes_gets_an_error() {
    let def: crate::def::ModelDef = "s=stream:responses=1000,first_ms=1,interval_ms=5,shape=1"
        .parse()
        .unwrap();
    let model = Arc::new(Model::new(def));
    let scheduler = Scheduler::new(&model).unwrap();
    let mut receivers = Vec::new();
    for _ in 0..2 {
        let job = model.check(fp32_request(1), Instant::now()).unwrap();
        let (sender, answers) = crate::stream::channel(&model);
        scheduler.submit_stream(job, sender).unwrap();
        receivers.push(answers);
    }
    let first = receivers[0].recv().await.unwrap().unwrap();
    assert!(!first.last);
    scheduler.close();
    let waiting = receivers[1].recv().await.unwrap().unwrap_err();
    assert!(matches!(waiting, InferError::Unavailable(_)), "{waiting:?}");
    let job = model.check(fp32_request(1), Instant::now()).unwrap();
    let (sender, _answers) = crate::stream::channel(&model);
    assert!(scheduler.submit_stream(job, sender).is_err());
}

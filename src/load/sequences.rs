//! Sequences of a stateful model, as perf_analyzer plays them: each live sequence has a
//! correlation id from `--sequence-id-range` (the next one in turn, wrapping; a slot whose
//! next id is still held by another live sequence keeps its previous id), a length drawn
//! within ±`--sequence-length-variation` percent of `--sequence-length` (at least 1), or,
//! with multi-stream input data, one stream drawn at random and played in order. Drivers hold
//! one [`Sequence`] per in-flight slot (closed loop) or per `--num-of-sequences` (open loop)
//! and ask it for each request's step.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use rand::rngs::SmallRng;
use rand::Rng;

use crate::config::sequence::SequenceConfig;
use crate::data::Dataset;
use inferperf_wire::model::{ModelSpec, SequenceStep};

/// How a run's sequences are made; shared by every slot of a driver.
#[derive(Debug)]
pub struct SequencePlan {
    config: SequenceConfig,
    string_ids: bool,
    /// Per stream of multi-stream input data, its requests in order (empty: none).
    streams: Vec<Vec<usize>>,
    /// How many requests the dataset has (sequences without streams cycle through them).
    requests: usize,
    /// The next id's place in the range.
    next_id: AtomicU64,
    /// The next request of a sequence without streams.
    next_request: AtomicUsize,
    /// The id each sequence holder (slot) uses now (0: none yet).
    held: Mutex<Vec<u64>>,
}

impl SequencePlan {
    /// The plan of a run on `model`; `None` when the model is not a sequence model.
    pub fn for_run(
        config: &SequenceConfig,
        model: &ModelSpec,
        dataset: &Dataset,
    ) -> Option<SequencePlan> {
        if !model.is_sequence() {
            return None;
        }
        let mut streams: Vec<Vec<usize>> = Vec::new();
        for (index, entry) in dataset.entries.iter().enumerate() {
            if let Some(stream) = entry.stream {
                let stream = stream as usize;
                if streams.len() <= stream {
                    streams.resize(stream + 1, Vec::new());
                }
                streams[stream].push(index);
            }
        }
        streams.retain(|s| !s.is_empty());
        Some(SequencePlan {
            config: config.clone(),
            string_ids: model.string_sequence_ids,
            streams,
            requests: dataset.len().max(1),
            next_id: AtomicU64::new(0),
            next_request: AtomicUsize::new(0),
            held: Mutex::new(Vec::new()),
        })
    }

    /// `--num-of-sequences`: the open loop's live sequences.
    pub fn live_sequences(&self) -> usize {
        self.config.live_sequences as usize
    }

    /// `--serial-sequences`.
    pub fn serial(&self) -> bool {
        self.config.serial
    }

    /// Begins the next sequence of holder `holder`.
    pub fn begin(&self, holder: usize, rng: &mut SmallRng) -> Sequence {
        let id = self.next_id_for(holder);
        let stream = (!self.streams.is_empty()).then(|| rng.random_range(0..self.streams.len()));
        let length = match (stream, self.config.length) {
            (Some(s), None) => self.streams[s].len() as u64,
            _ => self.varied_length(rng),
        };
        Sequence {
            id,
            length,
            done: 0,
            stream,
        }
    }

    fn varied_length(&self, rng: &mut SmallRng) -> u64 {
        let base = self.config.base_length() as f64;
        let spread = base * self.config.variation_pct / 100.0;
        let offset = (rng.random::<f64>() * 2.0 - 1.0) * spread;
        (base + offset.trunc()).max(1.0) as u64
    }

    /// The next id in turn, or the holder's previous one when another live sequence holds it.
    fn next_id_for(&self, holder: usize) -> u64 {
        let k = self.next_id.fetch_add(1, Ordering::Relaxed);
        let candidate = self.config.id_start + k % self.config.id_count.max(1);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() <= holder {
            held.resize(holder + 1, 0);
        }
        let previous = held[holder];
        let id = if held.contains(&candidate) && previous != 0 {
            previous
        } else {
            candidate
        };
        held[holder] = id;
        id
    }

    /// The request and step of the sequence's next request (not yet taken).
    pub fn step(&self, sequence: &Sequence) -> (usize, SequenceStep) {
        let index = match sequence.stream {
            Some(s) => {
                let stream = &self.streams[s];
                stream[sequence.done as usize % stream.len()]
            }
            None => self.next_request.fetch_add(1, Ordering::Relaxed) % self.requests,
        };
        let step = SequenceStep {
            id: sequence.id,
            start: sequence.done == 0,
            end: sequence.done + 1 >= sequence.length,
            string_id: self.string_ids,
        };
        (index, step)
    }
}

/// One live sequence: its id, length and how many of its requests went out.
#[derive(Debug, Clone)]
pub struct Sequence {
    pub id: u64,
    pub length: u64,
    pub done: u64,
    stream: Option<usize>,
}

impl Sequence {
    /// Counts one request as sent.
    pub fn advance(&mut self) {
        self.done += 1;
    }

    /// Every request of the sequence went out.
    pub fn finished(&self) -> bool {
        self.done >= self.length
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Entry;
    use inferperf_wire::model::Scheduler;
    use rand::SeedableRng;

    fn config(length: u64, variation: f64, start: u64, count: u64) -> SequenceConfig {
        SequenceConfig {
            length: Some(length),
            variation_pct: variation,
            id_start: start,
            id_count: count,
            serial: false,
            live_sequences: 4,
            flags_given: true,
        }
    }

    fn sequence_model() -> ModelSpec {
        ModelSpec {
            scheduler: Scheduler::Sequence,
            ..Default::default()
        }
    }

    fn dataset(streams: &[Option<u32>]) -> Dataset {
        let entry = |stream: &Option<u32>| Entry {
            inputs: Vec::new(),
            timestamp_ms: None,
            expected: None,
            origin: String::new(),
            prompt: None,
            stream: *stream,
            turn: None,
        };
        Dataset {
            tokenizer: None,
            marker_tokens: 0,
            entries: streams.iter().map(entry).collect(),
        }
    }

    #[test]
    fn lengths_stay_within_the_variation_and_at_least_one() {
        let plan = SequencePlan::for_run(
            &config(10, 50.0, 1, 100),
            &sequence_model(),
            &dataset(&[None]),
        )
        .unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let lengths: Vec<u64> = (0..500).map(|_| plan.begin(0, &mut rng).length).collect();
        assert!(lengths.iter().all(|l| (5..=15).contains(l)), "{lengths:?}");
        assert!(lengths.contains(&5) || lengths.contains(&6));
        assert!(lengths.contains(&14) || lengths.contains(&15));
        let short = SequencePlan::for_run(
            &config(1, 100.0, 1, 100),
            &sequence_model(),
            &dataset(&[None]),
        )
        .unwrap();
        assert!((0..100).all(|_| short.begin(0, &mut rng).length >= 1));
        assert!(SequencePlan::for_run(
            &config(1, 0.0, 1, 9),
            &ModelSpec::default(),
            &dataset(&[None])
        )
        .is_none());
    }

    #[test]
    fn ids_wrap_within_the_range_and_never_collide_with_a_live_one() {
        let plan =
            SequencePlan::for_run(&config(3, 0.0, 10, 3), &sequence_model(), &dataset(&[None]))
                .unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let ids: Vec<u64> = (0..3).map(|h| plan.begin(h, &mut rng).id).collect();
        assert_eq!(ids, vec![10, 11, 12]);
        // Holder 2 ends first; the next id in turn (10) is holder 0's, so it keeps 12.
        assert_eq!(plan.begin(2, &mut rng).id, 12);
        // Then 11 is next in turn, held by holder 1: holder 0 keeps 10.
        assert_eq!(plan.begin(0, &mut rng).id, 10);
    }

    #[test]
    fn streams_are_played_in_order_with_start_and_end() {
        let mut cfg = config(20, 0.0, 1, 100);
        cfg.length = None;
        let plan = SequencePlan::for_run(
            &cfg,
            &sequence_model(),
            &dataset(&[Some(0), Some(0), Some(0)]),
        )
        .unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let mut seq = plan.begin(0, &mut rng);
        assert_eq!(seq.length, 3);
        let mut steps = Vec::new();
        while !seq.finished() {
            let (index, step) = plan.step(&seq);
            steps.push((index, step.start, step.end));
            seq.advance();
        }
        assert_eq!(
            steps,
            vec![(0, true, false), (1, false, false), (2, false, true)]
        );
    }
}

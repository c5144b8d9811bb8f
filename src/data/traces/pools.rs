//! AIPerf's random_pool: a file (one pool) or a folder (one pool per file, in name order) of
//! single_turn-shaped lines, from which `--conversation-num` requests (AIPerf's default
//! 100) are drawn with replacement. Each request takes one draw of every pool, merged: the
//! texts and media of all pools in one turn. With `--prompt-batch-size N` the single pool's
//! texts are drawn N at a time, independently of its media, as AIPerf does.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::formats::objects;
use super::turn_fields::{self, TurnFields};
use super::{Content, ReadOptions, Record};
use crate::data::parts::Parts;
use crate::error::{RunError, RunResult};

/// AIPerf's number of random_pool conversations when none is given.
const DEFAULT_CONVERSATIONS: u32 = 100;
/// Offsets the pools' draws from the run's other seeded draws.
const POOL_SEED: u64 = 0x9001_7001;

/// The conversations drawn from the pools of `files` (`(name, text)`).
pub fn read(
    files: &[(String, String)],
    folder: &Path,
    options: &ReadOptions,
) -> RunResult<Vec<Record>> {
    let mut pools = Vec::with_capacity(files.len());
    for (name, text) in files {
        let pool: Vec<TurnFields> = objects(name, text)
            .map(|line| line.and_then(|(origin, map)| turn_fields::read(&origin, &map, folder)))
            .collect::<RunResult<_>>()?;
        if pool.is_empty() {
            return Err(RunError::bad_option(format!(
                "--input-file {name} holds no lines: a random_pool file is a pool of single_turn lines."
            )));
        }
        pools.push((name.as_str(), pool));
    }
    let count = options.conversations.unwrap_or(DEFAULT_CONVERSATIONS);
    let mut rng = SmallRng::seed_from_u64(options.seed ^ POOL_SEED);
    let batch = options.texts_per_request.unwrap_or(1);
    if batch != 1 {
        return batched(&pools, count, batch, &mut rng);
    }
    let mut records = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut merged = TurnFields::default();
        let mut names = Vec::with_capacity(pools.len());
        for (name, pool) in &pools {
            let k = rng.random_range(0..pool.len());
            merge(&mut merged, &pool[k]);
            names.push(format!("{name} line {}", k + 1));
        }
        records.push(record(
            format!("random_pool draw {i} ({})", names.join(", ")),
            merged,
        ));
    }
    Ok(records)
}

/// `batch` texts drawn apart per request from the one pool (media one of each kind).
fn batched(
    pools: &[(&str, Vec<TurnFields>)],
    count: u32,
    batch: u32,
    rng: &mut SmallRng,
) -> RunResult<Vec<Record>> {
    let [(name, pool)] = pools else {
        return Err(RunError::bad_option(
            "--prompt-batch-size draws texts from one pool, and the random_pool folder has several: give one file, or drop --prompt-batch-size (as AIPerf refuses both).",
        ));
    };
    let texts: Vec<&String> = pool.iter().flat_map(|f| &f.texts).collect();
    if texts.is_empty() {
        return Err(RunError::bad_option(format!(
            "--prompt-batch-size draws texts, and the random_pool {name} has none: drop the flag, or give texts."
        )));
    }
    let mut records = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut fields = TurnFields::default();
        for _ in 0..batch {
            fields
                .texts
                .push(texts[rng.random_range(0..texts.len())].clone());
        }
        let media = &pool[rng.random_range(0..pool.len())].parts;
        fields.parts.images = media.images.iter().take(1).cloned().collect();
        fields.parts.audios = media.audios.iter().take(1).cloned().collect();
        fields.parts.videos = media.videos.iter().take(1).cloned().collect();
        records.push(record(format!("random_pool draw {i}"), fields));
    }
    Ok(records)
}

/// Adds a pool's draw to a request's content.
fn merge(into: &mut TurnFields, draw: &TurnFields) {
    into.texts.extend(draw.texts.iter().cloned());
    let (to, from) = (&mut into.parts, &draw.parts);
    to.images.extend(from.images.iter().cloned());
    to.audios.extend(from.audios.iter().cloned());
    to.videos.extend(from.videos.iter().cloned());
    to.extra.extend(from.extra.clone());
}

/// A request of a draw's content: the first text the prompt's, the rest its parts.
fn record(origin: String, fields: TurnFields) -> Record {
    let mut texts = fields.texts.into_iter();
    let text = texts.next().unwrap_or_default();
    let parts = Parts {
        texts: texts.collect(),
        ..fields.parts
    };
    Record {
        content: Content::Text(text),
        parts,
        ..Record::new(origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(conversations: Option<u32>, batch: Option<u32>) -> ReadOptions {
        ReadOptions {
            seed: 5,
            conversations,
            texts_per_request: batch,
            ..ReadOptions::default()
        }
    }

    #[test]
    fn every_draw_takes_one_line_of_each_pool() {
        let queries = (
            "q.jsonl".to_string(),
            "{\"text\": \"q1\"}\n{\"text\": \"q2\"}\n".to_string(),
        );
        let passages = (
            "p.jsonl".to_string(),
            "{\"text\": \"p1\", \"image\": \"https://x/i.png\"}\n".to_string(),
        );
        let dir = Path::new(".");
        let records = read(&[queries.clone(), passages], dir, &options(Some(40), None)).unwrap();
        assert_eq!(records.len(), 40);
        for r in &records {
            let Content::Text(text) = &r.content else {
                panic!("text")
            };
            assert!(text == "q1" || text == "q2", "{text}");
            assert_eq!(r.parts.texts, ["p1"]);
            assert_eq!(r.parts.images, ["https://x/i.png"]);
        }
        let firsts: std::collections::HashSet<String> =
            records.iter().map(|r| format!("{:?}", r.content)).collect();
        assert_eq!(firsts.len(), 2, "both lines are drawn");
        assert_eq!(
            read(std::slice::from_ref(&queries), dir, &options(None, None))
                .unwrap()
                .len(),
            100,
            "AIPerf's default"
        );
        let batched = read(&[queries], dir, &options(Some(3), Some(4))).unwrap();
        assert!(
            batched.iter().all(|r| r.parts.texts.len() == 3),
            "4 texts a request"
        );
    }

    #[test]
    fn batches_of_several_pools_are_refused() {
        let file = |n: &str| (n.to_string(), "{\"text\": \"a\"}\n".to_string());
        let message = read(
            &[file("a"), file("b")],
            Path::new("."),
            &options(None, Some(2)),
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("several"), "{message}");
    }
}

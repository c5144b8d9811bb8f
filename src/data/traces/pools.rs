//! AIPerf's random_pool: a file (one pool) or a folder (one pool per file, in name order) of
//! single_turn-shaped lines, from which `--conversation-num` requests (AIPerf's default
//! 100) are drawn with replacement. Each request takes one draw of every pool, merged: the
//! texts and media of all pools in one turn. With a batch size other than 1
//! (`--prompt-batch-size`, `--image-batch-size`, `--audio-batch-size`, `--video-batch-size`)
//! each kind is drawn that many times per request from all of the one pool's lines,
//! independently of the others, as AIPerf does.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::formats::objects;
use super::turn_fields::{self, TurnFields};
use super::{Content, ReadOptions, Record};
use crate::data::parts::Parts;
use inferperf_wire::error::{RunError, RunResult};

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
    let batches = Batches::of(options);
    if batches.requested(&pools) {
        return batched(&pools, count, &batches, &mut rng);
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

/// What each request draws from the pool when any batch size is not 1: so many texts
/// (`--prompt-batch-size`), images, audios and videos (their `--*-batch-size`), each 1
/// unless given; 0 leaves a kind out.
struct Batches {
    texts: u32,
    images: u32,
    audios: u32,
    videos: u32,
}

impl Batches {
    fn of(options: &ReadOptions) -> Batches {
        let media = options.pool_media;
        Batches {
            texts: options.texts_per_request.unwrap_or(1),
            images: media.images.unwrap_or(1),
            audios: media.audios.unwrap_or(1),
            videos: media.videos.unwrap_or(1),
        }
    }

    /// As AIPerf decides: a batch size other than 1 of a kind the pools hold.
    fn requested(&self, pools: &[(&str, Vec<TurnFields>)]) -> bool {
        let lines = || pools.iter().flat_map(|(_, pool)| pool);
        (self.texts != 1 && lines().any(|f| !f.texts.is_empty()))
            || (self.images != 1 && lines().any(|f| !f.parts.images.is_empty()))
            || (self.audios != 1 && lines().any(|f| !f.parts.audios.is_empty()))
            || (self.videos != 1 && lines().any(|f| !f.parts.videos.is_empty()))
    }
}

/// Each request's texts, images, audios and videos drawn apart (with replacement) from
/// all the pool's lines, so many of each kind as [`Batches`] says; the lines' pairings are
/// not kept, as AIPerf does not keep them.
fn batched(
    pools: &[(&str, Vec<TurnFields>)],
    count: u32,
    batches: &Batches,
    rng: &mut SmallRng,
) -> RunResult<Vec<Record>> {
    let [(name, pool)] = pools else {
        return Err(RunError::bad_option(
            "Batch sizes (--prompt-batch-size, --image-batch-size, ...) draw from one pool, and the random_pool folder has several: give one file, or drop the batch sizes (as AIPerf refuses both).",
        ));
    };
    let texts: Vec<&String> = pool.iter().flat_map(|f| &f.texts).collect();
    let images: Vec<&String> = pool.iter().flat_map(|f| &f.parts.images).collect();
    let audios: Vec<&String> = pool.iter().flat_map(|f| &f.parts.audios).collect();
    let videos: Vec<&String> = pool.iter().flat_map(|f| &f.parts.videos).collect();
    let kinds = [
        (texts.len(), batches.texts),
        (images.len(), batches.images),
        (audios.len(), batches.audios),
        (videos.len(), batches.videos),
    ];
    if !kinds.iter().any(|&(held, batch)| held > 0 && batch > 0) {
        return Err(RunError::bad_option(format!(
            "The batch sizes leave the random_pool {name} nothing to send: every kind it holds has batch size 0; give one of them a batch size above 0."
        )));
    }
    let mut draw = |from: &[&String], batch: u32| -> Vec<String> {
        match from.is_empty() {
            true => Vec::new(),
            false => (0..batch)
                .map(|_| from[rng.random_range(0..from.len())].clone())
                .collect(),
        }
    };
    let mut records = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut fields = TurnFields {
            texts: draw(&texts, batches.texts),
            ..TurnFields::default()
        };
        fields.parts.images = draw(&images, batches.images);
        fields.parts.audios = draw(&audios, batches.audios);
        fields.parts.videos = draw(&videos, batches.videos);
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
    fn media_batches_draw_each_kind_from_the_whole_pool() {
        let pool = (
            "m.jsonl".to_string(),
            (1..=3)
                .map(|i| format!("{{\"text\": \"t{i}\", \"image\": \"https://x/{i}.png\"}}\n"))
                .collect::<String>(),
        );
        let dir = Path::new(".");
        let mut two_images = options(Some(30), None);
        two_images.pool_media.images = Some(2);
        let records = read(std::slice::from_ref(&pool), dir, &two_images).unwrap();
        assert_eq!(records.len(), 30);
        let mut seen = std::collections::HashSet::new();
        for r in &records {
            assert_eq!(r.parts.images.len(), 2, "two images a request");
            assert!(r.parts.texts.is_empty(), "one text a request: the prompt's");
            seen.extend(r.parts.images.iter().cloned());
        }
        assert_eq!(seen.len(), 3, "every line's image is drawn");
        let mut no_images = options(Some(5), None);
        no_images.pool_media.images = Some(0);
        let records = read(std::slice::from_ref(&pool), dir, &no_images).unwrap();
        assert!(
            records.iter().all(|r| r.parts.images.is_empty()),
            "0 leaves images out"
        );
        let mut nothing = options(Some(5), Some(0));
        nothing.pool_media.images = Some(0);
        let message = read(&[pool], dir, &nothing).unwrap_err().to_string();
        assert!(message.contains("nothing to send"), "{message}");
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

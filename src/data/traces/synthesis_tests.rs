use super::*;
use crate::data::traces::blocks::check_fit;

const B: u32 = 512;

fn record(n: usize, tokens: u32, ids: &[u64], at: f64, output: u32) -> Record {
    let mut r = Record::new(format!("trace line {n}"));
    r.content = Content::Length {
        tokens,
        hash_ids: ids.to_vec(),
    };
    r.timestamp_ms = Some(at);
    r.output_length = Some(output);
    r
}

/// Two requests sharing blocks 1 and 2, each with a block of its own, and one alone.
fn trace() -> Vec<Record> {
    vec![
        record(1, 1500, &[1, 2, 3], 1001.0, 3),
        record(2, 1400, &[1, 2, 4], 2003.0, 5),
        record(3, 300, &[9], 3005.0, 100),
    ]
}

fn lengths(records: &[Record]) -> Vec<(u32, Vec<u64>)> {
    records
        .iter()
        .map(|r| match &r.content {
            Content::Length { tokens, hash_ids } => (*tokens, hash_ids.clone()),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn with(f: impl FnOnce(&mut Synthesis)) -> Synthesis {
    let mut s = Synthesis::default();
    f(&mut s);
    s
}

#[test]
fn the_caps_alone_drop_long_inputs_and_cap_answers_and_rebuild_nothing() {
    let s = with(|s| {
        s.max_isl = Some(1450);
        s.max_osl = Some(4);
    });
    let (records, capped) = apply(trace(), &s, B, 7).unwrap();
    assert_eq!(
        lengths(&records),
        vec![(1400, vec![1, 2, 4]), (300, vec![9])]
    );
    let outputs: Vec<_> = records.iter().map(|r| r.output_length).collect();
    assert_eq!(outputs, vec![Some(4), Some(4)]);
    assert_eq!(records[0].timestamp_ms, Some(2003.0));
    assert_eq!(
        capped,
        Capped {
            dropped_long_inputs: 1,
            capped_answers: 2
        }
    );
}

#[test]
fn a_faster_clock_keeps_lengths_and_prefixes_and_gives_own_blocks_new_ids() {
    let s = with(|s| s.speedup = 2.0);
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    let at: Vec<_> = records.iter().map(|r| r.timestamp_ms.unwrap()).collect();
    assert_eq!(at, vec![500.0, 1001.0, 1502.0], "divided, whole ms");
    let rebuilt = lengths(&records);
    let tokens: Vec<_> = rebuilt.iter().map(|(t, _)| *t).collect();
    assert_eq!(tokens, vec![1500, 1400, 300]);
    assert_eq!(&rebuilt[0].1[..2], &[1, 2]);
    assert_eq!(&rebuilt[1].1[..2], &[1, 2]);
    let own = [rebuilt[0].1[2], rebuilt[1].1[2], rebuilt[2].1[0]];
    assert!(own.iter().all(|id| *id > 2), "{own:?}");
    assert!(own[0] != own[1] && own[1] != own[2] && own[0] != own[2]);
    check_fit(&records, B).unwrap();
}

#[test]
fn a_doubled_prefix_splits_each_shared_block_in_two_and_stays_shared() {
    let s = with(|s| s.prefix_len = 2.0);
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    let rebuilt = lengths(&records);
    assert_eq!(rebuilt[0].0, 4 * B + (1500 - 2 * B));
    assert_eq!(&rebuilt[0].1[..4], &[2, 3, 4, 5]);
    assert_eq!(&rebuilt[1].1[..4], &[2, 3, 4, 5]);
    assert_eq!(rebuilt[0].1.len(), 5);
    // The lone request has no shared prefix: its length is its own.
    assert_eq!(rebuilt[2].0, 300);
    check_fit(&records, B).unwrap();
}

#[test]
fn a_fractional_prefix_adds_blocks_of_its_own_and_a_shorter_one_cuts() {
    let s = with(|s| s.prefix_len = 1.5);
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    let rebuilt = lengths(&records);
    // Two shared blocks, 1.5 times: three, the third new and not shared.
    assert_eq!(&rebuilt[0].1[..2], &[1, 2]);
    assert_eq!(rebuilt[0].0, 3 * B + (1500 - 2 * B));
    assert_ne!(rebuilt[0].1[2], rebuilt[1].1[2]);
    let s = with(|s| s.prefix_len = 0.5);
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    let rebuilt = lengths(&records);
    assert_eq!(rebuilt[0].0, B + (1500 - 2 * B));
    assert_eq!(rebuilt[0].1[0], 1);
    assert_eq!(rebuilt[0].1.len(), 2);
    check_fit(&records, B).unwrap();
}

#[test]
fn a_longer_prompt_takes_more_blocks_of_its_own() {
    let s = with(|s| s.prompt_len = 2.0);
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    let rebuilt = lengths(&records);
    assert_eq!(rebuilt[0].0, 2 * B + 2 * (1500 - 2 * B));
    assert_eq!(rebuilt[0].1.len(), 4);
    assert_eq!(rebuilt[2], (600, rebuilt[2].1.clone()));
    assert_eq!(rebuilt[2].1.len(), 2);
    check_fit(&records, B).unwrap();
    // Capped by --synthesis-max-isl after the scaling, its blocks cut to fit.
    let s = with(|s| {
        s.prompt_len = 2.0;
        s.max_isl = Some(1500);
    });
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    assert_eq!(lengths(&records)[0].0, 1500);
    assert_eq!(lengths(&records)[0].1.len(), 3);
    check_fit(&records, B).unwrap();
}

#[test]
fn the_same_prompt_twice_keeps_its_short_last_block() {
    let twice = vec![
        record(1, 700, &[1, 2], 0.0, 8),
        record(2, 700, &[1, 2], 10.0, 8),
    ];
    let s = with(|s| s.speedup = 2.0);
    let (records, _) = apply(twice, &s, B, 7).unwrap();
    assert_eq!(lengths(&records), vec![(700, vec![1, 2]); 2]);
    check_fit(&records, B).unwrap();
}

#[test]
fn answers_are_scaled_rounding_halves_to_even_and_never_to_nothing() {
    let s = with(|s| s.output_len = 1.5);
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    let outputs: Vec<_> = records.iter().map(|r| r.output_length.unwrap()).collect();
    assert_eq!(outputs, vec![4, 8, 150]);
    let s = with(|s| s.output_len = 0.0);
    let (records, _) = apply(trace(), &s, B, 7).unwrap();
    assert!(records.iter().all(|r| r.output_length == Some(1)));
}

#[test]
fn prefix_trees_keep_sharing_within_a_tree_and_none_across() {
    let many: Vec<Record> = (0..64)
        .map(|n| record(n, 1100, &[1, 2, 100 + n as u64], n as f64, 4))
        .collect();
    let s = with(|s| s.prefix_roots = 4);
    let (records, _) = apply(many, &s, B, 7).unwrap();
    let mut trees: HashMap<Vec<u64>, usize> = HashMap::new();
    for (_, ids) in lengths(&records) {
        *trees.entry(ids[..2].to_vec()).or_default() += 1;
    }
    assert_eq!(trees.len(), 4, "{trees:?}");
    let all: Vec<u64> = trees.keys().flatten().copied().collect();
    let distinct: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(
        distinct.len(),
        all.len(),
        "no block in two trees: {trees:?}"
    );
    check_fit(&records, B).unwrap();
}

#[test]
fn texts_and_messages_keep_their_content_and_take_the_clock() {
    let mut text = Record::new("trace line 1".into());
    text.content = Content::Text("hello".into());
    text.timestamp_ms = Some(999.0);
    let s = with(|s| s.speedup = 10.0);
    let (records, _) = apply(vec![text], &s, B, 7).unwrap();
    assert_eq!(records[0].content, Content::Text("hello".into()));
    assert_eq!(records[0].timestamp_ms, Some(99.0));
}

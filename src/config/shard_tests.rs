//! Tests of reading a shard from the flags and the environment, and of splitting a load.
use super::*;
use crate::cli::{normalize_args, Cli, Command};
use clap::Parser;
use std::time::Duration;

fn args(extra: &[&str]) -> ProfileArgs {
    let mut all = vec!["inferperf", "-m", "m"];
    all.extend_from_slice(extra);
    let cli = Cli::try_parse_from(normalize_args(all.iter().map(|s| s.to_string()).collect()))
        .expect("flags parse");
    let Command::Profile(p) = cli.command else {
        panic!("expected profile");
    };
    *p
}

fn shard(extra: &[&str], env: &[(&str, &str)]) -> RunResult<Option<ShardPlan>> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    parse_shard_from(&args(extra), |name| {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
}

fn error(extra: &[&str], env: &[(&str, &str)]) -> String {
    shard(extra, env).expect_err("refused").to_string()
}

#[test]
fn the_flag_wins_over_the_environment() {
    let s = shard(
        &["--shard", "2/4"],
        &[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "8")],
    )
    .unwrap()
    .unwrap();
    assert_eq!((s.index, s.count, s.source), (2, 4, ShardSource::Flag));
    assert_eq!(shard(&[], &[]).unwrap(), None);
    assert_eq!(shard(&["--shard", "0/1"], &[]).unwrap(), None);
}

#[test]
fn engines_give_the_shard_through_the_environment() {
    let mpi = shard(
        &[],
        &[("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "4")],
    )
    .unwrap()
    .unwrap();
    assert_eq!((mpi.index, mpi.count, mpi.source), (3, 4, ShardSource::Mpi));
    let pmi = shard(&["--enable-mpi"], &[("PMI_RANK", "1"), ("PMI_SIZE", "2")])
        .unwrap()
        .unwrap();
    assert_eq!((pmi.index, pmi.count), (1, 2));
    let job = shard(&["--shards", "5"], &[("JOB_COMPLETION_INDEX", "4")])
        .unwrap()
        .unwrap();
    assert_eq!(
        (job.index, job.count, job.source),
        (4, 5, ShardSource::Kubernetes)
    );
}

#[test]
fn bad_shards_are_one_sentence_naming_the_source() {
    assert!(error(&["--shard", "4/4"], &[]).contains("not below the shard count 4"));
    assert!(error(&["--shard", "1-4"], &[]).contains("as i/N"));
    assert!(error(&["--shard", "0/0"], &[]).contains("not 0"));
    assert!(error(&[], &[("JOB_COMPLETION_INDEX", "1")]).contains("pass --shards N"));
    assert!(error(&["--shards", "3"], &[]).contains("JOB_COMPLETION_INDEX is not set"));
    assert!(error(&["--enable-mpi"], &[]).contains("needs an MPI launcher"));
    assert!(error(&["--start-at", "tomorrow"], &[]).contains("RFC 3339"));
    assert!(error(&[], &[("PMI_RANK", "x"), ("PMI_SIZE", "2")]).contains("PMI_RANK=x"));
}

#[test]
fn start_at_alone_aligns_one_process() {
    let s = shard(&["--start-at", "@1800000000.5"], &[])
        .unwrap()
        .unwrap();
    assert_eq!((s.index, s.count), (0, 1));
    let at = s.start_at.unwrap().duration_since(UNIX_EPOCH).unwrap();
    assert_eq!(at, Duration::from_millis(1_800_000_000_500));
    assert!(shard(&["--start-at", "2026-11-24T10:00:00Z"], &[])
        .unwrap()
        .is_some());
}

#[test]
fn a_concurrency_splits_as_evenly_as_integers_allow() {
    let shares: Vec<u32> = (0..4)
        .map(|index| {
            let plan = ShardPlan {
                index,
                count: 4,
                source: ShardSource::Flag,
                start_at: None,
            };
            plan.concurrency_share(10)
        })
        .collect();
    assert_eq!(shares, vec![3, 3, 2, 2]);
    let plan = ShardPlan {
        index: 1,
        count: 3,
        source: ShardSource::Flag,
        start_at: None,
    };
    assert_eq!(plan.count_share(100), 33);
    assert!(plan.takes(4) && !plan.takes(3));
}

#[test]
fn each_shard_writes_its_own_outputs() {
    let cfg = |extra: &[&str]| {
        let mut all = vec!["--shard", "2/4", "--concurrency-range", "8"];
        all.extend_from_slice(extra);
        Config::from_args(&args(&all)).unwrap()
    };
    let dir = cfg(&["--report-dir", "runs/x", "-f", "out/a.csv"]);
    assert_eq!(
        dir.output.results_path().unwrap(),
        std::path::Path::new("runs/x/shard-2/results.json")
    );
    assert!(dir.output.csv_paths().contains(&"out/a.shard-2.csv".into()));
    let file = cfg(&["--results-file", "r.json"]);
    assert_eq!(
        file.output.results_path().unwrap(),
        std::path::Path::new("r.shard-2.json")
    );
}

//! The arrival pattern and cancellation flags read into a configuration, and their
//! conflicts (each one sentence, exit 3).

use std::time::Duration;

use crate::cli::{normalize_args, Cli, Command};
use crate::config::{ArrivalPattern, Config, LoadMode, RequestCancellation};
use clap::Parser;
use inferperf_wire::error::{RunResult, EXIT_BAD_OPTION};

fn config(rest: &[&str]) -> RunResult<Config> {
    let mut all = vec!["inferperf", "profile", "-m", "m", "-u", "127.0.0.1:9"];
    all.extend_from_slice(rest);
    let all = normalize_args(all.iter().map(|s| s.to_string()).collect());
    let cli = Cli::try_parse_from(all).expect("flags parse");
    let Command::Profile(p) = cli.command else {
        panic!("expected profile");
    };
    Config::from_args(&p)
}

fn distribution(rest: &[&str]) -> ArrivalPattern {
    match config(rest).unwrap().load.mode {
        LoadMode::RequestRate { distribution, .. } => distribution,
        other => panic!("not a rate: {other:?}"),
    }
}

fn refused(rest: &[&str], expected: &str) {
    let err = config(rest).expect_err(expected);
    let text = err.to_string();
    assert_eq!(err.exit_code(), EXIT_BAD_OPTION, "{text}");
    assert!(text.contains(expected), "{text}");
    assert!(!text.contains('\n') && text.ends_with('.'), "{text}");
}

#[test]
fn arrival_patterns_come_from_either_tool_s_flag() {
    let rate = ["--request-rate-range", "10"];
    let with = |more: &[&str]| distribution(&[&rate[..], more].concat());
    assert_eq!(with(&[]), ArrivalPattern::Constant);
    assert_eq!(
        with(&["--request-distribution", "poisson"]),
        ArrivalPattern::Poisson
    );
    assert_eq!(
        with(&["--arrival-pattern", "poisson"]),
        ArrivalPattern::Poisson
    );
    assert_eq!(
        with(&[
            "--request-rate-mode",
            "constant",
            "--request-distribution",
            "constant"
        ]),
        ArrivalPattern::Constant
    );
    assert_eq!(
        with(&["--arrival-pattern", "gamma"]),
        ArrivalPattern::Gamma { smoothness: 1.0 }
    );
    assert_eq!(
        with(&[
            "--request-distribution",
            "gamma",
            "--arrival-smoothness",
            "3"
        ]),
        ArrivalPattern::Gamma { smoothness: 3.0 }
    );
    // Smoothness implies gamma, as in AIPerf; vLLM's name is taken too.
    assert_eq!(
        with(&["--arrival-smoothness", "4"]),
        ArrivalPattern::Gamma { smoothness: 4.0 }
    );
    assert_eq!(
        with(&["--arrival-pattern", "gamma", "--vllm-burstiness", "0.5"]),
        ArrivalPattern::Gamma { smoothness: 0.5 }
    );
    // AIPerf's --request-rate is Poisson unless a pattern is given.
    let aiperf = |more: &[&str]| distribution(&[&["--request-rate", "5"][..], more].concat());
    assert_eq!(aiperf(&[]), ArrivalPattern::Poisson);
    assert_eq!(
        aiperf(&["--arrival-smoothness", "2"]),
        ArrivalPattern::Gamma { smoothness: 2.0 }
    );
    assert_eq!(
        aiperf(&["--arrival-pattern", "constant"]),
        ArrivalPattern::Constant
    );
}

#[test]
fn arrival_conflicts_are_one_sentence() {
    let rate = ["--request-rate-range", "10"];
    let refuse = |more: &[&str], text: &str| refused(&[&rate[..], more].concat(), text);
    refuse(
        &[
            "--request-distribution",
            "constant",
            "--arrival-pattern",
            "poisson",
        ],
        "--request-distribution constant and --arrival-pattern poisson name different arrivals",
    );
    refuse(
        &["--arrival-pattern", "poisson", "--arrival-smoothness", "2"],
        "--arrival-smoothness shapes gamma arrivals, but --arrival-pattern is poisson",
    );
    refuse(
        &[
            "--request-distribution",
            "constant",
            "--arrival-smoothness",
            "2",
        ],
        "but --request-distribution is constant",
    );
    for bad in ["0", "-1", "NaN", "inf"] {
        refuse(&["--arrival-smoothness", bad], "give a gamma shape above 0");
    }
    refuse(
        &["--arrival-pattern", "weibull"],
        "--arrival-pattern 'weibull' is unknown: use constant, poisson or gamma.",
    );
    refuse(
        &["--request-distribution", "uniform"],
        "--request-distribution 'uniform' is unknown",
    );
}

#[test]
fn cancellation_takes_a_percent_and_a_delay_from_the_send() {
    let c = config(&[
        "--request-cancellation-rate",
        "20",
        "--request-cancellation-delay",
        "0.25",
        "--random-seed",
        "7",
    ])
    .unwrap();
    assert_eq!(
        c.target.cancellation,
        Some(RequestCancellation {
            percent: 20.0,
            delay: Duration::from_millis(250),
            seed: 7,
        })
    );
    let at_once = config(&["--request-cancellation-rate", "100"]).unwrap();
    assert_eq!(at_once.target.cancellation.unwrap().delay, Duration::ZERO);
    // A rate of 0 cancels nothing, as in AIPerf.
    let none = config(&["--request-cancellation-rate", "0"]).unwrap();
    assert_eq!(none.target.cancellation, None);
    assert_eq!(config(&[]).unwrap().target.cancellation, None);
    for bad in ["-1", "100.5", "NaN"] {
        refused(
            &["--request-cancellation-rate", bad],
            "give a percent of requests from 0 to 100",
        );
    }
    refused(
        &[
            "--request-cancellation-rate",
            "5",
            "--request-cancellation-delay",
            "-1",
        ],
        "--request-cancellation-delay is -1: give seconds from 0",
    );
    refused(
        &["--request-cancellation-delay", "1"],
        "add --request-cancellation-rate PERCENT",
    );
}

//! AIPerf's load-shape flags read from whole AIPerf command lines: what each becomes, the
//! warm-up's fall-backs, and every combination AIPerf refuses, refused in one sentence that
//! names the flag typed.

use std::io::Write;
use std::time::Duration;

use super::*;
use crate::cli::{normalize_args, parse_command_line, Command};
use inferperf_wire::error::{RunResult, EXIT_BAD_OPTION};

fn config(args: &[&str]) -> RunResult<Config> {
    let mut all = vec![
        "inferperf",
        "profile",
        "--model",
        "llm",
        "--url",
        "127.0.0.1:9",
    ];
    all.extend_from_slice(args);
    let line = normalize_args(all.iter().map(|s| s.to_string()).collect());
    let Command::Profile(p) = parse_command_line(line).expect("flags parse").command else {
        panic!("expected profile");
    };
    Config::from_args(&p)
}

fn refused(args: &[&str], needle: &str) {
    let err = config(args).expect_err("refused");
    assert_eq!(err.exit_code(), EXIT_BAD_OPTION, "{err}");
    assert!(err.to_string().contains(needle), "{args:?}: {err}");
}

fn secs(s: f64) -> Option<Duration> {
    Some(inferperf_wire::number::saturating_secs(s))
}

#[test]
fn ramps_and_prefill_of_the_run_and_their_warm_up_fall_backs() {
    let c = config(&[
        "--concurrency",
        "4",
        "--streaming",
        "--concurrency-ramp-duration",
        "2",
        "--prefill-concurrency",
        "2",
        "--prefill-concurrency-ramp-duration",
        "1",
        "--warmup-request-count",
        "3",
    ])
    .unwrap();
    let modes = &c.load.modes;
    let prefill = Some(Prefill {
        limit: 2,
        ramp: secs(1.0),
    });
    let shape = PhaseShape {
        concurrency_ramp: secs(2.0),
        rate_ramp: None,
        prefill,
    };
    assert_eq!(modes.run, shape);
    assert_eq!(
        modes.warm_up, shape,
        "the warm-up takes the run's, as AIPerf's"
    );
    assert!(modes.notes.is_empty());
    let own = config(&[
        "--concurrency",
        "4",
        "--streaming",
        "--warmup-request-count",
        "3",
        "--warmup-concurrency-ramp-duration",
        "0.5",
        "--warmup-prefill-concurrency",
        "3",
    ])
    .unwrap();
    assert_eq!(own.load.modes.run, PhaseShape::default());
    assert_eq!(own.load.modes.warm_up.concurrency_ramp, secs(0.5));
    assert_eq!(own.load.modes.warm_up.prefill.map(|p| p.limit), Some(3));
}

#[test]
fn a_rate_ramp_is_the_run_s_and_a_rate_warm_up_s_only() {
    let c = config(&[
        "--request-rate",
        "8",
        "--request-rate-ramp-duration",
        "3",
        "--warmup-request-count",
        "2",
    ])
    .unwrap();
    assert_eq!(c.load.modes.run.rate_ramp, secs(3.0));
    assert_eq!(c.load.modes.warm_up.rate_ramp, secs(3.0));
    // A warm-up of a concurrency drops the run's rate ramp, as AIPerf does.
    let c = config(&[
        "--request-rate",
        "8",
        "--request-rate-ramp-duration",
        "3",
        "--warmup-request-count",
        "2",
        "--warmup-concurrency",
        "2",
    ]);
    // (--warmup-concurrency beside a run rate is the warm-up rate's cap: still a rate.)
    assert_eq!(c.unwrap().load.modes.warm_up.rate_ramp, secs(3.0));
    refused(
        &["--concurrency", "4", "--request-rate-ramp-duration", "3"],
        "--request-rate-ramp-duration ramps a request rate",
    );
    refused(
        &[
            "--concurrency",
            "4",
            "--warmup-request-count",
            "2",
            "--warmup-request-rate-ramp-duration",
            "1",
        ],
        "--warmup-request-rate-ramp-duration ramps a warm-up rate",
    );
}

fn series_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

#[test]
fn a_series_is_a_rate_run_whose_concurrency_is_a_cap_and_whose_warm_up_is_not_a_rate() {
    let file = series_file(r#"[{"time_s": 0, "qps": 2}, {"time_s": 5, "qps": 10}]"#);
    let path = file.path().to_str().unwrap();
    let c = config(&[
        "--request-rate-series",
        path,
        "--concurrency",
        "3",
        "--warmup-request-count",
        "4",
    ])
    .unwrap();
    let LoadMode::RequestRate {
        range,
        distribution,
    } = &c.load.mode
    else {
        panic!("{:?}", c.load.mode);
    };
    assert_eq!((range.start, *distribution), (2.0, ArrivalPattern::Poisson));
    assert_eq!(c.load.max_concurrency, Some(3));
    let shape = c.load.warm_up.as_ref().map(|w| w.shape);
    assert_eq!(shape, Some(WarmUpShape::Concurrency(3)), "AIPerf's warm-up");
    assert_eq!(c.load.modes.rate_series.as_ref().unwrap().points.len(), 2);
    assert_eq!(c.load.request_count, Some(10), "AIPerf's default count");
    for other in [["--request-rate", "3"], ["--request-rate-range", "3"]] {
        let mut line = vec!["--request-rate-series", path];
        line.extend(other);
        refused(&line, &format!("--request-rate-series and {}", other[0]));
    }
    refused(
        &["--request-rate-series", "/nonexistent/s.json"],
        "cannot read the file",
    );
}

/// An AIPerf user-centric line with multi-turn synthetic sessions.
const USERS: [&str; 6] = [
    "--user-centric-rate",
    "4",
    "--num-users",
    "3",
    "--conversation-turn-mean",
    "3",
];

#[test]
fn user_centric_rate_is_a_rate_of_its_users_with_aiperf_s_rules() {
    let c = config(&USERS).unwrap();
    let users = c.load.modes.user_centric.unwrap();
    assert_eq!((users.rate, users.users), (4.0, 3));
    assert_eq!(users.turn_gap(), Duration::from_millis(750));
    assert!(matches!(c.load.mode, LoadMode::RequestRate { .. }));
    let with_cap = [&USERS[..], &["--concurrency", "2"]].concat();
    assert_eq!(config(&with_cap).unwrap().load.max_concurrency, Some(2));
    refused(&USERS[..4], "--conversation-turn-mean is 1");
    refused(&USERS[2..], "--num-users counts the users");
    refused(
        &[&USERS[..2], &USERS[4..]].concat(),
        "shares its rate among --num-users",
    );
    let few = [&USERS[..], &["--request-count", "2"]].concat();
    refused(&few, "--request-count is 2, fewer than --num-users 3");
    let sessions = [&USERS[..], &["--conversation-num", "2"]].concat();
    refused(&sessions, "--conversation-num is 2");
    let twenty = [
        "--user-centric-rate",
        "4",
        "--num-users",
        "20",
        "--conversation-turn-mean",
        "2",
    ];
    refused(&twenty, "--request-count is 10, fewer than --num-users 20");
    let file = series_file(r#"[{"time_s": 0, "qps": 2}, {"time_s": 5, "qps": 10}]"#);
    let series = [
        &USERS[..],
        &["--request-rate-series", file.path().to_str().unwrap()],
    ]
    .concat();
    refused(&series, "--request-rate-series and --user-centric-rate");
    let ramp = [&USERS[..], &["--request-rate-ramp-duration", "2"]].concat();
    let noted = config(&ramp).unwrap();
    assert_eq!(noted.load.modes.run.rate_ramp, None);
    assert!(noted.load.modes.notes[0].contains("changed nothing"));
}

#[test]
fn prefill_needs_streaming_and_fits_under_the_concurrency() {
    refused(
        &["--concurrency", "4", "--prefill-concurrency", "2"],
        "add --streaming",
    );
    refused(
        &[
            "--concurrency",
            "4",
            "--streaming",
            "--prefill-concurrency",
            "5",
        ],
        "--prefill-concurrency 5 is above the concurrency 4",
    );
    // AIPerf's concurrency is 1 when none is given.
    refused(
        &["--streaming", "--prefill-concurrency", "2"],
        "above the concurrency 1",
    );
    let rate = config(&[
        "--request-rate",
        "5",
        "--streaming",
        "--prefill-concurrency",
        "2",
    ]);
    assert_eq!(
        rate.unwrap().load.modes.run.prefill.map(|p| p.limit),
        Some(2)
    );
    refused(
        &[
            "--concurrency",
            "4",
            "--streaming",
            "--warmup-request-count",
            "3",
            "--warmup-prefill-concurrency",
            "6",
        ],
        "--warmup-prefill-concurrency 6 is above the concurrency 4",
    );
    refused(
        &[
            "--concurrency",
            "4",
            "--streaming",
            "--warmup-prefill-concurrency",
            "2",
        ],
        "--warmup-prefill-concurrency shapes a warm-up, and none is asked",
    );
}

#[test]
fn slices_and_the_failure_threshold_are_read_and_bounded() {
    let c = config(&[
        "--concurrency",
        "2",
        "--slice-duration",
        "0.5",
        "--failed-request-threshold",
        "0.3",
    ])
    .unwrap();
    assert_eq!(c.load.modes.slice, secs(0.5));
    assert_eq!(c.load.modes.failed_threshold, Some(0.3));
    refused(&["--slice-duration", "0"], "--slice-duration");
    refused(&["--slice-duration", "-1"], "--slice-duration");
    refused(
        &["--failed-request-threshold", "1.5"],
        "--failed-request-threshold",
    );
}

#[test]
fn the_shapes_act_on_one_measurement_only() {
    // A perf_analyzer line measures stable windows: the shapes have no phase to act on.
    let line = [
        "--concurrency-range",
        "4",
        "--service-kind",
        "openai",
        "--endpoint",
        "v1/chat/completions",
    ];
    refused(
        &[&line[..], &["--slice-duration", "1"]].concat(),
        "--slice-duration shapes one measurement",
    );
    refused(
        &[
            "--load-steps",
            "concurrency=2:1s",
            "--concurrency-ramp-duration",
            "1",
        ],
        "plan their own load",
    );
    let c = config(&[
        "--concurrency",
        "2",
        "--benchmark-duration",
        "3",
        "--concurrency-ramp-duration",
        "1",
    ]);
    assert!(c.is_ok(), "{c:?}");
    let noted = config(&["--request-rate", "3", "--concurrency-ramp-duration", "1"]).unwrap();
    assert!(noted.load.modes.notes[0].contains("no concurrency to ramp"));
}

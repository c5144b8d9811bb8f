//! Tests of parsing the command line into a Config: defaults, sweeps, bad values.
use super::*;
use crate::cli::{normalize_args, Cli, Command};
use clap::Parser;
use std::time::Duration;

fn config(args: &[&str]) -> RunResult<Config> {
    let mut all = vec!["inferperf", "-m", "m"];
    all.extend_from_slice(args);
    let cli = Cli::try_parse_from(normalize_args(all.iter().map(|s| s.to_string()).collect()))
        .expect("flags parse");
    let Command::Profile(p) = cli.command else {
        panic!("expected profile");
    };
    Config::from_args(&p)
}

#[test]
fn defaults_follow_perf_analyzer() {
    let c = config(&[]).unwrap();
    assert_eq!(c.target.url, "localhost:8000");
    assert_eq!(
        c.load.concurrency,
        ConcurrencyRange {
            start: 1,
            end: 1,
            step: 1
        }
    );
    assert_eq!(c.measure.measurement_interval, Duration::from_millis(5000));
    assert_eq!(c.measure.max_trials, 10);
    assert_eq!(c.measure.latency_threshold_ms, None);
    assert_eq!(
        config(&["-i", "GRPC"]).unwrap().target.url,
        "localhost:8001"
    );
}

#[test]
fn concurrency_levels_sweep() {
    let c = config(&["--concurrency-range", "2:9:3"]).unwrap();
    assert_eq!(
        c.load.concurrency_levels().collect::<Vec<_>>(),
        vec![2, 5, 8]
    );
    assert_eq!(c.load.max_concurrency(), Some(8));
    // An open end sweeps until the latency limit stops it; without a limit it is refused.
    let open = config(&["--concurrency-range", "1:0:2", "-l", "50"]).unwrap();
    assert_eq!(
        open.load.concurrency_levels().take(3).collect::<Vec<_>>(),
        vec![1, 3, 5]
    );
    let endless = config(&["--concurrency-range", "1:0:2"]).unwrap_err();
    assert!(endless.to_string().contains("never stop"), "{endless}");
}

#[test]
fn bad_values_name_their_flag() {
    for (args, needle) in [
        (vec!["--concurrency-range", "4:2"], "--concurrency-range"),
        (vec!["--concurrency-range", "a"], "--concurrency-range"),
        (vec!["--shape", "INPUT0"], "--shape"),
        (vec!["--shape", "INPUT0:3,x"], "--shape"),
        (vec!["--percentile", "100"], "--percentile"),
        (vec!["-i", "udp"], "-i"),
        (vec!["-u", "nohost"], "-u"),
        (vec!["-H", "no colon"], "-H"),
        (
            vec!["--request-count", "2", "--concurrency-range", "4"],
            "--request-count",
        ),
        (
            vec!["--request-count", "9", "--concurrency-range", "1:4"],
            "--request-count",
        ),
    ] {
        let err = config(&args).unwrap_err();
        assert_eq!(err.exit_code(), inferperf_wire::error::EXIT_BAD_OPTION);
        assert!(err.to_string().contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn shapes_and_headers_parse() {
    let c = config(&[
        "--shape",
        "a:b:3,4",
        "-H",
        "Triton-Access-Token: s3cr:t",
        "-u",
        "http://h:9/",
    ])
    .unwrap();
    assert_eq!(c.data.shapes["a:b"], vec![3, 4]);
    assert_eq!(
        c.target.headers,
        vec![("triton-access-token".into(), "s3cr:t".into())]
    );
    assert_eq!(c.target.url, "h:9");
}

#[test]
fn tls_is_on_by_scheme_or_by_any_ssl_flag_of_the_protocol() {
    let plain = config(&["-u", "h:1"]).unwrap();
    assert_eq!(plain.target.tls, None);
    let https = config(&["-u", "https://h:443"]).unwrap();
    assert_eq!(https.target.url, "h:443");
    let tls = https.target.tls.unwrap();
    assert!(tls.verify_peer && tls.verify_host && tls.ca_file.is_none());
    let grpcs = config(&["-i", "grpc", "-u", "grpcs://h:1"]).unwrap();
    assert_eq!(grpcs.target.tls.unwrap().flags, TlsFlags::Grpc);
    // perf_analyzer's way: an HTTP URL with an --ssl-https-* flag, gRPC with use-ssl.
    let implied = config(&[
        "-u",
        "h:1",
        "--ssl-https-ca-certificates-file",
        "Cargo.toml",
    ]);
    let implied = implied.unwrap().target.tls.unwrap();
    assert_eq!(implied.ca_file, Some(PathBuf::from("Cargo.toml")));
    let use_ssl = config(&["-i", "grpc", "-u", "h:1", "--ssl-grpc-use-ssl"]).unwrap();
    assert!(use_ssl.target.tls.is_some());
}

#[test]
fn tls_verification_is_loosened_only_by_its_flags() {
    let off = config(&["-u", "https://h:1", "--ssl-https-verify-peer", "0"]).unwrap();
    let off = off.target.tls.unwrap();
    assert!(!off.verify_peer && off.verify_host);
    assert_eq!(off.warnings().len(), 1);
    let no_host = config(&["-u", "https://h:1", "--ssl-https-verify-host", "0"]).unwrap();
    let no_host = no_host.target.tls.unwrap();
    assert!(no_host.verify_peer && !no_host.verify_host);
    assert!(no_host.warnings()[0].contains("--ssl-https-verify-host 0"));
    let one = config(&["-u", "https://h:1", "--ssl-https-verify-host", "1"]).unwrap();
    assert!(one.target.tls.unwrap().warnings().is_empty());
    let der = config(&[
        "-u",
        "https://h:1",
        "--ssl-https-client-certificate-file",
        "Cargo.toml",
        "--ssl-https-client-certificate-type",
        "der",
        "--ssl-https-private-key-file",
        "Cargo.toml",
    ]);
    let der = der.unwrap().target.tls.unwrap();
    assert!(der.client_cert.unwrap().der && !der.client_key.unwrap().der);
}

#[test]
fn perf_analyzer_old_concurrency_and_data_flags() {
    let levels = |args: &[&str]| -> Vec<u32> {
        config(args)
            .unwrap()
            .load
            .concurrency_levels()
            .take(5)
            .collect()
    };
    assert_eq!(levels(&["-t", "3"]), vec![3]);
    // -c without -d is the end of the range, from 1 or from -t.
    assert_eq!(levels(&["-c", "3"]), vec![1, 2, 3]);
    assert_eq!(levels(&["-t", "2", "-c", "4"]), vec![2, 3, 4]);
    assert_eq!(levels(&["-d", "-c", "2"]), vec![1, 2]);
    // -d alone has no end: it needs a latency limit, as --concurrency-range 1:0 does.
    assert!(config(&["-d"]).is_err());
    assert_eq!(levels(&["-d", "-l", "5"]), vec![1, 2, 3, 4, 5]);
    assert!(config(&["-c", "2", "--concurrency-range", "1:2"]).is_err());
    let zero = config(&["-z"]).unwrap();
    assert!(
        matches!(zero.data.input_data, InputData::Zero),
        "{:?}",
        zero.data.input_data
    );
    let dir = std::env::temp_dir();
    let from_dir = config(&["--data-directory", dir.to_str().unwrap()]).unwrap();
    assert!(
        matches!(from_dir.data.input_data, InputData::Directory(_)),
        "{:?}",
        from_dir.data.input_data
    );
    let both = config(&["-z", "--data-directory", dir.to_str().unwrap()]);
    assert!(both.unwrap_err().to_string().contains("keep one"));
    let twice = config(&["-z", "--input-data", "zero"]);
    assert!(twice
        .unwrap_err()
        .to_string()
        .contains("-z and --input-data"));
}

#[test]
fn sequence_flags_follow_perf_analyzer() {
    let c = config(&[]).unwrap();
    assert_eq!(c.load.sequence.base_length(), 20);
    assert_eq!(c.load.sequence.variation_pct, 20.0);
    assert_eq!(
        (c.load.sequence.id_start, c.load.sequence.live_sequences),
        (1, 4)
    );
    assert!(!c.load.sequence.flags_given);
    let c = config(&[
        "--sequence-id-range",
        "10:20",
        "--concurrency-range",
        "1:10",
    ])
    .unwrap();
    assert_eq!(
        (c.load.sequence.id_start, c.load.sequence.id_count),
        (10, 10)
    );
    assert!(c.load.sequence.flags_given);
    for (args, needle) in [
        (
            vec!["--sequence-id-range", "1:4", "--concurrency-range", "1:8"],
            "holds 3 ids, fewer than the 8 sequences",
        ),
        (
            vec!["--sequence-id-range", "5:6", "--request-rate-range", "10"],
            "--num-of-sequences",
        ),
        (vec!["--sequence-id-range", "9:3"], "END above START"),
        (vec!["--sequence-length", "0"], "--sequence-length 0"),
        (vec!["--num-of-sequences", "0"], "--num-of-sequences 0"),
    ] {
        let err = config(&args).unwrap_err();
        assert!(err.to_string().contains(needle), "{args:?}: {err}");
        assert_eq!(err.exit_code(), inferperf_wire::error::EXIT_BAD_OPTION);
    }
}

#[test]
fn max_threads_caps_the_client_threads() {
    assert_eq!(
        config(&["--max-threads", "16"])
            .unwrap()
            .load
            .client_threads,
        1
    );
    let capped = config(&["--client-threads", "4", "--max-threads", "2"]).unwrap();
    assert_eq!(capped.load.client_threads, 2);
    let err = config(&["--max-threads", "0"]).unwrap_err();
    assert_eq!(err.exit_code(), inferperf_wire::error::EXIT_BAD_OPTION);
}

#[test]
fn request_count_fits_every_open_loop_but_the_fixed_schedule() {
    let rate = config(&["--request-rate-range", "50", "--request-count", "80"]).unwrap();
    assert_eq!(rate.load.request_count, Some(80));
    for (args, says) in [
        (
            vec!["--request-rate-range", "50:100", "--request-count", "80"],
            "single request rate",
        ),
        (
            vec!["--request-rate-range", "50", "--request-count", "20"],
            "smaller than the request rate 50",
        ),
        (
            vec!["--session-concurrency", "2"],
            "only with --service-kind openai",
        ),
        (
            vec!["--session-concurrency", "0"],
            "--session-concurrency 0 must be between 1",
        ),
    ] {
        let err = config(&args).unwrap_err();
        assert_eq!(err.exit_code(), inferperf_wire::error::EXIT_BAD_OPTION);
        assert!(err.to_string().contains(says), "{args:?}: {err}");
    }
}

#[test]
fn request_parameters_are_typed_and_malformed_ones_refused() {
    use super::{ParameterValue, RequestParameter};
    let c = config(&[
        "--request-parameter",
        "n:3:INT",
        "--request-parameter",
        "s:x:y:string",
    ])
    .unwrap();
    let want = |name: &str, value| RequestParameter {
        name: name.into(),
        value,
    };
    assert_eq!(
        c.target.request_parameters(),
        vec![
            want("n", ParameterValue::Int(3)),
            want("s", ParameterValue::String("x:y".into()))
        ]
    );
    for bad in ["n:3", "n:x:int", "n:maybe:bool", "n:1:float", ":1:int"] {
        let err = config(&["--request-parameter", bad]).unwrap_err();
        assert_eq!(
            err.exit_code(),
            inferperf_wire::error::EXIT_BAD_OPTION,
            "{bad}"
        );
        assert!(err.to_string().contains("NAME:VALUE:TYPE"), "{bad}: {err}");
    }
}

mod service_kinds {
    use super::config;
    use crate::apis::Streaming;

    /// The table says what the flags allow: an API takes `--streaming` and `--shared-memory
    /// system` exactly when its table says it can, and counts tokens exactly when the run
    /// has LLM settings.
    #[test]
    fn the_table_agrees_with_the_flags() {
        let kinds: [(&str, &[&str]); 5] = [
            ("triton", &["-i", "grpc"]),
            ("local", &[]),
            ("openai", &["--endpoint", "v1/chat/completions"]),
            ("tfserving", &[]),
            ("torchserve", &[]),
        ];
        for (kind, base) in kinds {
            let with = |extra: &[&str]| {
                let mut args = vec!["--service-kind", kind];
                args.extend_from_slice(base);
                args.extend_from_slice(extra);
                config(&args)
            };
            let run = with(&[]).expect("a valid run");
            let table = run.target.service_kind().capabilities();
            assert_eq!(table.name, kind);
            assert_eq!(table.tokens, run.target.llm().is_some(), "{kind}: tokens");
            let streams = with(&["--streaming"]).is_ok();
            assert_eq!(
                table.streaming != Streaming::None,
                streams,
                "{kind}: streaming"
            );
            let shm = with(&["--shared-memory", "system"]).is_ok();
            assert_eq!(table.shared_memory, shm, "{kind}: shared memory");
        }
    }
}

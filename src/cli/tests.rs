//! The command line's parsing: the bare and subcommand forms, perf_analyzer's flags and
//! habits, and the one-sentence errors.

use super::*;

#[test]
fn top_help_lists_the_commands_before_the_profile_flags() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for form in [
        &["inferperf", "--help"][..],
        &["inferperf", "-h"],
        &["inferperf", "help"],
    ] {
        let help = top_help(&args(form)).unwrap();
        let commands = help.find("Commands:").expect("a list of commands");
        let flags = help.find("\n  -m <MODEL>").expect("profile's flags");
        assert!(commands < flags, "{help}");
        for name in ["profile", "serve", "demo"] {
            assert!(
                help[commands..flags].contains(&format!("\n  {name} ")),
                "{name} in {help}"
            );
        }
        assert!(
            help.contains("Usage: inferperf profile [OPTIONS] -m <MODEL>"),
            "{help}"
        );
    }
    // Every subcommand of the enum is listed: a new one needs no other change.
    let help = top_help(&args(&["inferperf", "--help"])).unwrap();
    for name in subcommand_names() {
        assert!(help.contains(&format!("\n  {name} ")), "{name}");
    }
    assert!(top_help(&args(&["inferperf", "-m", "x", "--help"])).is_none());
    assert!(top_help(&args(&["inferperf", "serve", "--help"])).is_none());
}

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    let args = normalize_args(args.iter().map(|s| s.to_string()).collect());
    Cli::try_parse_from(args)
}

#[test]
fn compare_is_a_subcommand() {
    let cli = parse(&["inferperf", "compare", "a", "b/", "--fail-on", "p99>+10%"]).unwrap();
    let Command::Compare(args) = cli.command else {
        panic!("compare must parse as compare");
    };
    assert_eq!(args.runs.len(), 2);
    assert_eq!(args.fail_on.as_deref(), Some("p99>+10%"));
    assert_eq!(args.output, None);
    let cli = parse(&["inferperf", "compare", "a", "b", "c", "-o", "c.html"]).unwrap();
    let Command::Compare(args) = cli.command else {
        panic!("compare must parse as compare");
    };
    assert_eq!(args.runs.len(), 3);
    assert_eq!(args.output.as_deref(), Some(std::path::Path::new("c.html")));
    assert!(
        parse(&["inferperf", "compare", "a"]).is_err(),
        "two runs at least"
    );
}

#[test]
fn bare_and_subcommand_forms_are_the_same() {
    let bare = parse(&["inferperf", "-m", "identity", "--concurrency-range", "1:8"]).unwrap();
    let sub = parse(&[
        "inferperf",
        "profile",
        "-m",
        "identity",
        "--concurrency-range",
        "1:8",
    ])
    .unwrap();
    let (Command::Profile(a), Command::Profile(b)) = (bare.command, sub.command) else {
        panic!("both forms must parse as profile");
    };
    assert_eq!(a.model_name, b.model_name);
    assert_eq!(a.concurrency_range, b.concurrency_range);
}

#[test]
fn perf_analyzer_short_flags_parse() {
    let cli = parse(&[
        "inferperf",
        "-m",
        "m",
        "-x",
        "2",
        "-u",
        "h:1",
        "-i",
        "grpc",
        "-b",
        "4",
        "-p",
        "200",
        "-s",
        "5",
        "-r",
        "3",
        "-l",
        "50",
        "-f",
        "o.csv",
        "-v",
        "-v",
        "-H",
        "A: b",
        "--percentile",
        "99.9",
    ])
    .unwrap();
    let Command::Profile(p) = cli.command else {
        panic!("expected profile");
    };
    assert_eq!(p.batch_size, 4);
    assert_eq!(p.verbose, 2);
    assert_eq!(p.percentile, Some(99.9));
    assert_eq!(p.headers, vec!["A: b".to_string()]);
}

#[test]
fn unknown_flag_is_an_error() {
    assert!(parse(&["inferperf", "-m", "m", "--no-such-flag"]).is_err());
}

fn profile_args(args: &[&str]) -> Box<ProfileArgs> {
    let all = normalize_args(args.iter().map(|s| s.to_string()).collect());
    match Cli::try_parse_from(all).expect("flags parse").command {
        Command::Profile(p) => p,
        _ => panic!("expected profile"),
    }
}

#[test]
fn a_repeated_option_takes_its_last_value() {
    let p = profile_args(&["inferperf", "-m", "a", "-m", "b", "-p", "100", "-p", "200"]);
    assert_eq!((p.model_name.as_str(), p.measurement_interval), ("b", 200));
    // A list option still gathers every value.
    let p = profile_args(&["inferperf", "-m", "a", "-H", "A: 1", "-H", "B: 2"]);
    assert_eq!(p.headers.len(), 2);
}

#[test]
fn an_unambiguous_prefix_of_a_long_option_is_that_option() {
    let p = profile_args(&["inferperf", "-m", "a", "--measurement-int", "300"]);
    assert_eq!(p.measurement_interval, 300);
    // `--max-` is `--max-trials`, `--max-concurrency`, …: ambiguous, refused.
    let all = normalize_args(
        ["inferperf", "-m", "a", "--max-", "3"]
            .map(String::from)
            .to_vec(),
    );
    let e = Cli::try_parse_from(&all).unwrap_err();
    let sentence = clap_sentence(&e, &all);
    assert!(
        sentence.starts_with("--max- is the start of several options (")
            && sentence.contains("--max-trials"),
        "{sentence}"
    );
}

#[test]
fn a_suggestion_never_names_an_option_that_means_something_else() {
    let sentence = |flag: &str| {
        let args: Vec<String> = ["inferperf", "profile", "-m", "a", flag, "3"]
            .map(String::from)
            .to_vec();
        clap_sentence(&Cli::try_parse_from(&args).unwrap_err(), &args)
    };
    assert!(!sentence("--max-threadz").contains("--max-trials"));
    assert!(sentence("--concurency-range").contains("'--concurrency-range'"));
}

#[test]
fn header_values_are_hidden_in_every_form() {
    let args = [
        "-m",
        "m",
        "-H",
        "Authorization: Bearer s1",
        "--header",
        "X-A: s2",
        "X-B: s3",
        "--header=X-C: s4",
        "--head",
        "X-D: s5",
        "-HX-E: s6",
        "X-F: s7",
        "--streaming",
        "kept",
    ];
    let shown = without_header_values(args.iter().map(|a| a.to_string()));
    let text = shown.join(" ");
    for secret in ["s1", "s2", "s3", "s4", "s5", "s6", "s7"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert!(text.contains("X-B: <hidden>") && text.contains("--header=X-C: <hidden>"));
    assert_eq!(shown.last().map(String::as_str), Some("kept"), "{text}");
}

#[test]
fn aiperf_flags_take_several_values_after_one_flag() {
    let args = normalize_args(
        [
            "inferperf",
            "profile",
            "-m",
            "m",
            "--url",
            "a:1",
            "b:2",
            "--header",
            "x: 1",
            "y: 2",
            "--extra-inputs",
            "t:1",
            "u:2",
            "--model-names=n",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect(),
    );
    let Command::Profile(p) = Cli::try_parse_from(&args).unwrap().command else {
        panic!("profile");
    };
    assert_eq!(p.url, ["a:1", "b:2"]);
    assert_eq!(p.headers, ["x: 1", "y: 2"]);
    assert_eq!(p.llm.extra_inputs, ["t:1", "u:2"]);
    // AIPerf's --model-names is its --model: the model's name, read as -m later.
    assert_eq!(p.local_models, ["n"]);
}

#[test]
fn aiperf_sweeps_by_comma_are_runs_of_one_value_each() {
    for flag in ["--concurrency", "--request-rate"] {
        let args = ["-m", "m", flag, "10,20"].map(String::from);
        let sweep = crate::cli::expand_sweep(&args).unwrap().unwrap();
        let values: Vec<&str> = sweep
            .variations
            .iter()
            .map(|v| v.args[3].as_str())
            .collect();
        assert_eq!(values, ["10", "20"]);
        // A list that reaches clap itself (a library caller that did not expand it) says why.
        let line = ["inferperf", "profile", "-m", "m", flag, "10,20"];
        let e = Cli::try_parse_from(line).unwrap_err();
        let line: Vec<String> = line.iter().map(|a| a.to_string()).collect();
        let sentence = clap_sentence(&e, &line);
        assert!(sentence.contains("a run per value"), "{sentence}");
    }
}

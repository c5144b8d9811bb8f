use super::*;
use crate::config::test_config;

fn args(flags: &[&str]) -> ProfileArgs {
    use clap::Parser;
    let mut all = vec!["inferperf", "profile", "-m", "m"];
    all.extend_from_slice(flags);
    let cli = crate::cli::Cli::try_parse_from(crate::cli::normalize_args(
        all.iter().map(|a| a.to_string()).collect(),
    ))
    .expect("flags parse");
    let crate::cli::Command::Profile(args) = cli.command else {
        unreachable!("the profile subcommand was given");
    };
    *args
}

fn config(flags: &[&str]) -> RunResult<crate::config::Config> {
    crate::config::Config::from_args(&args(flags))
}

#[test]
fn rankings_default_to_what_aiperf_sends() {
    let given = rankings(&EndpointArgs::default()).unwrap();
    assert_eq!(given, RankingsConfig::default());
    assert_eq!(
        (
            given.passages.mean,
            given.passage_tokens.mean,
            given.query_tokens.mean
        ),
        (10, 128, 32)
    );
    assert_eq!(test_config().data.rankings, RankingsConfig::default());
    let set = EndpointArgs {
        rankings_passages_mean: Some(3),
        rankings_query_prompt_token_stddev: Some(4),
        ..EndpointArgs::default()
    };
    let given = rankings(&set).unwrap();
    assert_eq!(given.passages, MeanStddev { mean: 3, stddev: 0 });
    assert_eq!(
        given.query_tokens,
        MeanStddev {
            mean: 32,
            stddev: 4
        }
    );
    let zero = EndpointArgs {
        rankings_passages_prompt_token_mean: Some(0),
        ..EndpointArgs::default()
    };
    let message = rankings(&zero).unwrap_err().to_string();
    assert!(
        message.contains("--rankings-passages-prompt-token-mean 0"),
        "{message}"
    );
}

#[test]
fn the_api_key_is_a_header_after_the_given_ones() {
    let mut given = args(&[
        "-H",
        "authorization: old",
        "-H",
        "x-a: 1",
        "--api-key",
        "k1",
    ]);
    crate::config::aiperf::headers::lower(&mut given).unwrap();
    assert_eq!(given.headers, ["x-a: 1", "Authorization: Bearer k1"]);
    let mut messages = args(&["--endpoint-type", "messages", "--api-key", "k2"]);
    messages.llm.endpoint = Some("messages".into());
    crate::config::aiperf::headers::lower(&mut messages).unwrap();
    assert_eq!(messages.headers, ["x-api-key: k2"]);
    let c = config(&["--endpoint-type", "messages", "--api-key", "k3"]).unwrap();
    assert_eq!(
        c.target.headers,
        [("x-api-key".to_string(), "k3".to_string())]
    );
    let bad = config(&["--endpoint-type", "chat", "--api-key", "a b"]).unwrap_err();
    assert!(
        bad.to_string()
            .starts_with("--api-key is empty or holds spaces"),
        "{bad}"
    );
}

fn wire(c: &crate::config::Config) -> &OpenAiWire {
    match &c.target.api {
        crate::config::ApiSettings::OpenAi(o) => &o.wire,
        _ => panic!("an OpenAI run"),
    }
}

#[test]
fn the_template_and_its_field_leave_the_extra_inputs() {
    let c = config(&[
        "--endpoint-type",
        "template",
        "--extra-inputs",
        "payload_template:nv-embedqa",
        "--extra-inputs",
        "response_field:data[0].embedding",
        "--extra-inputs",
        "user:x",
    ])
    .unwrap();
    assert_eq!(
        wire(&c).template.as_deref(),
        Some(r#"{"text": {{ texts|tojson }}}"#)
    );
    assert_eq!(
        wire(&c).response_field.as_deref(),
        Some("data[0].embedding")
    );
    let extra = &c.target.llm().unwrap().extra_inputs;
    assert_eq!(extra, &[("user".to_string(), "x".into())]);
    // A file is read; `text` is AIPerf's "find it by its shape".
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.json");
    std::fs::write(
        &file,
        r#"{"q": {{ text|tojson }}, "m": {{ model|tojson }}}"#,
    )
    .unwrap();
    let given = format!("payload_template:{}", file.display());
    let c = config(&[
        "--endpoint-type",
        "template",
        "--extra-inputs",
        &given,
        "--extra-inputs",
        "response_field:text",
    ])
    .unwrap();
    assert!(wire(&c)
        .template
        .as_deref()
        .unwrap()
        .starts_with(r#"{"q": "#));
    assert_eq!(wire(&c).response_field, None);
    // Without a template, chat sends response_field as any other field.
    let c = config(&[
        "--endpoint-type",
        "chat",
        "--extra-inputs",
        "response_field:x",
    ])
    .unwrap();
    assert_eq!(c.target.llm().unwrap().extra_inputs.len(), 1);
}

#[test]
fn bad_templates_and_types_get_one_sentence() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--endpoint-type", "template"],
            "--endpoint-type template needs its body",
        ),
        (
            &[
                "--endpoint-type",
                "template",
                "--extra-inputs",
                "payload_template:{{ text",
            ],
            "is not a Jinja template",
        ),
        (
            &[
                "--endpoint-type",
                "raw",
                "--extra-inputs",
                "response_field:a[?",
            ],
            "is not a JMESPath expression",
        ),
        (
            &[
                "--endpoint-type",
                "nim_rankings",
                "--shared-system-prompt-length",
                "5",
            ],
            "--endpoint-type nim_rankings does not take",
        ),
        (
            &["--endpoint-type", "cohere-rankings", "--streaming"],
            "--streaming does not apply to --endpoint-type cohere_rankings",
        ),
    ];
    for (flags, expected) in cases {
        let message = config(flags).unwrap_err().to_string();
        assert!(message.contains(expected), "{flags:?}: {message}");
        assert!(!message.contains('\n'), "{message}");
    }
    let refused = config(&["--endpoint-type", "audio_transcription"]).unwrap_err();
    assert!(refused.to_string().contains("does not send"), "{refused}");
}

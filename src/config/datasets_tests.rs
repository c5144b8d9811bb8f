//! AIPerf's dataset flags: each form of `--seq-dist` and `--random-range-ratio`, the
//! windows of both styles, and one sentence for every bad value.

use super::*;

fn pairs(text: &str) -> Vec<(u32, f64, u32, f64, f64)> {
    parse_seq_dist(text)
        .unwrap()
        .iter()
        .map(|p| (p.isl, p.isl_stddev, p.osl, p.osl_stddev, p.percent))
        .collect()
}

#[test]
fn every_form_of_seq_dist_reads_alike() {
    let expected = vec![(256, 0.0, 128, 0.0, 40.0), (512, 0.0, 256, 0.0, 60.0)];
    assert_eq!(pairs("256,128:40;512,256:60"), expected);
    assert_eq!(pairs(" 256 , 128 : 40 ; 512,256:60 ;"), expected);
    assert_eq!(pairs("[(256,128):40,(512,256):60]"), expected);
    assert_eq!(pairs("[(256, 128):40, (512,256):60]"), expected);
    let json = r#"{"pairs": [{"isl": 256, "osl": 128, "prob": 40}, {"isl": 512, "osl": 256, "prob": 60}]}"#;
    assert_eq!(pairs(json), expected);
    assert_eq!(
        pairs("256|10,128|5:40;512|20.5,256:60"),
        vec![(256, 10.0, 128, 5.0, 40.0), (512, 20.5, 256, 0.0, 60.0)]
    );
    assert_eq!(
        pairs("[(256|10,128|5):100]"),
        vec![(256, 10.0, 128, 5.0, 100.0)]
    );
    let json =
        r#"{"pairs": [{"isl": 64, "isl_stddev": 3, "osl": 8, "osl_stddev": 1, "prob": 100}]}"#;
    assert_eq!(pairs(json), vec![(64, 3.0, 8, 1.0, 100.0)]);
}

#[test]
fn bad_seq_dists_get_one_sentence() {
    for (text, said) in [
        ("256,128:40;512,256:50", "add up to 90"),
        ("256,128", "no ':PERCENT'"),
        ("0,128:100", "length 0"),
        ("a,128:100", "'a' is not a whole number"),
        ("256,128:-5", "is not a number of at least 0"),
        ("[(256,128):100", "is not a whole number"),
        ("[(256,128):100,256,1:0]", "does not start with '('"),
        (
            "{\"pairs\": [{\"isl\": 5}]}",
            "needs \"isl\", \"osl\" and \"prob\"",
        ),
        ("{\"x\": 1}", "no \"pairs\" list"),
        ("", "no pair"),
    ] {
        let message = parse_seq_dist(text).unwrap_err().to_string();
        assert!(message.contains(said), "{text}: {message}");
        assert!(message.starts_with("--seq-dist"), "{message}");
    }
}

#[test]
fn range_ratios_and_their_windows() {
    let both = parse_range_ratio("0.25", CorpusStyle::Vllm).unwrap();
    assert_eq!((both.input, both.output), (0.25, 0.25));
    let apart = parse_range_ratio(r#"{"input": 0.1, "output": 0.5}"#, CorpusStyle::Vllm).unwrap();
    assert_eq!((apart.input, apart.output), (0.1, 0.5));
    assert_eq!(window(100, 0.25, CorpusStyle::Vllm, 1), (75, 125));
    assert_eq!(window(10, 0.95, CorpusStyle::Vllm, 1), (1, 20));
    assert_eq!(window(100, 0.25, CorpusStyle::Sglang, 1), (25, 100));
    assert_eq!(window(100, 0.0, CorpusStyle::Sglang, 1), (1, 100));
    assert!(parse_range_ratio("1", CorpusStyle::Sglang).is_ok());
    for (text, style, said) in [
        ("1", CorpusStyle::Vllm, "not within [0, 1)"),
        ("-0.1", CorpusStyle::Vllm, "not within"),
        ("{\"input\": 0.1}", CorpusStyle::Vllm, "needs numbers"),
        (
            "{\"input\": 0.1, \"output\": 0.1}",
            CorpusStyle::Sglang,
            "one ratio",
        ),
        ("x", CorpusStyle::Vllm, "give a number"),
    ] {
        let message = parse_range_ratio(text, style).unwrap_err().to_string();
        assert!(message.contains(said), "{text}: {message}");
    }
}

fn args() -> DatasetArgs {
    DatasetArgs::default()
}

#[test]
fn the_flags_become_settings() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("system.txt");
    std::fs::write(&file, "Be brief.\n").unwrap();
    let mut a = args();
    a.system_prompt_file = Some(file);
    a.dataset_sampling_strategy = Some("shuffle".into());
    a.prompt_corpus = Some("coding".into());
    a.inter_turn_delay_cap_seconds = Some(1.5);
    a.prompt_batch_size = Some(3);
    let s = DatasetSettings::parse(&a, Some(7)).unwrap();
    assert_eq!(s.system_prompt.as_deref(), Some("Be brief.\n"), "as it is");
    assert_eq!(s.sampling, Some(Sampling::Shuffle));
    assert_eq!(s.corpus, Corpus::Coding);
    assert_eq!(s.delay_cap_ms, Some(1500.0));
    assert_eq!(s.texts_per_request, Some(3));
    assert_eq!(s.conversations, Some(7));
    let d = DatasetSettings::parse(&args(), None).unwrap();
    assert_eq!(
        (d.sampling, d.corpus, d.corpus_style),
        (None, Corpus::Sonnet, CorpusStyle::Vllm)
    );
}

type Change = fn(&mut DatasetArgs);

#[test]
fn bad_flags_get_one_sentence() {
    let cases: [(Change, &str); 7] = [
        (
            |a| a.dataset_sampling_strategy = Some("x".into()),
            "sequential, random or shuffle",
        ),
        (
            |a| a.prompt_corpus = Some("poems".into()),
            "sonnet, coding or random",
        ),
        (
            |a| a.random_corpus_style = Some("tgi".into()),
            "vllm or sglang",
        ),
        (
            |a| a.user_context_prompt_length = Some(0),
            "--user-context-prompt-length 0",
        ),
        (|a| a.prompt_batch_size = Some(0), "--prompt-batch-size 0"),
        (
            |a| {
                a.system_prompt = Some("x".into());
                a.system_prompt_file = Some("f".into());
            },
            "give one",
        ),
        (
            |a| a.system_prompt_file = Some("/nonexistent/x".into()),
            "Cannot read --system-prompt-file",
        ),
    ];
    for (change, said) in cases {
        let mut a = args();
        change(&mut a);
        let message = DatasetSettings::parse(&a, None).unwrap_err().to_string();
        assert!(message.contains(said), "{message}");
    }
}

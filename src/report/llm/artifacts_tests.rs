//! Tests of the artifact folders: GenAI-Perf's folder names, every file of a level written
//! where it belongs, nothing without `--artifact-dir`, and one sentence per failed write.

use super::*;
use crate::data::{Dataset, Entry, Prompt};
use crate::measure::level::LevelEnd;
use crate::report::llm::payloads::Payloads;
use crate::report::llm::{test_llm_settings, test_llm_window};
use crate::report::{test_record, Sent};
use crate::results::ResultsFile;
use inferperf_wire::error::EXIT_GENERIC;
use inferperf_wire::model::ModelSpec;

fn level(level: LoadLevel) -> LevelResult {
    LevelResult {
        level,
        merged: test_llm_window(),
        windows: Vec::new(),
        end: LevelEnd::Stable,
        notes: Vec::new(),
        requests: None,
        slices: Default::default(),
    }
}

fn dataset() -> Dataset {
    let prompt = Prompt {
        text: "hello".into(),
        input_tokens: 1,
        max_tokens: None,
        body: None,
        system: None,
        messages: None,
        ..Prompt::default()
    };
    Dataset {
        tokenizer: None,
        marker_tokens: 0,
        entries: vec![Entry {
            inputs: Vec::new(),
            timestamp_ms: None,
            expected: None,
            origin: "test".into(),
            prompt: Some(prompt),
            stream: None,
            turn: None,
        }],
    }
}

/// The artifacts of a run with these settings, started with [`dataset`]'s one prompt.
fn started(file: &ResultsFile) -> RunResult<Box<dyn Reporter>> {
    let mut artifacts = (REPORT.open)(&file.settings)?;
    let dataset = dataset();
    let body = || {
        Payloads::from_bodies(vec![
            "{\"model\":\"test-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"
                .into(),
        ])
    };
    let sent = Sent {
        dataset: &dataset,
        bodies: &body,
    };
    artifacts.start(&run(file), Some(&sent))?;
    Ok(artifacts)
}

fn run(file: &ResultsFile) -> Run<'_> {
    Run {
        file,
        model: &MODEL,
        origin: Origin::Measured,
    }
}

static MODEL: std::sync::LazyLock<ModelSpec> = std::sync::LazyLock::new(ModelSpec::default);

fn ended() -> Measured<'static> {
    Measured::Levels(&[])
}

#[test]
fn folders_are_named_as_genai_perf_names_them() {
    let settings = test_llm_settings(&[]);
    assert_eq!(
        level_folder_name(&settings, LoadLevel::Concurrency(4)),
        "test-model-openai-chat-concurrency4"
    );
    assert_eq!(
        level_folder_name(&settings, LoadLevel::Rate(10.0)),
        "test-model-openai-chat-request_rate10.0"
    );
    assert_eq!(
        level_folder_name(&settings, LoadLevel::Rate(2.5)),
        "test-model-openai-chat-request_rate2.5"
    );
    let mut settings = test_llm_settings(&["--endpoint", "v1/completions"]);
    assert_eq!(
        level_folder_name(&settings, LoadLevel::Concurrency(1)),
        "test-model-openai-completions-concurrency1"
    );
    settings.model_name = "meta-llama/Llama-3.1-8B".into();
    assert_eq!(
        level_folder_name(&settings, LoadLevel::Concurrency(1)),
        "meta-llama_Llama-3.1-8B-openai-completions-concurrency1"
    );
}

#[test]
fn each_level_gets_a_folder_with_every_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("artifacts");
    let settings = test_llm_settings(&["--streaming", "--artifact-dir", dir.to_str().unwrap()]);
    let file = test_record(settings);
    let mut artifacts = started(&file).unwrap();
    let inputs = std::fs::read_to_string(dir.join("inputs.json")).unwrap();
    assert!(inputs.contains("\"content\": \"hello\""), "{inputs}");
    artifacts.level(&run(&file), &level(LoadLevel::Concurrency(1)));
    artifacts.level(&run(&file), &level(LoadLevel::Concurrency(2)));
    artifacts.finish(&run(&file), &ended()).unwrap();
    for c in [1, 2] {
        let folder = dir.join(format!("test-model-openai-chat-concurrency{c}"));
        for file in [
            "profile_export_genai_perf.csv",
            "profile_export_genai_perf.json",
            "profile_export_aiperf.csv",
            "profile_export_aiperf.json",
            "profile_export.json",
        ] {
            let text = std::fs::read_to_string(folder.join(file)).unwrap();
            assert!(!text.is_empty(), "{file}");
            if file.ends_with(".json") {
                serde_json::from_str::<serde_json::Value>(&text).expect(file);
            }
        }
    }
    let csv = std::fs::read_to_string(
        dir.join("test-model-openai-chat-concurrency2/profile_export_genai_perf.csv"),
    )
    .unwrap();
    assert!(csv.starts_with("Metric,avg,min,max,p99,"));
}

#[test]
fn without_an_artifact_dir_nothing_is_written() {
    let settings = test_llm_settings(&[]);
    assert!(!(REPORT.is_on)(&settings, Origin::Measured));
    // Nor for a run merged from shards, which has no requests to list.
    let settings = test_llm_settings(&["--artifact-dir", "a"]);
    assert!((REPORT.is_on)(&settings, Origin::Measured));
    assert!(!(REPORT.is_on)(&settings, Origin::Merged));
}

#[test]
fn a_write_that_fails_is_one_sentence_naming_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let blocker = tmp.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let under_a_file = blocker.join("artifacts");
    let settings = test_llm_settings(&["--artifact-dir", under_a_file.to_str().unwrap()]);
    let Err(err) = started(&test_record(settings)) else {
        panic!("a folder under a file cannot be made");
    };
    assert_eq!(err.exit_code(), EXIT_GENERIC);
    let message = err.to_string();
    assert!(
        message.starts_with("Cannot write the LLM artifacts to "),
        "{message}"
    );
    assert!(message.contains("a-file"), "{message}");

    let dir = tmp.path().join("ok");
    let settings = test_llm_settings(&["--artifact-dir", dir.to_str().unwrap()]);
    let file = test_record(settings);
    let mut artifacts = started(&file).unwrap();
    std::fs::write(dir.join("test-model-openai-chat-concurrency3"), "").unwrap();
    artifacts.level(&run(&file), &level(LoadLevel::Concurrency(3)));
    artifacts.level(&run(&file), &level(LoadLevel::Concurrency(4)));
    let err = artifacts.finish(&run(&file), &ended()).unwrap_err();
    assert!(err.to_string().contains("concurrency3"), "{err}");
    assert!(
        !dir.join("test-model-openai-chat-concurrency4").exists(),
        "no more writes after one failed"
    );
}

#[test]
fn arguments_are_quoted_for_a_shell() {
    assert_eq!(shell_quoted("--url"), "--url");
    assert_eq!(shell_quoted("localhost:8000"), "localhost:8000");
    assert_eq!(shell_quoted("a b"), "'a b'");
    assert_eq!(shell_quoted("it's"), "'it'\\''s'");
}

#[test]
fn header_values_never_reach_the_files() {
    let args = [
        "inferperf",
        "-H",
        "Authorization: Bearer sk-123",
        "-HX-Key:abc",
        "-m",
        "m",
    ];
    let shown = crate::cli::without_header_values(args.iter().map(|a| a.to_string()));
    assert_eq!(
        shown,
        [
            "inferperf",
            "-H",
            "Authorization: <hidden>",
            "-HX-Key: <hidden>",
            "-m",
            "m"
        ]
    );
}

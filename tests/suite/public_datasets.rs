//! AIPerf's public datasets (`--public-dataset`) read from a Hugging Face hub cache made
//! here, with `HF_HUB_OFFLINE=1` so that nothing leaves the machine: ShareGPT's JSON filtered
//! by AIPerf's length rules, datasets whose split is in Parquet or JSON Lines files, a
//! streamed dataset read only as far as the run needs, and a file that is not cached named
//! in one sentence. The embedded server's counts are the truth.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common;

const MODEL: &str = "chat=llm:ttft_ms=1,itl_ms=1";
/// Requests a run sends before measuring: one probe of the model and endpoint.
const PROBES: u64 = 1;

fn words(n: usize) -> String {
    vec!["tok"; n].join(" ")
}

fn lines(values: &[Value]) -> String {
    values
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Hugging Face hub cache with one dataset snapshot holding `files` (path, bytes).
fn hub_cache(root: &Path, repo: &str, files: &[(&str, Vec<u8>)]) {
    let folder = root.join(format!("datasets--{}", repo.replace('/', "--")));
    let snapshot = folder.join("snapshots/0123abcd");
    for (name, bytes) in files {
        let path = snapshot.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    std::fs::create_dir_all(folder.join("refs")).unwrap();
    std::fs::write(folder.join("refs/main"), "0123abcd").unwrap();
}

/// A snappy-compressed Parquet file of string columns, as `datasets` writes a split.
fn write_parquet(path: &Path, columns: &[&str; 2], rows: &[[String; 2]]) {
    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;
    let fields: Vec<String> = columns
        .iter()
        .map(|c| format!("optional binary {c} (UTF8);"))
        .collect();
    let schema = parquet::schema::parser::parse_message_type(&format!(
        "message schema {{ {} }}",
        fields.join(" ")
    ))
    .unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).unwrap();
    let mut group = writer.next_row_group().unwrap();
    for k in 0..columns.len() {
        let values: Vec<ByteArray> = rows
            .iter()
            .map(|r| ByteArray::from(r[k].as_str()))
            .collect();
        let mut column = group.next_column().unwrap().unwrap();
        column
            .typed::<ByteArrayType>()
            .write_batch(&values, Some(&vec![1; values.len()]), None)
            .unwrap();
        column.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
}

/// Runs the binary offline on `cache` with a results file; (exit code, stderr, results).
async fn offline_run(
    addr: &str,
    cache: &Path,
    dir: &Path,
    extra: &[&str],
) -> (Option<i32>, String, Value) {
    let tokenizer = common::word_tokenizer(dir);
    let results: PathBuf = dir.join("results.json");
    let mut args = vec!["profile"];
    args.extend(common::chat_flags(addr, tokenizer.to_str().unwrap(), extra));
    args.extend(["--results-file", results.to_str().unwrap()]);
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args(&args)
        .current_dir(dir)
        .env("HF_HUB_CACHE", cache)
        .env("HF_HUB_OFFLINE", "1")
        .env_remove("HF_HOME")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let doc = std::fs::read_to_string(&results)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (out.status.code(), common::stderr(&out), doc)
}

/// The merged token figures of a results file's first level.
fn tokens(doc: &Value) -> &Value {
    &doc["levels"][0]["merged"]["tokens"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_sharegpt_is_read_from_the_hub_cache_and_filtered_as_aiperf_does() {
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let pair = |human: usize, gpt: usize| {
        vec![
            json!({"from": "human", "value": words(human)}),
            json!({"from": "gpt", "value": words(gpt)}),
        ]
    };
    let a = [pair(5, 6), pair(4, 4)].concat();
    let mut c = vec![json!({"from": "system", "value": "x"})];
    c.extend(pair(7, 5));
    let sharegpt = json!([
        {"id": "a", "conversations": a},
        {"id": "b", "conversations": pair(2, 9)},
        {"id": "c", "conversations": c},
        {"id": "d", "conversations": [{"from": "gpt", "value": "alone"}]}
    ]);
    let repo = "anon8231489123/ShareGPT_Vicuna_unfiltered";
    hub_cache(
        cache.path(),
        repo,
        &[(
            "ShareGPT_V3_unfiltered_cleaned_split.json",
            sharegpt.to_string().into_bytes(),
        )],
    );
    let extra = [
        "--public-dataset",
        "sharegpt",
        "--concurrency",
        "1",
        "--request-count",
        "3",
    ];
    let (code, err, doc) = offline_run(&addr, cache.path(), dir.path(), &extra).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(common::served(&server, "chat"), 3 + PROBES);
    let t = tokens(&doc);
    // a: 5, then 5 + 6 answered + 4; c: 7 (b's 2-word prompt drops it; d has no pair).
    assert_eq!(t["input_tokens"]["sum"], 5 + 15 + 7, "{t}");
    assert_eq!(t["usage_input_tokens"]["sum"], t["input_tokens"]["sum"]);
    assert_eq!(
        t["output_tokens"]["sum"],
        6 + 4 + 5,
        "each answer as long as the recorded one"
    );
    // Not cached: one sentence naming the repository, the file and how to fetch it.
    let empty = tempfile::tempdir().unwrap();
    let (code, err, _) = offline_run(&addr, empty.path(), dir.path(), &extra).await;
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains(repo) && err.contains("ShareGPT_V3_unfiltered_cleaned_split.json"),
        "{err}"
    );
    assert!(
        err.contains("HF_HUB_OFFLINE") && err.contains("hf download"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_hub_datasets_read_their_split_from_parquet_and_json_lines() {
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("made.parquet");
    write_parquet(
        &parquet,
        &["problem", "solution"],
        &[[words(6), "x".into()], [words(8), "y".into()]],
    );
    let test_rows = lines(&[json!({"problem": words(99)})]);
    hub_cache(
        cache.path(),
        "AI-MO/NuminaMath-TIR",
        &[
            (
                "data/train-00000-of-00001.parquet",
                std::fs::read(&parquet).unwrap(),
            ),
            ("data/test.jsonl", test_rows.into_bytes()),
        ],
    );
    let extra = [
        "--public-dataset",
        "aimo",
        "--concurrency",
        "1",
        "--request-count",
        "2",
        "--osl",
        "3",
    ];
    let (code, err, doc) = offline_run(&addr, cache.path(), dir.path(), &extra).await;
    assert_eq!(code, Some(0), "{err}");
    let t = tokens(&doc);
    assert_eq!(
        t["input_tokens"]["sum"],
        6 + 8,
        "the train split's rows: {t}"
    );
    assert_eq!(t["usage_input_tokens"]["sum"], 6 + 8);
    assert_eq!(
        t["output_tokens"]["sum"], 6,
        "--osl for rows without a length"
    );
    let math = lines(&[
        json!({"problem": words(4), "answer": "1"}),
        json!({"problem": words(5), "answer": "2"}),
    ]);
    hub_cache(
        cache.path(),
        "HuggingFaceH4/MATH-500",
        &[("test.jsonl", math.into_bytes())],
    );
    let extra = [
        "--public-dataset",
        "spec-al-math500",
        "--concurrency",
        "1",
        "--request-count",
        "2",
    ];
    let (code, err, doc) = offline_run(&addr, cache.path(), dir.path(), &extra).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(tokens(&doc)["input_tokens"]["sum"], 4 + 5);
    assert_eq!(common::served(&server, "chat"), 4 + 2 * PROBES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_dataset_is_read_only_as_far_as_the_run_needs() {
    let server = common::start_server(&[MODEL]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    // A 1×1 PNG: one token (a 32×32 patch) to the embedded server.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC";
    let row = |n: usize| json!({"id": n, "conversations": [{"from": "human", "value": format!("<image>\n{}", words(n))}, {"from": "gpt", "value": "x"}], "image": {"bytes": png, "path": null}});
    let first = lines(&[row(3), row(4), row(5)]);
    hub_cache(
        cache.path(),
        "lmms-lab/LLaVA-OneVision-Data",
        &[
            ("sharegpt4o/train-00000-of-00002.jsonl", first.into_bytes()),
            // Never read: the first file holds the rows the run needs.
            (
                "sharegpt4o/train-00001-of-00002.jsonl",
                b"not json".to_vec(),
            ),
            (
                "other/train-00000-of-00001.jsonl",
                b"not json either".to_vec(),
            ),
        ],
    );
    let extra = [
        "--public-dataset",
        "llava-onevision",
        "--concurrency",
        "1",
        "--request-count",
        "3",
        "--osl",
        "2",
    ];
    let (code, err, doc) = offline_run(&addr, cache.path(), dir.path(), &extra).await;
    assert_eq!(code, Some(0), "{err}");
    let t = tokens(&doc);
    assert_eq!(
        t["input_tokens"]["sum"],
        3 + 4 + 5,
        "the first user messages, <image> removed: {t}"
    );
    assert_eq!(
        t["usage_input_tokens"]["sum"],
        3 + 4 + 5 + 3,
        "each image is a part of its own, one token to the server"
    );
    assert_eq!(common::served(&server, "chat"), 3 + PROBES);
}

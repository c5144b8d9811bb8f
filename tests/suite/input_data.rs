//! `--input-data FILE.json` and `--input-data DIR` against the embedded server: the user's
//! values reach the model unchanged in every form perf_analyzer's format allows (flat
//! lists, content + shape, base64, several files, a directory), batches repeat an entry,
//! and every malformed file ends the run with one sentence and exit code 3.

use crate::common;

use std::path::Path;

use common::*;
use inferperf_wire::Tensor;
use serde_json::{json, Value};

fn write_json(dir: &Path, name: &str, doc: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, doc.to_string()).expect("write the JSON file");
    path.display().to_string()
}

/// Sends every request of the dataset once and returns each answer's outputs.
fn ints(data: &[u8]) -> Vec<i32> {
    data.chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn floats(data: &[u8]) -> Vec<f32> {
    data.chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn output<'a>(outputs: &'a [Tensor], name: &str) -> &'a Tensor {
    outputs.iter().find(|t| t.name == name).expect("output")
}

fn row(start: i32) -> Vec<i32> {
    (start..start + 16).collect()
}

fn b64(values: &[i32]) -> String {
    use base64::Engine;
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(raw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_sub_answers_every_entry_in_every_form() {
    let server = start_server(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let first = write_json(
        dir.path(),
        "first.json",
        &json!({"data": [
            {"INPUT0": row(0), "INPUT1": row(100), "timestamp": [0]},
            {"INPUT0": {"content": row(-50), "shape": [16]}, "INPUT1": row(7), "timestamp": 2.5},
            {"INPUT0": {"b64": b64(&row(1000))}, "INPUT1": {"content": {"b64": b64(&row(3))}}},
        ]}),
    );
    let second = write_json(
        dir.path(),
        "second.json",
        &json!({"data": [{"INPUT0": [vec![5; 8], vec![6; 8]], "INPUT1": row(-8)}]}),
    );
    let inputs = [
        (row(0), row(100)),
        (row(-50), row(7)),
        (row(1000), row(3)),
        ([vec![5; 8], vec![6; 8]].concat(), row(-8)),
    ];
    for protocol in ["http", "grpc"] {
        let (prepared, outs) = answers(&[
            "-m",
            "add_sub",
            "-u",
            &url(&server, protocol),
            "-i",
            protocol,
            "--input-data",
            &first,
            "--input-data",
            &second,
        ])
        .await;
        assert_eq!(outs.len(), 4, "{protocol}: one request per entry");
        for (k, ((a, b), outputs)) in inputs.iter().zip(&outs).enumerate() {
            let sent = &prepared.dataset.entries[k].inputs;
            assert_eq!(ints(&sent[0].data), *a, "{protocol} entry {k}");
            let sum: Vec<i32> = a.iter().zip(b).map(|(x, y)| x + y).collect();
            let diff: Vec<i32> = a.iter().zip(b).map(|(x, y)| x - y).collect();
            assert_eq!(
                ints(&output(outputs, "OUTPUT0").data),
                sum,
                "{protocol} {k}"
            );
            assert_eq!(
                ints(&output(outputs, "OUTPUT1").data),
                diff,
                "{protocol} {k}"
            );
        }
        assert_eq!(
            prepared.dataset.timestamps_ms().collect::<Vec<_>>(),
            vec![Some(0.0), Some(2.5), None, None]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variable_shapes_come_from_the_entries() {
    let server = start_server(&["var=identity:shape=-1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = write_json(
        dir.path(),
        "var.json",
        &json!({
            "data": [
                {"INPUT0": {"content": [1.5, 2.5, 3.5], "shape": [3]}},
                {"INPUT0": [1, 2, 3, 4, 5]},
            ],
            "validation_data": [{"OUTPUT0": [1.5, 2.5, 3.5]}, {}],
        }),
    );
    let (prepared, outs) = answers(&[
        "-m",
        "var",
        "-u",
        &url(&server, "http"),
        "--input-data",
        &file,
    ])
    .await;
    let first = output(&outs[0], "OUTPUT0");
    assert_eq!(first.shape, vec![1, 3]);
    assert_eq!(floats(&first.data), vec![1.5, 2.5, 3.5]);
    let second = output(&outs[1], "OUTPUT0");
    assert_eq!(second.shape, vec![1, 5]);
    assert_eq!(floats(&second.data), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    let expected = prepared.dataset.entries[0]
        .expected
        .as_ref()
        .expect("validation data");
    assert_eq!(expected[0].data, first.data);
    assert_eq!(prepared.dataset.entries[1].expected, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_repeats_the_entry() {
    let server = start_server(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..16).map(|i| i as f32 * 0.5).collect();
    let file = write_json(
        dir.path(),
        "one.json",
        &json!({"data": [{"INPUT0": values}]}),
    );
    let (_, outs) = answers(&[
        "-m",
        "identity",
        "-u",
        &url(&server, "http"),
        "-b",
        "2",
        "--input-data",
        &file,
    ])
    .await;
    let echoed = output(&outs[0], "OUTPUT0");
    assert_eq!(echoed.shape, vec![2, 16]);
    assert_eq!(floats(&echoed.data), [values.clone(), values].concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_holds_one_raw_file_per_input() {
    let server = start_server(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let raw = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    std::fs::write(dir.path().join("INPUT0"), raw(&row(10))).unwrap();
    std::fs::write(dir.path().join("INPUT1"), raw(&row(1))).unwrap();
    let path = dir.path().display().to_string();
    let (_, outs) = answers(&[
        "-m",
        "add_sub",
        "-u",
        &url(&server, "http"),
        "--input-data",
        &path,
    ])
    .await;
    assert_eq!(outs.len(), 1);
    let sum: Vec<i32> = (0..16).map(|i| 11 + 2 * i).collect();
    assert_eq!(ints(&output(&outs[0], "OUTPUT0").data), sum);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_data_ends_the_run_with_one_sentence_and_exit_3() {
    let server = start_server(&["add_sub=add_sub", "u8=identity:datatype=UINT8,shape=4"]).await;
    let http = url(&server, "http");
    let dir = tempfile::tempdir().unwrap();
    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, "{\"data\": [{\"INPUT0\": [1, 2,]}]}").unwrap();
    let bad_json = bad_json.display().to_string();
    let missing = write_json(
        dir.path(),
        "missing.json",
        &json!({"data": [{"INPUT0": row(0)}]}),
    );
    let short = write_json(
        dir.path(),
        "short.json",
        &json!({"data": [{"INPUT0": row(0), "INPUT1": row(0)}, {"INPUT0": [1, 2, 3], "INPUT1": row(0)}]}),
    );
    let range = write_json(
        dir.path(),
        "range.json",
        &json!({"data": [{"INPUT0": [1, 2, 300, 4]}]}),
    );
    let nowhere = dir.path().join("nowhere.json").display().to_string();
    let empty_dir = tempfile::tempdir().unwrap();
    let empty_path = empty_dir.path().display().to_string();
    let cases: [(&str, &str, Vec<&str>); 6] = [
        ("add_sub", &bad_json, vec!["bad.json is not valid JSON", "line 1 column"]),
        ("add_sub", &missing, vec!["missing.json: data[0] lacks input 'INPUT1' of model 'add_sub'"]),
        ("add_sub", &short, vec!["short.json: data[1], input 'INPUT0': 3 values do not fill shape [16]"]),
        ("u8", &range, vec!["range.json: data[0], input 'INPUT0': element 2 is 300, which is out of range for UINT8 (0 to 255)"]),
        ("add_sub", &nowhere, vec!["nowhere.json' is not random, zero, or an existing JSON file or directory"]),
        ("add_sub", &empty_path, vec!["there is no file 'INPUT0' for input 'INPUT0'"]),
    ];
    for (model, data, needles) in cases {
        let out = run_cli(&["-m", model, "-u", &http, "--input-data", data, "-p", "100"]).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{data}: {err}");
        for needle in needles {
            assert!(err.contains(needle), "{data}: {err}");
        }
        assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
        assert!(stdout(&out).is_empty(), "{data}: nothing measured");
    }
    let out = run_cli(&[
        "-m",
        "add_sub",
        "-u",
        &http,
        "--input-data",
        "zero",
        "--input-data",
        &missing,
    ])
    .await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("only JSON files may be repeated"),
        "{}",
        stderr(&out)
    );
}

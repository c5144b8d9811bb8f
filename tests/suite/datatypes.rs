//! Every KServe datatype goes to the embedded server's identity model and comes back
//! unchanged, in each of the three encodings the client sends (HTTP JSON, HTTP binary and
//! gRPC raw contents) and through an in-process local call.

use crate::common;

use common::*;
use inferperf_wire::model::DataType;

async fn round_trip(server_url: &str, model: &str, protocol: &str, format: &str) {
    let local_def = format!("{model}={}", local_definition(model));
    let mut flags = vec![
        "-m",
        model,
        "-b",
        "2",
        "--input-tensor-format",
        format,
        "--output-tensor-format",
        format,
        "--string-length",
        "7",
    ];
    match protocol {
        "local" => flags.extend(["--service-kind", "local", "--model", &local_def]),
        _ => flags.extend(["-u", server_url, "-i", protocol]),
    }
    let (prepared, mut answered) = answers(&flags).await;
    let outputs = answered.remove(0);
    let sent = &prepared.dataset.entries[0].inputs[0];
    let got = outputs
        .iter()
        .find(|t| t.name == "OUTPUT0")
        .expect("OUTPUT0");
    assert_eq!(got.datatype, sent.datatype, "{model} {protocol} {format}");
    assert_eq!(got.shape, sent.shape, "{model} {protocol} {format}");
    assert_eq!(
        got.data, sent.data,
        "{model} {protocol} {format}: data differs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_datatype_round_trips_in_every_encoding() {
    let defs: Vec<String> = DataType::ALL
        .iter()
        .map(|t| {
            format!(
                "id_{}=identity:datatype={},shape=3",
                t.as_str().to_lowercase(),
                t.as_str()
            )
        })
        .collect();
    let def_refs: Vec<&str> = defs.iter().map(String::as_str).collect();
    let server = start_server(&def_refs).await;
    for t in DataType::ALL {
        let model = format!("id_{}", t.as_str().to_lowercase());
        round_trip(&url(&server, "http"), &model, "http", "json").await;
        round_trip(&url(&server, "http"), &model, "http", "binary").await;
        round_trip(&url(&server, "grpc"), &model, "grpc", "binary").await;
        round_trip("", &model, "local", "binary").await;
    }
}

/// The `--model` definition of an `id_<type>` model, as the server above defines it.
fn local_definition(model: &str) -> String {
    let datatype = model.trim_start_matches("id_").to_uppercase();
    format!("identity:datatype={datatype},shape=3")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_sub_answers_are_right() {
    let server = start_server(&[]).await;
    for protocol in ["http", "grpc"] {
        let (prepared, mut answered) = answers(&[
            "-m",
            "add_sub",
            "-u",
            &url(&server, protocol),
            "-i",
            protocol,
        ])
        .await;
        let outputs = answered.remove(0);
        let ints = |b: &[u8]| -> Vec<i32> {
            b.chunks(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let inputs = &prepared.dataset.entries[0].inputs;
        let (a, b) = (ints(&inputs[0].data), ints(&inputs[1].data));
        let out = |name: &str| ints(&outputs.iter().find(|t| t.name == name).unwrap().data);
        let sum: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
        let diff: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_sub(*y)).collect();
        assert_eq!(out("OUTPUT0"), sum, "{protocol}");
        assert_eq!(out("OUTPUT1"), diff, "{protocol}");
    }
}

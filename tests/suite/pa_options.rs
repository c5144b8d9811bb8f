//! Every option of perf_analyzer's current command-line parser (its long options, extracted
//! from `command_line_parser.cc`, and the short options `-v -d -a -z -c -u -m -x -b -t -p -i
//! -H -l -r -s -f`), each in a valid invocation of the real binary against the embedded
//! server: it must be accepted (exit 0, or 2 for a level that did not stabilize). Options
//! that inferperf refuses on purpose (a GPU-only value, perf_analyzer's chat sessions) are
//! listed with their sentence. The Triton in-process options run here up to the library,
//! which only the e2e tests have.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use inferperf_server::{self as server, ModelDef, RunningServer, ServeOptions, TlsFiles};

/// perf_analyzer's long options, in the order of its `long_options` table.
const PA_LONG_OPTIONS: [&str; 67] = [
    "streaming",
    "max-threads",
    "sequence-length",
    "percentile",
    "data-directory",
    "shape",
    "measurement-interval",
    "concurrency-range",
    "latency-threshold",
    "stability-percentage",
    "max-trials",
    "input-data",
    "string-length",
    "string-data",
    "async",
    "sync",
    "request-rate-range",
    "num-of-sequences",
    "binary-search",
    "request-distribution",
    "request-intervals",
    "shared-memory",
    "output-shared-memory-size",
    "service-kind",
    "model-signature-name",
    "grpc-compression-algorithm",
    "measurement-mode",
    "measurement-request-count",
    "triton-server-directory",
    "model-repository",
    "sequence-id-range",
    "ssl-grpc-use-ssl",
    "ssl-grpc-root-certifications-file",
    "ssl-grpc-private-key-file",
    "ssl-grpc-certificate-chain-file",
    "ssl-https-verify-peer",
    "ssl-https-verify-host",
    "ssl-https-ca-certificates-file",
    "ssl-https-client-certificate-file",
    "ssl-https-client-certificate-type",
    "ssl-https-private-key-file",
    "ssl-https-private-key-type",
    "verbose-csv",
    "enable-mpi",
    "trace-level",
    "trace-rate",
    "trace-count",
    "log-frequency",
    "collect-metrics",
    "metrics-url",
    "metrics-interval",
    "sequence-length-variation",
    "bls-composing-models",
    "serial-sequences",
    "input-tensor-format",
    "output-tensor-format",
    "version",
    "profile-export-file",
    "periodic-concurrency-range",
    "request-period",
    "request-parameter",
    "endpoint",
    "request-count",
    "warmup-request-count",
    "fixed-schedule",
    "session-concurrency",
    "grpc-method",
];

/// perf_analyzer's short options (its getopt string `vdazc:u:m:x:b:t:p:i:H:l:r:s:f:`).
const PA_SHORT_OPTIONS: [&str; 17] = [
    "-v", "-d", "-a", "-z", "-c", "-u", "-m", "-x", "-b", "-t", "-p", "-i", "-H", "-l", "-r", "-s",
    "-f",
];

/// What inferperf must do with an option's invocation.
enum Expect {
    /// Run it: exit 0 (or 2, a level that did not stabilize).
    Accepted,
    /// Refused on purpose with this sentence, exit 3.
    Refused(&'static str),
}

struct Case {
    option: &'static str,
    args: Vec<String>,
    expect: Expect,
}

/// The servers and files the invocations use.
struct World {
    plain: RunningServer,
    tls: RunningServer,
    dir: tempfile::TempDir,
}

impl World {
    fn http(&self) -> String {
        self.plain.http_addr.to_string()
    }
    fn grpc(&self) -> String {
        self.plain.grpc_addr.to_string()
    }
    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `-m identity -u HTTP --request-count 8` and `extra`.
fn counted(w: &World, extra: &[&str]) -> Vec<String> {
    let mut args = strings(&["-m", "identity", "-u", &w.http(), "--request-count", "8"]);
    args.extend(strings(extra));
    args
}

/// The identity model over HTTP with `extra` and no request count (a short sweep).
fn plain(w: &World, extra: &[&str]) -> Vec<String> {
    let mut args = strings(&["-m", "identity", "-u", &w.http(), "-p", "100", "-s", "100"]);
    args.extend(strings(extra));
    args
}

/// The embedded server's sequence model over HTTP, counted, with `extra`.
fn sequenced(w: &World, extra: &[&str]) -> Vec<String> {
    let mut args = strings(&["-m", "seq", "-u", &w.http(), "--request-count", "8"]);
    args.extend(strings(extra));
    args
}

/// The identity model over gRPC, counted, with `extra`.
fn grpc(w: &World, extra: &[&str]) -> Vec<String> {
    let mut args = strings(&["-m", "identity", "-u", &w.grpc(), "-i", "grpc"]);
    args.extend(strings(&["--request-count", "8"]));
    args.extend(strings(extra));
    args
}

fn accepted(option: &'static str, args: Vec<String>) -> Case {
    let expect = Expect::Accepted;
    Case {
        option,
        args,
        expect,
    }
}

fn long_cases(w: &World) -> Vec<Case> {
    let csv = w.file("out.csv");
    let export = w.file("export.json");
    let export2 = w.file("export2.json");
    let export3 = w.file("export3.json");
    let gaps = w.file("gaps.txt");
    let schedule = w.file("schedule.json");
    let data_dir = w.file("raw");
    let https = format!("https://{}", w.tls.http_addr);
    let grpcs = w.tls.grpc_addr.to_string();
    let (ca, client, client_key) = (w.file("ca.pem"), w.file("client.pem"), w.file("client.key"));
    let metrics = format!("http://{}/metrics", w.plain.metrics_addr.unwrap());
    let tls_http = |extra: &[&str]| {
        let mut args = strings(&["-m", "identity", "-u", &https, "--request-count", "8"]);
        args.extend(strings(extra));
        args
    };
    // HTTPS with a client certificate and key (mTLS flags), and `extra`.
    let mtls_http = |extra: &[&str]| {
        let mut args = tls_http(&["--ssl-https-ca-certificates-file", &ca]);
        args.extend(strings(&["--ssl-https-client-certificate-file", &client]));
        args.extend(strings(&["--ssl-https-private-key-file", &client_key]));
        args.extend(strings(extra));
        args
    };
    let tls_grpc = |extra: &[&str]| {
        let mut args = strings(&["-m", "identity", "-i", "grpc", "-u", &grpcs]);
        args.extend(strings(&["--request-count", "8", "--ssl-grpc-use-ssl"]));
        args.extend(strings(&["--ssl-grpc-root-certifications-file", &ca]));
        args.extend(strings(extra));
        args
    };
    let stream = strings(&["-m", "stream", "-u", &w.grpc(), "-i", "grpc", "--streaming"]);
    let periodic = |export: &str| {
        let mut args = stream.clone();
        args.extend(strings(&["--periodic-concurrency-range", "1:2:1"]));
        args.extend(strings(&[
            "--request-period",
            "2",
            "--profile-export-file",
            export,
        ]));
        args
    };
    let llm = |extra: &[&str]| {
        let mut args = strings(&["-m", "llm", "-u", &w.http(), "--service-kind", "openai"]);
        args.extend(strings(&["--request-count", "4"]));
        args.extend(strings(extra));
        args
    };
    vec![
        accepted("streaming", {
            let mut a = stream.clone();
            a.extend(strings(&["--request-count", "4"]));
            a
        }),
        accepted("max-threads", counted(w, &["--max-threads", "4"])),
        accepted("sequence-length", sequenced(w, &["--sequence-length", "4"])),
        accepted("percentile", counted(w, &["--percentile", "95"])),
        accepted(
            "data-directory",
            counted(w, &["--data-directory", &data_dir]),
        ),
        accepted("shape", counted(w, &["--shape", "INPUT0:16"])),
        accepted(
            "measurement-interval",
            counted(w, &["--measurement-interval", "200"]),
        ),
        accepted(
            "concurrency-range",
            counted(w, &["--concurrency-range", "2"]),
        ),
        accepted(
            "latency-threshold",
            plain(
                w,
                &[
                    "--concurrency-range",
                    "1:2",
                    "--latency-threshold",
                    "1000",
                    "-r",
                    "3",
                ],
            ),
        ),
        accepted(
            "stability-percentage",
            counted(w, &["--stability-percentage", "20"]),
        ),
        accepted("max-trials", counted(w, &["--max-trials", "3"])),
        accepted("input-data", counted(w, &["--input-data", "zero"])),
        accepted("string-length", counted(w, &["--string-length", "16"])),
        accepted("string-data", counted(w, &["--string-data", "abc"])),
        accepted("async", counted(w, &["--async"])),
        accepted("sync", counted(w, &["--sync"])),
        accepted(
            "request-rate-range",
            counted(w, &["--request-rate-range", "8"]),
        ),
        accepted(
            "num-of-sequences",
            sequenced(w, &["--request-rate-range", "8", "--num-of-sequences", "4"]),
        ),
        accepted(
            "binary-search",
            plain(
                w,
                &[
                    "--concurrency-range",
                    "1:3",
                    "--binary-search",
                    "-l",
                    "1000",
                    "-r",
                    "3",
                ],
            ),
        ),
        accepted(
            "request-distribution",
            counted(
                w,
                &[
                    "--request-rate-range",
                    "8",
                    "--request-distribution",
                    "poisson",
                ],
            ),
        ),
        accepted(
            "request-intervals",
            counted(w, &["--request-intervals", &gaps]),
        ),
        accepted("shared-memory", counted(w, &["--shared-memory", "system"])),
        accepted(
            "output-shared-memory-size",
            counted(
                w,
                &[
                    "--shared-memory",
                    "system",
                    "--output-shared-memory-size",
                    "1024",
                ],
            ),
        ),
        accepted("service-kind", counted(w, &["--service-kind", "triton"])),
        accepted("model-signature-name", {
            let mut a = strings(&["-m", "identity", "-u", &w.grpc(), "-i", "grpc"]);
            a.extend(strings(&[
                "--service-kind",
                "tfserving",
                "--request-count",
                "8",
            ]));
            a.extend(strings(&["--model-signature-name", "serving_default"]));
            a
        }),
        accepted(
            "grpc-compression-algorithm",
            grpc(w, &["--grpc-compression-algorithm", "gzip"]),
        ),
        accepted(
            "measurement-mode",
            plain(
                w,
                &[
                    "--measurement-mode",
                    "count_windows",
                    "--measurement-request-count",
                    "20",
                    "-r",
                    "3",
                ],
            ),
        ),
        accepted(
            "measurement-request-count",
            plain(
                w,
                &[
                    "--measurement-mode",
                    "count_windows",
                    "--measurement-request-count",
                    "20",
                    "-r",
                    "3",
                ],
            ),
        ),
        in_process_triton("triton-server-directory", w),
        in_process_triton("model-repository", w),
        accepted(
            "sequence-id-range",
            sequenced(w, &["--sequence-id-range", "1:100"]),
        ),
        accepted("ssl-grpc-use-ssl", tls_grpc(&[])),
        accepted("ssl-grpc-root-certifications-file", tls_grpc(&[])),
        accepted(
            "ssl-grpc-private-key-file",
            tls_grpc(&[
                "--ssl-grpc-private-key-file",
                &client_key,
                "--ssl-grpc-certificate-chain-file",
                &client,
            ]),
        ),
        accepted(
            "ssl-grpc-certificate-chain-file",
            tls_grpc(&[
                "--ssl-grpc-private-key-file",
                &client_key,
                "--ssl-grpc-certificate-chain-file",
                &client,
            ]),
        ),
        accepted(
            "ssl-https-verify-peer",
            tls_http(&["--ssl-https-verify-peer", "0"]),
        ),
        accepted(
            "ssl-https-verify-host",
            tls_http(&[
                "--ssl-https-ca-certificates-file",
                &ca,
                "--ssl-https-verify-host",
                "2",
            ]),
        ),
        accepted(
            "ssl-https-ca-certificates-file",
            tls_http(&["--ssl-https-ca-certificates-file", &ca]),
        ),
        accepted("ssl-https-client-certificate-file", mtls_http(&[])),
        accepted(
            "ssl-https-client-certificate-type",
            mtls_http(&["--ssl-https-client-certificate-type", "PEM"]),
        ),
        accepted("ssl-https-private-key-file", mtls_http(&[])),
        accepted(
            "ssl-https-private-key-type",
            mtls_http(&["--ssl-https-private-key-type", "PEM"]),
        ),
        accepted("verbose-csv", counted(w, &["--verbose-csv", "-f", &csv])),
        // Under an MPI launcher, as perf_analyzer runs it (a world of one rank).
        accepted("enable-mpi", counted(w, &["--enable-mpi"])),
        accepted("trace-level", counted(w, &["--trace-level", "TIMESTAMPS"])),
        accepted("trace-rate", counted(w, &["--trace-rate", "1000"])),
        accepted("trace-count", counted(w, &["--trace-count", "10"])),
        accepted("log-frequency", counted(w, &["--log-frequency", "10"])),
        accepted(
            "collect-metrics",
            counted(w, &["--collect-metrics", "--metrics-url", &metrics]),
        ),
        accepted(
            "metrics-url",
            counted(w, &["--collect-metrics", "--metrics-url", &metrics]),
        ),
        accepted(
            "metrics-interval",
            counted(
                w,
                &[
                    "--collect-metrics",
                    "--metrics-url",
                    &metrics,
                    "--metrics-interval",
                    "100",
                ],
            ),
        ),
        accepted(
            "sequence-length-variation",
            sequenced(w, &["--sequence-length-variation", "20"]),
        ),
        accepted(
            "bls-composing-models",
            strings(&[
                "-m",
                "pipe",
                "-u",
                &w.http(),
                "--request-count",
                "8",
                "--bls-composing-models",
                "identity:1",
            ]),
        ),
        accepted(
            "serial-sequences",
            sequenced(w, &["--request-rate-range", "8", "--serial-sequences"]),
        ),
        accepted(
            "input-tensor-format",
            counted(w, &["--input-tensor-format", "json"]),
        ),
        accepted(
            "output-tensor-format",
            counted(w, &["--output-tensor-format", "json"]),
        ),
        accepted("version", strings(&["profile", "--version"])),
        accepted(
            "profile-export-file",
            counted(w, &["--profile-export-file", &export]),
        ),
        accepted("periodic-concurrency-range", periodic(&export2)),
        accepted("request-period", periodic(&export3)),
        accepted(
            "request-parameter",
            counted(w, &["--request-parameter", "max_tokens:8:int"]),
        ),
        accepted("endpoint", llm(&["--endpoint", "v1/chat/completions"])),
        accepted("request-count", counted(w, &[])),
        accepted(
            "warmup-request-count",
            counted(w, &["--warmup-request-count", "4"]),
        ),
        accepted(
            "fixed-schedule",
            strings(&[
                "-m",
                "identity",
                "-u",
                &w.http(),
                "--fixed-schedule",
                "--input-data",
                &schedule,
            ]),
        ),
        accepted(
            "session-concurrency",
            llm(&["--endpoint-type", "chat", "--session-concurrency", "2"]),
        ),
        accepted(
            "grpc-method",
            strings(&[
                "--service-kind",
                "dynamic_grpc",
                "--grpc-method",
                "inference.GRPCInferenceService/ModelInfer",
                "-u",
                &w.grpc(),
                "--input-data",
                &w.file("generated.json"),
                "--request-count",
                "8",
            ]),
        ),
    ]
}

/// `--service-kind triton_c_api` with both of its directories. Here the server directory
/// holds no Triton (the real one runs in tests/e2e/test_triton_c_api.py), so the options are
/// taken and the run stops at the library with its sentence.
fn in_process_triton(option: &'static str, w: &World) -> Case {
    let dir = w.dir.path().display().to_string();
    let args = [
        "--service-kind",
        "triton_c_api",
        "--triton-server-directory",
        &dir,
        "--model-repository",
        &dir,
        "-m",
        "identity",
    ];
    Case {
        option,
        args: strings(&args),
        expect: Expect::Refused("holds no lib/libtritonserver.so"),
    }
}

/// Values of options listed above that are refused on purpose, checked beside them.
fn refused_values(w: &World) -> Vec<Case> {
    let dir = w.dir.path().display().to_string();
    vec![
        Case {
            option: "shared-memory",
            args: counted(w, &["--shared-memory", "cuda"]),
            expect: Expect::Refused(
                "--shared-memory cuda needs a GPU build of inferperf with CUDA",
            ),
        },
        Case {
            option: "model-repository",
            args: counted(w, &["--model-repository", &dir]),
            expect: Expect::Refused("add --service-kind triton_c_api"),
        },
    ]
}

fn short_cases(w: &World) -> Vec<Case> {
    let csv = w.file("short.csv");
    vec![
        accepted("-v", counted(w, &["-v"])),
        accepted("-d", plain(w, &["-d", "-c", "2", "-l", "1000", "-r", "3"])),
        accepted("-a", counted(w, &["-a"])),
        accepted("-z", counted(w, &["-z"])),
        accepted("-c", counted(w, &["-c", "1"])),
        accepted("-u", counted(w, &[])),
        accepted("-m", counted(w, &[])),
        accepted("-x", counted(w, &["-x", "1"])),
        accepted("-b", counted(w, &["-b", "2"])),
        accepted("-t", counted(w, &["-t", "2"])),
        accepted("-p", counted(w, &["-p", "200"])),
        accepted("-i", grpc(w, &[])),
        accepted("-H", counted(w, &["-H", "x-test: 1"])),
        accepted(
            "-l",
            plain(w, &["--concurrency-range", "1:2", "-l", "1000", "-r", "3"]),
        ),
        accepted("-r", counted(w, &["-r", "3"])),
        accepted("-s", counted(w, &["-s", "20"])),
        accepted("-f", counted(w, &["-f", &csv])),
    ]
}

/// ca.pem, and server.pem/.key (127.0.0.1) and client.pem/.key signed by it.
pub fn write_certs(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    for (name, san) in [("server", "127.0.0.1"), ("client", "client")] {
        let params = CertificateParams::new(vec![san.to_string()]).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}

/// The data files: raw/INPUT0 (16 FP32 zeros), gaps.txt and a timestamped schedule.
fn write_data(dir: &Path) {
    std::fs::create_dir(dir.join("raw")).unwrap();
    std::fs::write(dir.join("raw").join("INPUT0"), [0u8; 64]).unwrap();
    std::fs::write(dir.join("gaps.txt"), "1000\n2000\n").unwrap();
    let row: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let entries: Vec<_> = (0..4)
        .map(|i| serde_json::json!({"INPUT0": row, "timestamp": [i * 2]}))
        .collect();
    let doc = serde_json::json!({ "data": entries });
    std::fs::write(dir.join("schedule.json"), doc.to_string()).unwrap();
    write_generator(dir);
}

/// A dynamic gRPC data file: one entry whose generator prints one identity ModelInferRequest
/// after its 4-byte little-endian length.
fn write_generator(dir: &Path) {
    use inferperf_wire::proto::model_infer_request::InferInputTensor;
    use prost::Message;
    let request = inferperf_wire::proto::ModelInferRequest {
        model_name: "identity".into(),
        inputs: vec![InferInputTensor {
            name: "INPUT0".into(),
            datatype: "FP32".into(),
            shape: vec![1, 16],
            contents: Some(inferperf_wire::proto::InferTensorContents {
                fp32_contents: vec![1.0; 16],
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec();
    let mut framed = (request.len() as u32).to_le_bytes().to_vec();
    framed.extend_from_slice(&request);
    std::fs::write(dir.join("message.bin"), framed).unwrap();
    let command = format!("cat '{}'", dir.join("message.bin").display());
    let doc = serde_json::json!({ "data": [{ "message_generator": command }] });
    std::fs::write(dir.join("generated.json"), doc.to_string()).unwrap();
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    write_certs(dir.path());
    write_data(dir.path());
    let models = [
        "identity=identity",
        "seq=sequence",
        "pipe=bls:calls=identity",
        "stream=stream:responses=2",
        "llm=llm:ttft_ms=1,itl_ms=1,output_tokens=4",
    ];
    let models: Vec<ModelDef> = models.iter().map(|m| m.parse().unwrap()).collect();
    let options = ServeOptions {
        host: "127.0.0.1".parse().unwrap(),
        http_port: 0,
        grpc_port: 0,
        metrics_port: Some(0),
        models,
        statistics: true,
        tls: None,
    };
    let plain = server::start(options.clone()).await.expect("server starts");
    let tls = server::start(ServeOptions {
        metrics_port: None,
        tls: Some(TlsFiles {
            cert: dir.path().join("server.pem"),
            key: dir.path().join("server.key"),
            client_ca: None,
        }),
        ..options
    })
    .await
    .expect("TLS server starts");
    World { plain, tls, dir }
}

/// What went wrong with a case, if anything.
async fn check(case: Case) -> Result<(), String> {
    let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"));
    if case.option == "enable-mpi" {
        command.env("OMPI_COMM_WORLD_RANK", "0");
        command.env("OMPI_COMM_WORLD_SIZE", "1");
    }
    let out = command
        .args(&args)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let code = out.status.code();
    let err = common::stderr(&out);
    let ok = match &case.expect {
        Expect::Accepted => matches!(code, Some(0 | 2)),
        Expect::Refused(says) => code == Some(3) && err.contains(says),
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{}: exit {code:?} with {:?}\n  stderr: {}",
            case.option,
            case.args,
            err.trim()
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_perf_analyzer_option_is_accepted_or_refused_on_purpose() {
    let w = world().await;
    let long = long_cases(&w);
    let short = short_cases(&w);
    // The list is complete: each of perf_analyzer's options has exactly one case.
    let named: Vec<String> = long.iter().map(|c| c.option.to_string()).collect();
    let want: Vec<String> = PA_LONG_OPTIONS.iter().map(|o| o.to_string()).collect();
    assert_eq!(named, want);
    let short_named: Vec<&str> = short.iter().map(|c| c.option).collect();
    assert_eq!(short_named, PA_SHORT_OPTIONS);
    assert_eq!(BTreeSet::from(PA_LONG_OPTIONS).len(), PA_LONG_OPTIONS.len());
    let mut failures = Vec::new();
    for case in long.into_iter().chain(short).chain(refused_values(&w)) {
        if let Err(failure) = check(case).await {
            failures.push(failure);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

//! TLS and mTLS end to end: the embedded server with certificates made here (rcgen, in a
//! temporary directory), the real binary as client. Runs over HTTPS and gRPC-over-TLS
//! succeed with the CA file, with `--ssl-target-name`, with a client certificate where the
//! server asks for one, and without verification (with its warning); every failed handshake
//! — unknown issuer, expired, name mismatch, no client certificate, a plain server, a plain
//! client — ends at once with its one sentence and exit 99. A self-signed server certificate
//! marked as a CA (what `openssl req -x509` makes) is taken when it is the one given as
//! trusted, and refused otherwise.

use crate::common;

use std::path::{Path, PathBuf};

use inferperf_server::{self as server, RunningServer, ServeOptions, TlsFiles};
use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// A CA and the certificates it signed, written as PEM files into a temporary directory.
struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

fn write(dir: &Path, name: &str, cert: &str, key: &KeyPair) {
    std::fs::write(dir.join(format!("{name}.pem")), cert).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

/// ca.pem; server (127.0.0.1 and localhost), named (only inferperf.test), expired and
/// client certificates with their keys; other-ca.pem, a CA that signed none of them.
fn make_certs() -> Certs {
    let dir = tempfile::tempdir().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "inferperf test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    write(dir.path(), "ca", &ca_cert.pem(), &ca_key);
    let mut other_params = ca_params.clone();
    other_params.distinguished_name = rcgen::DistinguishedName::new();
    other_params
        .distinguished_name
        .push(DnType::CommonName, "another CA");
    let other_key = KeyPair::generate().unwrap();
    let other = other_params.self_signed(&other_key).unwrap();
    write(dir.path(), "other-ca", &other.pem(), &other_key);
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |name: &str, sans: &[&str], usage, expired: bool| {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.extended_key_usages = vec![usage];
        if expired {
            params.not_before = date_time_ymd(2020, 1, 1);
            params.not_after = date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        write(dir.path(), name, &cert.pem(), &key);
    };
    let server = ExtendedKeyUsagePurpose::ServerAuth;
    leaf("server", &["127.0.0.1", "localhost"], server.clone(), false);
    leaf("named", &["inferperf.test"], server.clone(), false);
    leaf("expired", &["127.0.0.1"], server, true);
    leaf(
        "client",
        &["client"],
        ExtendedKeyUsagePurpose::ClientAuth,
        false,
    );
    Certs { dir }
}

/// The embedded server with `name`.pem as its certificate (and mTLS with `client_ca`).
async fn tls_server(certs: &Certs, name: &str, client_ca: Option<&str>) -> RunningServer {
    server::start(ServeOptions {
        host: "127.0.0.1".parse().unwrap(),
        http_port: 0,
        grpc_port: 0,
        tls: Some(TlsFiles {
            cert: certs.path(&format!("{name}.pem")),
            key: certs.path(&format!("{name}.key")),
            client_ca: client_ca.map(|c| certs.path(c)),
        }),
        ..ServeOptions::default()
    })
    .await
    .expect("the TLS server starts")
}

/// Runs a short profile; returns the exit code, standard output and standard error.
async fn run(url: String, protocol: &str, extra: &[String]) -> (Option<i32>, String, String) {
    let mut args: Vec<String> = ["-m", "identity", "-i", protocol, "-u", &url]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--request-count", "40", "--concurrency-range", "2"].map(String::from));
    args.extend(extra.iter().cloned());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let out = common::run_cli(&refs).await;
    assert!(
        started.elapsed().as_secs() < 30,
        "{args:?} took {:?}",
        started.elapsed()
    );
    (
        out.status.code(),
        common::stdout(&out),
        common::stderr(&out),
    )
}

fn https(server: &RunningServer) -> String {
    format!("https://{}", server.http_addr)
}

fn grpcs(server: &RunningServer) -> String {
    format!("grpcs://{}", server.grpc_addr)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Asserts a run ended with exit 99 and one error line that says `phrase`.
fn assert_fails(result: (Option<i32>, String, String), phrase: &str) {
    let (code, _, stderr) = result;
    assert_eq!(code, Some(99), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one sentence: {stderr}");
    assert!(lines[0].contains(phrase), "expected {phrase:?} in {stderr}");
}

fn assert_ok(result: (Option<i32>, String, String)) -> String {
    let (code, stdout, stderr) = result;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Using TLS to the server"), "{stdout}");
    assert!(
        stdout.contains("connection(s) opened with a handshake, median"),
        "{stdout}"
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_and_grpcs_runs_verify_the_server_and_name_each_failure() {
    let certs = make_certs();
    let server = tls_server(&certs, "server", None).await;
    let ca = |flag: &str| args(&[flag, &certs.arg("ca.pem")]);
    let http_ca = ca("--ssl-https-ca-certificates-file");
    let grpc_ca = ca("--ssl-grpc-root-certifications-file");
    assert_ok(run(https(&server), "http", &http_ca).await);
    assert_ok(run(grpcs(&server), "grpc", &grpc_ca).await);
    // perf_analyzer's spelling: an http URL with --ssl-grpc-use-ssl.
    let mut use_ssl = grpc_ca.clone();
    use_ssl.push("--ssl-grpc-use-ssl".into());
    assert_ok(run(server.grpc_addr.to_string(), "grpc", &use_ssl).await);
    // The system's roots do not know the test CA; nor does another CA.
    let unknown = "(unknown issuer): give that authority's certificate with";
    assert_fails(run(https(&server), "http", &[]).await, unknown);
    let other = args(&[
        "--ssl-grpc-root-certifications-file",
        &certs.arg("other-ca.pem"),
    ]);
    assert_fails(run(grpcs(&server), "grpc", &other).await, unknown);
    // A plain client to the TLS server is told to use TLS.
    let plain = "speaks TLS and this run connected in plain text: give -u as https://";
    assert_fails(run(server.http_addr.to_string(), "http", &[]).await, plain);
    let plain = "speaks TLS and this run connected in plain text: give -u as grpcs://";
    assert_fails(run(server.grpc_addr.to_string(), "grpc", &[]).await, plain);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_mismatch_fails_unless_the_target_name_is_given() {
    let certs = make_certs();
    let server = tls_server(&certs, "named", None).await;
    let http_ca = args(&["--ssl-https-ca-certificates-file", &certs.arg("ca.pem")]);
    let mismatch = "does not hold the name '127.0.0.1' (name mismatch)";
    assert_fails(run(https(&server), "http", &http_ca).await, mismatch);
    let mut named = http_ca.clone();
    named.extend(args(&["--ssl-target-name", "inferperf.test"]));
    assert_ok(run(https(&server), "http", &named).await);
    let mut grpc_named = args(&["--ssl-grpc-root-certifications-file", &certs.arg("ca.pem")]);
    grpc_named.extend(args(&["--ssl-target-name", "inferperf.test"]));
    assert_ok(run(grpcs(&server), "grpc", &grpc_named).await);
    // Loosened verification works and says so.
    let mut no_host = http_ca.clone();
    no_host.extend(args(&["--ssl-https-verify-host", "0"]));
    let stdout = assert_ok(run(https(&server), "http", &no_host).await);
    assert!(stdout.contains("Warning: the server's certificate is not checked against its name"));
    let stdout = assert_ok(
        run(
            https(&server),
            "http",
            &args(&["--ssl-https-verify-peer", "0"]),
        )
        .await,
    );
    assert!(
        stdout.contains("Warning: TLS certificate verification is off (--ssl-https-verify-peer 0)"),
        "{stdout}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_needs_the_client_certificate() {
    let certs = make_certs();
    let server = tls_server(&certs, "server", Some("ca.pem")).await;
    let http = args(&["--ssl-https-ca-certificates-file", &certs.arg("ca.pem")]);
    let grpc = args(&["--ssl-grpc-root-certifications-file", &certs.arg("ca.pem")]);
    let missing = "requires a client certificate (mTLS) and none was given: add";
    assert_fails(run(https(&server), "http", &http).await, missing);
    assert_fails(run(grpcs(&server), "grpc", &grpc).await, missing);
    let mut http_id = http.clone();
    http_id.extend(args(&[
        "--ssl-https-client-certificate-file",
        &certs.arg("client.pem"),
        "--ssl-https-private-key-file",
        &certs.arg("client.key"),
    ]));
    assert_ok(run(https(&server), "http", &http_id).await);
    let mut grpc_id = grpc.clone();
    let results = certs.path("mtls-results.json");
    grpc_id.extend(args(&[
        "--ssl-grpc-certificate-chain-file",
        &certs.arg("client.pem"),
        "--ssl-grpc-private-key-file",
        &certs.arg("client.key"),
        "--results-file",
        results.to_str().unwrap(),
    ]));
    assert_ok(run(grpcs(&server), "grpc", &grpc_id).await);
    // The results file says how the server was verified and which identity was shown.
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    let tls = &written["settings"]["tls"];
    assert_eq!(tls["ca_file"], certs.arg("ca.pem").as_str(), "{tls}");
    assert_eq!(
        tls["client_certificate_file"],
        certs.arg("client.pem").as_str()
    );
    assert_eq!(tls["verify_peer"], true);
    assert!(tls["target_name"].is_null());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_and_a_plain_server_are_named() {
    let certs = make_certs();
    let server = tls_server(&certs, "expired", None).await;
    let http_ca = args(&["--ssl-https-ca-certificates-file", &certs.arg("ca.pem")]);
    let expired = "the server's certificate has expired";
    assert_fails(run(https(&server), "http", &http_ca).await, expired);
    server.shutdown().await;
    let plain = common::start_server(&[]).await;
    let not_tls = "did not answer in TLS (is it a plain http:// or grpc:// endpoint?)";
    assert_fails(run(https(&plain), "http", &http_ca).await, not_tls);
    let grpc_ca = args(&["--ssl-grpc-root-certifications-file", &certs.arg("ca.pem")]);
    assert_fails(run(grpcs(&plain), "grpc", &grpc_ca).await, not_tls);
    plain.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_scraped_over_https() {
    let certs = make_certs();
    let server = server::start(ServeOptions {
        host: "127.0.0.1".parse().unwrap(),
        http_port: 0,
        grpc_port: 0,
        metrics_port: Some(0),
        tls: Some(TlsFiles {
            cert: certs.path("server.pem"),
            key: certs.path("server.key"),
            client_ca: None,
        }),
        ..ServeOptions::default()
    })
    .await
    .expect("the TLS server starts");
    let metrics = format!("https://{}/metrics", server.metrics_addr.unwrap());
    let scrape = |ca: &str| {
        args(&[
            "--ssl-https-ca-certificates-file",
            &certs.arg(ca),
            "--collect-metrics",
            "--metrics-url",
            &metrics,
            "--metrics-interval",
            "100",
        ])
    };
    // The run's CA verifies the metrics endpoint too; the server's CPU time is on the page.
    let stdout = assert_ok(run(https(&server), "http", &scrape("ca.pem")).await);
    assert!(stdout.contains("Server Prometheus Metrics:"), "{stdout}");
    assert!(!stdout.contains("cannot read"), "{stdout}");
    // A plain run scrapes an HTTPS endpoint with the system's roots, which do not know the
    // test CA: the report loses its metrics, not the run, and says why.
    let plain = common::start_server(&[]).await;
    let (code, stdout, stderr) = run(
        plain.http_addr.to_string(),
        "http",
        &args(&["--collect-metrics", "--metrics-url", &metrics]),
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("cannot read") && stdout.contains("(unknown issuer)"),
        "{stdout}"
    );
    plain.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_tls_urls_spreads_the_run_over_each() {
    let certs = make_certs();
    let one = tls_server(&certs, "server", None).await;
    let two = tls_server(&certs, "server", None).await;
    let http_ca = args(&["--ssl-https-ca-certificates-file", &certs.arg("ca.pem")]);
    let list = format!("{},{}", https(&one), https(&two));
    let out = assert_ok(run(list, "http", &http_ca).await);
    for server in [&one, &two] {
        let line = format!("URL {}: throughput ", server.http_addr);
        assert!(out.contains(&line), "{line:?} in {out}");
    }
    let grpc_ca = args(&["--ssl-grpc-root-certifications-file", &certs.arg("ca.pem")]);
    let list = format!("{},{}", grpcs(&one), grpcs(&two));
    let out = assert_ok(run(list, "grpc", &grpc_ca).await);
    assert!(out.contains(&format!("URL {}: ", two.grpc_addr)), "{out}");
    one.shutdown().await;
    two.shutdown().await;
}

/// A self-signed certificate marked as a CA, for localhost and 127.0.0.1, as `openssl req
/// -x509 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1` makes it
/// (CA:TRUE, no key usage, no extended key usage), written as `name`.pem and `name`.key.
fn self_signed(certs: &Certs, name: &str, expired: bool) {
    let sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let mut params = CertificateParams::new(sans).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    if expired {
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2020, 1, 3);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    write(certs.dir.path(), name, &cert.pem(), &key);
}

/// `--ssl-https-ca-certificates-file` and `--ssl-grpc-root-certifications-file` with `file`.
fn both_cas(certs: &Certs, file: &str) -> (Vec<String>, Vec<String>) {
    (
        args(&["--ssl-https-ca-certificates-file", &certs.arg(file)]),
        args(&["--ssl-grpc-root-certifications-file", &certs.arg(file)]),
    )
}

fn with(mut list: Vec<String>, more: &[&str]) -> Vec<String> {
    list.extend(args(more));
    list
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_given_as_trusted_is_taken_for_its_names() {
    let certs = make_certs();
    self_signed(&certs, "self", false);
    self_signed(&certs, "other-self", false);
    let server = tls_server(&certs, "self", None).await;
    let (http, grpc) = both_cas(&certs, "self.pem");
    assert_ok(run(https(&server), "http", &http).await);
    assert_ok(run(grpcs(&server), "grpc", &grpc).await);
    let localhost = format!("https://localhost:{}", server.http_addr.port());
    assert_ok(run(localhost, "http", &http).await);
    // In a bundle with other authorities it is taken too.
    let bundle = std::fs::read_to_string(certs.path("ca.pem")).unwrap()
        + &std::fs::read_to_string(certs.path("self.pem")).unwrap();
    std::fs::write(certs.path("bundle.pem"), bundle).unwrap();
    let (_, grpc_bundle) = both_cas(&certs, "bundle.pem");
    assert_ok(run(grpcs(&server), "grpc", &grpc_bundle).await);
    // Its names are still checked, unless --ssl-https-verify-host 0 says not to.
    let mismatch = "does not hold the name 'example.com' (name mismatch)";
    let elsewhere = ["--ssl-target-name", "example.com"];
    let wrong = with(http.clone(), &elsewhere);
    assert_fails(run(https(&server), "http", &wrong).await, mismatch);
    let wrong_grpc = with(grpc.clone(), &elsewhere);
    assert_fails(run(grpcs(&server), "grpc", &wrong_grpc).await, mismatch);
    let no_host = with(wrong, &["--ssl-https-verify-host", "0"]);
    assert_ok(run(https(&server), "http", &no_host).await);
    // A self-signed certificate the user did not name is refused as before.
    let refused = "the server's certificate was refused (invalid peer certificate: Other(OtherError(CaUsedAsEndEntity)))";
    let (other_http, other_grpc) = both_cas(&certs, "other-self.pem");
    assert_fails(run(https(&server), "http", &other_http).await, refused);
    assert_fails(run(grpcs(&server), "grpc", &other_grpc).await, refused);
    let (ca_http, _) = both_cas(&certs, "ca.pem");
    assert_fails(run(https(&server), "http", &ca_http).await, refused);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_self_signed_certificate_given_as_trusted_is_refused() {
    let certs = make_certs();
    self_signed(&certs, "self-expired", true);
    let server = tls_server(&certs, "self-expired", None).await;
    let (http, grpc) = both_cas(&certs, "self-expired.pem");
    let expired = "the server's certificate has expired";
    assert_fails(run(https(&server), "http", &http).await, expired);
    assert_fails(run(grpcs(&server), "grpc", &grpc).await, expired);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_to_a_server_with_a_self_signed_certificate() {
    let certs = make_certs();
    self_signed(&certs, "self", false);
    let server = tls_server(&certs, "self", Some("ca.pem")).await;
    let (http, grpc) = both_cas(&certs, "self.pem");
    let missing = "requires a client certificate (mTLS) and none was given: add";
    assert_fails(run(https(&server), "http", &http).await, missing);
    let (cert, key) = (certs.arg("client.pem"), certs.arg("client.key"));
    let http_id = with(
        http,
        &[
            "--ssl-https-client-certificate-file",
            &cert,
            "--ssl-https-private-key-file",
            &key,
        ],
    );
    assert_ok(run(https(&server), "http", &http_id).await);
    let grpc_id = with(
        grpc,
        &[
            "--ssl-grpc-certificate-chain-file",
            &cert,
            "--ssl-grpc-private-key-file",
            &key,
        ],
    );
    assert_ok(run(grpcs(&server), "grpc", &grpc_id).await);
    server.shutdown().await;
}

/// The certificate made by the very `openssl` command users run (RSA, two days), served by
/// `inferperf serve --tls-cert --tls-key` and given as the CA. Skipped without `openssl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_made_by_openssl_req_x509_is_taken() {
    let certs = make_certs();
    let made = std::process::Command::new("openssl")
        .current_dir(certs.dir.path())
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            "openssl.key",
            "-out",
            "openssl.pem",
        ])
        .output();
    if !made.as_ref().is_ok_and(|out| out.status.success()) {
        eprintln!("skipped: openssl cannot make a certificate here ({made:?})");
        return;
    }
    let server = tls_server(&certs, "openssl", None).await;
    let (http, grpc) = both_cas(&certs, "openssl.pem");
    assert_ok(run(https(&server), "http", &http).await);
    assert_ok(run(grpcs(&server), "grpc", &grpc).await);
    let use_ssl = with(grpc, &["--ssl-grpc-use-ssl"]);
    assert_ok(run(server.grpc_addr.to_string(), "grpc", &use_ssl).await);
    server.shutdown().await;
}

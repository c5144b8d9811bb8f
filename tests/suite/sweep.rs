//! `inferperf sweep` against the embedded server run as a real command (the binary under
//! test): throughput grows with the server's instances as a 5 ms sleep model says it must;
//! a server that exits at once or dies while profiled is a row and the sweep goes on; bad
//! flags are one sentence and exit 3; each setting's folder holds its reports and sweep.html
//! is one well-formed page; Ctrl-C stops the current server and exits 130; each API is waited
//! for on its own readiness path.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_inferperf");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Reads a pipe to its end on a thread of its own (so a full pipe never blocks the run).
fn drain(pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut pipe = pipe;
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

fn start(args: &[&str]) -> Child {
    Command::new(BIN)
        .arg("sweep")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("inferperf starts")
}

/// Waits for the sweep; past `limit` it is sent SIGTERM (which kills its server) and the
/// test fails.
fn finish(mut child: Child, limit: Duration) -> Run {
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: signals the child this test started and still holds.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let _ = child.wait();
            panic!("the sweep took longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn sweep(args: &[&str], limit: Duration) -> Run {
    finish(start(args), limit)
}

/// A sleep model's server with `instances={instances}`, on the ports the sweep gives.
fn sleep_server(ms: u32) -> String {
    format!(
        "{BIN} serve --http-port {{port}} --grpc-port 0 --model m=sleep:ms={ms},instances={{instances}}"
    )
}

fn throughput(dir: &Path) -> f64 {
    let file = inferperf::results::read(dir).expect("results.json");
    assert_eq!(file.levels.len(), 1, "{}", dir.display());
    file.levels[0].merged.throughput
}

/// The tags the page opens are closed, in order, and nothing is left open.
fn assert_well_formed(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..80]);
    assert!(page.trim_end().ends_with("</html>"));
    let void = ["meta", "br"];
    let mut open: Vec<&str> = Vec::new();
    let mut rest = page;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let end = rest.find('>').expect("a tag is closed");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name), "</{name}> closes the wrong tag");
            continue;
        }
        let name = tag.split_whitespace().next().unwrap();
        if void.contains(&name) {
            continue;
        }
        open.push(name);
    }
    assert!(open.is_empty(), "left open: {open:?}");
}

#[test]
fn throughput_grows_with_the_server_instances() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let server = sleep_server(5);
    let run = sweep(
        &[
            "--server",
            &server,
            "--param",
            "instances=1,2,4",
            "--report-dir",
            out.to_str().unwrap(),
            "--",
            "-m",
            "m",
            "--concurrency-range",
            "8",
            "-p",
            "500",
            "--no-progress",
        ],
        Duration::from_secs(120),
    );
    // A busy machine may leave a level unstable (2); nothing may fail.
    assert!(matches!(run.code, Some(0 | 2)), "{}", run.stderr);
    let t: Vec<f64> = ["instances=1", "instances=2", "instances=4"]
        .iter()
        .map(|s| throughput(&out.join(s)))
        .collect();
    let (r2, r4) = (t[1] / t[0], t[2] / t[0]);
    eprintln!("throughput {t:?}: ×{r2:.2} with 2 instances, ×{r4:.2} with 4");
    // Measured 2.0–2.1 and 4.0–4.2 on the 2-core VM at load average 9.
    assert!((1.7..2.5).contains(&r2), "{t:?}");
    assert!((3.2..5.0).contains(&r4), "{t:?}");
    // One slot serves one request per 5 ms: a single instance cannot pass 200/s.
    assert!(t[0] < 205.0 && t[0] > 120.0, "{t:?}");

    for setting in ["instances=1", "instances=2", "instances=4"] {
        for file in ["results.json", "results.csv", "report.html", "server.log"] {
            let path = out.join(setting).join(file);
            assert!(path.is_file(), "{} is missing", path.display());
        }
        let log = std::fs::read_to_string(out.join(setting).join("server.log")).unwrap();
        assert!(log.contains("inferperf serve: HTTP on 127.0.0.1:"), "{log}");
    }
    // The table: a row per setting, in order, with its throughput.
    let table = &run.stdout[run.stdout.find("=== sweep: 3 of 3").expect("the table")..];
    let header = table.lines().nth(1).unwrap();
    assert!(
        header.starts_with("instances  Concurrency  Inferences/s  p50 (ms)  p90 (ms)  p99 (ms)"),
        "{table}"
    );
    for (line, (value, t)) in table.lines().skip(2).zip(["1", "2", "4"].iter().zip(&t)) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((cells[0], cells[1]), (*value, "8"), "{table}");
        assert_eq!(cells[2], format!("{t:.1}"), "{table}");
    }
    let page = std::fs::read_to_string(out.join("sweep.html")).unwrap();
    assert_well_formed(&page);
    assert_eq!(page.matches("<svg").count(), 4, "four overlaid charts");
    // A series per setting on each chart, each linked to its own report.
    assert_eq!(page.matches("<polyline").count(), 12);
    for setting in ["instances=1", "instances=2", "instances=4"] {
        assert!(page.contains(&format!("href=\"{setting}/report.html\"")));
        assert!(page.contains(&format!("<title>{setting}</title>")));
    }
}

#[test]
fn a_server_that_fails_is_a_row_and_the_sweep_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    // `bad` exits at once with a sentence; `dies` is killed 1.5 s into its profile.
    let server = format!(
        "case {{v}} in bad) echo 'cannot load model m: out of memory' >&2; exit 3;; esac
{BIN} serve --http-port {{port}} --grpc-port 0 --model m=sleep:ms=2,instances=4 &
pid=$!
case {{v}} in dies) sleep 1.5; kill -9 $pid;; esac
wait $pid"
    );
    let run = sweep(
        &[
            "--server",
            &server,
            "--param",
            "v=bad,good,dies",
            "--report-dir",
            out.to_str().unwrap(),
            "--",
            "-m",
            "m",
            "--concurrency-range",
            "1:4",
            "-p",
            "300",
            "--no-progress",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(99), "{}\n{}", run.stdout, run.stderr);
    let table = &run.stdout[run.stdout.find("=== sweep: 1 of 3").expect("the table")..];
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[2], "bad   the server exited before it was ready (exit code 3)",
        "{table}"
    );
    assert_eq!(
        lines[3], "    | cannot load model m: out of memory",
        "{table}"
    );
    // `good` measured its four levels; `dies` is one row naming how its server ended.
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("good ")).count(),
        4,
        "{table}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("dies ")
            && l.contains("the server died during its profile (exit code 137)")),
        "{table}"
    );
    assert_eq!(
        inferperf::results::read(out.join("v=good"))
            .unwrap()
            .levels
            .len(),
        4
    );
    assert!(!out.join("v=bad").join("results.json").exists());
    let page = std::fs::read_to_string(out.join("sweep.html")).unwrap();
    assert_well_formed(&page);
    assert!(page.contains("the server exited before it was ready (exit code 3)"));
    assert!(page.contains("cannot load model m: out of memory"));
    assert!(page.contains("the server died during its profile"));
    // Only `good` has curves.
    assert_eq!(page.matches("<polyline").count(), 4);
}

#[test]
fn bad_flags_are_one_sentence_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let out = out.to_str().unwrap();
    let server = sleep_server(5);
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--server",
                "srv {port} {nope}",
                "--param",
                "a=1",
                "--report-dir",
                out,
                "--",
                "-m",
                "m",
            ],
            "names {nope}, which is neither a --param nor {port}",
        ),
        (
            &[
                "--server",
                &server,
                "--param",
                "instances=",
                "--report-dir",
                out,
                "--",
                "-m",
                "m",
            ],
            "--param instances= has an empty value",
        ),
        (
            &[
                "--server",
                &server,
                "--param",
                "instances",
                "--report-dir",
                out,
                "--",
                "-m",
                "m",
            ],
            "--param instances needs values",
        ),
        (
            &[
                "--server",
                &server,
                "--param",
                "instances=1,2",
                "--report-dir",
                out,
            ],
            "Give the profile flags after --",
        ),
    ];
    for (args, sentence) in cases {
        let run = sweep(args, Duration::from_secs(20));
        assert_eq!(run.code, Some(3), "{args:?}: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(sentence),
            "{}",
            lines[0]
        );
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
    assert!(!Path::new(out).exists(), "nothing is written for bad flags");
    // The command is listed by `inferperf --help`, with one line saying what it does.
    let help = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("\n  sweep    Run a server command once per --param setting"),
        "{help}"
    );
}

#[test]
fn ctrl_c_stops_the_server_and_reports_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let server = sleep_server(5);
    let child = start(&[
        "--server",
        &server,
        "--param",
        "instances=1,2",
        "--report-dir",
        out.to_str().unwrap(),
        "--",
        "-m",
        "m",
        "--concurrency-range",
        "1:100",
        "-p",
        "300",
        "--no-progress",
    ]);
    // Once the first setting has measured a level, Ctrl-C.
    let first = out.join("instances=1");
    let deadline = Instant::now() + Duration::from_secs(60);
    while inferperf::results::read(&first).map_or(true, |f| f.levels.is_empty()) {
        assert!(Instant::now() < deadline, "no level measured in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(first.join("server.log")).unwrap();
    let port = log
        .split("HTTP on 127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("the server's port");
    // SAFETY: signals the child this test started and still holds.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = finish(child, Duration::from_secs(30));
    assert_eq!(run.code, Some(130), "{}", run.stderr);
    assert!(
        run.stdout.contains("interrupted (Ctrl-C)"),
        "{}",
        run.stdout
    );
    let measured = inferperf::results::read(&first).unwrap();
    assert!(measured.interrupted && !measured.levels.is_empty());
    assert!(
        !out.join("instances=2").exists(),
        "the next setting never starts"
    );
    // The server is gone: its port refuses connections.
    let addr = format!("127.0.0.1:{port}");
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "{addr} still answers"
    );
    assert!(out.join("sweep.html").is_file());
}

#[test]
fn each_api_is_waited_for_on_its_own_readiness_path() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let server = format!("{BIN} serve --http-port {{port}} --grpc-port 0 --model m=identity");
    let run = sweep(
        &[
            "--server",
            &server,
            "--param",
            "api=torchserve,tfserving,triton",
            "--report-dir",
            out.to_str().unwrap(),
            "--",
            "-m",
            "m",
            "--service-kind",
            "{api}",
            "--concurrency-range",
            "1",
            "-p",
            "300",
            "--no-progress",
        ],
        Duration::from_secs(120),
    );
    // TorchServe's input has a variable shape that the profile asks for (a row, exit 99);
    // what is checked here is that every server was found ready.
    assert!(
        matches!(run.code, Some(0) | Some(2) | Some(99)),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    // TorchServe's ping and TF Serving's model metadata answer on the real servers too;
    // KServe v2's readiness on Triton's.
    for path in ["/ping", "/v1/models/m/metadata", "/v2/health/ready"] {
        assert!(
            run.stdout.contains(&format!("(GET {path} on 127.0.0.1:")),
            "{path}: {}",
            run.stdout
        );
    }
}

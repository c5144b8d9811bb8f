use super::*;

fn args(server: &str, params: &[&str], profile: &[&str]) -> SweepArgs {
    SweepArgs {
        server: server.to_string(),
        params: params.iter().map(|s| s.to_string()).collect(),
        ready_timeout: 60.0,
        stop_grace: 5.0,
        report_dir: PathBuf::from("sweep-out"),
        profile: profile.iter().map(|s| s.to_string()).collect(),
    }
}

fn plan(server: &str, params: &[&str], profile: &[&str]) -> RunResult<SweepPlan> {
    SweepPlan::from_args(&args(server, params, profile))
}

fn bad(result: RunResult<SweepPlan>) -> String {
    match result {
        Err(e @ RunError::BadOption(_)) => e.to_string(),
        Err(e) => panic!("expected a bad option, got {e}"),
        Ok(_) => panic!("expected a bad option"),
    }
}

const SERVER: &str = "inferperf serve --http-port {port} --model m=sleep:instances={instances}";
const PORTS: Ports = Ports {
    port: 4000,
    grpc_port: Some(4001),
    metrics_port: None,
};

#[test]
fn templates_fill_names_and_keep_other_braces() {
    let t = Template::parse("a {x} {{y}} ${{HOME}} awk '{print $1}' {x}{port}");
    assert_eq!(t.names(), vec!["x", "port"]);
    let filled = t.fill(|n| format!("<{n}>"));
    assert_eq!(filled, "a <x> {y} ${HOME} awk '{print $1}' <x><port>");
    assert_eq!(Template::parse("").fill(|_| String::new()), "");
    assert_eq!(Template::parse("{ü} {").names(), Vec::<&str>::new());
}

#[test]
fn settings_are_the_product_of_the_params() {
    let p = plan("srv {port} {a} {b}", &["a=1,2", "b=x, y ,z"], &["-m", "m"]).unwrap();
    let labels: Vec<String> = p.settings().iter().map(Setting::label).collect();
    assert_eq!(
        labels,
        ["a=1,b=x", "a=1,b=y", "a=1,b=z", "a=2,b=x", "a=2,b=y", "a=2,b=z"]
    );
    let s = &p.settings()[4];
    assert_eq!(p.command(s, &PORTS), "srv 4000 2 y");
    assert_eq!(p.setting_dir(s), PathBuf::from("sweep-out/a=2,b=y"));
}

#[test]
fn profile_points_at_the_setting_server_and_folder() {
    let p = plan(
        SERVER,
        &["instances=1,2"],
        &["-m", "m", "--concurrency-range", "4"],
    )
    .unwrap();
    let s = &p.settings()[1];
    let cfg = p.profile_config(s, &PORTS).unwrap();
    assert_eq!(cfg.target.url, "127.0.0.1:4000");
    assert_eq!(
        cfg.output.report_dir,
        Some(PathBuf::from("sweep-out/instances=2"))
    );
    // A -u of one's own, with placeholders filled; gRPC defaults to {grpc_port}.
    let p = plan(
        "srv {port} {grpc_port}",
        &["instances=1"],
        &[
            "-m",
            "m{instances}",
            "-u",
            "localhost:{grpc_port}",
            "-i",
            "grpc",
        ],
    )
    .unwrap();
    let cfg = p.profile_config(&p.settings()[0], &PORTS).unwrap();
    assert_eq!(
        (cfg.target.url.as_str(), cfg.target.model_name.as_str()),
        ("localhost:4001", "m1")
    );
    let p = plan(
        "srv {port} {grpc_port}",
        &["i=1"],
        &["-m", "m", "-i", "grpc"],
    )
    .unwrap();
    let cfg = p.profile_config(&p.settings()[0], &PORTS).unwrap();
    assert_eq!(cfg.target.url, "127.0.0.1:4001");
    assert!(p.names(GRPC_PORT) && !p.names(METRICS_PORT));
}

#[test]
fn bad_flags_are_one_sentence() {
    let profile = &["-m", "m"][..];
    let cases: Vec<(RunResult<SweepPlan>, &str)> = vec![
        (plan("srv {port} {nope}", &["a=1"], profile), "{nope}"),
        (plan("srv {port}", &["a=1"], &["-m", "{b}"]), "{b}"),
        (plan("srv {port}", &["a="], profile), "empty value"),
        (plan("srv {port}", &["a"], profile), "needs values"),
        (plan("srv {port}", &["a=1,,2"], profile), "empty value"),
        (plan("srv {port}", &["a=1,1"], profile), "twice"),
        (plan("srv {port}", &["a=1", "a=2"], profile), "twice"),
        (plan("srv {port}", &["port=1"], profile), "not port"),
        (
            plan("srv {port}", &["a=x/y,x_y"], profile),
            "share the folder",
        ),
        (plan("srv {port}", &[], profile), "at least one --param"),
        (plan("srv {port}", &["a=1"], &[]), "after --"),
        (plan("srv", &["a=1"], profile), "must name {port}"),
        (
            plan("srv {port}", &["a=1"], &["-m", "m", "--nope"]),
            "After --: unexpected argument",
        ),
        (
            plan("srv {port}", &["a=1"], &["--concurrency-range", "2"]),
            "-m <MODEL>",
        ),
        (
            plan("srv {port}", &["a=1"], &["-m", "m", "--report-dir", "x"]),
            "--report-dir after --",
        ),
        (
            plan("srv {port}", &["a=1"], &["-m", "m", "-i", "grpc"]),
            "{grpc_port}",
        ),
        (
            plan(
                "srv {port}",
                &["a=1"],
                &["-m", "m", "--service-kind", "local"],
            ),
            "local",
        ),
        (
            plan("srv {port}", &["a=1,2"], &["-m", "m", "-f", "out.csv"]),
            "every setting",
        ),
        (
            plan("srv {port}", &["a=1", "b=2"], &["-m", "m", "-b", "0"]),
            "-b",
        ),
    ];
    for (result, needle) in cases {
        let sentence = bad(result);
        assert!(sentence.contains(needle), "{needle:?} not in {sentence:?}");
        assert!(!sentence.contains('\n'), "{sentence:?}");
    }
    // Output paths that differ per setting are fine.
    plan("srv {port}", &["a=1,2"], &["-m", "m", "-f", "out-{a}.csv"]).unwrap();
    let mut a = args("srv {port}", &["a=1"], profile);
    a.ready_timeout = 0.0;
    assert!(bad(SweepPlan::from_args(&a)).contains("--ready-timeout"));
}

#[test]
fn folder_names_keep_to_safe_characters() {
    let s = Setting {
        values: vec![("a".into(), "x/../y z".into()), ("b".into(), "1.5".into())],
    };
    assert_eq!(s.label(), "a=x/../y z,b=1.5");
    assert_eq!(s.dir_name(), "a=x_.._y_z,b=1.5");
}

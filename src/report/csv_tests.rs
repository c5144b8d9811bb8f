//! Tests of the csv report: perf_analyzer's layout line for line, and inferperf's additions.

use super::*;
use crate::measure::level::{LevelEnd, LoadLevel};
use crate::report::{test_level, test_settings, test_settings_with};
use inferperf_wire::model::ModelSpec;

const DEFAULT_HEADER: &str = "Concurrency,Inferences/Second,Client Send,Client Recv,\
                              p50 latency,p90 latency,p95 latency,p99 latency";

#[test]
fn header_matches_perf_analyzer_by_default() {
    assert_eq!(header(&test_settings(), "Concurrency"), DEFAULT_HEADER);
    assert_eq!(
        header(&test_settings(), "Request Rate"),
        DEFAULT_HEADER.replacen("Concurrency", "Request Rate", 1)
    );
}

#[test]
fn header_with_percentile_95_has_no_duplicate() {
    let settings = test_settings_with(&["--percentile", "95"]);
    assert_eq!(header(&settings, "Concurrency"), DEFAULT_HEADER);
}

#[test]
fn header_with_percentile_99_9_puts_it_last() {
    let settings = test_settings_with(&["--percentile", "99.9"]);
    assert_eq!(
        header(&settings, "Concurrency"),
        format!("{DEFAULT_HEADER},p99.9 latency")
    );
}

#[test]
fn header_with_percentile_75_goes_between_p50_and_p90() {
    let settings = test_settings_with(&["--percentile", "75"]);
    assert_eq!(
        header(&settings, "Concurrency"),
        "Concurrency,Inferences/Second,Client Send,Client Recv,\
         p50 latency,p75 latency,p90 latency,p95 latency,p99 latency"
    );
}

fn header(settings: &Settings, mode: &str) -> String {
    header_for(
        settings,
        &columns(settings, Available::default()),
        mode,
        &[],
    )
}

fn level_with_server(cache: bool) -> LevelResult {
    use crate::measure::server::stats::{ModelCounters, ServerWindow, Timed};
    let mut level = test_level(
        LoadLevel::Concurrency(1),
        &[1000; 10],
        1.0,
        LevelEnd::Stable,
    );
    let timed = |us: u64| Timed {
        count: 10,
        ns: 10 * us * 1000,
    };
    level.merged.server = Some(ServerWindow {
        model: ModelCounters {
            name: "m".into(),
            success: timed(800),
            queue: timed(100),
            compute_input: timed(10),
            compute_infer: timed(600),
            compute_output: timed(20),
            cache_hit: if cache { timed(5) } else { Timed::default() },
            ..ModelCounters::default()
        },
        composing: Vec::new(),
        bls: false,
        answers: None,
    });
    level
}

#[test]
fn server_columns_follow_perf_analyzer() {
    let settings = test_settings();
    let results = [level_with_server(false)];
    assert_eq!(
        csv_header(&settings, &ModelSpec::default(), &results),
        "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,\
         Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,\
         p50 latency,p90 latency,p95 latency,p99 latency"
    );
    // 1000 µs latency − 64 send − 16 receive − (100 queue + 630 compute) = 190.
    assert_eq!(
        csv_rows(&settings, &ModelSpec::default(), &results)[0],
        "1,10,64,190,100,10,600,20,16,1000,1000,1000,1000"
    );
    let cached = [level_with_server(true)];
    let header = csv_header(&settings, &ModelSpec::default(), &cached);
    assert!(
        header.contains("Server Compute Output,Server Cache Hit,Server Cache Miss,Client Recv"),
        "{header}"
    );
    assert!(csv_rows(&settings, &ModelSpec::default(), &cached)[0]
        .starts_with("1,10,64,185,100,10,600,20,5,0,16,"));
    // A level without statistics drops the server columns for the whole file.
    let mixed = [
        level_with_server(false),
        test_level(LoadLevel::Concurrency(2), &[1000; 5], 1.0, LevelEnd::Stable),
    ];
    assert!(!csv_header(&settings, &ModelSpec::default(), &mixed).contains("Server Queue"));
}

#[test]
fn verbose_csv_adds_perf_analyzer_columns_and_metrics() {
    let mut settings = test_settings();
    settings.outputs.verbose_csv = true;
    settings.metrics = Some(crate::results::MetricsSettings {
        url: String::new(),
        more_urls: Vec::new(),
        interval_ms: 1000,
        standard: true,
        metrics: vec!["foo:max".into(), "foo{a=\"1\",b=\"2\"}".into()],
    });
    let mut level = test_level(
        LoadLevel::Concurrency(1),
        &[1000; 10],
        1.0,
        LevelEnd::Stable,
    );
    let mut metrics = crate::measure::server::metrics::MetricsWindow::default();
    let mut stat = crate::measure::server::metrics::SeriesStats {
        count: 1,
        sum: 0.5,
        max: 0.5,
        first: 0.5,
        ..Default::default()
    };
    metrics
        .series
        .insert("nv_gpu_utilization|GPU-0".into(), stat);
    stat.max = 7.0;
    metrics.series.insert("foo:max".into(), stat);
    level.merged.metrics = Some(metrics);
    let results = [level];
    assert_eq!(
        csv_header(&settings, &ModelSpec::default(), &results),
        format!("{DEFAULT_HEADER},Avg latency,request/response,response wait,Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory,foo:max,\"foo{{a=\"\"1\"\",b=\"\"2\"\"}}\"")
    );
    assert_eq!(
        csv_rows(&settings, &ModelSpec::default(), &results)[0],
        "1,10,64,16,1000,1000,1000,1000,1000,80,920,GPU-0:0.5;,,,,7,"
    );
}

#[test]
fn rows_are_sorted_by_throughput_with_integer_usec() {
    let settings = test_settings();
    let results = [
        test_level(
            LoadLevel::Concurrency(1),
            &[2500; 30],
            1.0,
            LevelEnd::Stable,
        ),
        test_level(
            LoadLevel::Concurrency(2),
            &[1500; 10],
            1.0,
            LevelEnd::Stable,
        ),
        test_level(
            LoadLevel::Concurrency(3),
            &[3500; 3],
            2.0,
            LevelEnd::Unstable,
        ),
    ];
    let rows = csv_rows(&settings, &ModelSpec::default(), &results);
    assert_eq!(rows.len(), 3);
    assert!(rows[0].starts_with("3,1.5,64,16,350"), "{}", rows[0]);
    assert!(rows[1].starts_with("2,10,64,16,150"), "{}", rows[1]);
    assert!(rows[2].starts_with("1,30,64,16,250"), "{}", rows[2]);
    for row in &rows {
        assert_eq!(row.split(',').count(), 8);
    }
}

#[test]
fn write_csv_writes_header_and_rows() {
    let settings = test_settings();
    let results = [test_level(
        LoadLevel::Rate(12.5),
        &[1000; 5],
        1.0,
        LevelEnd::Stable,
    )];
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("out.csv");
    write_csv(&settings, &ModelSpec::default(), &results, &path).expect("write csv");
    let text = std::fs::read_to_string(&path).expect("read csv");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Request Rate,Inferences/Second,"));
    assert!(lines[1].starts_with("12.5,5,64,16,1000,"), "{}", lines[1]);
    assert!(text.ends_with('\n'));
}

//! Tests of the LLM console table: GenAI-Perf's columns and rows, the streaming rows left
//! out without a stream, and the lines under the table.

use super::*;
use crate::report::llm::{test_llm_settings, test_llm_window};

fn cells(line: &str) -> Vec<&str> {
    line.split(['│', '┃'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn the_table_has_genai_perfs_columns_and_rows() {
    let settings = test_llm_settings(&["--streaming"]);
    let lines = llm_lines(&settings, &test_llm_window());
    assert_eq!(lines[0].trim(), "inferperf | LLM Metrics");
    assert!(lines[1].starts_with("    ┏━"));
    assert_eq!(
        cells(&lines[2]),
        ["Statistic", "avg", "min", "max", "p99", "p90", "p75"]
    );
    let rows: Vec<Vec<&str>> = lines[4..14].iter().map(|l| cells(l)).collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        names,
        [
            "Time To First Token (ms)",
            "Time To Second Token (ms)",
            "Request Latency (ms)",
            "Inter Token Latency (ms)",
            "Output Token Throughput Per User (tokens/sec/user)",
            "Output Sequence Length (tokens)",
            "Input Sequence Length (tokens)",
            "Output Token Throughput (tokens/sec)",
            "Request Throughput (per sec)",
            "Request Count (count)",
        ]
    );
    assert_eq!(
        rows[0][..4],
        ["Time To First Token (ms)", "25.00", "10.00", "40.00"]
    );
    assert_eq!(
        rows[9],
        [
            "Request Count (count)",
            "4.00",
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A"
        ]
    );
    assert!(lines[14].starts_with("    └─"));
    let width = lines[2].chars().count();
    assert!(lines[1..15].iter().all(|l| l.chars().count() == width));
    assert_eq!(
        lines[15],
        "    Inter chunk latency (between streamed events): p50 5.00 ms, p99 5.00 ms"
    );
    assert_eq!(
        lines[16],
        "    HTTP phases (avg): connecting 0.75 ms, sending 1.00 ms, waiting (to the first body byte) 42.00 ms, receiving 2.00 ms"
    );
    assert_eq!(
        lines[17],
        "    Tokens counted with the run's tokenizer; output lengths from the server's usage (4 by usage, 0 by the tokenizer)"
    );
    assert_eq!(lines.len(), 18);
}

#[test]
fn without_a_stream_only_the_unstreamed_rows_remain() {
    let settings = test_llm_settings(&[]);
    let mut w = test_llm_window();
    w.tokens.as_mut().unwrap().unstreamed = 3;
    let lines = llm_lines(&settings, &w);
    let names: Vec<String> = lines[4..]
        .iter()
        .take_while(|l| l.contains('│'))
        .map(|l| cells(l)[0].to_string())
        .collect();
    assert_eq!(
        names,
        [
            "Request Latency (ms)",
            "Output Sequence Length (tokens)",
            "Input Sequence Length (tokens)",
            "Output Token Throughput (tokens/sec)",
            "Request Throughput (per sec)",
            "Request Count (count)",
        ]
    );
    assert!(!lines.iter().any(|l| l.contains("Inter chunk")));
    assert_eq!(
        lines.last().unwrap(),
        "    Note: 3 requests were asked to stream but the server answered in one piece; each was measured as one answer."
    );
}

#[test]
fn goodput_shows_when_limits_are_set() {
    let settings = test_llm_settings(&["--streaming"]);
    let mut w = test_llm_window();
    w.goodput.ttft_ns = Some(25_000_000);
    let lines = llm_lines(&settings, &w);
    let goodput = lines
        .iter()
        .find(|l| l.contains("Request Goodput (per sec)"))
        .expect("a goodput row");
    assert_eq!(
        cells(goodput)[1],
        "0.00",
        "no rule was applied to the samples"
    );
}

//! What the reports say about the answers themselves: for streamed requests, the response
//! throughput perf_analyzer prints for decoupled models, first-response and inter-response
//! latency and answers per request, with the same percentiles as latency; for wrong answers,
//! the first one of each kind and what was wrong with it.

use crate::backend::ErrorKind;
use crate::measure::distribution::Distribution;
use crate::measure::level::LevelResult;
use crate::measure::window::WindowStats;
use crate::results::Settings;
use inferperf_wire::model::ModelSpec;

use super::format::{format_throughput, reported_percentiles, usec};

/// The percentiles of the streaming CSV columns, as the issue of streamed answers lists them.
pub const CSV_STREAM_PERCENTILES: [f64; 2] = [50.0, 99.0];

/// perf_analyzer's `Response Throughput` line, for a decoupled model.
pub fn response_throughput_line(model: &ModelSpec, w: &WindowStats) -> Option<String> {
    model.decoupled.then(|| {
        format!(
            "    Response Throughput: {} infer/sec",
            format_throughput(w.response_throughput())
        )
    })
}

/// First-response latency, inter-response latency and answers per request, one line each,
/// for a streaming run.
pub fn stream_lines(settings: &Settings, w: &WindowStats) -> Vec<String> {
    if !settings.streaming {
        return Vec::new();
    }
    let percentiles = reported_percentiles(settings);
    let times = |d: &Distribution| {
        let mut parts = vec![format!("avg {} usec", usec(d.mean() / 1000.0))];
        parts.extend(
            percentiles
                .iter()
                .map(|&p| format!("p{p} {} usec", usec(d.percentile(p) / 1000.0))),
        );
        parts.join(", ")
    };
    let gaps = if w.inter_response.count() == 0 {
        "none (one answer per request)".to_string()
    } else {
        times(&w.inter_response)
    };
    let mut counts = vec![format!("avg {}", format_throughput(w.responses.mean()))];
    counts.extend(
        percentiles
            .iter()
            .map(|&p| format!("p{p} {}", w.responses.percentile(p))),
    );
    vec![
        format!("    First response latency: {}", times(&w.first_response)),
        format!("    Inter-response latency: {gaps}"),
        format!("    Responses per request: {}", counts.join(", ")),
    ]
}

/// The first wrong answer of each kind the level saw, and what the driver noted.
pub fn note_lines(r: &LevelResult) -> Vec<String> {
    let mut notes: Vec<_> = r.merged.notes.iter().collect();
    notes.sort_by_key(|n| n.kind);
    let mut lines: Vec<String> = notes
        .iter()
        .map(|n| format!("    First {}: {}", note_label(n.kind), n.text))
        .collect();
    lines.extend(r.notes.iter().map(|note| format!("  Note: {note}")));
    lines
}

/// How the first wrong answer of a kind is introduced: `bad response (missing output)`,
/// `validation error`.
fn note_label(kind: ErrorKind) -> String {
    match kind {
        ErrorKind::Validation => "validation error".into(),
        other => other.to_string(),
    }
}

/// A streaming CSV cell: a first-response or inter-response percentile in µs.
pub fn stream_time_cell(d: &Distribution, p: f64) -> String {
    usec(d.percentile(p) / 1000.0).to_string()
}

/// The CSV cell of answers per request: their mean.
pub fn responses_cell(w: &WindowStats) -> String {
    format_throughput(w.responses.mean())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sample::{ErrorNote, Sample};
    use crate::report::{test_level, test_settings};
    use std::time::{Duration, Instant};

    fn streamed_window() -> WindowStats {
        let t = Instant::now();
        let mut w = WindowStats::new(1);
        w.duration = Duration::from_secs(1);
        for i in 0..4u64 {
            let start = t + Duration::from_millis(i);
            let mut s = Sample::once(start, start, start + Duration::from_millis(26));
            s.first = start + Duration::from_millis(10);
            s.answers = 5;
            s.gaps = 4;
            w.add(&s, &[4_000_000; 4]);
        }
        w
    }

    #[test]
    fn streaming_runs_show_every_answer() {
        let mut settings = test_settings();
        settings.streaming = true;
        let w = streamed_window();
        let lines = stream_lines(&settings, &w);
        assert!(
            lines[0].starts_with("    First response latency: avg 10000 usec, p50 10"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("    Inter-response latency: avg 4000 usec, p50 400"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2],
            "    Responses per request: avg 5, p50 5, p90 5, p95 5, p99 5"
        );
        let decoupled = ModelSpec {
            decoupled: true,
            ..Default::default()
        };
        assert_eq!(
            response_throughput_line(&decoupled, &w).unwrap(),
            "    Response Throughput: 20 infer/sec"
        );
        assert_eq!(response_throughput_line(&ModelSpec::default(), &w), None);
        settings.streaming = false;
        assert!(stream_lines(&settings, &w).is_empty());
    }

    #[test]
    fn the_first_wrong_answer_of_each_kind_is_shown() {
        let mut r = test_level(
            crate::measure::level::LoadLevel::Concurrency(1),
            &[1000],
            1.0,
            crate::measure::level::LevelEnd::Stable,
        );
        r.merged.notes.push(ErrorNote {
            at: Instant::now(),
            kind: ErrorKind::Validation,
            text: "output 'OUT' element 1: expected 2, got 3".into(),
        });
        r.notes.push("3 request(s) ended early.".into());
        assert_eq!(
            note_lines(&r),
            vec![
                "    First validation error: output 'OUT' element 1: expected 2, got 3",
                "  Note: 3 request(s) ended early.",
            ]
        );
    }
}

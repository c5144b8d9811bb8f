//! The end of a search (`--slo`, `--binary-search`): every level measured on the way, in the
//! order measured, with whether it met the criteria and why not, then the knee — the level
//! of highest throughput that was stable and met every condition.

use crate::measure::level::{LevelEnd, LevelResult};
use crate::measure::slo::SloCheck;
use crate::measure::window::WindowStats;
use crate::results::Settings;

use crate::report::format::{format_throughput, level_name_value, stabilizing_label, usec};

/// The search block, or nothing when the run did not search (no `--slo`, no
/// `--binary-search`).
pub fn search_block(settings: &Settings, results: &[LevelResult]) -> Option<String> {
    if settings.slo.is_empty() && !settings.binary_search {
        return None;
    }
    let mut lines = vec![format!(
        "{} for {}; levels in the order measured:",
        if settings.binary_search {
            "Binary search"
        } else {
            "Search"
        },
        criteria(settings)
    )];
    lines.extend(results.iter().map(|r| level_line(settings, r)));
    lines.push(knee_line(settings, results));
    let mut text = lines.join("\n");
    text.push('\n');
    Some(text)
}

/// `p99<=50ms, latency < 20 ms (-l)`.
fn criteria(settings: &Settings) -> String {
    let mut parts: Vec<String> = settings.slo.clone();
    if let Some(ms) = settings.latency_threshold_ms {
        parts.push(format!("{} < {ms} ms (-l)", stabilizing_label(settings)));
    }
    parts.join(", ")
}

/// The level that met the criteria with the highest throughput.
pub fn knee(results: &[LevelResult]) -> Option<&LevelResult> {
    results
        .iter()
        .filter(|r| r.met_criteria())
        .max_by(|a, b| a.merged.throughput().total_cmp(&b.merged.throughput()))
}

fn knee_line(settings: &Settings, results: &[LevelResult]) -> String {
    match knee(results) {
        Some(r) => {
            let (name, value) = level_name_value(&r.level);
            format!(
                "Knee: {name} {value}, throughput {} infer/sec, {}",
                format_throughput(r.merged.throughput()),
                figures(settings, &r.merged)
            )
        }
        None => format!(
            "Knee: none: no level measured was stable and met {}; try a lower start or looser conditions.",
            criteria(settings)
        ),
    }
}

/// `  Request Rate 75: met, throughput 75 infer/sec, p99 latency 10321 usec`.
fn level_line(settings: &Settings, r: &LevelResult) -> String {
    let (name, value) = level_name_value(&r.level);
    let verdict = match r.end {
        LevelEnd::Stable | LevelEnd::SingleWindow => "met".to_string(),
        LevelEnd::MissedSlo => format!("missed {}", missed(settings, r)),
        LevelEnd::OverLatencyLimit => "over -l".to_string(),
        LevelEnd::Unstable => "unstable (does not count)".to_string(),
        LevelEnd::Interrupted => "interrupted".to_string(),
    };
    format!(
        "  {name} {value}: {verdict}, throughput {} infer/sec, {}",
        format_throughput(r.merged.throughput()),
        figures(settings, &r.merged)
    )
}

/// The condition the level missed: on its reported windows, or (when it ended early) on
/// its last window.
fn missed(settings: &Settings, r: &LevelResult) -> String {
    let conditions = settings.slo_conditions();
    if let Some((text, _)) = conditions.iter().find(|(_, c)| !c.met_by(&r.merged)) {
        return text.to_string();
    }
    let last = r.windows.last();
    let missed_last = |w| {
        conditions
            .iter()
            .find(|(_, c)| !c.met_by(w))
            .map(|c| (c, w))
    };
    match last.and_then(missed_last) {
        Some(((text, c), w)) => format!(
            "{text} (last window: {} {} usec)",
            c.metric_label(),
            usec(c.value_us(w))
        ),
        None => "the SLO".into(),
    }
}

/// The latency figures the criteria look at, from the level's reported windows.
fn figures(settings: &Settings, w: &WindowStats) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (_, c) in settings.slo_conditions() {
        let part = format!("{} {} usec", c.metric_label(), usec(c.value_us(w)));
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    if settings.latency_threshold_ms.is_some() || parts.is_empty() {
        let part = format!(
            "{} {} usec",
            stabilizing_label(settings),
            usec(w.stabilizing_latency_us(settings.percentile))
        );
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::level::LoadLevel;
    use crate::report::{test_level, test_settings, test_settings_with};

    #[test]
    fn the_knee_is_the_best_level_that_met_the_slo() {
        let settings = test_settings_with(&["--slo", "p99<=50ms"]);
        let ok = |rate: f64, ms: u64| {
            let latencies = vec![ms * 1000; rate as usize];
            test_level(LoadLevel::Rate(rate), &latencies, 1.0, LevelEnd::Stable)
        };
        let mut missed = ok(150.0, 80);
        missed.end = LevelEnd::MissedSlo;
        let mut unstable = ok(120.0, 20);
        unstable.end = LevelEnd::Unstable;
        let results = vec![ok(50.0, 10), missed, unstable, ok(100.0, 20)];
        let block = search_block(&settings, &results).unwrap();
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(
            lines[0],
            "Search for p99<=50ms; levels in the order measured:"
        );
        assert!(
            lines[1]
                .starts_with("  Request Rate 50: met, throughput 50 infer/sec, p99 latency 100"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with(
                "  Request Rate 150: missed p99<=50ms, throughput 150 infer/sec, p99 latency 80"
            ),
            "{}",
            lines[2]
        );
        assert!(lines[3].contains("unstable (does not count)"));
        assert!(
            lines[5]
                .starts_with("Knee: Request Rate 100, throughput 100 infer/sec, p99 latency 200"),
            "{}",
            lines[5]
        );
        assert!(search_block(&test_settings(), &results).is_none());
    }

    #[test]
    fn no_knee_is_said_plainly() {
        let mut settings = test_settings();
        settings.latency_threshold_ms = Some(5.0);
        settings.binary_search = true;
        let mut r = test_level(LoadLevel::Concurrency(1), &[9000], 1.0, LevelEnd::Stable);
        r.end = LevelEnd::OverLatencyLimit;
        let block = search_block(&settings, &[r]).unwrap();
        assert!(
            block.starts_with("Binary search for latency < 5 ms (-l);"),
            "{block}"
        );
        assert!(block.contains("Concurrency 1: over -l, throughput 1 infer/sec, latency 9000 usec"));
        assert!(
            block.contains("Knee: none: no level measured was stable and met latency < 5 ms (-l)")
        );
    }
}

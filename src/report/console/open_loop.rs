//! The lines an open-loop level adds to perf_analyzer's client block: whether the client sent
//! on time (achieved rate, late sends, send lag), the service time beside the latency from
//! the schedule, sends held back by `--max-concurrency`, and a warning that names the cause
//! when the client, not the server, limited the load.

use crate::measure::window::WindowStats;
use crate::results::Settings;

/// Above this share of late sends the level is flagged (perf_analyzer's 1 %).
const LATE_SHARE_LIMIT: f64 = 0.01;

/// The open-loop lines for a rate level's merged windows.
pub fn open_loop_lines(settings: &Settings, target_rate: f64, w: &WindowStats) -> Vec<String> {
    let mut lines = vec![
        format!(
            "    Send rate: {:.1} req/sec (target {}), late sends (>1 ms): {:.2}%, send lag p50 {} usec, p99 {} usec",
            w.send_rate(),
            format_target(target_rate),
            w.late_share() * 100.0,
            w.send_lag_percentile_us(50.0) as u64,
            w.send_lag_percentile_us(99.0) as u64
        ),
        format!(
            "    Avg service time: {} usec, p99 {} usec (from the actual send; the latency above counts from the scheduled send)",
            w.mean_service_us() as u64,
            w.service_percentile_us(99.0) as u64
        ),
    ];
    if w.cap_waits > 0 {
        lines.push(format!(
            "    Sends held back by --max-concurrency: {} ({:.2}%), avg wait {} usec",
            w.cap_waits,
            100.0 * w.cap_waits as f64 / w.sent.max(1) as f64,
            (w.cap_wait_ns / w.cap_waits as u128 / 1000) as u64
        ));
    }
    lines.extend(keep_up_warning(settings, w));
    lines
}

fn format_target(rate: f64) -> String {
    if rate > 0.0 {
        format!("{rate}")
    } else {
        "fixed schedule".into()
    }
}

/// A warning when sends fell behind, naming the cause.
pub(crate) fn keep_up_warning(settings: &Settings, w: &WindowStats) -> Option<String> {
    if w.late_share() <= LATE_SHARE_LIMIT {
        return None;
    }
    let cost = super::server::ClientCost::of(settings, w);
    let busy = cost.as_ref().filter(|c| c.saturated());
    let cause = if w.cap_waits as f64 > w.late_sends as f64 * 0.5 {
        "the --max-concurrency cap held sends back (raise it, or lower the rate)".to_string()
    } else if let (Some(c), true) = (busy, settings.server_in_process) {
        format!(
            "this process, the client and the in-process server together, was busy ({}; lower the rate)",
            c.usage(settings)
        )
    } else if let Some(c) = busy {
        format!(
            "the client's CPU was saturated ({}; lower the rate, or add --client-threads)",
            c.usage(settings)
        )
    } else {
        "the client's send thread was descheduled (the machine is busy; lower the rate or free CPU for the client)".to_string()
    };
    Some(format!(
        "  [WARNING] {:.2}% of sends were more than 1 ms late: {cause}.",
        w.late_share() * 100.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sample::Sample;
    use std::time::{Duration, Instant};

    fn window(lag_us: u64, count: usize) -> WindowStats {
        let t = Instant::now();
        let samples: Vec<Sample> = (0..count)
            .map(|_| {
                Sample::once(
                    t,
                    t + Duration::from_micros(lag_us),
                    t + Duration::from_micros(lag_us + 1000),
                )
            })
            .collect();
        let mut w = WindowStats::from_samples(&samples, Duration::from_secs(1), 1);
        w.sent = count as u64;
        w
    }

    #[test]
    fn on_time_sends_give_no_warning() {
        let lines = open_loop_lines(&crate::report::test_settings(), 100.0, &window(20, 100));
        assert!(lines[0]
            .starts_with("    Send rate: 100.0 req/sec (target 100), late sends (>1 ms): 0.00%"));
        assert!(
            lines[1].contains("Avg service time: 1000 usec"),
            "{}",
            lines[1]
        );
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn late_sends_are_flagged_with_a_cause() {
        let lines = open_loop_lines(&crate::report::test_settings(), 100.0, &window(5000, 100));
        assert!(lines
            .last()
            .unwrap()
            .contains("100.00% of sends were more than 1 ms late"));
        assert!(lines
            .last()
            .unwrap()
            .contains("send thread was descheduled"));
        let mut capped = window(5000, 100);
        capped.cap_waits = 100;
        capped.cap_wait_ns = 100 * 5_000_000;
        let lines = open_loop_lines(&crate::report::test_settings(), 100.0, &capped);
        assert!(lines.iter().any(
            |l| l.contains("held back by --max-concurrency: 100 (100.00%), avg wait 5000 usec")
        ));
        assert!(lines.last().unwrap().contains("--max-concurrency cap"));
    }
}

//! The flags of load over time: `--ramp DURATION` over a concurrency or request-rate range,
//! and `--load-steps 'rate=100:10s,rate=1000:5s'`. Both become a
//! [`Timeline`] of segments: the plan itself lives here, as the configuration of the run; the
//! drivers in `load` follow it.

use std::time::Duration;

use inferperf_wire::error::{RunError, RunResult};

/// Longest plan accepted: a day.
const MAX_TOTAL: Duration = Duration::from_secs(24 * 3600);

/// What the segments' values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineKind {
    /// Requests per second, sent open loop.
    Rate,
    /// Requests in flight, closed loop.
    Concurrency,
}

/// One stretch of the plan: the load goes from `from` to `to` over `duration` (equal for
/// a step).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub from: f64,
    pub to: f64,
    pub duration: Duration,
}

impl Segment {
    pub fn secs(&self) -> f64 {
        self.duration.as_secs_f64()
    }

    /// Requests a rate segment asks for in all (the area under the rate).
    pub fn count(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.secs()
    }

    /// Seconds into a rate segment at which `u` requests have been asked for: the inverse
    /// of `from·t + (to−from)·t²/(2d)`, in a form that stays exact when `to == from`.
    pub fn time_of_count(&self, u: f64) -> f64 {
        let slope = (self.to - self.from) / self.secs();
        let root = (self.from * self.from + 2.0 * slope * u).max(0.0).sqrt();
        let t = if self.from + root > 0.0 {
            2.0 * u / (self.from + root)
        } else {
            0.0
        };
        t.min(self.secs())
    }

    /// The value `t` seconds into the segment. A rate moves continuously; a concurrency
    /// moves through every whole value between `from` and `to`, each held equally long.
    fn value_at(&self, kind: TimelineKind, t: f64) -> f64 {
        let share = (t / self.secs()).clamp(0.0, 1.0);
        match kind {
            TimelineKind::Rate => self.from + (self.to - self.from) * share,
            TimelineKind::Concurrency => {
                let span = (self.to - self.from).abs();
                let index = (share * (span + 1.0)).floor().min(span);
                self.from + index * (self.to - self.from).signum()
            }
        }
    }
}

/// The whole plan of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub kind: TimelineKind,
    pub segments: Vec<Segment>,
}

impl Timeline {
    /// How long the plan lasts.
    pub fn total(&self) -> Duration {
        self.segments.iter().map(|s| s.duration).sum()
    }

    /// The load `t` after the start (0 after the end).
    pub fn value_at(&self, t: Duration) -> f64 {
        let mut start = Duration::ZERO;
        for segment in &self.segments {
            if t < start + segment.duration {
                return segment.value_at(self.kind, (t - start).as_secs_f64());
            }
            start += segment.duration;
        }
        0.0
    }

    /// The load averaged over `[from, to)` (sampled every millisecond).
    pub fn mean_over(&self, from: Duration, to: Duration) -> f64 {
        let steps = ((to.saturating_sub(from)).as_millis() as u32).max(1);
        let width = to.saturating_sub(from) / steps;
        let sum: f64 = (0..steps)
            .map(|i| self.value_at(from + width * i + width / 2))
            .sum();
        sum / steps as f64
    }
}

/// `--ramp DURATION` with the range text of `--concurrency-range` or
/// `--request-rate-range` (exactly one is given).
pub fn parse_ramp(
    duration: &str,
    concurrency: Option<&str>,
    rate: Option<&str>,
) -> RunResult<Timeline> {
    let duration = parse_duration(duration, "--ramp")?;
    let (kind, range, flag) = match (concurrency, rate) {
        (Some(c), None) => (TimelineKind::Concurrency, c, "--concurrency-range"),
        (None, Some(r)) => (TimelineKind::Rate, r, "--request-rate-range"),
        _ => {
            return Err(RunError::bad_option(
                "--ramp needs the range it rises over: add --concurrency-range START:END or --request-rate-range START:END.",
            ))
        }
    };
    let parts: Vec<&str> = range.split(':').collect();
    let [start, end] = parts.as_slice() else {
        return Err(RunError::bad_option(format!(
            "--ramp rises from the start to the end of {flag}: give it as START:END (no step), not '{range}'."
        )));
    };
    let from = parse_value(start, kind, flag)?;
    let to = parse_value(end, kind, flag)?;
    if from <= 0.0 || to <= 0.0 {
        return Err(RunError::bad_option(format!(
            "{flag} '{range}' with --ramp: the start and the end must both be above 0."
        )));
    }
    check_total(Timeline {
        kind,
        segments: vec![Segment { from, to, duration }],
    })
}

/// `--load-steps`: comma-separated `KIND=VALUE:DURATION`, one kind for the whole plan.
pub fn parse_load_steps(text: &str) -> RunResult<Timeline> {
    let mut kind = None;
    let mut segments = Vec::new();
    for step in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (this_kind, segment) = parse_step(step)?;
        if kind.is_some_and(|k| k != this_kind) {
            return Err(RunError::bad_option(format!(
                "--load-steps '{text}' mixes rate and concurrency steps: use one kind per run (rate is open loop, concurrency closed loop)."
            )));
        }
        kind = Some(this_kind);
        segments.push(segment);
    }
    let Some(kind) = kind else {
        return Err(step_error(text));
    };
    if segments.iter().all(|s| s.from == 0.0 && s.to == 0.0) {
        return Err(RunError::bad_option(format!(
            "--load-steps '{text}' never puts any load on the server: give at least one step above 0."
        )));
    }
    check_total(Timeline { kind, segments })
}

fn step_error(step: &str) -> RunError {
    RunError::bad_option(format!(
        "--load-steps step '{step}' is not KIND=VALUE:DURATION with KIND rate or concurrency (e.g. rate=100:10s, rate=100..1000:5s, concurrency=8:30s)."
    ))
}

fn parse_step(step: &str) -> RunResult<(TimelineKind, Segment)> {
    let (kind, rest) = step.split_once('=').ok_or_else(|| step_error(step))?;
    let kind = match kind.trim() {
        "rate" | "request-rate" => TimelineKind::Rate,
        "concurrency" => TimelineKind::Concurrency,
        _ => return Err(step_error(step)),
    };
    let (value, duration) = rest.rsplit_once(':').ok_or_else(|| step_error(step))?;
    let flag = "--load-steps";
    let (from, to) = match value.split_once("..") {
        Some((a, b)) => (parse_value(a, kind, flag)?, parse_value(b, kind, flag)?),
        None => {
            let v = parse_value(value, kind, flag)?;
            (v, v)
        }
    };
    let duration = parse_duration(duration, flag)?;
    Ok((kind, Segment { from, to, duration }))
}

/// A rate (≥ 0, may have decimals) or a concurrency (a whole number ≥ 0).
fn parse_value(text: &str, kind: TimelineKind, flag: &str) -> RunResult<f64> {
    let text = text.trim();
    if let (TimelineKind::Rate, Ok(rate)) = (kind, text.parse::<f64>()) {
        // 0 pauses the load; any other rate is one a client can keep.
        if rate == 0.0 {
            return Ok(0.0);
        }
        return crate::config::bounds::rate(rate, &format!("{flag}: the rate '{text}'"));
    }
    let value = match kind {
        TimelineKind::Rate => None,
        TimelineKind::Concurrency => text.parse::<u32>().ok().map(f64::from),
    };
    value.filter(|v| *v >= 0.0).ok_or_else(|| {
        let what = match kind {
            TimelineKind::Rate => "a request rate (requests per second, 0 or more)",
            TimelineKind::Concurrency => "a concurrency (a whole number, 0 or more)",
        };
        RunError::bad_option(format!("{flag}: '{text}' is not {what}."))
    })
}

/// `500ms`, `10s`, `2m`, `1m30s`: above zero.
fn parse_duration(text: &str, flag: &str) -> RunResult<Duration> {
    humantime::parse_duration(text.trim())
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            RunError::bad_option(format!(
                "{flag}: '{}' is not a duration above zero (e.g. 500ms, 10s, 2m).",
                text.trim()
            ))
        })
}

fn check_total(timeline: Timeline) -> RunResult<Timeline> {
    if timeline.total() > MAX_TOTAL {
        return Err(RunError::bad_option(format!(
            "The load plan lasts {} s: keep --ramp or --load-steps under a day.",
            timeline.total().as_secs()
        )));
    }
    Ok(timeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn steps_parse_into_segments() {
        let plan = parse_load_steps("rate=100:10s, rate=1000:5s,rate=100..400:500ms").unwrap();
        assert_eq!(plan.kind, TimelineKind::Rate);
        assert_eq!(
            plan.segments,
            vec![
                Segment {
                    from: 100.0,
                    to: 100.0,
                    duration: secs(10)
                },
                Segment {
                    from: 1000.0,
                    to: 1000.0,
                    duration: secs(5)
                },
                Segment {
                    from: 100.0,
                    to: 400.0,
                    duration: Duration::from_millis(500)
                },
            ]
        );
        let plan = parse_load_steps("concurrency=1:2s,concurrency=0:1m").unwrap();
        assert_eq!(plan.kind, TimelineKind::Concurrency);
        assert_eq!(plan.total(), secs(62));
    }

    #[test]
    fn ramps_take_the_range() {
        let plan = parse_ramp("30s", Some("1:64"), None).unwrap();
        assert_eq!(plan.kind, TimelineKind::Concurrency);
        assert_eq!(
            plan.segments[0],
            Segment {
                from: 1.0,
                to: 64.0,
                duration: secs(30)
            }
        );
        let plan = parse_ramp("2m", None, Some("100:2000")).unwrap();
        assert_eq!(plan.kind, TimelineKind::Rate);
        assert_eq!(plan.total(), secs(120));
    }

    #[test]
    fn bad_plans_name_the_flag() {
        for (result, needle) in [
            (parse_load_steps("rate=100:10s,concurrency=4:1s"), "mixes"),
            (parse_load_steps("speed=100:10s"), "KIND=VALUE:DURATION"),
            (parse_load_steps("rate=100"), "KIND=VALUE:DURATION"),
            (parse_load_steps("rate=fast:1s"), "is not a request rate"),
            (parse_load_steps("concurrency=1.5:1s"), "whole number"),
            (parse_load_steps("rate=100:0s"), "duration above zero"),
            (parse_load_steps("rate=100:soon"), "duration above zero"),
            (parse_load_steps("rate=0:1s"), "never puts any load"),
            (parse_load_steps(""), "KIND=VALUE:DURATION"),
            (parse_ramp("10s", None, None), "needs the range"),
            (parse_ramp("10s", Some("1:64:2"), None), "no step"),
            (parse_ramp("10s", Some("4"), None), "no step"),
            (parse_ramp("forever", Some("1:4"), None), "--ramp"),
            (parse_ramp("10s", None, Some("0:100")), "above 0"),
            (parse_load_steps("rate=1:25h"), "under a day"),
        ] {
            let err = result.unwrap_err();
            assert_eq!(err.exit_code(), inferperf_wire::error::EXIT_BAD_OPTION);
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    fn seg_of(from: f64, to: f64, secs: f64) -> Segment {
        Segment {
            from,
            to,
            duration: inferperf_wire::number::saturating_secs(secs),
        }
    }

    #[test]
    fn values_over_time() {
        let plan = Timeline {
            kind: TimelineKind::Concurrency,
            segments: vec![seg_of(1.0, 4.0, 4.0), seg_of(8.0, 8.0, 1.0)],
        };
        let at = |s: f64| plan.value_at(inferperf_wire::number::saturating_secs(s));
        assert_eq!(
            [at(0.0), at(0.99), at(1.0), at(3.5), at(4.2)],
            [1.0, 1.0, 2.0, 4.0, 8.0]
        );
        assert_eq!(at(5.0), 0.0);
        let mean = plan.mean_over(Duration::ZERO, Duration::from_secs(2));
        assert!((mean - 1.5).abs() < 0.01);
        let rate = Timeline {
            kind: TimelineKind::Rate,
            segments: vec![seg_of(100.0, 500.0, 4.0)],
        };
        let mean = rate.mean_over(Duration::from_secs(1), Duration::from_secs(2));
        assert!((mean - 250.0).abs() < 0.5);
        assert_eq!(plan.total(), Duration::from_secs(5));
    }
}

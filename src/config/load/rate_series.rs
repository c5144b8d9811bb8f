//! AIPerf's `--request-rate-series FILE`: a JSON list of `{time_s, qps}` points (or an
//! object whose only key is `points`), read and checked once as AIPerf checks it — at least
//! two points, times from 0 and strictly increasing, rates above 0, no other field — so
//! that the load box only has to follow it.

use std::path::Path;

use serde::Deserialize;

use inferperf_wire::error::{RunError, RunResult};

/// One point of the series: from `time_s` seconds after the series starts, `qps` requests
/// per second (linearly towards the next point).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatePoint {
    pub time_s: f64,
    pub qps: f64,
}

/// The points of `--request-rate-series`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSeries {
    pub points: Vec<RatePoint>,
}

/// The file's two accepted shapes.
#[derive(Deserialize)]
#[serde(untagged)]
enum SeriesFile {
    List(Vec<serde_json::Value>),
    Object(serde_json::Map<String, serde_json::Value>),
}

/// The longest series: a day, as every other load plan.
const MAX_TIME_S: f64 = 86_400.0;

impl RateSeries {
    /// Reads and checks `--request-rate-series FILE`.
    pub fn read(path: &Path) -> RunResult<RateSeries> {
        let flag = format!("--request-rate-series {}", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunError::bad_option(format!("{flag}: cannot read the file ({e}).")))?;
        RateSeries::parse(&text).map_err(|why| RunError::bad_option(format!("{flag}: {why}")))
    }

    /// The series in `text`, or why it is not one (a sentence without the flag).
    pub fn parse(text: &str) -> Result<RateSeries, String> {
        let shape =
            "give a JSON list of {\"time_s\": S, \"qps\": R} points, or {\"points\": [...]}.";
        let file: SeriesFile = serde_json::from_str(text)
            .map_err(|e| format!("not a JSON list of points ({e}); {shape}"))?;
        let values = match file {
            SeriesFile::List(values) => values,
            SeriesFile::Object(mut object) => match object.remove("points") {
                Some(serde_json::Value::Array(values)) if object.is_empty() => values,
                _ => {
                    return Err(format!(
                        "the object must have one key, points, a list; {shape}"
                    ))
                }
            },
        };
        let points = (values.into_iter().enumerate())
            .map(|(i, value)| {
                serde_json::from_value::<RatePoint>(value)
                    .map_err(|e| format!("point {i} is not {{\"time_s\": S, \"qps\": R}} ({e})."))
            })
            .collect::<Result<Vec<_>, _>>()?;
        check(&points)?;
        Ok(RateSeries { points })
    }

    /// The rate `t` seconds after the series starts: linear between points, the first
    /// point's before it, the last point's after it.
    pub fn qps_at(&self, t: f64) -> f64 {
        let points = &self.points;
        let first = points[0];
        let last = points[points.len() - 1];
        if t <= first.time_s {
            return first.qps;
        }
        if t >= last.time_s {
            return last.qps;
        }
        let right = points.partition_point(|p| p.time_s <= t);
        let (a, b) = (points[right - 1], points[right]);
        a.qps + (b.qps - a.qps) * (t - a.time_s) / (b.time_s - a.time_s)
    }

    /// The first point's rate, the run's rate as AIPerf names it (`request_rate2.0`).
    pub fn initial_qps(&self) -> f64 {
        self.points[0].qps
    }

    /// The last point's time, s.
    pub fn end_s(&self) -> f64 {
        self.points[self.points.len() - 1].time_s
    }
}

/// AIPerf's rules on the points.
fn check(points: &[RatePoint]) -> Result<(), String> {
    if points.len() < 2 {
        return Err(format!(
            "{} point(s): a series needs at least two.",
            points.len()
        ));
    }
    for (i, p) in points.iter().enumerate() {
        if !(p.time_s.is_finite() && (0.0..=MAX_TIME_S).contains(&p.time_s)) {
            return Err(format!(
                "point {i}: time_s {} is not between 0 and {MAX_TIME_S} seconds.",
                p.time_s
            ));
        }
        let (low, high) = (
            crate::config::bounds::MIN_RATE,
            crate::config::bounds::MAX_RATE,
        );
        if !(p.qps.is_finite() && p.qps >= low && p.qps <= high) {
            return Err(format!(
                "point {i}: qps {} is not a rate from {low} to {high} requests per second.",
                p.qps
            ));
        }
    }
    match points.windows(2).position(|w| w[1].time_s <= w[0].time_s) {
        Some(i) => Err(format!(
            "point {}: time_s {} does not come after {}; the times must increase strictly.",
            i + 1,
            points[i + 1].time_s,
            points[i].time_s
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_parse_and_the_rate_is_linear_between_points() {
        let list =
            r#"[{"time_s": 0, "qps": 2}, {"time_s": 5, "qps": 12}, {"time_s": 6, "qps": 4}]"#;
        let series = RateSeries::parse(list).unwrap();
        assert_eq!(series.points.len(), 3);
        let object = r#"{"points": [{"time_s": 1, "qps": 2}, {"time_s": 3, "qps": 6}]}"#;
        let held = RateSeries::parse(object).unwrap();
        assert_eq!(
            held.qps_at(0.0),
            2.0,
            "the first rate before the first point"
        );
        assert_eq!(held.qps_at(2.0), 4.0);
        assert_eq!(held.qps_at(10.0), 6.0, "the last rate after the last point");
        assert_eq!(series.qps_at(2.5), 7.0);
        assert_eq!(series.qps_at(5.5), 8.0);
        assert_eq!((series.initial_qps(), series.end_s()), (2.0, 6.0));
    }

    #[test]
    fn bad_series_say_what_is_wrong() {
        for (text, needle) in [
            (r#"[{"time_s": 0, "qps": 2}]"#, "at least two"),
            (
                r#"[{"time_s": 0, "qps": 2}, {"time_s": 0, "qps": 3}]"#,
                "increase strictly",
            ),
            (
                r#"[{"time_s": 2, "qps": 2}, {"time_s": 1, "qps": 3}]"#,
                "increase strictly",
            ),
            (
                r#"[{"time_s": 0, "qps": 0}, {"time_s": 1, "qps": 3}]"#,
                "qps 0",
            ),
            (
                r#"[{"time_s": -1, "qps": 1}, {"time_s": 1, "qps": 3}]"#,
                "time_s -1",
            ),
            (
                r#"[{"time_s": 0, "qps": 1, "x": 1}, {"time_s": 1, "qps": 3}]"#,
                "point 0",
            ),
            (r#"[{"time_s": 0}, {"time_s": 1, "qps": 3}]"#, "point 0"),
            (r#"{"points": [], "more": 1}"#, "one key, points"),
            (r#"{"rates": []}"#, "one key, points"),
            (r#"7"#, "not a JSON list"),
            ("[", "not a JSON list"),
        ] {
            let err = RateSeries::parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}

//! Numbers become durations, rates, counts and sizes here, and only here, so that no number
//! can panic in a conversion or run a program forever.
//!
//! A number a person gave (a flag, a field of a data file, a model option) goes through a
//! checked reader: finite, within the range it may take, else one sentence naming where it
//! came from, the value and the range (exit 3). A number the program computed (from a
//! measurement, or read back from a results file) goes through a saturating conversion,
//! which cannot panic. `readable` prints any number so a person can read it: `1e300`, not
//! three hundred digits.

use std::time::Duration;

use crate::error::{RunError, RunResult};

/// A day in milliseconds: the longest wait a data file may ask for (a turn's delay, a
/// replay's span), as the flags' waits.
pub const A_DAY_MS: f64 = 86_400_000.0;

/// The unit a duration is given in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    Micros,
}

impl TimeUnit {
    /// How many of this unit make a second.
    fn per_second(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1.0,
            TimeUnit::Millis => 1e3,
            TimeUnit::Micros => 1e6,
        }
    }

    /// The unit's name in a sentence.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Millis => "ms",
            TimeUnit::Micros => "µs",
        }
    }
}

/// A number `what` gave, if it is finite and from `min` to `max`; else one sentence with
/// the value and the range, `unit` naming what the number counts ("requests per second").
pub fn within(what: &str, value: f64, min: f64, max: f64, unit: &str) -> RunResult<f64> {
    if value.is_finite() && value >= min && value <= max {
        return Ok(value);
    }
    Err(refusal(what, &readable(value), min, max, unit))
}

/// A number read from text by `what`: a number within `min..=max`, else one sentence.
pub fn parse_within(what: &str, text: &str, min: f64, max: f64, unit: &str) -> RunResult<f64> {
    match text.trim().parse::<f64>() {
        Ok(value) => within(what, value, min, max, unit),
        Err(_) => Err(refusal(
            what,
            &format!("'{text}', not a number"),
            min,
            max,
            unit,
        )),
    }
}

/// `WHAT is SHOWN: give a number from MIN to MAX UNIT.`
fn refusal(what: &str, shown: &str, min: f64, max: f64, unit: &str) -> RunError {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    RunError::bad_option(format!(
        "{what} is {shown}: give a number from {} to {}{unit}.",
        readable(min),
        readable(max)
    ))
}

/// A duration `what` gave in `unit`, checked to lie within `min..=max` (in that unit).
pub fn duration(what: &str, value: f64, unit: TimeUnit, min: f64, max: f64) -> RunResult<Duration> {
    let value = within(what, value, min, max, unit.name())?;
    Ok(saturating_secs(value / unit.per_second()))
}

/// Seconds the program computed as a duration: NaN and below zero are zero, beyond what a
/// duration holds is the longest duration. Never panics.
pub fn saturating_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// Milliseconds the program computed as a duration (see [`saturating_secs`]).
pub fn saturating_millis(ms: f64) -> Duration {
    saturating_secs(ms / 1e3)
}

/// A number as a person reads it: up to six significant digits, in scientific notation
/// when it is very large or very small (`1e300`, `2.5e-7`), `NaN` and `inf` as such.
pub fn readable(value: f64) -> String {
    if !value.is_finite() {
        return format!("{value}");
    }
    let size = value.abs();
    if size != 0.0 && !(1e-4..1e15).contains(&size) {
        let text = format!("{value:.5e}");
        return trim_mantissa(&text);
    }
    let text = format!("{value:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" | "" => "0".to_string(),
        t => t.to_string(),
    }
}

/// A number with `decimals` places (`12.5` with 1), or in scientific notation when it is
/// too large or too small for them to read (`1e300`, never three hundred digits).
pub fn fixed(value: f64, decimals: usize) -> String {
    let size = value.abs();
    if value.is_finite() && size < 1e15 && (size == 0.0 || size >= 10f64.powi(-(decimals as i32))) {
        return format!("{value:.decimals$}");
    }
    readable(value)
}

/// [`fixed`] with its sign always written (`+12.5`, `-3.0`).
pub fn signed(value: f64, decimals: usize) -> String {
    let text = fixed(value, decimals);
    if text.starts_with('-') || text == "NaN" {
        text
    } else {
        format!("+{text}")
    }
}

/// `1.50000e300` → `1.5e300`.
fn trim_mantissa(text: &str) -> String {
    match text.split_once('e') {
        Some((mantissa, exponent)) => {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{mantissa}e{exponent}")
        }
        None => text.to_string(),
    }
}

/// Python's `repr` of a float, as GenAI-Perf puts a request rate in a folder name: `10.0`,
/// `2.5`, `0.1`.
pub fn python_float(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e16 {
        format!("{value:.1}")
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_within_their_range_or_named() {
        assert_eq!(within("--x", 5.0, 0.0, 10.0, "").unwrap(), 5.0);
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e300, 11.0] {
            let e = within("--x", bad, 0.0, 10.0, "ms").unwrap_err();
            assert_eq!(e.exit_code(), 3);
            let text = e.to_string();
            assert!(
                text.starts_with("--x is ") && text.ends_with("from 0 to 10 ms."),
                "{text}"
            );
        }
        let e = parse_within("--y", "x", 1.0, 2.0, "")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--y is 'x', not a number: give a number from 1 to 2.");
        assert_eq!(
            duration("--t", 1500.0, TimeUnit::Millis, 0.0, 1e4).unwrap(),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn computed_numbers_saturate() {
        assert_eq!(saturating_secs(f64::NAN), Duration::ZERO);
        assert_eq!(saturating_secs(-3.0), Duration::ZERO);
        assert_eq!(saturating_secs(1e300), Duration::MAX);
        assert_eq!(saturating_secs(f64::INFINITY), Duration::MAX);
        assert_eq!(saturating_millis(2.5), Duration::from_micros(2500));
    }

    #[test]
    fn numbers_print_short() {
        assert_eq!(readable(1e300), "1e300");
        assert_eq!(readable(1e-300), "1e-300");
        assert_eq!(readable(-2.5e-7), "-2.5e-7");
        assert_eq!(readable(1234.5), "1234.5");
        assert_eq!(readable(0.1 + 0.2), "0.3");
        assert_eq!(readable(100.0), "100");
        assert_eq!(readable(0.0), "0");
        assert_eq!(readable(f64::NAN), "NaN");
        assert_eq!(readable(18446744073709551616.0), "1.84467e19");
        assert_eq!(fixed(12.345, 1), "12.3");
        assert_eq!(fixed(1e300, 1), "1e300");
        assert_eq!(fixed(0.0, 1), "0.0");
        assert_eq!(signed(1e300, 1), "+1e300");
        assert_eq!(signed(-2.0, 1), "-2.0");
        assert_eq!(signed(0.5, 1), "+0.5");
    }
}

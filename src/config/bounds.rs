//! The largest values the flags may take, each with its reason, so that an absurd number is
//! one sentence before the run instead of an overflow, an allocation that aborts the process
//! or a run that never ends. The bounds sit far above any real measurement.

use std::time::Duration;

use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::number::TimeUnit;

/// The longest a window, a request's wait or a load plan may last.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
/// The fastest schedule one client process can keep: one send every 100 ns.
pub const MAX_RATE: f64 = 10_000_000.0;
/// The slowest rate: one request every 1000 s. Slower, a window of the longest length
/// (a day) would hold too few requests to say anything.
pub const MIN_RATE: f64 = 0.001;
/// The percentiles inferperf reads: from 0.001 to 99.999 (the histograms keep three
/// significant digits, so a finer percentile would not be a different figure).
pub const PERCENTILES: (f64, f64) = (0.001, 99.999);

/// Whether `p` is a percentile inferperf reads.
pub fn is_percentile(p: f64) -> bool {
    (PERCENTILES.0..=PERCENTILES.1).contains(&p)
}

/// The longest latency limit (`-l`, `--slo`), in µs: a day.
pub const MAX_LATENCY_LIMIT_US: f64 = 86_400e6;
/// The shortest latency limit, in µs: a nanosecond is below what a clock here reads.
pub const MIN_LATENCY_LIMIT_US: f64 = 0.001;

/// The most warm-up requests: far more than any server needs to warm up.
pub const MAX_WARMUP_REQUESTS: u64 = 100_000_000;
/// The largest request inferperf builds, in bytes (gRPC's message size limit is 2 GiB too).
pub const MAX_REQUEST_BYTES: u64 = 2 << 30;

/// `-p MS` (a window's length): at least 1 ms, at most a day.
pub fn window_ms(value: u64) -> RunResult<Duration> {
    if value == 0 {
        return Err(RunError::bad_option("-p must be at least 1."));
    }
    let max_ms = MAX_DURATION.as_millis() as u64;
    if value > max_ms {
        return Err(RunError::bad_option(format!(
            "-p {value} ms is longer than a day: a window is at most {max_ms} ms; use -r for more windows."
        )));
    }
    Ok(Duration::from_millis(value))
}

/// `--request-timeout S`: above 0, at most a day.
/// `--send-slack`: at most 1 ms, the lag from which a send counts as late.
pub fn send_slack(micros: u64) -> RunResult<Duration> {
    if micros > 1000 {
        return Err(RunError::bad_option(format!(
            "--send-slack {micros} µs would make sends late by design (a send over 1 ms behind its schedule is late): give at most 1000."
        )));
    }
    Ok(Duration::from_micros(micros))
}

pub fn request_timeout(seconds: f64) -> RunResult<Duration> {
    seconds_flag("--request-timeout", seconds, MIN_TIMEOUT_S)
}

/// The shortest time a wait may be given: a millisecond (a wait of less ends before the
/// request could be sent).
pub const MIN_TIMEOUT_S: f64 = 0.001;

/// A flag in seconds: from `min` to a day.
pub fn seconds_flag(flag: &str, seconds: f64, min: f64) -> RunResult<Duration> {
    let max = MAX_DURATION.as_secs_f64();
    inferperf_wire::number::duration(flag, seconds, TimeUnit::Seconds, min, max)
}

/// The most `--max-response-bytes` may be: 64 GiB, more than this kind of machine holds.
pub const MAX_RESPONSE_BYTES: u64 = 64 << 30;

/// `--max-response-bytes N`: at least 1, at most [`MAX_RESPONSE_BYTES`].
pub fn max_response_bytes(value: u64) -> RunResult<usize> {
    if value == 0 {
        return Err(RunError::bad_option(
            "--max-response-bytes 0 would refuse every answer: give at least 1 (the default is 1 GiB).",
        ));
    }
    if value > MAX_RESPONSE_BYTES {
        return Err(RunError::bad_option(format!(
            "--max-response-bytes {value}: an answer that large would not fit in memory; give at most {MAX_RESPONSE_BYTES} (64 GiB)."
        )));
    }
    usize::try_from(value).map_err(|_| {
        RunError::bad_option(format!(
            "--max-response-bytes {value} does not fit this machine's address space."
        ))
    })
}

/// A request rate of `flag`: from [`MIN_RATE`] to [`MAX_RATE`].
pub fn rate(value: f64, flag: &str) -> RunResult<f64> {
    if value.is_finite() && value > MAX_RATE {
        return Err(RunError::bad_option(format!(
            "{flag} is {} requests per second, beyond what one client can schedule (one send every 100 ns, 1e7 per second): spread the load over several client processes.",
            inferperf_wire::number::readable(value)
        )));
    }
    inferperf_wire::number::within(flag, value, MIN_RATE, MAX_RATE, "requests per second")
}

/// `--warmup-request-count N`: at most [`MAX_WARMUP_REQUESTS`].
pub fn warmup_requests(value: u64) -> RunResult<u64> {
    if value > MAX_WARMUP_REQUESTS {
        return Err(RunError::bad_option(format!(
            "--warmup-request-count {value} would warm up for longer than any measurement: give at most {MAX_WARMUP_REQUESTS}."
        )));
    }
    Ok(value)
}

/// A request of `bytes` (its tensors' data), refused before it is built when it is larger
/// than [`MAX_REQUEST_BYTES`]; `lower` says what to lower.
pub fn request_size(bytes: u128, lower: &str) -> RunResult<()> {
    if bytes > MAX_REQUEST_BYTES as u128 {
        return Err(RunError::bad_option(format!(
            "Each request would need {}; inferperf builds requests of at most 2 GiB: lower {lower}.",
            human_bytes(bytes)
        )));
    }
    Ok(())
}

/// `93 GiB`, `1.5 GiB`, `512 MiB`.
fn human_bytes(bytes: u128) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let gib = bytes as f64 / GIB;
    if gib >= 10.0 {
        format!("{gib:.0} GiB")
    } else if gib >= 1.0 {
        format!("{gib:.1} GiB")
    } else {
        format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_is_a_sentence_with_its_reason() {
        assert!(window_ms(86_400_000).is_ok());
        let e = window_ms(86_400_001).unwrap_err().to_string();
        assert!(e.contains("longer than a day"), "{e}");
        let e = request_timeout(1e20).unwrap_err().to_string();
        assert!(e.contains("from 0.001 to 86400 seconds"), "{e}");
        assert!(rate(1e300, "--request-rate-range").is_err());
        assert!(rate(MAX_RATE, "--request-rate-range").is_ok());
        assert!(warmup_requests(MAX_WARMUP_REQUESTS + 1).is_err());
        let e = request_size(100 << 30, "--string-length")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("100 GiB") && e.contains("lower --string-length"),
            "{e}"
        );
        assert!(request_size(2 << 30, "x").is_ok());
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}

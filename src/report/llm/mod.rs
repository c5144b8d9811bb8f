//! The reports of LLM runs (`--service-kind openai`): GenAI-Perf's table on the console, and
//! with `--artifact-dir` the files GenAI-Perf and AIPerf leave behind, so that the scripts
//! and habits built around those tools keep working on inferperf's figures. Every figure
//! comes from the level's merged windows (the same numbers the console shows); only
//! perf_analyzer's `profile_export.json` lists requests one by one, from the level's
//! request log. This module holds what the writers share: which distribution each figure
//! is, in which unit, and how numbers are printed.

pub mod aiperf;
mod aiperf_level;
pub mod aiperf_records;
pub mod aiperf_telemetry;
pub mod artifacts;
pub mod console;
pub mod genai_perf;
pub mod json;
pub mod payloads;
pub mod timeslices;
pub mod turns;

use crate::measure::distribution::Distribution;
use crate::measure::window::WindowStats;
pub use inferperf_wire::number::python_float;

/// The percentiles GenAI-Perf and AIPerf report, ascending. The merged windows the exports
/// read are never compacted, so every one is at hand; a caller that compacts windows and
/// wants these kept must add them to the list it keeps (in `config`, above this module).
pub const LLM_PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Nanoseconds per millisecond.
const NS_PER_MS: f64 = 1e6;

/// A per-request figure of an LLM level: which of the window's distributions holds it and
/// the scale to the unit it is reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Time to first token, from the scheduled send (ms).
    FirstToken,
    /// From the first answer to the second (ms).
    SecondToken,
    /// Per request, (latency − time to first token) / (output tokens − 1) (ms).
    InterToken,
    /// Every gap between two answers with content (ms).
    InterChunk,
    /// Request latency from the scheduled send to the last answer (ms).
    Latency,
    /// From the actual send to the last answer (ms).
    Service,
    /// How late each send was against its schedule (ms; 0 in closed loop).
    SendLag,
    OutputTokens,
    InputTokens,
    /// Output tokens per second per user, 1 / inter-token latency.
    PerUser,
    /// The HTTP phases of a request (ms).
    Connecting,
    Sending,
    Waiting,
    Receiving,
    /// Time to the first content that is not reasoning (ms).
    FirstOutput,
    /// Reasoning tokens per request.
    ReasoningTokens,
    /// Output tokens that are not reasoning, per request.
    ContentTokens,
    /// The server's `usage.prompt_tokens` per request.
    UsagePromptTokens,
    /// The server's `usage.prompt_tokens_details.cached_tokens` per request.
    UsagePromptCacheRead,
    /// |server − tokenizer| / tokenizer of prompts and of answers (%).
    UsagePromptDiff,
    UsageCompletionDiff,
    /// |output − max_tokens| / max_tokens (%).
    OslMismatchDiff,
}

impl Figure {
    /// Whether the figure is about reasoning, and so shown only for runs that had some.
    pub fn is_reasoning(self) -> bool {
        matches!(
            self,
            Figure::FirstOutput | Figure::ReasoningTokens | Figure::ContentTokens
        )
    }
}

impl Figure {
    /// The figure's values in `w`, in their reporting unit; `None` when it has none.
    pub fn stats(self, w: &WindowStats) -> Option<Stats<'_>> {
        let tokens = w.tokens.as_deref();
        let (distribution, scale) = match self {
            Figure::FirstToken => (Some(&w.first_response), 1.0 / NS_PER_MS),
            Figure::SecondToken => (tokens.map(|t| &t.second_token), 1.0 / NS_PER_MS),
            Figure::InterToken => (tokens.map(|t| &t.inter_token), 1.0 / NS_PER_MS),
            Figure::InterChunk => (Some(&w.inter_response), 1.0 / NS_PER_MS),
            Figure::Latency => (Some(&w.latency), 1.0 / NS_PER_MS),
            Figure::Service => (Some(&w.service), 1.0 / NS_PER_MS),
            Figure::SendLag => (Some(&w.send_lag), 1.0 / NS_PER_MS),
            Figure::OutputTokens => (tokens.map(|t| &t.output_tokens), 1.0),
            Figure::InputTokens => (tokens.map(|t| &t.input_tokens), 1.0),
            Figure::PerUser => (tokens.map(|t| &t.per_user_milli), 1e-3),
            Figure::Connecting => (tokens.map(|t| &t.connecting), 1.0 / NS_PER_MS),
            Figure::Sending => (tokens.map(|t| &t.sending), 1.0 / NS_PER_MS),
            Figure::Waiting => (tokens.map(|t| &t.waiting), 1.0 / NS_PER_MS),
            Figure::Receiving => (tokens.map(|t| &t.receiving), 1.0 / NS_PER_MS),
            Figure::FirstOutput => (tokens.map(|t| &t.first_output), 1.0 / NS_PER_MS),
            Figure::ReasoningTokens => (tokens.map(|t| &t.reasoning_tokens), 1.0),
            Figure::ContentTokens => (tokens.map(|t| &t.content_tokens), 1.0),
            Figure::UsagePromptTokens => (tokens.map(|t| &t.usage_input_tokens), 1.0),
            Figure::UsagePromptCacheRead => (tokens.map(|t| &t.usage_cached_tokens), 1.0),
            Figure::UsagePromptDiff => (tokens.map(|t| &t.usage_prompt_diff), 1e-3),
            Figure::UsageCompletionDiff => (tokens.map(|t| &t.usage_completion_diff), 1e-3),
            Figure::OslMismatchDiff => (tokens.map(|t| &t.osl_mismatch_diff), 1e-3),
        };
        let had_reasoning = tokens.is_some_and(|t| t.reasoning_tokens.sum() > 0);
        if self.is_reasoning() && !had_reasoning {
            return None;
        }
        distribution
            .filter(|d| d.count() > 0)
            .map(|distribution| Stats {
                distribution,
                scale,
            })
    }
}

/// The share of prompt tokens the server served from its prefix cache, in percent: all
/// requests' `cached_tokens` over their `prompt_tokens` (AIPerf's
/// `overall_usage_prompt_cache_read_pct`); `None` when the server sent no cached counts.
pub fn cache_read_pct(w: &WindowStats) -> Option<f64> {
    let tokens = w.tokens.as_deref()?;
    let cached = &tokens.usage_cached_tokens;
    let prompt = &tokens.usage_input_tokens;
    if cached.count() == 0 || prompt.sum() == 0 {
        return None;
    }
    Some(100.0 * cached.sum() as f64 / prompt.sum() as f64)
}

/// The statistics of one figure in its reporting unit. Percentiles come from the window's
/// HDR histogram (3 significant digits), not from every value as numpy's are.
#[derive(Debug, Clone, Copy)]
pub struct Stats<'a> {
    distribution: &'a Distribution,
    scale: f64,
}

impl Stats<'_> {
    pub fn count(&self) -> u64 {
        self.distribution.count()
    }

    pub fn avg(&self) -> f64 {
        self.distribution.mean() * self.scale
    }

    pub fn min(&self) -> f64 {
        self.distribution.min() * self.scale
    }

    pub fn max(&self) -> f64 {
        self.distribution.max() * self.scale
    }

    /// The population standard deviation (numpy's `std`).
    pub fn std(&self) -> f64 {
        self.distribution.std() * self.scale
    }

    pub fn sum(&self) -> f64 {
        self.distribution.sum() as f64 * self.scale
    }

    /// The value at percentile `p`, clamped to the exact extremes (a histogram bucket's
    /// upper end may lie past the largest value recorded).
    pub fn percentile(&self, p: f64) -> f64 {
        let value = self.distribution.percentile(p) * self.scale;
        value.clamp(self.min(), self.max())
    }
}

/// The model name as a folder name: GenAI-Perf replaces each `/` of a Hugging Face name
/// with `_`.
pub fn model_folder_name(model: &str) -> String {
    model.replace('/', "_")
}

/// Python's `f"{x:,.2f}"`: two decimals and a comma between each group of three digits.
pub fn grouped_two_decimals(value: f64) -> String {
    let text = format!("{value:.2}");
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if !whole.bytes().all(|b| b.is_ascii_digit()) {
        return text; // inf, NaN
    }
    let mut grouped = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{sign}{grouped}.{fraction}")
}

/// A CSV row as Python's `csv.writer` writes it: fields quoted when they hold a comma, a
/// quote or a line break, and the line ended by `\r\n`.
pub fn csv_row<S: AsRef<str>>(fields: &[S]) -> String {
    let cells: Vec<String> = fields
        .iter()
        .map(|field| {
            let field = field.as_ref();
            if field.contains([',', '"', '\r', '\n']) {
                format!("\"{}\"", field.replace('"', "\"\""))
            } else {
                field.to_string()
            }
        })
        .collect();
    format!("{}\r\n", cells.join(","))
}

/// Nanoseconds since the epoch as an ISO 8601 date and time in UTC, without a zone, as
/// Python's `datetime.isoformat()` writes one (`2026-11-24T00:06:12.567205`).
pub fn iso_utc(epoch_ns: u64) -> String {
    let secs = epoch_ns / 1_000_000_000;
    let micros = (epoch_ns % 1_000_000_000) / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    let time = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    match micros {
        0 => time,
        us => format!("{time}.{us:06}"),
    }
}

/// The Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// An OpenAI run's recorded settings (`-m test-model -u localhost:8000 --service-kind
/// openai`, and `--endpoint v1/chat/completions` unless `extra` names one) with `extra` flags.
#[cfg(test)]
pub(crate) fn test_llm_settings(extra: &[&str]) -> crate::results::Settings {
    let mut args = vec![
        "-m",
        "test-model",
        "-u",
        "localhost:8000",
        "--service-kind",
        "openai",
    ];
    if !extra.contains(&"--endpoint") {
        args.extend(["--endpoint", "v1/chat/completions"]);
    }
    args.extend_from_slice(extra);
    crate::results::test_settings(&args)
}

/// Four streamed generations over 2 s: time to first token 10/20/30/40 ms, then 4 more
/// answers 5 ms apart, 20 output and 100 input tokens each (counted from usage), HTTP
/// phases of 1 ms sending and 2 ms receiving; plus one timeout.
#[cfg(test)]
pub(crate) fn test_llm_window() -> WindowStats {
    use crate::backend::{ErrorKind, TokenSource, Tokens};
    use crate::measure::sample::Sample;
    use std::time::{Duration, Instant};
    let t = Instant::now();
    let ms = Duration::from_millis;
    let mut w = WindowStats::new(1);
    w.duration = Duration::from_secs(2);
    w.windows = 1;
    for i in 1..=4u64 {
        let first = t + ms(10 * i);
        let mut s = Sample::once(t, t, first + ms(20));
        s.first = first;
        s.answers = 5;
        s.gaps = 4;
        s.send_ns = 1_000_000;
        s.recv_ns = 2_000_000;
        s.connect_ns = if i == 1 { 3_000_000 } else { 0 };
        s.tokens = Tokens {
            output: 20,
            input: 100,
            source: TokenSource::Usage,
            unstreamed: false,
            ..Default::default()
        };
        w.add(&s, &[5_000_000; 4]);
    }
    w.add(&Sample::failed(t, t, t + ms(60), ErrorKind::Timeout), &[]);
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_come_in_their_reporting_units() {
        let w = test_llm_window();
        let ttft = Figure::FirstToken.stats(&w).unwrap();
        assert_eq!(ttft.count(), 4);
        assert!((ttft.avg() - 25.0).abs() < 1e-9);
        assert!((ttft.min() - 10.0).abs() < 1e-9 && (ttft.max() - 40.0).abs() < 1e-9);
        assert!((ttft.sum() - 100.0).abs() < 1e-9);
        assert!((ttft.std() - 125f64.sqrt()).abs() < 1e-9);
        assert!((ttft.percentile(99.0) - 40.0).abs() < 0.05);
        let itl = Figure::InterToken.stats(&w).unwrap();
        assert!((itl.avg() - 20.0 / 19.0).abs() < 1e-6, "{}", itl.avg());
        let per_user = Figure::PerUser.stats(&w).unwrap();
        assert!((per_user.avg() - 950.0).abs() < 0.01, "{}", per_user.avg());
        assert_eq!(Figure::InterChunk.stats(&w).unwrap().count(), 16);
        assert!((Figure::Connecting.stats(&w).unwrap().avg() - 0.75).abs() < 1e-9);
        let empty = WindowStats::new(1);
        assert!(Figure::SecondToken.stats(&empty).is_none());
        assert!(Figure::Latency.stats(&empty).is_none());
    }

    #[test]
    fn numbers_and_rows_print_as_python_prints_them() {
        assert_eq!(grouped_two_decimals(1234567.891), "1,234,567.89");
        assert_eq!(grouped_two_decimals(999.999), "1,000.00");
        assert_eq!(grouped_two_decimals(12.5), "12.50");
        assert_eq!(grouped_two_decimals(-1234.5), "-1,234.50");
        assert_eq!(grouped_two_decimals(0.125), "0.12");
        assert_eq!(
            csv_row(&["a", "1,234.00", "say \"hi\""]),
            "a,\"1,234.00\",\"say \"\"hi\"\"\"\r\n"
        );
        assert_eq!(python_float(10.0), "10.0");
        assert_eq!(python_float(2.5), "2.5");
        assert_eq!(python_float(0.1), "0.1");
        assert_eq!(
            model_folder_name("meta-llama/Llama-3-8B"),
            "meta-llama_Llama-3-8B"
        );
    }

    #[test]
    fn times_print_as_python_isoformat_in_utc() {
        assert_eq!(
            iso_utc(1_795_478_772_567_205_000),
            "2026-11-24T00:06:12.567205"
        );
        assert_eq!(iso_utc(951_868_799_000_000_000), "2000-02-29T23:59:59");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00");
    }
}

//! `--slo`: service-level objectives such as `p99<=50ms`, `p99.9<=20ms` or `avg<5ms`. A
//! level meets the SLO when every condition holds on its reported latency (its last windows
//! merged, counted from the scheduled send as every latency inferperf reports). This is the
//! parsing; `measure::slo` judges windows against the conditions.

use std::fmt;

use inferperf_wire::error::{RunError, RunResult};

/// The percentiles perf_analyzer always reports, in ascending order.
pub const STANDARD_PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];
/// The percentiles GenAI-Perf and AIPerf report for LLM runs.
pub const LLM_PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

impl super::Config {
    /// Time to first token needs answers that stream (or an LLM run); inter-token latency
    /// needs tokens (an LLM run).
    pub(super) fn check_llm_slo(&self) -> RunResult<()> {
        for condition in &self.measure.slo {
            let refused = match condition.figure {
                SloFigure::Latency => None,
                SloFigure::Ttft if self.target.llm().is_none() && !self.target.streaming => Some(
                    "time to first token is measured on streamed answers: add --streaming (or use --service-kind openai)",
                ),
                SloFigure::Itl if self.target.llm().is_none() => {
                    Some("inter-token latency is measured on LLM runs: use --service-kind openai")
                }
                _ => None,
            };
            if let Some(why) = refused {
                return Err(RunError::bad_option(format!("--slo '{condition}': {why}.")));
            }
        }
        Ok(())
    }
}

/// Which latency figure a condition looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloMetric {
    /// The mean (`avg` or `mean`).
    Mean,
    /// A percentile in (0, 100), e.g. 99.9.
    Percentile(f64),
}

/// Which figure's distribution a condition looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SloFigure {
    /// Request latency (`p99`, `latency_p99`, `e2e_p99`).
    Latency,
    /// Time to first token / first answer (`ttft_p99`).
    Ttft,
    /// Inter-token latency per request (`itl_p99`), for LLM runs.
    Itl,
}

impl SloFigure {
    fn prefix(self) -> &'static str {
        match self {
            SloFigure::Latency => "",
            SloFigure::Ttft => "ttft_",
            SloFigure::Itl => "itl_",
        }
    }

    fn name(self) -> &'static str {
        match self {
            SloFigure::Latency => "latency",
            SloFigure::Ttft => "time to first token",
            SloFigure::Itl => "inter-token latency",
        }
    }
}

/// One condition: `[FIGURE_]METRIC <= LIMIT` (or `<`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SloCondition {
    pub figure: SloFigure,
    pub metric: SloMetric,
    /// `<` rather than `<=`.
    pub strict: bool,
    pub limit_us: f64,
}

impl SloCondition {
    /// The name of the figure as reports print it: `p99 latency`, `avg time to first token`.
    pub fn metric_label(&self) -> String {
        let figure = self.figure.name();
        match self.metric {
            SloMetric::Mean => format!("avg {figure}"),
            SloMetric::Percentile(p) => {
                format!("p{} {figure}", inferperf_wire::number::readable(p))
            }
        }
    }
}

impl fmt::Display for SloCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let metric = match self.metric {
            SloMetric::Mean => "avg".to_string(),
            SloMetric::Percentile(p) => format!("p{}", inferperf_wire::number::readable(p)),
        };
        let op = if self.strict { "<" } else { "<=" };
        let figure = self.figure.prefix();
        write!(f, "{figure}{metric}{op}{}", format_limit(self.limit_us))
    }
}

/// A limit in the most readable unit: `50ms`, `250us`, `1.5s`.
fn format_limit(us: f64) -> String {
    if (us >= 1e6 && (us / 1e6).fract() == 0.0) || us >= 1e7 {
        format!("{}s", us / 1e6)
    } else if us >= 1000.0 {
        format!("{}ms", us / 1000.0)
    } else {
        format!("{us}us")
    }
}

/// Every `--slo` value, each a comma-separated list of conditions.
pub fn parse_slo(values: &[String]) -> RunResult<Vec<SloCondition>> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(parse_condition)
        .collect()
}

fn parse_condition(text: &str) -> RunResult<SloCondition> {
    let bad = || {
        RunError::bad_option(format!(
            "--slo '{text}' is not a latency condition: write [FIGURE_]METRIC<=LIMIT with FIGURE latency, e2e, ttft or itl, METRIC avg or pNN (e.g. p99, p99.9) and LIMIT in us, ms or s, as in --slo 'p99<=50ms,ttft_p99<=200ms'."
        ))
    };
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (metric, strict, limit) = if let Some((m, l)) = compact.split_once("<=") {
        (m, false, l)
    } else if let Some((m, l)) = compact.split_once('<') {
        (m, true, l)
    } else {
        return Err(bad());
    };
    let (figure, metric) = parse_figure(metric).ok_or_else(bad)?;
    let metric = parse_metric(metric).ok_or_else(bad)?;
    let limit_us = parse_limit_us(limit).ok_or_else(bad)?;
    Ok(SloCondition {
        figure,
        metric,
        strict,
        limit_us,
    })
}

/// Splits `ttft_p99` into its figure and metric (`p99` alone is request latency).
fn parse_figure(text: &str) -> Option<(SloFigure, &str)> {
    let Some((figure, metric)) = text.split_once('_') else {
        return Some((SloFigure::Latency, text));
    };
    let figure = match figure.to_ascii_lowercase().as_str() {
        "latency" | "e2e" | "request_latency" => SloFigure::Latency,
        "ttft" => SloFigure::Ttft,
        "itl" => SloFigure::Itl,
        _ => return None,
    };
    Some((figure, metric))
}

fn parse_metric(text: &str) -> Option<SloMetric> {
    let lower = text.to_ascii_lowercase();
    match lower.as_str() {
        "avg" | "mean" => return Some(SloMetric::Mean),
        _ => {}
    }
    let p: f64 = lower.strip_prefix('p')?.parse().ok()?;
    super::bounds::is_percentile(p).then_some(SloMetric::Percentile(p))
}

/// `50ms`, `250us`, `1.5s` in µs (positive and finite).
fn parse_limit_us(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    let (number, scale) = if let Some(n) = lower.strip_suffix("ms") {
        (n, 1000.0)
    } else if let Some(n) = lower
        .strip_suffix("us")
        .or_else(|| lower.strip_suffix("µs"))
    {
        (n, 1.0)
    } else if let Some(n) = lower.strip_suffix('s') {
        (n, 1e6)
    } else {
        return None;
    };
    let value: f64 = number.parse().ok()?;
    let us = value * scale;
    let (least, most) = (
        super::bounds::MIN_LATENCY_LIMIT_US,
        super::bounds::MAX_LATENCY_LIMIT_US,
    );
    (value.is_finite() && (least..=most).contains(&us)).then_some(us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> SloCondition {
        let list = parse_slo(&[text.to_string()]).unwrap();
        assert_eq!(list.len(), 1);
        list[0]
    }

    #[test]
    fn conditions_parse_with_units_and_percentiles() {
        let c = one("p99<=50ms");
        assert_eq!(c.metric, SloMetric::Percentile(99.0));
        assert!(!c.strict);
        assert_eq!(c.limit_us, 50_000.0);
        assert_eq!(one("p99.9 <= 20ms").metric, SloMetric::Percentile(99.9));
        let avg = one("avg<5ms");
        assert_eq!(avg.metric, SloMetric::Mean);
        assert!(avg.strict);
        assert_eq!(one("P50<=250us").limit_us, 250.0);
        assert_eq!(one("mean<=1.5s").limit_us, 1_500_000.0);
        let list = parse_slo(&["p99<=50ms, avg<=20ms".into(), "p90<=30ms".into()]).unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[2].metric, SloMetric::Percentile(90.0));
    }

    #[test]
    fn llm_figures_have_their_prefix() {
        let c = one("ttft_p99<=200ms");
        assert_eq!(
            (c.figure, c.metric),
            (SloFigure::Ttft, SloMetric::Percentile(99.0))
        );
        assert_eq!(one("itl_avg<=20ms").figure, SloFigure::Itl);
        assert_eq!(one("e2e_p90<=1s").figure, SloFigure::Latency);
        assert_eq!(one("latency_p99.9<=1s").metric, SloMetric::Percentile(99.9));
        assert_eq!(one("ttft_p99<=200ms").to_string(), "ttft_p99<=200ms");
        assert_eq!(
            one("itl_p50<=5ms").metric_label(),
            "p50 inter-token latency"
        );
        assert!(parse_condition("tpot_p99<=5ms").is_err());
    }

    #[test]
    fn conditions_print_as_written() {
        assert_eq!(one("p99<=50ms").to_string(), "p99<=50ms");
        assert_eq!(one("p99.9<20ms").to_string(), "p99.9<20ms");
        assert_eq!(one("avg<=250us").to_string(), "avg<=250us");
        assert_eq!(one("avg<=2s").to_string(), "avg<=2s");
    }

    #[test]
    fn bad_conditions_are_one_sentence_and_exit_code_3() {
        for text in [
            "p99=50ms",
            "p99<=50",
            "p100<=5ms",
            "p0<=5ms",
            "q99<=5ms",
            "p99<=-1ms",
            "p99<=fast",
            "p99>=5ms",
            "",
        ] {
            let err = parse_condition(text).unwrap_err();
            assert_eq!(
                err.exit_code(),
                inferperf_wire::error::EXIT_BAD_OPTION,
                "{text}"
            );
            assert!(err.to_string().starts_with("--slo '"), "{err}");
            assert!(!err.to_string().contains('\n') && err.to_string().ends_with('.'));
        }
    }
}

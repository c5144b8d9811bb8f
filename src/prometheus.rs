//! A parser for the Prometheus text exposition format (version 0.0.4), which Triton, the
//! embedded server, MLServer, TorchServe and most servers expose on `/metrics`. Written here
//! because the crates that parse it split labels on `,` and `=` and so break on escaped or
//! comma-holding label values; this one follows the format's grammar: `# HELP` and `# TYPE`
//! lines, samples `name{label="value",…} value [timestamp]` with `\\`, `\"` and `\n`
//! escapes, `NaN`/`+Inf`/`-Inf`, and histogram and summary families whose samples carry the
//! family's `_bucket`/`_sum`/`_count` suffixes.

use std::collections::HashMap;

/// The type a `# TYPE` line gives a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
    Summary,
    #[default]
    Untyped,
}

impl MetricKind {
    fn parse(text: &str) -> MetricKind {
        match text {
            "counter" => MetricKind::Counter,
            "gauge" => MetricKind::Gauge,
            "histogram" => MetricKind::Histogram,
            "summary" => MetricKind::Summary,
            _ => MetricKind::Untyped,
        }
    }
}

/// Label names and values, in the order the line gives them.
pub type Labels = Vec<(String, String)>;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSample {
    /// The sample's own name (`x_bucket`, `x_sum`, … for histogram parts).
    pub name: String,
    /// The family the sample belongs to (`x` for `x_bucket`), and the family's type.
    pub family: String,
    pub kind: MetricKind,
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// Milliseconds since the epoch, when the line gives one.
    pub timestamp_ms: Option<i64>,
}

impl MetricSample {
    pub fn label(&self, name: &str) -> Option<&str> {
        let found = self.labels.iter().find(|(k, _)| k == name);
        found.map(|(_, v)| v.as_str())
    }
}

/// Every sample of a page, in order, and the families' help texts.
#[derive(Debug, Default)]
pub struct MetricsPage {
    pub samples: Vec<MetricSample>,
    pub help: HashMap<String, String>,
}

/// Parses a whole page; `Err` names the first malformed line and what is wrong with it.
pub fn parse(text: &str) -> Result<MetricsPage, String> {
    let mut page = MetricsPage::default();
    let mut kinds: HashMap<String, MetricKind> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let fail = |why: &str| format!("line {}: {why}: '{}'", index + 1, clip(line));
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            read_comment(comment, &mut kinds, &mut page.help);
            continue;
        }
        let mut sample = parse_sample(line).map_err(|why| fail(&why))?;
        let (family, kind) = family_of(&sample.name, &kinds);
        sample.family = family;
        sample.kind = kind;
        page.samples.push(sample);
    }
    Ok(page)
}

fn clip(line: &str) -> String {
    line.chars().take(80).collect()
}

/// `# HELP name text` and `# TYPE name type`; other comments are ignored.
fn read_comment(
    comment: &str,
    kinds: &mut HashMap<String, MetricKind>,
    help: &mut HashMap<String, String>,
) {
    let mut words = comment.trim_start().splitn(3, char::is_whitespace);
    match (words.next(), words.next(), words.next()) {
        (Some("TYPE"), Some(name), Some(kind)) => {
            kinds.insert(name.to_string(), MetricKind::parse(kind.trim()));
        }
        (Some("HELP"), Some(name), text) => {
            let text = unescape(text.unwrap_or("").trim(), false);
            help.insert(name.to_string(), text);
        }
        _ => {}
    }
}

/// The family a sample belongs to: its own name when typed, else the name without a
/// histogram or summary suffix when that family is typed so.
fn family_of(name: &str, kinds: &HashMap<String, MetricKind>) -> (String, MetricKind) {
    if let Some(kind) = kinds.get(name) {
        return (name.to_string(), *kind);
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        let Some(base) = name.strip_suffix(suffix) else {
            continue;
        };
        match kinds.get(base) {
            Some(MetricKind::Histogram) => return (base.to_string(), MetricKind::Histogram),
            Some(MetricKind::Summary) if suffix != "_bucket" => {
                return (base.to_string(), MetricKind::Summary)
            }
            _ => {}
        }
    }
    (name.to_string(), MetricKind::Untyped)
}

/// `name[{labels}] value [timestamp]`.
fn parse_sample(line: &str) -> Result<MetricSample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if !valid_name(name) {
        return Err("not a metric name".into());
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, tail) = parse_labels(after)?;
        labels = parsed;
        rest = tail;
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or("no value")?;
    let value = parse_value(value).ok_or_else(|| format!("'{value}' is not a number"))?;
    let timestamp_ms = match fields.next() {
        Some(t) => Some(t.parse().map_err(|_| format!("'{t}' is not a timestamp"))?),
        None => None,
    };
    if fields.next().is_some() {
        return Err("unexpected text after the timestamp".into());
    }
    Ok(MetricSample {
        name: name.to_string(),
        family: String::new(),
        kind: MetricKind::Untyped,
        labels,
        value,
        timestamp_ms,
    })
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Labels after the `{`, up to and including the `}`; returns them and the text after.
pub(crate) fn parse_labels(mut text: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start();
        if let Some(after) = text.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = text.find('=').ok_or("a label without '='")?;
        let name = text[..eq].trim();
        if !valid_name(name) || name.contains(':') {
            return Err(format!("'{name}' is not a label name"));
        }
        let after_eq = text[eq + 1..].trim_start();
        let quoted = after_eq
            .strip_prefix('"')
            .ok_or("a label value must be quoted")?;
        let (value, after_value) = quoted_value(quoted)?;
        labels.push((name.to_string(), value));
        text = after_value.trim_start();
        text = text.strip_prefix(',').unwrap_or(text);
    }
}

/// A quoted label value after its opening quote: the unescaped value and the text after the
/// closing quote.
fn quoted_value(text: &str) -> Result<(String, &str), String> {
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Ok((unescape(&text[..i], true), &text[i + 1..])),
            _ => {}
        }
    }
    Err("a label value without its closing quote".into())
}

/// Undoes `\\`, `\n` and (in label values) `\"`; other backslashes stay as they are.
fn unescape(text: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('"') if quotes => out.push('"'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A sample value: a float, or `NaN`, `+Inf`, `-Inf` (any case).
fn parse_value(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "+inf" | "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        other => other.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../tests/fixtures/prometheus.txt");

    fn find<'a>(
        page: &'a MetricsPage,
        name: &str,
        label: Option<(&str, &str)>,
    ) -> &'a MetricSample {
        page.samples
            .iter()
            .find(|s| s.name == name && label.is_none_or(|(k, v)| s.label(k) == Some(v)))
            .unwrap_or_else(|| panic!("no sample {name} {label:?}"))
    }

    #[test]
    fn counters_gauges_and_untyped_lines() {
        let page = parse(FIXTURE).expect("fixture parses");
        let c = find(&page, "http_requests_total", Some(("code", "400")));
        assert_eq!(
            (c.kind, c.value, c.timestamp_ms),
            (MetricKind::Counter, 3.0, Some(1395066363000))
        );
        let g = find(&page, "nv_gpu_utilization", Some(("gpu_uuid", "GPU-b2a1")));
        assert_eq!((g.kind, g.value), (MetricKind::Gauge, 0.5));
        let u = find(&page, "metric_without_timestamp_and_labels", None);
        assert_eq!(
            (u.kind, u.value, u.timestamp_ms),
            (MetricKind::Untyped, 12.47, None)
        );
        assert_eq!(find(&page, "something_weird", None).value, f64::INFINITY);
        assert!(find(&page, "not_a_number", None).value.is_nan());
        assert_eq!(
            page.help["http_requests_total"],
            "The total number of HTTP requests.\nSecond line \\ backslash."
        );
    }

    #[test]
    fn label_values_with_escapes_commas_and_equals() {
        let page = parse(FIXTURE).expect("fixture parses");
        let s = find(&page, "msdos_file_access_time_seconds", None);
        assert_eq!(s.label("path"), Some(r"C:\DIR\FILE.TXT"));
        assert_eq!(s.label("error"), Some("Cannot find file:\n\"FILE.TXT\""));
        let odd = find(&page, "odd_labels", None);
        assert_eq!(odd.label("list"), Some("a,b=c}"));
        assert_eq!(odd.label("empty"), Some(""));
    }

    #[test]
    fn histogram_and_summary_parts_belong_to_their_family() {
        let page = parse(FIXTURE).expect("fixture parses");
        let inf = find(
            &page,
            "http_request_duration_seconds_bucket",
            Some(("le", "+Inf")),
        );
        assert_eq!(
            (inf.family.as_str(), inf.kind, inf.value),
            (
                "http_request_duration_seconds",
                MetricKind::Histogram,
                144320.0
            )
        );
        let count = find(&page, "http_request_duration_seconds_count", None);
        assert_eq!(count.kind, MetricKind::Histogram);
        let q = find(&page, "rpc_duration_seconds", Some(("quantile", "0.99")));
        assert_eq!((q.kind, q.value), (MetricKind::Summary, 76656.0));
        let sum = find(&page, "rpc_duration_seconds_sum", None);
        assert_eq!(
            (sum.family.as_str(), sum.value),
            ("rpc_duration_seconds", 1.7560473e7)
        );
    }

    #[test]
    fn malformed_lines_are_named() {
        for (text, why) in [
            ("x{a=\"1 2", "closing quote"),
            ("x{a=\"1\" 2", "without '='"),
            ("x{a=1} 2", "quoted"),
            ("x 1 2 3", "after the timestamp"),
            ("x abc", "not a number"),
            ("9x 1", "metric name"),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.contains("line 1") && err.contains(why), "{text}: {err}");
        }
    }
}

//! The recorded settings read back as the values the reports and the record need: the
//! servers, the `--slo` conditions, the `--metric` specs, the LLM endpoint, the TLS
//! warnings, where the results file goes. A report is rendered from these alone (never
//! from the configuration), so that a run merged from its shards' files is reported by the
//! same code as a run measured whole.

use std::path::PathBuf;

use crate::config::{
    parse_slo, Endpoint, MetricSpec, SloCondition, TlsSettings, LLM_PERCENTILES, RESULTS_FILE_NAME,
};
use crate::results::schema::{LoadSettings, Settings};

/// Where the results file goes, and the flag that said so (for a refusal that names it).
pub struct ResultsPath {
    /// `--report-dir` or `--results-file`.
    pub flag: &'static str,
    /// What was given to the flag.
    pub given: PathBuf,
    /// The file.
    pub path: PathBuf,
}

impl Settings {
    /// Every `-u` server in order (the one `url` when the run had one).
    pub fn servers(&self) -> &[String] {
        if self.urls.is_empty() {
            std::slice::from_ref(&self.url)
        } else {
            &self.urls
        }
    }

    /// The `--slo` conditions, each with its text as recorded (which is how the reports
    /// print it); a text that does not parse (a file edited by hand) is left out.
    pub fn slo_conditions(&self) -> Vec<(&str, SloCondition)> {
        self.slo
            .iter()
            .filter_map(|text| {
                let parsed = parse_slo(std::slice::from_ref(text)).ok()?;
                let [condition] = parsed.as_slice() else {
                    return None;
                };
                Some((text.as_str(), *condition))
            })
            .collect()
    }

    /// The `--metric` specs, in order (none without `--collect-metrics`).
    pub fn metric_specs(&self) -> Vec<MetricSpec> {
        let texts = self.metrics.iter().flat_map(|m| &m.metrics);
        texts.filter_map(|text| text.parse().ok()).collect()
    }

    /// The OpenAI endpoint of an LLM run: its recorded type, or the type of its path.
    pub fn llm_endpoint(&self) -> Option<Endpoint> {
        let llm = self.llm.as_ref()?;
        if let Some(name) = &llm.endpoint_type {
            return Endpoint::from_type_name(name);
        }
        Endpoint::ALL.into_iter().find(|e| e.path() == llm.endpoint)
    }

    /// `--extra-inputs` as (key, JSON value) pairs, in order.
    pub fn llm_extra_inputs(&self) -> Vec<(String, serde_json::Value)> {
        let fields = self.llm.iter().flat_map(|l| &l.extra_inputs);
        fields.filter_map(|field| extra_input(field)).collect()
    }

    /// The warnings of a TLS run that does not check the server.
    pub fn tls_warnings(&self) -> Vec<String> {
        let Some(tls) = &self.tls else {
            return Vec::new();
        };
        let mut settings = TlsSettings::system_default();
        settings.verify_peer = tls.verify_peer;
        settings.verify_host = tls.verify_host;
        settings.warnings()
    }

    /// Where the results file goes, when the run writes one.
    pub fn results_path(&self) -> Option<ResultsPath> {
        let outputs = &self.outputs;
        match (&outputs.report_dir, &outputs.results_file) {
            (Some(dir), _) => Some(ResultsPath {
                flag: "--report-dir",
                given: PathBuf::from(dir),
                path: PathBuf::from(dir).join(RESULTS_FILE_NAME),
            }),
            (None, Some(file)) => Some(ResultsPath {
                flag: "--results-file",
                given: PathBuf::from(file),
                path: PathBuf::from(file),
            }),
            (None, None) => None,
        }
    }

    /// Whether the load followed a plan over time (`--ramp`, `--load-steps`).
    pub fn is_timeline(&self) -> bool {
        matches!(self.load, LoadSettings::Timeline { .. })
    }

    /// The percentiles the distributions of the run's windows keep: those reported, and
    /// for an LLM run GenAI-Perf's and AIPerf's too.
    pub fn kept_percentiles(&self) -> Vec<f64> {
        let mut kept = self.reported_percentiles.clone();
        if self.llm.is_some() {
            for p in LLM_PERCENTILES {
                if !kept.contains(&p) {
                    kept.push(p);
                }
            }
            kept.sort_by(f64::total_cmp);
        }
        kept
    }
}

/// `key:value` as recorded, the value JSON; the key may hold a colon (a field of a JSON
/// object given whole), so the first colon after which JSON follows splits it.
fn extra_input(field: &str) -> Option<(String, serde_json::Value)> {
    field.match_indices(':').find_map(|(at, _)| {
        let value = serde_json::from_str(&field[at + 1..]).ok()?;
        Some((field[..at].to_string(), value))
    })
}

/// The settings a run of `inferperf profile ARGS` records (for tests).
#[cfg(test)]
pub(crate) fn test_settings(args: &[&str]) -> Settings {
    let mut argv = vec!["inferperf", "profile"];
    argv.extend_from_slice(args);
    let cli = crate::cli::parse_command_line(argv).expect("the flags parse");
    let crate::cli::Command::Profile(args) = cli.command else {
        unreachable!("the profile subcommand was given");
    };
    let cfg = crate::config::Config::from_args(&args).expect("the flags are valid");
    crate::results::record::settings::settings(
        &cfg.target,
        &cfg.data,
        &cfg.load,
        &cfg.measure,
        &cfg.output,
        &cfg.arguments,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(flags: &[&str]) -> Settings {
        let mut args = vec!["-m", "test"];
        args.extend_from_slice(flags);
        test_settings(&args)
    }

    #[test]
    fn the_reports_read_back_what_the_flags_said() {
        let s = recorded(&[
            "-u",
            "a:1,b:2",
            "--slo",
            "p99<=1.1ms,ttft_avg<2s",
            "--streaming",
            "-i",
            "grpc",
            "--collect-metrics",
            "--metric",
            "x_total:rate",
        ]);
        assert_eq!(s.servers(), ["a:1", "b:2"]);
        let slo = s.slo_conditions();
        assert_eq!(slo.len(), 2);
        assert_eq!(slo[0].0, "p99<=1.1ms");
        assert_eq!(slo[1].1.to_string(), "ttft_avg<2s");
        assert_eq!(s.metric_specs()[0].text, "x_total:rate");
        assert!(s.results_path().is_none());
        assert!(!s.is_timeline());
    }

    #[test]
    fn an_extra_input_splits_at_the_colon_before_its_value() {
        assert_eq!(
            extra_input("temperature:0.5"),
            Some(("temperature".into(), serde_json::json!(0.5)))
        );
        assert_eq!(
            extra_input("a:b:\"c:d\""),
            Some(("a:b".into(), serde_json::json!("c:d")))
        );
        assert_eq!(extra_input("nothing"), None);
    }
}

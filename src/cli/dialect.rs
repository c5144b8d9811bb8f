//! Whose command line this is. inferperf takes perf_analyzer's command line and AIPerf's,
//! and where the two tools leave a setting out they mean different things by it (AIPerf's
//! default endpoint is chat, its default run is 10 requests; perf_analyzer's default is a
//! KServe model measured in windows until stable). The rule, stated once in docs/aiperf.md:
//! a `profile` command line is AIPerf's when it names a flag that only AIPerf has and none
//! that only perf_analyzer has; otherwise it is perf_analyzer's. The flag that decided is
//! kept, so the console can say which rule applied and why.

use super::aiperf_flags::aiperf_flag;

/// Which tool's meaning a command line has where it is silent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Dialect {
    /// perf_analyzer's defaults (also inferperf's own): no flag of AIPerf's alone, or one
    /// of perf_analyzer's alone beside it (`because`, when there was one).
    #[default]
    PerfAnalyzer,
    /// AIPerf 0.13's defaults: `because` is the AIPerf-only flag that decided, as typed.
    Aiperf { because: String },
}

impl Dialect {
    /// Whether AIPerf's defaults apply.
    pub fn is_aiperf(&self) -> bool {
        matches!(self, Dialect::Aiperf { .. })
    }
}

/// Long flags perf_analyzer has that AIPerf 0.13 does not (names as typed after `--`).
/// A flag both tools have (`--streaming`, `--request-count`, `--warmup-request-count`,
/// `--fixed-schedule`, `--endpoint`, `--profile-export-file`) decides nothing.
pub const PERF_ANALYZER_ONLY_LONG: &[&str] = &[
    "service-kind",
    "model-signature-name",
    "bls-composing-models",
    "concurrency-range",
    "request-rate-range",
    "request-distribution",
    "request-intervals",
    "periodic-concurrency-range",
    "request-period",
    "session-concurrency",
    "binary-search",
    "latency-threshold",
    "max-threads",
    "async",
    "sync",
    "request-parameter",
    "serial-sequences",
    "measurement-mode",
    "measurement-interval",
    "measurement-request-count",
    "stability-percentage",
    "max-trials",
    "percentile",
    "num-of-sequences",
    "sequence-length",
    "sequence-length-variation",
    "sequence-id-range",
    "input-data",
    "shape",
    "string-length",
    "string-data",
    "input-tensor-format",
    "output-tensor-format",
    "shared-memory",
    "output-shared-memory-size",
    "data-directory",
    "grpc-compression-algorithm",
    "grpc-method",
    "triton-server-directory",
    "model-repository",
    "collect-metrics",
    "metrics-url",
    "metrics-interval",
    "verbose-csv",
    "trace-level",
    "trace-rate",
    "trace-count",
    "log-frequency",
    "enable-mpi",
    "ssl-grpc-use-ssl",
    "ssl-grpc-root-certifications-file",
    "ssl-grpc-private-key-file",
    "ssl-grpc-certificate-chain-file",
    "ssl-https-verify-peer",
    "ssl-https-verify-host",
    "ssl-https-ca-certificates-file",
    "ssl-https-client-certificate-file",
    "ssl-https-client-certificate-type",
    "ssl-https-private-key-file",
    "ssl-https-private-key-type",
];

/// Short flags perf_analyzer has that AIPerf 0.13 does not (`-m`, `-u`, `-H`, `-b`, `-f`
/// and `-v` are both tools').
pub const PERF_ANALYZER_ONLY_SHORT: &[char] =
    &['x', 'i', 'p', 's', 'r', 'l', 'a', 't', 'c', 'd', 'z'];

/// Long flags both tools have, under the same name: they decide nothing.
const SHARED_LONG: &[&str] = &[
    "streaming",
    "request-count",
    "warmup-request-count",
    "fixed-schedule",
    "endpoint",
    "profile-export-file",
    "verbose",
];

/// The dialect of a `profile` command line (the arguments after `profile`, AIPerf's other
/// names not yet rewritten).
pub fn dialect_of(args: &[String]) -> Dialect {
    let mut aiperf_flag = None;
    let mut iter = args.iter().peekable();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            if PERF_ANALYZER_ONLY_LONG.contains(&name) {
                return Dialect::PerfAnalyzer;
            }
            // `--model NAME=KIND` defines a built-in model of --service-kind local.
            let value = inline.or_else(|| iter.peek().map(|v| v.as_str()));
            let local_model = name == "model" && value.is_some_and(|v| v.contains('='));
            if aiperf_flag.is_none() && is_aiperf_only(name) && !local_model {
                aiperf_flag = Some(format!("--{name}"));
            }
        } else if let Some(short) = arg.strip_prefix('-').and_then(|s| s.chars().next()) {
            if PERF_ANALYZER_ONLY_SHORT.contains(&short) {
                return Dialect::PerfAnalyzer;
            }
        }
    }
    match aiperf_flag {
        Some(because) => Dialect::Aiperf { because },
        None => Dialect::PerfAnalyzer,
    }
}

/// Whether `name` is a long flag of AIPerf 0.13's that perf_analyzer does not have.
pub fn is_aiperf_only(name: &str) -> bool {
    aiperf_flag(name).is_some() && !SHARED_LONG.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(line: &str) -> Dialect {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        dialect_of(&args)
    }

    #[test]
    fn an_aiperf_flag_alone_makes_the_line_aiperfs() {
        assert_eq!(
            of("--model m --url http://h:8000 --request-count 5"),
            Dialect::Aiperf {
                because: "--model".into()
            }
        );
        assert!(of("-m m --endpoint-type=chat").is_aiperf());
        assert!(of("-m m -u h --concurrency 4").is_aiperf());
    }

    #[test]
    fn a_perf_analyzer_flag_makes_the_line_perf_analyzers() {
        assert_eq!(
            of("-m m -u h:8000 --concurrency-range 1:4"),
            Dialect::PerfAnalyzer
        );
        assert_eq!(of("--model m --url h -p 2000"), Dialect::PerfAnalyzer);
        assert_eq!(of("--model m --service-kind openai"), Dialect::PerfAnalyzer);
        assert_eq!(of("--url h -i grpc"), Dialect::PerfAnalyzer);
        assert_eq!(
            of("--url h --measurement-interval=800"),
            Dialect::PerfAnalyzer
        );
    }

    #[test]
    fn shared_and_inferperf_flags_decide_nothing() {
        assert_eq!(
            of("-m m -u h --streaming --request-count 9"),
            Dialect::PerfAnalyzer
        );
        assert_eq!(
            of("-m m --report-dir out --slo p99<=5ms"),
            Dialect::PerfAnalyzer
        );
        // A built-in model of --service-kind local is inferperf's --model.
        assert_eq!(of("--model a=identity -m a"), Dialect::PerfAnalyzer);
        assert_eq!(of("--model=a=identity -m a"), Dialect::PerfAnalyzer);
        // After `--` nothing is a flag.
        assert_eq!(of("-m m -- --url h"), Dialect::PerfAnalyzer);
    }
}

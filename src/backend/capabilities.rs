//! What an API can do, as one table: the questions the rest of the program asks about an
//! API — does it stream, are its answers counted in tokens, where do the server's statistics
//! come from, can it play sequences or pass tensors in shared memory, what answers once a
//! server is ready, how do reports and exports name it. Each adapter fills it in its own
//! folder under `api/` (its `CAPABILITIES`); the registry (`backend/mod.rs`) looks them up
//! by service kind or by the name the results file records.

/// What one API can do, and how reports name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `--service-kind`'s value: the API's name in the results file's settings.
    pub name: &'static str,
    /// The service kind perf_analyzer's profile export names (the embedded models answer as
    /// Triton does).
    pub export_name: &'static str,
    /// What `--streaming` does with this API.
    pub streaming: Streaming,
    /// Answers are text counted in tokens, so the LLM figures apply.
    pub tokens: bool,
    /// Where the server-side breakdown comes from.
    pub server_statistics: ServerStatistics,
    /// Requests carry a sequence's controls, so sequence models can be measured.
    pub sequences: bool,
    /// `--shared-memory system` can carry the tensors.
    pub shared_memory: bool,
    /// The path a sweep polls until it answers 200, once the server it started is ready
    /// (`{model}` stands for the model's name).
    pub readiness_path: &'static str,
    /// The models run inside this process: what shares its CPU with the client (the console's
    /// client CPU line). A call then marshals as gRPC does.
    pub in_process: Option<&'static str>,
    /// The console's name for one call's time, when it is not the protocol's (HTTP, gRPC).
    pub call_name: Option<&'static str>,
}

/// What `--streaming` does with an API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streaming {
    /// Nothing: every request has one answer.
    None,
    /// Requests go over a gRPC stream (KServe's `ModelStreamInfer`), each answer timed.
    GrpcStream,
    /// Answers come as server-sent events, each event timed.
    ServerSentEvents,
    /// An in-process call's answers are each timed as they come.
    InProcess,
}

/// Where an API's server-side breakdown (queue, compute) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStatistics {
    /// The API has none.
    None,
    /// Triton's statistics extension, over HTTP or gRPC.
    StatisticsExtension,
    /// The server's Prometheus counters, read as statistics.
    PrometheusMetrics,
    /// The models in this process, asked directly.
    InProcess,
}

impl ServerStatistics {
    /// Whether there is anything to read.
    pub fn available(self) -> bool {
        self != ServerStatistics::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{capabilities, ALL};
    use crate::cli::{normalize_args, Cli, Command};
    use crate::config::Config;
    use clap::Parser;
    use inferperf_wire::error::RunResult;

    fn config(args: &[&str]) -> RunResult<Config> {
        let mut all = vec!["inferperf", "-m", "m"];
        all.extend_from_slice(args);
        let line = normalize_args(all.iter().map(|s| s.to_string()).collect());
        let Command::Profile(p) = Cli::try_parse_from(line).expect("flags parse").command else {
            panic!("expected profile");
        };
        Config::from_args(&p)
    }

    /// The table says what the flags allow: an API takes `--streaming` and `--shared-memory
    /// system` exactly when its table says it can, and counts tokens exactly when the run
    /// has LLM settings.
    #[test]
    fn the_table_agrees_with_the_flags() {
        let kinds: [(&str, &[&str]); 5] = [
            ("triton", &["-i", "grpc"]),
            ("local", &[]),
            ("openai", &["--endpoint", "v1/chat/completions"]),
            ("tfserving", &[]),
            ("torchserve", &[]),
        ];
        for (kind, base) in kinds {
            let with = |extra: &[&str]| {
                let mut args = vec!["--service-kind", kind];
                args.extend_from_slice(base);
                args.extend_from_slice(extra);
                config(&args)
            };
            let run = with(&[]).expect("a valid run");
            let table = capabilities(run.target.service_kind());
            assert_eq!(table.name, kind);
            assert_eq!(table.tokens, run.target.llm().is_some(), "{kind}: tokens");
            let streams = with(&["--streaming"]).is_ok();
            assert_eq!(
                table.streaming != Streaming::None,
                streams,
                "{kind}: streaming"
            );
            let shm = with(&["--shared-memory", "system"]).is_ok();
            assert_eq!(table.shared_memory, shm, "{kind}: shared memory");
        }
    }

    #[test]
    fn every_api_has_its_own_name() {
        for (i, c) in ALL.iter().enumerate() {
            assert_eq!(Capabilities::named(c.name), Some(*c));
            assert!(ALL[..i].iter().all(|earlier| earlier.name != c.name));
        }
    }
}

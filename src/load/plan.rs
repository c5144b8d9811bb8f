//! What the levels of a run are driven and measured under: the load and measure sections of
//! the configuration, and the few facts the other boxes decide, handed down by the command
//! (so that the profiler takes no more of the configuration than is its own).

use crate::config::convergence::ConvergenceMode;
use crate::config::{LoadConfig, MeasureConfig, OpenAiConfig};
use crate::measure::distribution::Compaction;
use crate::measure::window::WindowStats;

/// The sections and facts a profiler or a timeline run works from.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    pub load: &'a LoadConfig,
    pub measure: &'a MeasureConfig,
    /// Inferences per request (`-b`, from the data section): throughput counts them.
    pub batch_size: u32,
    /// The LLM settings of an OpenAI run (from the target section): its token counting,
    /// its percentiles, its artifacts.
    pub llm: Option<&'a OpenAiConfig>,
    /// A results file is written (output section): windows keep their histograms until
    /// their level is recorded.
    pub keep_histograms: bool,
    /// `--profile-export-file` is written (output section): every request is logged.
    pub profile_export: bool,
}

impl<'a> Plan<'a> {
    /// The plan of these sections, with one inference per request, no LLM, and no file
    /// that needs histograms or logged requests.
    pub fn new(load: &'a LoadConfig, measure: &'a MeasureConfig) -> Plan<'a> {
        Plan {
            load,
            measure,
            batch_size: 1,
            llm: None,
            keep_histograms: false,
            profile_export: false,
        }
    }

    /// An empty window of the run, over `replicas` servers.
    pub fn window(&self, replicas: usize) -> WindowStats {
        WindowStats::for_run(self.measure, self.batch_size, replicas)
    }

    /// What a level's windows keep while it is measured (see [`Compaction::for_run`]).
    pub fn compaction(&self) -> Compaction {
        Compaction::for_run(self.measure, self.llm.is_some(), self.keep_histograms)
    }

    /// Whether every request is logged: for `--profile-export-file` or an LLM run's
    /// artifacts, which list each request with its wall-clock times; and for the adaptive
    /// stop's distribution test, which compares the runs' requests.
    pub fn logs_requests(&self) -> bool {
        let artifacts = self.llm.is_some_and(|l| l.artifact_dir.is_some());
        artifacts || self.profile_export || self.keeps_requests()
    }

    /// Whether a level's logged requests stay in its result after its reports: the
    /// adaptive stop's distribution test reads them once the run has ended.
    pub fn keeps_requests(&self) -> bool {
        (self.measure.repeats.convergence.as_ref())
            .is_some_and(|c| c.mode == ConvergenceMode::Distribution)
    }

    /// `--use-server-token-count`: output lengths come from the server's `usage` alone.
    pub fn server_token_count(&self) -> bool {
        self.llm.is_some_and(|l| l.use_server_token_count)
    }
}

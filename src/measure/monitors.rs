//! What the profiler records beside the client's samples at every window boundary: this
//! process's CPU time, the server's statistics delta and the scraped server metrics. Each
//! monitor is optional; one that cannot start says why in a sentence, and the run goes on.

use std::time::{Duration, Instant};

use super::cpu::process_cpu_time;
use super::server::metrics::MetricsScraper;
use super::server::stats::ServerStatsReader;
use super::window::WindowStats;
use crate::backend::Target;
use crate::config::ServerStatistics;
use crate::config::{GpuTelemetry, MeasureConfig};
use inferperf_wire::model::ModelSpec;

/// The monitors of one run.
#[derive(Default)]
pub struct Monitors {
    server: Option<ServerStatsReader>,
    metrics: Option<MetricsScraper>,
    /// `--gpu-telemetry`'s readings, added to the window's metrics.
    gpu: Option<MetricsScraper>,
    cpu_mark: Duration,
}

/// Monitors that are running, and a sentence for each that could not start.
pub struct StartedMonitors {
    pub monitors: Monitors,
    pub notes: Vec<String>,
}

impl Monitors {
    /// Opens the server statistics reader and (if asked) the metrics scraper.
    pub async fn start(
        measure: &MeasureConfig,
        target: &Target,
        model: &ModelSpec,
    ) -> StartedMonitors {
        let mut notes = Vec::new();
        // An API without server statistics (OpenAI-compatible servers, TF Serving, an
        // arbitrary gRPC method) has nothing to read.
        let server = match target.api.capabilities().server_statistics {
            ServerStatistics::None => None,
            _ => ServerStatsReader::open(target, model)
                .await
                .map_err(|why| notes.push(why))
                .ok(),
        };
        let metrics = match &measure.metrics {
            Some(m) => MetricsScraper::start(m)
                .await
                .map_err(|why| notes.push(why))
                .ok(),
            None => None,
        };
        let gpu = match &measure.gpu_telemetry {
            Some(GpuTelemetry::Dcgm(page)) => MetricsScraper::start(page).await,
            Some(GpuTelemetry::Nvml { interval }) => MetricsScraper::start_nvml(*interval),
            None => Err(String::new()),
        };
        let gpu = gpu
            .map_err(|why| notes.extend((!why.is_empty()).then_some(why)))
            .ok();
        for scraper in metrics.iter().chain(&gpu) {
            notes.extend(scraper.notes.iter().cloned());
        }
        StartedMonitors {
            monitors: Monitors {
                server,
                metrics,
                gpu,
                cpu_mark: process_cpu_time(),
            },
            notes,
        }
    }

    /// Whether the server statistics are being read.
    pub fn has_server_stats(&self) -> bool {
        self.server.is_some()
    }

    /// Starts the readings over at a level's start, forgetting what came before.
    pub async fn restart(&mut self, at: Instant) {
        self.stamp(&mut WindowStats::new(1), at).await;
    }

    /// Fills a window's CPU time, server delta and metrics up to its boundary.
    pub async fn stamp(&mut self, window: &mut WindowStats, boundary: Instant) {
        let cpu = process_cpu_time();
        window.client_cpu = cpu.saturating_sub(self.cpu_mark);
        self.cpu_mark = cpu;
        if let Some(reader) = &mut self.server {
            window.server = reader.mark().await;
        }
        if let Some(scraper) = &self.metrics {
            scraper.scrape_at(boundary).await;
            window.metrics = Some(scraper.take_until(boundary));
        }
        if let Some(scraper) = &self.gpu {
            scraper.scrape_at(boundary).await;
            let gpus = scraper.take_until(boundary);
            window
                .metrics
                .get_or_insert_with(Default::default)
                .merge(&gpus);
        }
    }
}

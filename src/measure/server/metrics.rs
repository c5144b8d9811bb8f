//! Server metrics from a Prometheus endpoint (`--collect-metrics`, `--metric`): a task
//! scrapes the page every `--metrics-interval` during the run, keeps only the series a
//! report needs, and each window takes the scrapes that fell inside it. GPU metrics are
//! aggregated as perf_analyzer does (utilization and power averaged, memory used as the
//! maximum, total memory as the first value, per GPU uuid); the server's CPU and memory and
//! any `--metric NAME[{labels}][:avg|max|rate]` come on top.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::backend::transport::page_client::PageClient;

use super::engine_metrics::is_engine_counter;
use super::gpu_series::{dcgm_values, is_gpu_counter};
use super::nvml::Nvml;
pub use crate::config::Engine;
use crate::config::MetricsConfig;
pub use crate::config::{MetricAggregation, MetricSpec};
use crate::prometheus::{self, MetricSample};

/// perf_analyzer's four GPU metrics and how each is aggregated.
pub const GPU_METRICS: [(&str, MetricAggregation); 4] = [
    ("nv_gpu_utilization", MetricAggregation::Avg),
    ("nv_gpu_power_usage", MetricAggregation::Avg),
    ("nv_gpu_memory_used_bytes", MetricAggregation::Max),
    ("nv_gpu_memory_total_bytes", MetricAggregation::First),
];

/// The server's own CPU and memory, as Prometheus clients and Triton name them.
pub const PROCESS_METRICS: [(&str, MetricAggregation); 4] = [
    ("process_cpu_seconds_total", MetricAggregation::Rate),
    ("process_resident_memory_bytes", MetricAggregation::Max),
    ("nv_cpu_utilization", MetricAggregation::Avg),
    ("nv_cpu_memory_used_bytes", MetricAggregation::Max),
];

/// One scrape, reduced to the tracked series (key → value).
#[derive(Debug, Clone)]
struct Scrape {
    at: Instant,
    values: BTreeMap<String, f64>,
}

/// A tracked series over a window: enough to give its mean, maximum, first value and rate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeriesStats {
    pub count: u64,
    pub sum: f64,
    pub max: f64,
    pub first: f64,
    /// Increase and elapsed seconds between consecutive scrapes (for rates).
    pub increase: f64,
    pub seconds: f64,
}

impl SeriesStats {
    fn record(&mut self, value: f64) {
        if self.count == 0 {
            self.first = value;
            self.max = value;
        }
        self.count += 1;
        self.sum += value;
        self.max = self.max.max(value);
    }

    fn merge(&mut self, other: &SeriesStats) {
        if self.count == 0 {
            self.first = other.first;
            self.max = other.max;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
        self.increase += other.increase;
        self.seconds += other.seconds;
    }

    /// The value under an aggregation; `None` when nothing (or no pair, for a rate) was seen.
    pub fn value(&self, how: MetricAggregation) -> Option<f64> {
        match how {
            _ if self.count == 0 => None,
            MetricAggregation::Avg => Some(self.sum / self.count as f64),
            MetricAggregation::Max => Some(self.max),
            MetricAggregation::First => Some(self.first),
            MetricAggregation::Rate => (self.seconds > 0.0).then(|| self.increase / self.seconds),
        }
    }
}

/// The metrics of one window (or merged windows), by series key: `name` or `name|uuid` for
/// GPU series, `--metric` text for the user's metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsWindow {
    pub series: BTreeMap<String, SeriesStats>,
    pub scrapes: u64,
    pub failed_scrapes: u64,
    /// Why the last scrape failed, if one did.
    pub last_error: Option<String>,
    /// The engine whose series the `engine:` keys hold (`--server-metrics`).
    pub engine: Option<Engine>,
    /// The longest a boundary's page was read after the boundary (seconds): whatever ended
    /// in that time is in the engine's counts of the window and in the client's next one.
    pub read_late_s: f64,
}

impl MetricsWindow {
    pub fn merge(&mut self, other: &MetricsWindow) {
        for (key, stats) in &other.series {
            self.series.entry(key.clone()).or_default().merge(stats);
        }
        self.scrapes += other.scrapes;
        self.failed_scrapes += other.failed_scrapes;
        self.engine = self.engine.or(other.engine);
        self.read_late_s = self.read_late_s.max(other.read_late_s);
        if other.last_error.is_some() {
            self.last_error.clone_from(&other.last_error);
        }
    }

    /// The GPU uuids seen for a GPU metric, with its aggregated value, in uuid order.
    pub fn per_gpu(&self, metric: &str, how: MetricAggregation) -> Vec<(String, f64)> {
        let prefix = format!("{metric}|");
        self.series
            .iter()
            .filter_map(|(k, s)| Some((k.strip_prefix(&prefix)?.to_string(), s.value(how)?)))
            .collect()
    }

    /// A plain series' aggregated value.
    pub fn value(&self, key: &str, how: MetricAggregation) -> Option<f64> {
        self.series.get(key)?.value(how)
    }
}

/// What the scraper has gathered and not yet handed to a window.
#[derive(Default)]
struct Pending {
    scrapes: Vec<Scrape>,
    /// The last scrape handed out, so that a rate spans window boundaries.
    previous: Option<Scrape>,
    failed: u64,
    last_error: Option<String>,
    /// The longest a boundary's read ended after its boundary, since the last window.
    read_late: Duration,
}

/// What a scrape keeps of a page: GPU and process series, each `--metric`, and the
/// engine's series when `--server-metrics` asks for them.
#[derive(Debug, Clone)]
struct Tracked {
    specs: Vec<MetricSpec>,
    engine: Option<Engine>,
    /// A DCGM exporter's GPU series (`--gpu-telemetry URL`).
    dcgm: bool,
}

/// Where the readings come from: a Prometheus page, or NVML.
enum Source {
    /// Prometheus pages, read together; their series added up.
    Pages(Vec<Page>),
    Nvml(Nvml),
}

/// A Prometheus page and the client that reads it.
struct Page {
    client: PageClient,
    url: hyper::Uri,
}

impl Source {
    /// One reading, reduced to the tracked series.
    async fn read(&self, tracked: &Tracked) -> Result<Scrape, String> {
        match self {
            Source::Pages(pages) => scrape(pages, tracked).await,
            Source::Nvml(nvml) => Ok(Scrape {
                at: Instant::now(),
                values: nvml.read(),
            }),
        }
    }
}

/// The background scraper.
pub struct MetricsScraper {
    pending: Arc<Mutex<Pending>>,
    tracked: Arc<Tracked>,
    source: Arc<Source>,
    /// Whether the series are read again at each window's end (counters that must end
    /// where the window's requests do: an engine's, a GPU's energy).
    aligned: bool,
    task: tokio::task::JoinHandle<()>,
    /// What to say about the scraping before the run (an engine not recognised).
    pub notes: Vec<String>,
}

impl MetricsScraper {
    /// Scrapes once to check the endpoint, then starts scraping every interval. `Err` is
    /// the sentence to print when the endpoint cannot be read.
    pub async fn start(cfg: &MetricsConfig) -> Result<MetricsScraper, String> {
        let mut pages = Vec::with_capacity(1 + cfg.more_urls.len());
        let (mut at, mut samples) = (Instant::now(), Vec::new());
        for given in std::iter::once(&cfg.url).chain(&cfg.more_urls) {
            let (page, read) = open_page(given, cfg).await?;
            at = read.0;
            samples.extend(read.1);
            pages.push(page);
        }
        let url = match cfg.more_urls.len() {
            0 => cfg.url.clone(),
            n => format!("{} (and {n} more pages)", cfg.url),
        };
        let mut notes = Vec::new();
        let engine = match cfg.engine {
            Some(preset) => preset.or_else(|| Engine::recognise(&samples)),
            None => None,
        };
        if cfg.engine == Some(None) && engine.is_none() {
            notes.push(format!("Server metrics: {url} has no series of an engine inferperf knows (vllm:, sglang:, tgi_, llamacpp:, trtllm:, nv_inference_); the report has no engine figures. Name the engine with --server-metrics-preset."));
        }
        if cfg.dcgm && !samples.iter().any(|s| s.name.starts_with("DCGM_FI_DEV_")) {
            notes.push(format!("GPU telemetry: {url} has no DCGM_FI_DEV_* series (is it a DCGM exporter's page?); the report has no GPU figures."));
        }
        let tracked = Tracked {
            specs: cfg.specs.clone(),
            engine,
            dcgm: cfg.dcgm,
        };
        let first = Scrape {
            at,
            values: tracked_values(&samples, &tracked),
        };
        let aligned = engine.is_some() || cfg.dcgm;
        let source = Source::Pages(pages);
        Ok(MetricsScraper::run(
            first,
            tracked,
            source,
            aligned,
            cfg.interval,
            notes,
        ))
    }

    /// Reads this machine's GPUs through NVML every `interval` (`--gpu-telemetry nvml`).
    /// `Err` is the sentence to print when there is none.
    pub fn start_nvml(interval: Duration) -> Result<MetricsScraper, String> {
        let nvml = Nvml::open()?;
        let first = Scrape {
            at: Instant::now(),
            values: nvml.read(),
        };
        let tracked = Tracked {
            specs: Vec::new(),
            engine: None,
            dcgm: false,
        };
        let source = Source::Nvml(nvml);
        Ok(MetricsScraper::run(
            first,
            tracked,
            source,
            true,
            interval,
            Vec::new(),
        ))
    }

    fn run(
        first: Scrape,
        tracked: Tracked,
        source: Source,
        aligned: bool,
        interval: Duration,
        notes: Vec<String>,
    ) -> MetricsScraper {
        let (tracked, source) = (Arc::new(tracked), Arc::new(source));
        let pending = Arc::new(Mutex::new(Pending {
            scrapes: vec![first],
            ..Pending::default()
        }));
        let task = tokio::spawn(scrape_loop(
            source.clone(),
            tracked.clone(),
            pending.clone(),
            interval,
        ));
        MetricsScraper {
            pending,
            tracked,
            source,
            aligned,
            task,
            notes,
        }
    }

    /// The engine whose series are read, if any.
    pub fn engine(&self) -> Option<Engine> {
        self.tracked.engine
    }

    /// With an engine's or a GPU's counters read: reads now, as of `boundary`, so that a
    /// window's counters end where its requests do (a reading an interval later would
    /// count another window's requests, or energy, in this one).
    pub async fn scrape_at(&self, boundary: Instant) {
        if !self.aligned {
            return;
        }
        let result = self.source.read(&self.tracked).await;
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok(mut scrape) => {
                let late = Instant::now().saturating_duration_since(boundary);
                pending.read_late = pending.read_late.max(late);
                scrape.at = boundary;
                let place = pending.scrapes.partition_point(|s| s.at <= boundary);
                pending.scrapes.insert(place, scrape);
            }
            Err(e) => {
                pending.failed += 1;
                pending.last_error = Some(e);
            }
        }
    }

    /// The scrapes taken before `boundary`, as one window's metrics.
    pub fn take_until(&self, boundary: Instant) -> MetricsWindow {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let split = pending.scrapes.partition_point(|s| s.at <= boundary);
        let taken: Vec<Scrape> = pending.scrapes.drain(..split).collect();
        let mut window = MetricsWindow {
            scrapes: taken.len() as u64,
            failed_scrapes: std::mem::take(&mut pending.failed),
            last_error: pending.last_error.take(),
            engine: self.tracked.engine,
            read_late_s: std::mem::take(&mut pending.read_late).as_secs_f64(),
            ..MetricsWindow::default()
        };
        let mut previous = pending.previous.take();
        for scrape in &taken {
            add_scrape(&mut window, scrape, previous.as_ref(), &self.tracked.specs);
            previous = Some(scrape.clone());
        }
        pending.previous = previous;
        window
    }
}

impl Drop for MetricsScraper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Records one scrape into a window; rates use the previous scrape.
fn add_scrape(
    window: &mut MetricsWindow,
    scrape: &Scrape,
    previous: Option<&Scrape>,
    specs: &[MetricSpec],
) {
    let seconds = previous.map(|p| scrape.at.saturating_duration_since(p.at).as_secs_f64());
    for (key, value) in &scrape.values {
        let stats = window.series.entry(key.clone()).or_default();
        stats.record(*value);
        let before = previous.and_then(|p| p.values.get(key));
        if let (Some(before), Some(secs)) = (before, seconds) {
            if secs > 0.0 && is_counter_key(key, specs) {
                // A counter that went down was reset: count from zero.
                stats.increase += if value >= before {
                    value - before
                } else {
                    *value
                };
                stats.seconds += secs;
            }
        }
    }
}

fn is_counter_key(key: &str, specs: &[MetricSpec]) -> bool {
    let rate = |how: MetricAggregation| how == MetricAggregation::Rate;
    PROCESS_METRICS
        .iter()
        .any(|(name, how)| *name == key && rate(*how))
        || specs.iter().any(|s| s.text == key && rate(s.how))
        || is_engine_counter(key)
        || is_gpu_counter(key)
}

async fn scrape_loop(
    source: Arc<Source>,
    tracked: Arc<Tracked>,
    pending: Arc<Mutex<Pending>>,
    interval: Duration,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let result = source.read(&tracked).await;
        let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok(s) => p.scrapes.push(s),
            Err(e) => {
                p.failed += 1;
                p.last_error = Some(e);
            }
        }
    }
}

/// A page of the configuration, and its first reading; `Err` is the sentence to print
/// when it cannot be read.
async fn open_page(
    given: &str,
    cfg: &MetricsConfig,
) -> Result<(Page, (Instant, Vec<MetricSample>)), String> {
    let url: hyper::Uri =
        (given.parse()).map_err(|e| format!("--metrics-url '{given}' is not a URL ({e})"))?;
    let client = PageClient::new(&url, cfg.tls.as_ref()).map_err(|e| {
        format!("Metrics: cannot read {url} ({e}); the report has no server metrics.")
    })?;
    let read = fetch(&client, &url).await.map_err(|e| match cfg.dcgm {
        true => format!("GPU telemetry: cannot read {url} ({e}); the report has no GPU figures. Check --gpu-telemetry."),
        false => format!("Metrics: cannot read {url} ({e}); the report has no server metrics. Check --metrics-url (or --server-metrics)."),
    })?;
    Ok((Page { client, url }, read))
}

/// One GET of every page at once, parsed, added up and reduced to the tracked series,
/// within 2 s; as of the last answer.
async fn scrape(pages: &[Page], tracked: &Tracked) -> Result<Scrape, String> {
    let reads = futures::future::join_all(pages.iter().map(|p| fetch(&p.client, &p.url))).await;
    let mut samples = Vec::new();
    let mut at: Option<Instant> = None;
    for (page, read) in pages.iter().zip(reads) {
        let (when, read) = read.map_err(|e| match pages.len() {
            1 => e,
            _ => format!("{}: {e}", page.url),
        })?;
        at = Some(at.map_or(when, |a| a.max(when)));
        samples.extend(read);
    }
    Ok(Scrape {
        at: at.unwrap_or_else(Instant::now),
        values: tracked_values(&samples, tracked),
    })
}

/// One GET of the page, parsed, within 2 s.
async fn fetch(
    client: &PageClient,
    url: &hyper::Uri,
) -> Result<(Instant, Vec<MetricSample>), String> {
    let body = tokio::time::timeout(Duration::from_secs(2), client.get(url))
        .await
        .map_err(|_| "no answer within 2 s".to_string())??;
    let at = Instant::now();
    let text = std::str::from_utf8(&body).map_err(|_| "the page is not UTF-8 text".to_string())?;
    let page = prometheus::parse(text).map_err(|e| format!("not Prometheus text: {e}"))?;
    Ok((at, page.samples))
}

/// The series the reports use: GPU metrics per uuid, process metrics, and each `--metric`
/// (the values of all series matching its labels added together).
/// Whether a scraped sample is one the `--metric` adds up: same name, and every label the
/// flag names has the value it gives.
fn spec_matches(spec: &MetricSpec, sample: &MetricSample) -> bool {
    sample.name == spec.name
        && spec
            .labels
            .iter()
            .all(|(k, v)| sample.label(k) == Some(v.as_str()))
}

fn tracked_values(samples: &[MetricSample], tracked: &Tracked) -> BTreeMap<String, f64> {
    let specs = &tracked.specs;
    let mut values = match tracked.engine {
        Some(engine) => engine.values(samples),
        None => BTreeMap::new(),
    };
    if tracked.dcgm {
        values.extend(dcgm_values(samples));
    }
    for s in samples {
        if GPU_METRICS.iter().any(|(name, _)| *name == s.name) {
            let uuid = s.label("gpu_uuid").unwrap_or("gpu");
            values.insert(format!("{}|{uuid}", s.name), s.value);
        } else if PROCESS_METRICS.iter().any(|(name, _)| *name == s.name) {
            *values.entry(s.name.clone()).or_insert(0.0) += s.value;
        }
        for spec in specs.iter().filter(|spec| spec_matches(spec, s)) {
            *values.entry(spec.text.clone()).or_insert(0.0) += s.value;
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> MetricSpec {
        text.parse().expect("metric spec")
    }

    #[test]
    fn gpu_process_and_user_series_are_tracked() {
        let page =
            prometheus::parse(include_str!("../../../tests/fixtures/prometheus.txt")).unwrap();
        let specs = vec![
            spec("http_requests_total:rate"),
            spec("http_requests_total{code=\"400\"}"),
        ];
        let tracked = Tracked {
            specs,
            engine: None,
            dcgm: false,
        };
        let values = tracked_values(&page.samples, &tracked);
        assert_eq!(values["nv_gpu_utilization|GPU-b2a1"], 0.5);
        assert_eq!(values["nv_gpu_utilization|GPU-c3d4"], 0.25);
        assert_eq!(values["process_cpu_seconds_total"], 12.5);
        assert_eq!(values["http_requests_total:rate"], 1030.0);
        assert_eq!(values["http_requests_total{code=\"400\"}"], 3.0);
    }

    #[test]
    fn windows_aggregate_like_perf_analyzer() {
        let t = Instant::now();
        let scrape = |secs: u64, util: f64, used: f64, cpu: f64| Scrape {
            at: t + Duration::from_secs(secs),
            values: BTreeMap::from([
                ("nv_gpu_utilization|G0".to_string(), util),
                ("nv_gpu_memory_used_bytes|G0".to_string(), used),
                ("nv_gpu_memory_total_bytes|G0".to_string(), 16.0),
                ("process_cpu_seconds_total".to_string(), cpu),
            ]),
        };
        let a = scrape(1, 0.2, 5.0, 10.0);
        let b = scrape(2, 0.6, 9.0, 11.5);
        let mut w = MetricsWindow::default();
        add_scrape(&mut w, &a, None, &[]);
        add_scrape(&mut w, &b, Some(&a), &[]);
        let util = w.per_gpu("nv_gpu_utilization", MetricAggregation::Avg);
        assert!((util[0].1 - 0.4).abs() < 1e-12);
        assert_eq!(
            w.per_gpu("nv_gpu_memory_used_bytes", MetricAggregation::Max)[0].1,
            9.0
        );
        assert_eq!(
            w.value("nv_gpu_memory_total_bytes|G0", MetricAggregation::First),
            Some(16.0)
        );
        assert_eq!(
            w.value("process_cpu_seconds_total", MetricAggregation::Rate),
            Some(1.5)
        );
        let mut merged = MetricsWindow::default();
        merged.merge(&w);
        merged.merge(&w);
        assert_eq!(
            merged.value("nv_gpu_memory_total_bytes|G0", MetricAggregation::First),
            Some(16.0)
        );
        assert_eq!(
            merged.value("process_cpu_seconds_total", MetricAggregation::Rate),
            Some(1.5)
        );
    }
}

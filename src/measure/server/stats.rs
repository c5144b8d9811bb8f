//! The server's side of a window: deltas of the statistics extension's cumulative counters
//! between window boundaries, for the profiled model and (for an ensemble) each composing
//! model, with perf_analyzer's averages — request latency split into overhead, queue and
//! the three compute phases. Deltas merge by adding, like the client's windows.

use std::collections::HashMap;

use crate::backend::statistics::AnswerCounts;
use crate::backend::statistics::StatsSource;
use crate::backend::Target;
use inferperf_wire::model::ModelSpec;
use inferperf_wire::proto::{ModelStatistics, StatisticDuration};

/// A `{count, ns}` pair of the extension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timed {
    pub count: u64,
    pub ns: u64,
}

impl Timed {
    fn from(d: &Option<StatisticDuration>) -> Timed {
        d.map_or(Timed::default(), |d| Timed {
            count: d.count,
            ns: d.ns,
        })
    }

    fn add(&mut self, other: Timed) {
        self.count += other.count;
        self.ns += other.ns;
    }

    fn minus(self, earlier: Timed) -> Timed {
        Timed {
            count: self.count.saturating_sub(earlier.count),
            ns: self.ns.saturating_sub(earlier.ns),
        }
    }

    /// Mean duration in µs (0 when nothing was counted).
    pub fn avg_us(self) -> f64 {
        match self.count {
            0 => 0.0,
            n => self.ns as f64 / n as f64 / 1000.0,
        }
    }
}

/// One model's counters: cumulative as read, or a delta between two readings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelCounters {
    pub name: String,
    pub version: String,
    pub inference_count: u64,
    pub execution_count: u64,
    pub success: Timed,
    pub fail: Timed,
    pub queue: Timed,
    pub compute_input: Timed,
    pub compute_infer: Timed,
    pub compute_output: Timed,
    pub cache_hit: Timed,
    pub cache_miss: Timed,
}

impl ModelCounters {
    fn from_proto(m: &ModelStatistics) -> ModelCounters {
        let s = m.inference_stats.unwrap_or_default();
        ModelCounters {
            name: m.name.clone(),
            version: m.version.clone(),
            inference_count: m.inference_count,
            execution_count: m.execution_count,
            success: Timed::from(&s.success),
            fail: Timed::from(&s.fail),
            queue: Timed::from(&s.queue),
            compute_input: Timed::from(&s.compute_input),
            compute_infer: Timed::from(&s.compute_infer),
            compute_output: Timed::from(&s.compute_output),
            cache_hit: Timed::from(&s.cache_hit),
            cache_miss: Timed::from(&s.cache_miss),
        }
    }

    /// Adds another reading or delta (another version of the model, or another window).
    pub fn add(&mut self, o: &ModelCounters) {
        self.inference_count += o.inference_count;
        self.execution_count += o.execution_count;
        for (mine, theirs) in self.timed_mut().into_iter().zip(o.timed()) {
            mine.add(theirs);
        }
    }

    /// What happened between `earlier` and this reading. Counters that went backwards (a
    /// restarted server) count from zero.
    fn since(&self, earlier: &ModelCounters) -> ModelCounters {
        let restarted = self.success.count < earlier.success.count;
        let base = if restarted {
            ModelCounters::default()
        } else {
            earlier.clone()
        };
        let mut delta = ModelCounters {
            name: self.name.clone(),
            version: self.version.clone(),
            inference_count: self.inference_count.saturating_sub(base.inference_count),
            execution_count: self.execution_count.saturating_sub(base.execution_count),
            ..ModelCounters::default()
        };
        let now = self.timed();
        for ((d, n), b) in delta.timed_mut().into_iter().zip(now).zip(base.timed()) {
            *d = n.minus(b);
        }
        delta
    }

    fn timed(&self) -> [Timed; 8] {
        [
            self.success,
            self.fail,
            self.queue,
            self.compute_input,
            self.compute_infer,
            self.compute_output,
            self.cache_hit,
            self.cache_miss,
        ]
    }

    fn timed_mut(&mut self) -> [&mut Timed; 8] {
        [
            &mut self.success,
            &mut self.fail,
            &mut self.queue,
            &mut self.compute_input,
            &mut self.compute_infer,
            &mut self.compute_output,
            &mut self.cache_hit,
            &mut self.cache_miss,
        ]
    }

    /// Mean request latency inside the server, in µs.
    pub fn avg_request_us(&self) -> f64 {
        self.success.avg_us()
    }

    /// Mean compute time (input + infer + output) per request, in µs.
    pub fn avg_compute_us(&self) -> f64 {
        self.compute_input.avg_us() + self.compute_infer.avg_us() + self.compute_output.avg_us()
    }

    /// The part of the request latency that is neither queue nor compute nor cache lookup:
    /// the server's own handling (perf_analyzer's "overhead"), never negative.
    pub fn avg_overhead_us(&self) -> f64 {
        let accounted = self.queue.avg_us()
            + self.avg_compute_us()
            + self.cache_hit.avg_us()
            + self.cache_miss.avg_us();
        (self.avg_request_us() - accounted).max(0.0)
    }

    pub fn uses_cache(&self) -> bool {
        self.cache_hit.count + self.cache_miss.count > 0
    }
}

/// The server's counters over a window (or merged windows): the profiled model and, for an
/// ensemble or a BLS model, its composing models.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerWindow {
    pub model: ModelCounters,
    pub composing: Vec<ModelCounters>,
    /// The composing models are a BLS model's calls (`--bls-composing-models`): they run
    /// inside the model's compute, so its own counters are the breakdown.
    pub bls: bool,
    /// The whole server's answers by status class, where the server counts them only
    /// server-wide (TorchServe's `Requests2XX/4XX/5XX`).
    pub answers: Option<AnswerCounts>,
}

/// Per-request averages of where the server spent its time, in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerBreakdown {
    pub request: f64,
    pub queue: f64,
    pub compute_input: f64,
    pub compute_infer: f64,
    pub compute_output: f64,
    pub cache_hit: f64,
    pub cache_miss: f64,
}

impl ServerBreakdown {
    pub fn compute(&self) -> f64 {
        self.compute_input + self.compute_infer + self.compute_output
    }

    /// Queue, compute and cache lookups together.
    pub fn accounted(&self) -> f64 {
        self.queue + self.compute() + self.cache_hit + self.cache_miss
    }
}

impl ServerWindow {
    pub fn merge(&mut self, other: &ServerWindow) {
        if self.model.name.is_empty() {
            *self = other.clone();
            return;
        }
        self.model.add(&other.model);
        self.bls |= other.bls;
        match (&mut self.answers, &other.answers) {
            (Some(mine), Some(theirs)) => mine.add(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
        for theirs in &other.composing {
            match self.composing.iter_mut().find(|m| m.name == theirs.name) {
                Some(mine) => mine.add(theirs),
                None => self.composing.push(theirs.clone()),
            }
        }
    }

    /// Per-request averages; for an ensemble, queue and compute are the sums over its
    /// composing models (as perf_analyzer adds them); a BLS model's are its own.
    pub fn breakdown(&self) -> ServerBreakdown {
        let parts: Vec<&ModelCounters> = if self.composing.is_empty() || self.bls {
            vec![&self.model]
        } else {
            self.composing.iter().collect()
        };
        let sum = |f: fn(&ModelCounters) -> Timed| parts.iter().map(|m| f(m).avg_us()).sum();
        ServerBreakdown {
            request: self.model.avg_request_us(),
            queue: sum(|m| m.queue),
            compute_input: sum(|m| m.compute_input),
            compute_infer: sum(|m| m.compute_infer),
            compute_output: sum(|m| m.compute_output),
            cache_hit: sum(|m| m.cache_hit),
            cache_miss: sum(|m| m.cache_miss),
        }
    }
}

/// Longest a window boundary waits for the statistics (a slow server must not stall the
/// measurement; the window then has no server side).
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads the statistics at window boundaries and hands out the deltas.
pub struct ServerStatsReader {
    source: StatsSource,
    model: String,
    composing: Vec<String>,
    bls: bool,
    last: Option<HashMap<String, ModelCounters>>,
    last_answers: Option<AnswerCounts>,
}

impl ServerStatsReader {
    /// Opens the reader and takes a first reading; `Err` says in a sentence why the run has
    /// no server-side breakdown.
    pub async fn open(target: &Target, model: &ModelSpec) -> Result<ServerStatsReader, String> {
        let composing = model.composing_models.clone();
        let mut names = vec![target.model.clone()];
        names.extend(composing.iter().cloned());
        let source = StatsSource::open(target, !composing.is_empty(), &names).await;
        let mut reader = ServerStatsReader {
            source: source.map_err(|e| unavailable(model, &e))?,
            model: target.model.clone(),
            composing,
            bls: model.calls_composing(),
            last: None,
            last_answers: None,
        };
        let first = tokio::time::timeout(READ_TIMEOUT, reader.read())
            .await
            .unwrap_or_else(|_| Err("no answer within 2 s".to_string()))
            .map_err(|e| unavailable(model, &e))?;
        if !first.contains_key(&reader.model) {
            let why = "its answer does not list the model".to_string();
            return Err(unavailable(model, &why));
        }
        if let Some(missing) = reader.composing.iter().find(|c| !first.contains_key(*c)) {
            return Err(format!(
                "Server: no server-side breakdown: the server's statistics do not list composing model '{missing}' (check --bls-composing-models' names and versions)."
            ));
        }
        reader.last = Some(first);
        reader.last_answers = reader.source.answers();
        Ok(reader)
    }

    /// Reads the counters now and returns what changed since the last reading; `None` when
    /// the read failed (the window then has no server side).
    pub async fn mark(&mut self) -> Option<ServerWindow> {
        let now = tokio::time::timeout(READ_TIMEOUT, self.read())
            .await
            .ok()
            .and_then(Result::ok);
        let answers_now = now.as_ref().and(self.source.answers());
        let answers_before = std::mem::replace(&mut self.last_answers, answers_now);
        let answers = answers_now.zip(answers_before).map(|(n, b)| n.since(&b));
        let before = std::mem::replace(&mut self.last, now);
        let (now, before) = (self.last.as_ref()?, before?);
        let delta = |name: &str| -> ModelCounters {
            let zero = ModelCounters::default();
            let current = now.get(name).cloned().unwrap_or_default();
            current.since(before.get(name).unwrap_or(&zero))
        };
        Some(ServerWindow {
            model: delta(&self.model),
            composing: self.composing.iter().map(|c| delta(c)).collect(),
            bls: self.bls,
            answers,
        })
    }

    /// One reading: each model under its name (its versions added together) and each
    /// version under `name:version` (what `--bls-composing-models a:3` names).
    async fn read(&mut self) -> Result<HashMap<String, ModelCounters>, String> {
        let list = self.source.read().await?;
        let mut by_name: HashMap<String, ModelCounters> = HashMap::new();
        for stats in &list {
            let counters = ModelCounters::from_proto(stats);
            let versioned = format!("{}:{}", stats.name, stats.version);
            for key in [stats.name.clone(), versioned] {
                by_name
                    .entry(key)
                    .and_modify(|c| c.add(&counters))
                    .or_insert_with(|| counters.clone());
            }
        }
        Ok(by_name)
    }
}

/// The sentence printed instead of the Server block.
fn unavailable(model: &ModelSpec, why: &str) -> String {
    if model.platform == "torchserve" {
        return format!("Server: no server-side breakdown: TorchServe's metrics page cannot be read ({why}); start TorchServe with metrics_mode=prometheus, or name the page with --metrics-url.");
    }
    let listed = model.server_has_extension("statistics");
    let offered = match listed {
        true => "the server lists the statistics extension, but reading it failed",
        false => "the server does not offer the statistics extension",
    };
    format!("Server: no server-side breakdown: {offered} ({why}).")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(count: u64, ns: u64) -> Timed {
        Timed { count, ns }
    }

    fn counters(name: &str, n: u64, queue_ns: u64, infer_ns: u64) -> ModelCounters {
        ModelCounters {
            name: name.into(),
            inference_count: n,
            execution_count: n,
            success: timed(n, n * (queue_ns + infer_ns + 1000)),
            queue: timed(n, n * queue_ns),
            compute_infer: timed(n, n * infer_ns),
            ..ModelCounters::default()
        }
    }

    #[test]
    fn deltas_and_averages_follow_perf_analyzer() {
        let before = counters("m", 10, 2000, 5000);
        let mut now = before.clone();
        now.add(&counters("m", 4, 4000, 6000));
        let d = now.since(&before);
        assert_eq!(d.success.count, 4);
        assert_eq!(d.inference_count, 4);
        assert!((d.queue.avg_us() - 4.0).abs() < 1e-9);
        assert!((d.avg_compute_us() - 6.0).abs() < 1e-9);
        assert!((d.avg_overhead_us() - 1.0).abs() < 1e-9);
        // A restarted server counts from zero rather than wrapping.
        let restarted = counters("m", 3, 1000, 1000);
        assert_eq!(restarted.since(&now).success.count, 3);
    }

    #[test]
    fn ensemble_breakdown_sums_composing_models() {
        let window = ServerWindow {
            model: counters("ens", 5, 0, 0),
            composing: vec![counters("a", 5, 1000, 2000), counters("b", 5, 3000, 4000)],
            bls: false,
            answers: None,
        };
        let b = window.breakdown();
        assert!((b.queue - 4.0).abs() < 1e-9);
        assert!((b.compute_infer - 6.0).abs() < 1e-9);
        let mut merged = ServerWindow::default();
        merged.merge(&window);
        merged.merge(&window);
        assert_eq!(merged.composing[1].success.count, 10);
    }

    #[test]
    fn bls_breakdown_is_the_models_own() {
        // The calls run inside the BLS model's compute: adding them would count them twice.
        let window = ServerWindow {
            model: counters("bls", 5, 500, 9000),
            composing: vec![counters("a", 5, 1000, 2000), counters("b", 5, 3000, 4000)],
            bls: true,
            answers: None,
        };
        let b = window.breakdown();
        assert!((b.queue - 0.5).abs() < 1e-9);
        assert!((b.compute_infer - 9.0).abs() < 1e-9);
        let mut merged = ServerWindow::default();
        merged.merge(&window);
        merged.merge(&window);
        assert!(merged.bls);
    }
}

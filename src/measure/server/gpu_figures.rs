//! A level's GPU figures (`--gpu-telemetry`) from its merged metrics window: per GPU its
//! utilization and power (mean and maximum of the readings), the most memory used, and the
//! energy it drew over the level (the increase of its energy counter); and the run's
//! output tokens per joule, over all GPUs and per GPU.

use serde::{Deserialize, Serialize};

use super::engine_figures::GaugeFigures;
use super::gpu_series::GpuField;
use super::metrics::{MetricsWindow, SeriesStats};

/// One GPU over a level.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GpuFigures {
    pub uuid: String,
    /// Percent.
    pub utilization: Option<GaugeFigures>,
    pub memory_used_mib: Option<f64>,
    pub power_watts: Option<GaugeFigures>,
    pub energy_joules: Option<f64>,
    /// The level's output tokens over this GPU's energy.
    pub output_tokens_per_joule: Option<f64>,
}

/// The GPUs of a level: each one, their energy in all and the output tokens per joule.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GpuTelemetry {
    pub gpus: Vec<GpuFigures>,
    pub energy_joules: Option<f64>,
    pub output_tokens_per_joule: Option<f64>,
}

impl GpuTelemetry {
    /// The GPUs of a window and the tokens per joule of its `output_tokens`; `None`
    /// without GPU series.
    pub fn of(window: &MetricsWindow, output_tokens: f64) -> Option<GpuTelemetry> {
        let mut gpus = gpus(window);
        if gpus.is_empty() {
            return None;
        }
        let per_joule = |joules: Option<f64>| {
            joules
                .filter(|&j| j > 0.0 && output_tokens > 0.0)
                .map(|j| output_tokens / j)
        };
        for gpu in &mut gpus {
            gpu.output_tokens_per_joule = per_joule(gpu.energy_joules);
        }
        let energy = (gpus.iter().any(|g| g.energy_joules.is_some()))
            .then(|| gpus.iter().filter_map(|g| g.energy_joules).sum::<f64>());
        Some(GpuTelemetry {
            gpus,
            energy_joules: energy,
            output_tokens_per_joule: per_joule(energy),
        })
    }
}

/// Every GPU of a window, in UUID order (none when it has no GPU series).
fn gpus(window: &MetricsWindow) -> Vec<GpuFigures> {
    let mut uuids: Vec<&str> = (window.series.keys())
        .filter_map(|k| Some(k.strip_prefix("gpu:")?.split_once('|')?.1))
        .collect();
    uuids.sort_unstable();
    uuids.dedup();
    uuids
        .into_iter()
        .map(|uuid| {
            let series = |field: GpuField| window.series.get(&field.key(uuid));
            GpuFigures {
                uuid: uuid.to_string(),
                utilization: series(GpuField::Utilization).and_then(gauge),
                memory_used_mib: series(GpuField::MemoryUsedMib)
                    .filter(|s| s.count > 0)
                    .map(|s| s.max),
                power_watts: series(GpuField::PowerWatts).and_then(gauge),
                energy_joules: series(GpuField::EnergyMillijoules)
                    .filter(|s| s.seconds > 0.0)
                    .map(|s| s.increase / 1e3),
                output_tokens_per_joule: None,
            }
        })
        .collect()
}

fn gauge(s: &SeriesStats) -> Option<GaugeFigures> {
    (s.count > 0).then(|| GaugeFigures {
        avg: s.sum / s.count as f64,
        max: s.max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gpu_has_its_gauges_and_energy_and_the_run_its_tokens_per_joule() {
        let mut window = MetricsWindow::default();
        let stats = |count, sum, max, increase| SeriesStats {
            count,
            sum,
            max,
            first: 0.0,
            increase,
            seconds: 2.0,
        };
        for (uuid, watts) in [("GPU-a", 160.0), ("GPU-b", 60.0)] {
            let put = |w: &mut MetricsWindow, field: GpuField, s| {
                w.series.insert(field.key(uuid), s);
            };
            put(
                &mut window,
                GpuField::PowerWatts,
                stats(2, 2.0 * watts, watts, 0.0),
            );
            put(
                &mut window,
                GpuField::EnergyMillijoules,
                stats(2, 0.0, 0.0, watts * 2e3),
            );
            put(
                &mut window,
                GpuField::MemoryUsedMib,
                stats(2, 3000.0, 2000.0, 0.0),
            );
        }
        let gpus = gpus(&window);
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].uuid, "GPU-a");
        assert_eq!(
            gpus[0].power_watts,
            Some(GaugeFigures {
                avg: 160.0,
                max: 160.0
            })
        );
        assert_eq!(gpus[0].energy_joules, Some(320.0));
        assert_eq!(gpus[1].memory_used_mib, Some(2000.0));
        assert_eq!(gpus[1].utilization, None);
        let telemetry = GpuTelemetry::of(&window, 880.0).unwrap();
        assert_eq!(telemetry.energy_joules, Some(440.0));
        assert_eq!(telemetry.output_tokens_per_joule, Some(2.0));
        assert_eq!(
            telemetry.gpus[1].output_tokens_per_joule,
            Some(880.0 / 120.0)
        );
        assert_eq!(GpuTelemetry::of(&MetricsWindow::default(), 880.0), None);
    }
}

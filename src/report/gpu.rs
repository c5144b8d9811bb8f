//! The GPUs' account of a level (`--gpu-telemetry`), under the level's client figures: per
//! GPU its utilization, memory, power and the energy it drew, and the output tokens per
//! joule over all GPUs and per GPU.

use crate::measure::gpu_figures::GpuTelemetry;
use crate::measure::metrics::MetricsWindow;
use crate::measure::window::WindowStats;

use super::engine::NamedFigure;

/// The console lines of the GPUs of a level (none when it has no GPU series).
pub fn gpu_lines(metrics: &MetricsWindow, client: &WindowStats) -> Vec<String> {
    let Some(telemetry) = GpuTelemetry::of(metrics, client.output_token_count()) else {
        return Vec::new();
    };
    let mut lines = vec!["  GPU telemetry: ".to_string()];
    for gpu in &telemetry.gpus {
        let mut parts = Vec::new();
        if let Some(u) = gpu.utilization {
            parts.push(format!("utilization avg {:.1}%", u.avg));
        }
        if let Some(mib) = gpu.memory_used_mib {
            parts.push(format!("memory {mib:.0} MiB (max)"));
        }
        if let Some(p) = gpu.power_watts {
            parts.push(format!("power avg {:.1} W, max {:.1} W", p.avg, p.max));
        }
        if let Some(joules) = gpu.energy_joules {
            parts.push(format!("energy {joules:.1} J"));
        }
        if let Some(per_joule) = gpu.output_tokens_per_joule {
            parts.push(format!("{per_joule:.3} output tokens/J"));
        }
        lines.push(format!("    {}: {}", gpu.uuid, parts.join(", ")));
    }
    if let Some(per_joule) = telemetry.output_tokens_per_joule {
        lines.push(format!(
            "    Output tokens per joule (all {} GPU(s)): {per_joule:.3}",
            telemetry.gpus.len()
        ));
    }
    lines
}

/// The GPU figures of a level for the tables: each GPU's (named by its UUID), then the
/// energy of all and the output tokens per joule over all.
pub fn gpu_figures(t: &GpuTelemetry) -> Vec<NamedFigure> {
    let figure = |name: String, unit, value| NamedFigure { name, unit, value };
    let mut all = Vec::new();
    for gpu in &t.gpus {
        let name = |what: &str| format!("GPU {} {what}", gpu.uuid);
        all.extend([
            figure(name("Utilization Avg"), "%", gpu.utilization.map(|g| g.avg)),
            figure(name("Memory Used Max"), "MiB", gpu.memory_used_mib),
            figure(name("Power Avg"), "W", gpu.power_watts.map(|g| g.avg)),
            figure(name("Power Max"), "W", gpu.power_watts.map(|g| g.max)),
            figure(name("Energy"), "J", gpu.energy_joules),
            figure(
                name("Output Tokens/J"),
                "tokens/J",
                gpu.output_tokens_per_joule,
            ),
        ]);
    }
    all.push(figure("All GPUs Energy".into(), "J", t.energy_joules));
    let per_joule = t.output_tokens_per_joule;
    all.push(figure(
        "All GPUs Output Tokens/J".into(),
        "tokens/J",
        per_joule,
    ));
    all
}

//! The GPUs' account of a level (`--gpu-telemetry`), under the level's client figures: per
//! GPU its utilization, memory, power and the energy it drew, and the output tokens per
//! joule over all GPUs and per GPU.

use crate::measure::server::gpu_figures::GpuTelemetry;
use crate::measure::server::metrics::MetricsWindow;
use crate::measure::window::WindowStats;

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

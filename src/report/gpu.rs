//! The GPUs' account of a level (`--gpu-telemetry`), under the level's client figures: per
//! GPU its utilization, memory, power and the energy it drew, and the output tokens per
//! joule over all GPUs and per GPU.

use crate::measure::gpu_figures::{gpus, tokens_per_joule};
use crate::measure::metrics::MetricsWindow;
use crate::measure::window::WindowStats;

/// The console lines of the GPUs of a level (none when it has no GPU series).
pub fn gpu_lines(metrics: &MetricsWindow, client: &WindowStats) -> Vec<String> {
    let gpus = gpus(metrics);
    if gpus.is_empty() {
        return Vec::new();
    }
    let tokens = (client.tokens.as_ref()).map_or(0.0, |t| t.output_tokens.sum() as f64);
    let mut lines = vec!["  GPU telemetry: ".to_string()];
    for gpu in &gpus {
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
            if tokens > 0.0 && joules > 0.0 {
                parts.push(format!("{:.3} output tokens/J", tokens / joules));
            }
        }
        lines.push(format!("    {}: {}", gpu.uuid, parts.join(", ")));
    }
    if let Some(per_joule) = tokens_per_joule(&gpus, tokens).filter(|_| tokens > 0.0) {
        lines.push(format!(
            "    Output tokens per joule (all {} GPU(s)): {per_joule:.3}",
            gpus.len()
        ));
    }
    lines
}

//! The reference server's own model of a GPU, not a measurement: each `llm` model stands
//! for one GPU that draws `gpu_watts_idle` plus `gpu_watts_per_sequence` for each sequence
//! holding a slot. The energy is that power integrated exactly, from one change of the
//! count to the next, so a client's tokens per joule has a known truth. Written as a DCGM
//! exporter page (`/gpu/metrics` on the metrics port), with DCGM's field names and labels.

use std::fmt::Write as _;
use std::time::Instant;

/// The memory of the modelled card, and what the weights and each sequence take of it.
const FB_TOTAL_MIB: f64 = 16_384.0;
const FB_WEIGHTS_MIB: f64 = 2_048.0;
const FB_PER_SEQUENCE_MIB: f64 = 256.0;

/// One GPU's power model and the energy it has drawn.
#[derive(Debug, Clone)]
pub(crate) struct PowerMeter {
    idle_watts: f64,
    watts_per_sequence: f64,
    running: u64,
    since: Instant,
    joules: f64,
}

/// What the page shows for one GPU at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GpuReading {
    pub watts: f64,
    /// Energy since the server started, in joules.
    pub joules: f64,
    /// The share of the batch's slots in use, in percent.
    pub utilization: f64,
    pub fb_used_mib: f64,
}

impl PowerMeter {
    pub(crate) fn new(idle_watts: f64, watts_per_sequence: f64, now: Instant) -> PowerMeter {
        PowerMeter {
            idle_watts,
            watts_per_sequence,
            running: 0,
            since: now,
            joules: 0.0,
        }
    }

    fn watts(&self) -> f64 {
        self.idle_watts + self.watts_per_sequence * self.running as f64
    }

    /// The sequences holding a slot are `running` from `now` on.
    pub(crate) fn set_running(&mut self, now: Instant, running: u64) {
        if running == self.running {
            return;
        }
        self.joules = self.joules_at(now);
        self.since = now;
        self.running = running;
    }

    fn joules_at(&self, now: Instant) -> f64 {
        let seconds = now.saturating_duration_since(self.since).as_secs_f64();
        self.joules + self.watts() * seconds
    }

    /// The GPU at `now`, with `slots` in its batch.
    pub(crate) fn reading(&self, now: Instant, slots: u64) -> GpuReading {
        GpuReading {
            watts: self.watts(),
            joules: self.joules_at(now),
            utilization: 100.0 * self.running as f64 / slots.max(1) as f64,
            fb_used_mib: (FB_WEIGHTS_MIB + FB_PER_SEQUENCE_MIB * self.running as f64)
                .min(FB_TOTAL_MIB),
        }
    }
}

/// Writes the DCGM exporter page of the GPUs (model name, reading), GPU i being the i-th.
pub(crate) fn write_dcgm(out: &mut String, gpus: &[(String, GpuReading)]) {
    type Field = (
        &'static str,
        &'static str,
        &'static str,
        fn(&GpuReading) -> f64,
    );
    let fields: [Field; 5] = [
        (
            "DCGM_FI_DEV_GPU_UTIL",
            "gauge",
            "GPU utilization (in %).",
            |g| g.utilization,
        ),
        (
            "DCGM_FI_DEV_POWER_USAGE",
            "gauge",
            "Power draw (in W).",
            |g| g.watts,
        ),
        (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "counter",
            "Total energy consumption since boot (in mJ).",
            |g| g.joules * 1e3,
        ),
        (
            "DCGM_FI_DEV_FB_USED",
            "gauge",
            "Framebuffer memory used (in MiB).",
            |g| g.fb_used_mib,
        ),
        (
            "DCGM_FI_DEV_FB_FREE",
            "gauge",
            "Framebuffer memory free (in MiB).",
            |g| FB_TOTAL_MIB - g.fb_used_mib,
        ),
    ];
    for (name, kind, help, value) in fields {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (gpu, (model, reading)) in gpus.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}{{gpu=\"{gpu}\",UUID=\"GPU-inferperf-{gpu:04}\",device=\"nvidia{gpu}\",modelName=\"inferperf reference GPU (model {model})\",Hostname=\"inferperf\"}} {}",
                value(reading)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn energy_is_the_power_model_integrated_over_each_count() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut meter = PowerMeter::new(50.0, 20.0, t0);
        meter.set_running(at(1000), 2);
        meter.set_running(at(3000), 1);
        let reading = meter.reading(at(4000), 4);
        // 1 s at 50 W, 2 s at 90 W, 1 s at 70 W.
        assert!((reading.joules - 300.0).abs() < 1e-9, "{reading:?}");
        assert_eq!(reading.watts, 70.0);
        assert_eq!(reading.utilization, 25.0);
        assert_eq!(reading.fb_used_mib, 2048.0 + 256.0);
    }

    #[test]
    fn the_page_has_dcgm_names_and_a_line_per_gpu() {
        let reading = GpuReading {
            watts: 90.0,
            joules: 2.5,
            utilization: 50.0,
            fb_used_mib: 2560.0,
        };
        let mut out = String::new();
        write_dcgm(&mut out, &[("a".into(), reading), ("b".into(), reading)]);
        assert!(out.contains("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"));
        let power = out
            .lines()
            .filter(|l| l.starts_with("DCGM_FI_DEV_POWER_USAGE{"));
        assert_eq!(power.count(), 2);
        assert!(out.contains(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-inferperf-0001\""
        ));
        assert!(out.contains("} 2500\n"), "mJ: {out}");
    }
}

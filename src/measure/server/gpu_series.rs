//! The GPU series `--gpu-telemetry` keeps, one key per field and GPU (`gpu:FIELD|UUID`):
//! utilization (%), memory used (MiB), power (W) and the energy counter (mJ), read from a
//! DCGM exporter's page (its `DCGM_FI_DEV_*` fields) or from NVML, so that a window's
//! figures come out the same whichever source gave them.

use std::collections::BTreeMap;

use crate::prometheus::MetricSample;

/// What a GPU series is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuField {
    Utilization,
    MemoryUsedMib,
    PowerWatts,
    EnergyMillijoules,
}

impl GpuField {
    pub const ALL: [GpuField; 4] = [
        GpuField::Utilization,
        GpuField::MemoryUsedMib,
        GpuField::PowerWatts,
        GpuField::EnergyMillijoules,
    ];

    /// The key of this field for GPU `uuid`.
    pub fn key(self, uuid: &str) -> String {
        format!("{}|{uuid}", self.prefix())
    }

    pub fn prefix(self) -> &'static str {
        match self {
            GpuField::Utilization => "gpu:utilization",
            GpuField::MemoryUsedMib => "gpu:memory_used_mib",
            GpuField::PowerWatts => "gpu:power_watts",
            GpuField::EnergyMillijoules => "gpu:energy_mj",
        }
    }

    /// DCGM's field name.
    fn dcgm(self) -> &'static str {
        match self {
            GpuField::Utilization => "DCGM_FI_DEV_GPU_UTIL",
            GpuField::MemoryUsedMib => "DCGM_FI_DEV_FB_USED",
            GpuField::PowerWatts => "DCGM_FI_DEV_POWER_USAGE",
            GpuField::EnergyMillijoules => "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        }
    }
}

/// The GPU series of a DCGM exporter's page, by GPU (its `UUID` label, else `gpu`).
pub fn dcgm_values(samples: &[MetricSample]) -> BTreeMap<String, f64> {
    let mut values = BTreeMap::new();
    for sample in samples {
        let Some(field) = GpuField::ALL.into_iter().find(|f| f.dcgm() == sample.name) else {
            continue;
        };
        let gpu = sample.label("UUID").or_else(|| sample.label("gpu"));
        values.insert(field.key(gpu.unwrap_or("gpu")), sample.value);
    }
    values
}

/// Whether a key is a GPU counter (the energy, whose increase over a window is the energy
/// drawn in it).
pub fn is_gpu_counter(key: &str) -> bool {
    key.starts_with(GpuField::EnergyMillijoules.prefix())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcgm_fields_are_kept_by_gpu_uuid() {
        let page = "\
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 160.5
DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} 60
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} 12000
DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-a\"} 1410
";
        let samples = crate::prometheus::parse(page).unwrap().samples;
        let values = dcgm_values(&samples);
        assert_eq!(values["gpu:power_watts|GPU-a"], 160.5);
        assert_eq!(values["gpu:power_watts|GPU-b"], 60.0);
        assert_eq!(values["gpu:energy_mj|GPU-a"], 12000.0);
        assert_eq!(values.len(), 3);
        assert!(is_gpu_counter("gpu:energy_mj|GPU-a"));
        assert!(!is_gpu_counter("gpu:power_watts|GPU-a"));
    }
}

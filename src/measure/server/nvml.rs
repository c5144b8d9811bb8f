//! `--gpu-telemetry nvml`: the GPUs of this machine read through the NVIDIA driver's NVML
//! library, opened at run time (`dlopen`, as MPI's library is) so that inferperf has no
//! link-time dependency on it and runs where there is none — then it says so in one
//! sentence. Each reading gives the same keys as a DCGM exporter's page
//! ([`super::gpu_series`]): utilization, memory used, power and the energy counter.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};

use super::gpu_series::GpuField;

/// `nvmlReturn_t`'s success.
const NVML_SUCCESS: c_int = 0;
/// NVML's buffer size for a UUID.
const UUID_BUFFER: usize = 96;

type Device = *mut c_void;

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
#[derive(Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// The NVML functions inferperf calls.
struct Functions {
    init: unsafe extern "C" fn() -> c_int,
    count: unsafe extern "C" fn(*mut c_uint) -> c_int,
    handle: unsafe extern "C" fn(c_uint, *mut Device) -> c_int,
    uuid: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int,
    power: unsafe extern "C" fn(Device, *mut c_uint) -> c_int,
    energy: unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int,
    utilization: unsafe extern "C" fn(Device, *mut Utilization) -> c_int,
    memory: unsafe extern "C" fn(Device, *mut Memory) -> c_int,
}

/// NVML, opened and initialised, with this machine's GPUs.
pub struct Nvml {
    functions: Functions,
    devices: Vec<(String, Device)>,
}

// SAFETY: NVML's device handles are process-wide and its calls are thread-safe (NVML's
// documentation); the handles are only passed back to NVML.
unsafe impl Send for Nvml {}
unsafe impl Sync for Nvml {}

impl Nvml {
    /// Opens the library and finds the GPUs; `Err` is the sentence to print.
    pub fn open() -> Result<Nvml, String> {
        let functions = load().ok_or_else(|| {
            "GPU telemetry: this machine has no NVIDIA driver (libnvidia-ml.so.1 cannot be opened), so --gpu-telemetry nvml has no GPU to read; the run goes on without GPU figures.".to_string()
        })?;
        // SAFETY: nvmlInit_v2 takes no arguments and may be called more than once.
        if unsafe { (functions.init)() } != NVML_SUCCESS {
            return Err("GPU telemetry: NVML did not start (nvmlInit failed: is the NVIDIA driver loaded?); the run goes on without GPU figures.".to_string());
        }
        let mut count: c_uint = 0;
        // SAFETY: `count` is a valid place for the device count.
        if unsafe { (functions.count)(&mut count) } != NVML_SUCCESS || count == 0 {
            return Err("GPU telemetry: NVML sees no GPU on this machine; the run goes on without GPU figures.".to_string());
        }
        let devices = (0..count)
            .filter_map(|index| device(&functions, index))
            .collect();
        Ok(Nvml { functions, devices })
    }

    /// Every GPU's fields now, under the GPU series' keys.
    pub fn read(&self) -> BTreeMap<String, f64> {
        let mut values = BTreeMap::new();
        let f = &self.functions;
        for (uuid, device) in &self.devices {
            let mut power: c_uint = 0;
            let mut energy: c_ulonglong = 0;
            let mut utilization = Utilization::default();
            let mut memory = Memory::default();
            // SAFETY: each call writes one value of the documented type to a valid place,
            // for a handle NVML gave.
            unsafe {
                if (f.power)(*device, &mut power) == NVML_SUCCESS {
                    values.insert(GpuField::PowerWatts.key(uuid), power as f64 / 1e3);
                }
                if (f.energy)(*device, &mut energy) == NVML_SUCCESS {
                    values.insert(GpuField::EnergyMillijoules.key(uuid), energy as f64);
                }
                if (f.utilization)(*device, &mut utilization) == NVML_SUCCESS {
                    let key = GpuField::Utilization.key(uuid);
                    values.insert(key, utilization.gpu as f64);
                }
                if (f.memory)(*device, &mut memory) == NVML_SUCCESS {
                    let mib = memory.used as f64 / 1_048_576.0;
                    values.insert(GpuField::MemoryUsedMib.key(uuid), mib);
                }
            }
        }
        values
    }
}

/// The handle and UUID of GPU `index`.
fn device(f: &Functions, index: c_uint) -> Option<(String, Device)> {
    let mut handle: Device = std::ptr::null_mut();
    let mut buffer = [0 as c_char; UUID_BUFFER];
    // SAFETY: `handle` receives the device handle; `buffer` holds UUID_BUFFER bytes and
    // NVML writes a NUL-terminated UUID of at most that many.
    unsafe {
        if (f.handle)(index, &mut handle) != NVML_SUCCESS {
            return None;
        }
        let uuid = match (f.uuid)(handle, buffer.as_mut_ptr(), UUID_BUFFER as c_uint) {
            NVML_SUCCESS => CStr::from_ptr(buffer.as_ptr())
                .to_string_lossy()
                .into_owned(),
            _ => format!("gpu{index}"),
        };
        Some((uuid, handle))
    }
}

/// A symbol as the function it is.
///
/// # Safety
/// `F` must be the symbol's own function pointer type.
unsafe fn as_fn<F: Copy>(symbol: *mut c_void) -> F {
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: a function pointer and a data pointer have one size and representation on
    // the platforms NVML runs on; the caller gives the symbol's own type.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&symbol) }
}

/// Opens libnvidia-ml and finds its functions (`None` when it or one of them is missing).
fn load() -> Option<Functions> {
    // SAFETY: dlopen with a constant NUL-terminated name; the library stays open for the
    // process's life (it is never closed, so the functions stay valid).
    let library = unsafe { libc::dlopen(c"libnvidia-ml.so.1".as_ptr(), libc::RTLD_NOW) };
    if library.is_null() {
        return None;
    }
    let symbol = |name: &CStr| {
        // SAFETY: dlsym on the open library with a NUL-terminated name.
        let found = unsafe { libc::dlsym(library, name.as_ptr()) };
        (!found.is_null()).then_some(found)
    };
    // SAFETY: each symbol is NVML's function of the signature given (NVML's API).
    unsafe {
        Some(Functions {
            init: as_fn(symbol(c"nvmlInit_v2")?),
            count: as_fn(symbol(c"nvmlDeviceGetCount_v2")?),
            handle: as_fn(symbol(c"nvmlDeviceGetHandleByIndex_v2")?),
            uuid: as_fn(symbol(c"nvmlDeviceGetUUID")?),
            power: as_fn(symbol(c"nvmlDeviceGetPowerUsage")?),
            energy: as_fn(symbol(c"nvmlDeviceGetTotalEnergyConsumption")?),
            utilization: as_fn(symbol(c"nvmlDeviceGetUtilizationRates")?),
            memory: as_fn(symbol(c"nvmlDeviceGetMemoryInfo")?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine has no NVIDIA driver: opening NVML is one sentence, not a failure.
    #[test]
    fn without_a_driver_nvml_is_one_sentence() {
        match Nvml::open() {
            Ok(nvml) => assert!(!nvml.read().is_empty(), "a GPU here reads something"),
            Err(why) => {
                assert!(why.starts_with("GPU telemetry: "), "{why}");
                assert_eq!(why.lines().count(), 1);
            }
        }
    }
}
